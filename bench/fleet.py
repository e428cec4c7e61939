"""The fleet figures: a corpus of 10,000 tapes through object storage, shards and cores.

    python bench/fleet.py                # 10,000 tapes; prints the BENCHMARKS.md section
    python bench/fleet.py --tapes 800    # a quick look

Against a real S3 protocol endpoint on loopback (moto's server, through s3fs), each
figure beside a baseline measured in the same run:

* **push**: the whole corpus, then a second push of the same corpus (tapes per second;
  the second must upload nothing);
* **replay with -n 2**: every tape from a local folder through ``pytest --replay DIR -n 2``
  against as many trivial tests with ``-n 2`` (wall time of each pytest run);
* **a cold shard**: ``--sessiontape-shard 1/4`` from the store into an empty cache
  (``--collect-only``, so the figure is the download): tapes downloaded against a quarter;
* **four shards balanced by durations**: the receipt of the -n 2 run balances four shards;
  each shard's replay time (the sum of its receipt's replay durations) against the mean.

The corpus mixes tiny one-call tapes with copies of the shipped gardener tapes (one in
twenty), so that shards only balance when the durations are used. Needs the ``s3`` and
``test`` extras and ``moto[server]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

BENCH: Final = Path(__file__).resolve().parent
ROOT: Final = BENCH.parent
for _path in (ROOT / "src", BENCH):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from cases.corpus import write_corpus  # noqa: E402

#: One tape in this many is a copy of a gardener tape (a longer replay).
_GARDENER_EVERY: Final = 20
_CONFTEST: Final = """
import shutil, tempfile
from pathlib import Path

from corpus_app import app
from sessiontape.examples.gardener import ENTRYPOINT, WORK_ROOT, run_session


def sessiontape_replay(tape, recording):
    if recording.header.entrypoint != ENTRYPOINT:
        return app(tape)
    workdir = Path(tempfile.mkdtemp(prefix="gardener-bench-"))
    try:
        tape.set_roots({WORK_ROOT: str(workdir)})
        run_session(tape, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return True
"""


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return elapsed, done.stdout


def build(root: Path, tapes: int) -> Path:
    """A project of ``tapes`` tapes (tiny ones and gardener copies) and as many trivial tests."""
    project = write_corpus(root, tapes, tapes)
    (project / "conftest.py").write_text(_CONFTEST, encoding="utf-8")
    gardener = sorted((ROOT / "cassettes").glob("*.jsonl"))
    folder = project / "tapes"
    for i in range(0, tapes, _GARDENER_EVERY):
        source = gardener[(i // _GARDENER_EVERY) % len(gardener)]
        shutil.copy(source, folder / f"tape-{i:04d}.jsonl")
    return project


def measure(tapes: int, workdir: Path) -> dict[str, Any]:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise

    project = build(workdir / "project", tapes)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(project), str(ROOT / "src")]),
        FSSPEC_S3_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench-secret",
        AWS_DEFAULT_REGION="us-east-1",
    )
    try:
        import boto3

        boto3.client(
            "s3",
            endpoint_url=env["FSSPEC_S3_ENDPOINT_URL"],
            aws_access_key_id="bench",
            aws_secret_access_key="bench-secret",
            region_name="us-east-1",
        ).create_bucket(Bucket="fleet")
        url = "s3://fleet/corpus"
        cli = [sys.executable, "-m", "sessiontape"]
        out: dict[str, Any] = {"tapes": tapes}
        for label in ("push_first", "push_second"):
            seconds, stdout = _run([*cli, "push", "tapes", url, "--json"], project, env)
            figures = json.loads(stdout)
            out[label] = {
                "seconds": seconds,
                "uploaded": figures["uploaded"],
                "tapes_per_second": tapes / seconds,
            }
        pytest = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
        ]
        receipt = workdir / "receipt.json"
        replay_s, _ = _run(
            [*pytest, "-n", "2", "--replay", "tapes", "--sessiontape-report", str(receipt)],
            project,
            env,
        )
        trivial_s, _ = _run([*pytest, "-n", "2", "test_trivial.py"], project, env)
        out["replay_n2"] = {"seconds": replay_s, "trivial_seconds": trivial_s}
        cold = workdir / "cold-cache"
        _, stdout = _run(
            [*pytest, "--collect-only", "--replay", url, "--sessiontape-cache", str(cold),
             "--sessiontape-shard", "1/4"],
            project,
            env,
        )  # fmt: skip
        downloaded = sum(
            1
            for p in cold.rglob("*.jsonl")
            if ".versions" not in p.parts and ".blobs" not in str(p)
        )
        out["cold_shard"] = {"downloaded": downloaded, "quarter": tapes / 4}
        shard_times = []
        shard_walls = []
        for index in range(1, 5):
            part = workdir / f"shard-{index}.json"
            wall, _ = _run(
                [*pytest, "--replay", "tapes", "--sessiontape-shard", f"{index}/4",
                 "--sessiontape-durations", str(receipt), "--sessiontape-report", str(part)],
                project,
                env,
            )  # fmt: skip
            reports = json.loads(part.read_text())
            shard_times.append(sum(r["replay_duration_ns"] for r in reports) / 1e9)
            shard_walls.append(wall)
        out["shards"] = {"replay_seconds": shard_times, "wall_seconds": shard_walls}
        return out
    finally:
        server.stop()


def markdown(figures: dict[str, Any]) -> str:
    tapes = figures["tapes"]
    first, second = figures["push_first"], figures["push_second"]
    replay = figures["replay_n2"]
    cold = figures["cold_shard"]
    shards = figures["shards"]["replay_seconds"]
    walls = figures["shards"]["wall_seconds"]
    mean = statistics.fmean(shards)
    spread = max(abs(s - mean) / mean for s in shards) * 100
    wall_mean = statistics.fmean(walls)
    wall_spread = max(abs(w - wall_mean) / wall_mean for w in walls) * 100
    rows = [
        "| what | figure | baseline | ratio / target |",
        "|---|---|---|---|",
        f"| push {tapes:,} tapes to S3 on loopback | {first['seconds']:.1f} s "
        f"({first['tapes_per_second']:.0f} tapes/s, {first['uploaded']:,} uploaded) | | |",
        f"| second push of the same corpus | {second['seconds']:.1f} s "
        f"({second['tapes_per_second']:.0f} tapes/s) | | "
        f"{second['uploaded']} uploaded (target 0) |",
        f"| `pytest --replay DIR -n 2`, {tapes:,} tapes | {replay['seconds']:.1f} s | "
        f"{tapes:,} trivial tests -n 2: {replay['trivial_seconds']:.1f} s | "
        f"{replay['seconds'] / replay['trivial_seconds']:.2f}× (≤ 2×) |",
        f"| cold shard 1/4 from S3 | {cold['downloaded']:,} tapes downloaded | a quarter: "
        f"{cold['quarter']:,.0f} | {cold['downloaded'] / cold['quarter']:.2f}× |",
        f"| 4 shards by durations: replay time each | "
        f"{', '.join(f'{s:.1f}' for s in shards)} s | mean {mean:.1f} s | "
        f"max deviation {spread:.1f} % (≤ ±10 %) |",
        f"| 4 shards: wall time of each pytest run | "
        f"{', '.join(f'{w:.1f}' for w in walls)} s | mean {wall_mean:.1f} s | "
        f"max deviation {wall_spread:.1f} % |",
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tapes", type=int, default=10_000, help="corpus size (10,000)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sessiontape-fleet-bench-") as scratch:
        figures = measure(args.tapes, Path(scratch))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(markdown(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
