"""Where a chaos failure became certain: ``sessiontape explain RECEIPT``.

RECEIPT is the receipt a chaos run wrote (``pytest --replay X --sessiontape-chaos N
--sessiontape-report RECEIPT``). For its failing schedule (the first one, or the one of
``--nodeid``), explain replays that schedule's tape as ``pytest --replay`` does, through
the project's ``sessiontape_replay`` hook (from the conftest.py pytest finds in the
current directory), under ``--sessiontape-chaos-explain``: the failing schedule's first k
decisions kept, the rest chosen at random (M schedules per estimate, seeded), bisection
over k. It prints the point of no return (the decision after which the failure was
certain, named by the two calls it ordered), the probability row, and how many schedules
ran. The command it runs is built from the receipt's typed fields (the tape, seed,
strategy, depth), never taken from it as text: a receipt is data.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

import msgspec

from ._common import CommandError, print_json
from ._receipt import ReceiptReport, read_receipt

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "the scheduling decision after which a chaos failure was certain"
_STRATEGIES: Final = ("pct", "random")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``explain`` options."""
    parser.add_argument(
        "receipt",
        metavar="RECEIPT",
        help="the receipt of a chaos run: pytest --sessiontape-chaos N --sessiontape-report PATH",
    )
    parser.add_argument(
        "--nodeid", help="explain the failing schedule of this test item (default: the first)"
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=None,
        metavar="M",
        help="schedules per estimate (default 20)",
    )
    parser.add_argument("--json", action="store_true", help="print the explanation as JSON")


def run(args: argparse.Namespace) -> int:
    receipt = read_receipt(args.receipt)
    failing = [r for r in receipt.reports if r.chaos_failed and (args.nodeid in (None, r.nodeid))]
    if not failing:
        which = f" of {args.nodeid}" if args.nodeid else ""
        raise CommandError(
            f"{args.receipt} holds no failing chaos schedule{which}: explain needs one. "
            "Find one with: pytest --replay TAPE --sessiontape-chaos 100 "
            "--sessiontape-report receipt.json"
        )
    if args.samples is not None and args.samples < 1:
        raise CommandError(f"--samples must be 1 or more, got {args.samples}.")
    explained = _explain(failing[0], args.samples)
    if args.json:
        print_json(explained)
        return 0
    from ..report import Explanation

    print(msgspec.convert(explained, Explanation).render())
    return 0


def _argv(report: ReceiptReport, samples: int | None, out: str) -> list[str]:
    """The pytest command that explains ``report``'s schedule, from its typed fields."""
    chaos = report.chaos or {}
    seed, strategy, depth = chaos.get("seed"), chaos.get("strategy"), chaos.get("depth")
    tape = report.report.cassette
    if not (isinstance(seed, int) and strategy in _STRATEGIES and isinstance(depth, int)):
        raise CommandError(
            f"the failing schedule of {report.nodeid or tape} has no seed, strategy and "
            "depth in the receipt: write the receipt again with pytest --sessiontape-report."
        )
    if not tape or not os.path.isfile(tape):
        raise CommandError(
            f"the tape of {report.nodeid or 'the failing schedule'} ({tape!r}) is not a file "
            "here: run explain in the directory the chaos run ran in."
        )
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--replay", tape]
    argv += ["--sessiontape-chaos-seed", str(seed), "--sessiontape-chaos-strategy", strategy]
    argv += ["--sessiontape-chaos-depth", str(depth), "--sessiontape-chaos-explain"]
    if samples is not None:
        argv += ["--sessiontape-chaos-explain-samples", str(samples)]
    return [*argv, "--sessiontape-report", out]


def _explain(report: ReceiptReport, samples: int | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sessiontape-explain-") as work:
        out = str(Path(work) / "receipt.json")
        argv = _argv(report, samples, out)
        print(
            f"sessiontape explain: {report.nodeid or report.report.cassette} ...", file=sys.stderr
        )
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        try:
            items = msgspec.json.decode(Path(out).read_bytes())
        except (OSError, msgspec.DecodeError):
            items = []
    for item in items if isinstance(items, list) else []:
        chaos = item.get("chaos") if isinstance(item, dict) else None
        if isinstance(chaos, dict) and isinstance(chaos.get("explain"), dict):
            explained: dict[str, Any] = chaos["explain"]
            return explained
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
    raise CommandError(
        "the schedule's replay gave no explanation (did it fail again?). pytest said:\n" + tail
    )
