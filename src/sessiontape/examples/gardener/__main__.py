"""``python -m sessiontape.examples.gardener record-corpus DIR``: (re)record the regression tapes.

Records one cassette per scenario (``gardener-<scenario>.jsonl``) from a live run in a
temporary directory. Each new tape is written beside the old one and moved over it only
once it is complete and replays green, so a failed recording loses nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ._scenarios import SCENARIOS
from ._session import DEFAULT_WORKERS, record_scenario, replay_scenario

CORPUS_SCENARIOS = ("happy", "review", "conflict", "crash", "full")


def record_corpus(directory: Path, scenarios: Sequence[str], workers: int) -> int:
    """Record each scenario into ``directory``; returns the number that failed."""
    directory.mkdir(parents=True, exist_ok=True)
    failures = 0
    for scenario in scenarios:
        target = directory / f"gardener-{scenario}.jsonl"
        work = Path(tempfile.mkdtemp(prefix=f"gardener-{scenario}-"))
        fresh = work / target.name
        try:
            try:
                record_scenario(fresh, work / "live", scenario, workers)
            except Exception as exc:  # the crash scenario ends in its crash
                print(f"{scenario}: the recorded session crashed ({type(exc).__name__}: {exc})")
            report = replay_scenario(fresh, work / "replay")
            if not report.ok:
                failures += 1
                print(f"{scenario}: the new tape does not replay green; kept the old one.")
                print(report.render())
                continue
            os.replace(fresh, target)
            print(f"{scenario}: recorded {target} ({report.loaded} calls), replays green")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return failures


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m sessiontape.examples.gardener")
    sub = parser.add_subparsers(dest="command", required=True)
    corpus = sub.add_parser("record-corpus", help="record the regression cassettes")
    corpus.add_argument("directory", type=Path, help="where to write the cassettes")
    corpus.add_argument(
        "--scenario",
        action="append",
        choices=sorted(SCENARIOS),
        help="record only this scenario (repeatable; default: " + ", ".join(CORPUS_SCENARIOS) + ")",
    )
    corpus.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    args = parser.parse_args(argv)
    return (
        1 if record_corpus(args.directory, args.scenario or CORPUS_SCENARIOS, args.workers) else 0
    )


if __name__ == "__main__":
    sys.exit(main())
