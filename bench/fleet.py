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
  each shard's replay time against the mean, measured several ways (see ``_shards``): the
  CPU time of each shard's pytest run is the figure a busy machine moves least.

The corpus mixes tiny one-call tapes with copies of the shipped gardener tapes (one in
twenty), so that shards only balance when the durations are used. Needs the ``s3`` and
``test`` extras and ``moto[server]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
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

from sessiontape.fleet import Durations  # noqa: E402

#: One tape in this many is a copy of a gardener tape (a longer replay).
_GARDENER_EVERY: Final = 20
#: Each shard runs this many times (in alternating order); its best run counts.
_SHARD_ROUNDS: Final = 2
_CONFTEST: Final = """
from corpus_app import app
from sessiontape.examples.gardener import replay_hook


def sessiontape_replay(tape, recording):
    handled = replay_hook(tape, recording)
    return app(tape) if handled is None else handled
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


def _cpu_seconds() -> float:
    """User + system CPU time of every child waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _shards(
    pytest: list[str], project: Path, env: dict[str, str], workdir: Path, receipt: Path
) -> dict[str, list[float]]:
    """Each of four shards' replay time, three ways, best of ``_SHARD_ROUNDS`` runs.

    The shards run one after another on a machine others use too, so one run's wall time
    says as much about the neighbours as about the split. Three measures, each the best of
    runs in alternating order (1 2 3 4 4 3 2 1), so that a busy minute cannot land on one
    shard only:

    * ``replay_seconds``: the sum of the shard's own per-tape replay durations (its
      receipt): the work the split had to balance, without pytest's fixed cost;
    * ``cpu_seconds``: CPU time of the shard's pytest process (start-up and collection
      included), which a neighbour's load barely moves;
    * ``wall_seconds``: wall time of the shard's pytest process, what CI waits for;
    * ``serial_seconds``: the shard's tapes' durations as one serial run of the whole
      corpus measured them (the same minute for every shard, its tapes interleaved with
      the others'): the split judged by a measurement it did not read.

    ``planned_seconds`` is the split's own view: the sum, per shard, of the durations the
    balancing read (from the ``-n 2`` receipt).
    """
    durations = Durations.from_receipts([receipt])
    best: dict[str, list[float]] = {
        key: [float("inf")] * 4 for key in ("replay_seconds", "cpu_seconds", "wall_seconds")
    }
    best["planned_seconds"] = [0.0] * 4
    order = [*range(1, 5)] * _SHARD_ROUNDS
    for round_ in range(_SHARD_ROUNDS):
        if round_ % 2:
            order[4 * round_ : 4 * round_ + 4] = range(4, 0, -1)
    members: dict[int, list[str]] = {}
    for index in order:
        part = workdir / f"shard-{index}.json"
        cpu = _cpu_seconds()
        wall, _ = _run(
            [*pytest, "--replay", "tapes", "--sessiontape-shard", f"{index}/4",
             "--sessiontape-durations", str(receipt), "--sessiontape-report", str(part)],
            project,
            env,
        )  # fmt: skip
        cpu = _cpu_seconds() - cpu
        reports = json.loads(part.read_text())
        members[index] = [Path(r["cassette"]).name for r in reports]
        slot = index - 1
        replayed = sum(r["replay_duration_ns"] for r in reports) / 1e9
        best["replay_seconds"][slot] = min(best["replay_seconds"][slot], replayed)
        best["cpu_seconds"][slot] = min(best["cpu_seconds"][slot], cpu)
        best["wall_seconds"][slot] = min(best["wall_seconds"][slot], wall)
        best["planned_seconds"][slot] = sum(
            durations.of(Path(r["cassette"]).name, r.get("run_id")) for r in reports
        )
    serial = workdir / "serial.json"
    _run([*pytest, "--replay", "tapes", "--sessiontape-report", str(serial)], project, env)
    measured = {
        Path(r["cassette"]).name: r["replay_duration_ns"] / 1e9
        for r in json.loads(serial.read_text())
    }
    best["serial_seconds"] = [sum(measured[n] for n in members[i]) for i in range(1, 5)]
    return best


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
        out["shards"] = _shards(pytest, project, env, workdir, receipt)
        return out
    finally:
        server.stop()


#: The shard figures, each a row of the table.
_SHARD_ROWS: Final = (
    ("planned_seconds", "planned (the -n 2 receipt's durations, summed)"),
    ("serial_seconds", "replay time (one serial run's per-tape durations, summed)"),
    ("replay_seconds", "replay time (each shard's own per-tape durations, summed)"),
    ("cpu_seconds", "CPU time of each pytest run"),
    ("wall_seconds", "wall time of each pytest run"),
)


def _shard_row(what: str, seconds: list[float]) -> str:
    mean = statistics.fmean(seconds)
    spread = max(abs(s - mean) / mean for s in seconds) * 100
    each = ", ".join(f"{s:.1f}" for s in seconds)
    return f"| {what} | {each} s | mean {mean:.1f} s | max deviation {spread:.1f} % (≤ ±10 %) |"


def markdown(figures: dict[str, Any]) -> str:
    tapes = figures["tapes"]
    first, second = figures["push_first"], figures["push_second"]
    replay = figures["replay_n2"]
    cold = figures["cold_shard"]
    shards = figures["shards"]
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
        *(_shard_row(f"4 shards by durations: {label}", shards[key]) for key, label in _SHARD_ROWS),
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
