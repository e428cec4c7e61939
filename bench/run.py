"""sessiontape's benchmark suite: hours of session replayed in seconds, measured side by side.

One command runs everything and writes the results::

    python bench/run.py                  # full suite: BENCHMARKS.json + BENCHMARKS.md
    python bench/run.py --quick          # small sizes, a minute; prints the table only
    python bench/run.py --quick --out q.json --markdown q.md

It generates synthetic session tapes (``bench/gen.py``: 10k and 100k entries and an
eight-hour session of 260k), then measures, each figure against a baseline taken in the
same run: one replayed process call (vs a bare deque, pytest-subprocess and vcrpy), the
eight-hour tape end to end (vs msgspec decoding the file), load throughput and peak
memory (vs the file size), recording overhead (vs the unwrapped runner, and on the
example orchestrator's run), the cost of a disabled recorder, and ``sessiontape report``
on a 120k-entry tape (vs the tape's size and load time). Tapes are generated only for
the cases that read them. The checkout's ``src/`` is measured, whatever sessiontape is
installed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

BENCH: Final = Path(__file__).resolve().parent
ROOT: Final = BENCH.parent
for _path in (ROOT / "src", BENCH):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import gen  # noqa: E402
from cases import common, disabled, end_to_end, load, record, replay_call, report  # noqa: E402
from figures import TARGETS, figures  # noqa: E402
from render import render_markdown  # noqa: E402

__all__ = ["PROFILES", "TARGETS", "figures", "main", "render_markdown", "run_suite"]

#: Sizes and repetitions per mode. ``tiny`` is what the smoke test runs.
PROFILES: Final[dict[str, dict[str, Any]]] = {
    "full": {
        "tapes": {"small": (10_000, None), "medium": (100_000, None), "long": (260_000, 8.0)},
        "workers": 8,
        "calls": 1000,
        "batches": 40,
        "vcr_interactions": 1000,
        "vcr_batches": 3,
        "e2e_repeat": 3,
        "load_repeat": 3,
        "orchestrator_runs": 15,
        "disabled_calls": 10_000,
        "report_entries": 120_000,
        "report_repeat": 5,
    },
    "quick": {
        "tapes": {"small": (2_000, None), "medium": (5_000, None), "long": (20_000, None)},
        "workers": 4,
        "calls": 500,
        "batches": 10,
        "vcr_interactions": 100,
        "vcr_batches": 2,
        "e2e_repeat": 1,
        "load_repeat": 2,
        "orchestrator_runs": 3,
        "disabled_calls": 2000,
        "report_entries": 20_000,
        "report_repeat": 2,
    },
    "tiny": {
        "tapes": {"small": (200, None), "medium": (300, None), "long": (400, None)},
        "workers": 3,
        "calls": 50,
        "batches": 3,
        "vcr_interactions": 10,
        "vcr_batches": 1,
        "e2e_repeat": 1,
        "load_repeat": 1,
        "orchestrator_runs": 1,
        "disabled_calls": 200,
        "report_entries": 300,
        "report_repeat": 1,
    },
}


ALL_CASES: Final = ("disabled", "record", "replay_call", "end_to_end", "load", "report")
#: The cases that read the generated tapes of a profile's ``tapes``.
_TAPE_CASES: Final = ("end_to_end", "load")


def run_suite(
    mode: str = "full",
    *,
    workdir: Path,
    cases: tuple[str, ...] = ALL_CASES,
    others: bool = True,
    log: Any = print,
) -> dict[str, Any]:
    """Generate the tapes and run ``cases``; return the results (see ``figures``)."""
    prof = PROFILES[mode]
    began = time.perf_counter()
    results: dict[str, Any] = {
        "schema": 1,
        "mode": mode,
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": None,
        "machine": common.machine(str(ROOT)),
        "profile": {
            k: (v if k != "tapes" else {n: list(t) for n, t in v.items()}) for k, v in prof.items()
        },
        "tapes": {},
        "results": {},
    }
    for name, (entries, hours) in prof["tapes"].items():
        if not set(cases) & set(_TAPE_CASES):
            break
        log(f"generating the {name} tape ({entries:,} entries)...")
        info = gen.generate(
            workdir / f"{name}.jsonl", entries, workers=prof["workers"], hours=hours
        )
        results["tapes"][name] = asdict(info)
    res = results["results"]
    if "disabled" in cases:
        log("disabled recorder...")
        res["disabled"] = disabled.run(
            calls=prof["disabled_calls"], batches=prof["batches"], workdir=workdir
        )
    if "record" in cases:
        log("recording overhead...")
        res["record"] = record.run(
            calls=prof["calls"],
            batches=prof["batches"],
            orchestrator_runs=prof["orchestrator_runs"],
            workdir=workdir,
        )
    if "replay_call" in cases:
        log("one replayed call (sessiontape, deque, pytest-subprocess, vcrpy)...")
        res["replay_call"] = replay_call.run(
            calls=prof["calls"],
            batches=prof["batches"],
            vcr_interactions=prof["vcr_interactions"],
            vcr_batches=prof["vcr_batches"],
            workdir=workdir,
            others=others,
        )
    if "end_to_end" in cases:
        long_tape = results["tapes"]["long"]
        log(f"the long tape end to end ({long_tape['entries']:,} entries)...")
        res["end_to_end"] = end_to_end.run(
            path=long_tape["path"],
            file_bytes=long_tape["bytes"],
            repeat=prof["e2e_repeat"],
            workdir=workdir,
        )
    if "load" in cases:
        log("load throughput and peak memory...")
        res["load"] = load.run(tapes=results["tapes"], repeat=prof["load_repeat"])
    if "report" in cases:
        entries = prof["report_entries"]
        log(f"generating the report tape ({entries:,} entries)...")
        info = gen.generate(workdir / "report.jsonl", entries, workers=prof["workers"])
        results["tapes"]["report"] = asdict(info)
        log("sessiontape report against sessiontape.load...")
        res["report"] = report.run(path=info.path, workdir=workdir, repeat=prof["report_repeat"])
    results["figures"] = figures(results)
    results["duration_s"] = round(time.perf_counter() - began, 1)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few repetitions (about a minute)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON results (default: BENCHMARKS.json in a full run of every case)",
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        default=None,
        help="Markdown report (default: BENCHMARKS.md in a full run of every case)",
    )
    parser.add_argument(
        "--only",
        default=",".join(ALL_CASES),
        help=f"comma-separated cases to run (default all: {','.join(ALL_CASES)})",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where to write the tapes (default: a temporary directory)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--render",
        type=Path,
        default=None,
        metavar="RESULTS.json",
        help="measure nothing: write the Markdown report (--markdown) of a saved run",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="OLD.json",
        help="add the figures of an earlier run's JSON as a 'before' column",
    )
    parser.add_argument(
        "--compare-label",
        default="the same suite run on the previous checkout",
        help="how the 'before' column is described",
    )
    args = parser.parse_args(argv)
    cases = tuple(c.strip() for c in args.only.split(",") if c.strip())
    unknown = sorted(set(cases) - set(ALL_CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {list(ALL_CASES)}")
    if args.render is not None:
        saved = json.loads(args.render.read_text(encoding="utf-8"))
        text = render_markdown(saved)
        if args.markdown is not None:
            args.markdown.write_text(text + "\n", encoding="utf-8")
        else:
            print(text)
        return 0
    mode = "quick" if args.quick else "full"
    out, markdown = args.out, args.markdown
    # Only a full run of every case replaces the committed report; a partial run (--only)
    # prints its table and writes files only when asked to.
    partial = set(cases) != set(ALL_CASES)
    if mode == "full" and not partial and out is None and markdown is None:
        out, markdown = ROOT / "BENCHMARKS.json", ROOT / "BENCHMARKS.md"
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sessiontape-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        results = run_suite(
            mode,
            workdir=workdir,
            cases=cases,
            log=lambda msg: print(f"[bench] {msg}", file=sys.stderr, flush=True),
        )
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    command = ["python", "bench/run.py"]
    if args.quick:
        command.append("--quick")
    if args.only != ",".join(ALL_CASES):
        command += ["--only", args.only]
    results["command"] = shlex.join(command)
    for path in results["tapes"].values():
        path["path"] = os.path.basename(path["path"])
    if args.compare is not None:
        old = json.loads(args.compare.read_text(encoding="utf-8"))
        results["previous"] = {
            "label": args.compare_label,
            "command": old.get("command"),
            "started_at": old.get("started_at"),
            "machine": {"git_revision": old.get("machine", {}).get("git_revision")},
            "figures": old.get("figures", []),
        }
    if out is not None:
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    text = render_markdown(results)
    if markdown is not None:
        markdown.write_text(text + "\n", encoding="utf-8")
    summary = text.split("## Machine")[0]
    print(summary)
    gc.collect()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
