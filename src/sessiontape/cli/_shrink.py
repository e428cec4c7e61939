"""The smallest tape that still fails the same way: ``sessiontape shrink TAPE -o SMALL``.

The command parses and reports; the engine is :func:`sessiontape.reduce.shrink` (the
search, the cuts, the replay workers). Each candidate is replayed as ``pytest --replay``
replays it, through the project's ``sessiontape_replay`` hook (from the conftest.py pytest
finds in the current directory), in worker processes (``-j N``, all cores by default).
``--until "CMD {}"`` replaces that test with a shell command run on the candidate's path
(exit 0: still interesting). The best tape so far is always at OUT, so ``--budget`` and
Ctrl-C leave a usable result. The input is never written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ..cassette import load
from ._common import (
    CommandError,
    add_workers_option,
    plural,
    print_json,
    read_recording,
    seconds,
)

if TYPE_CHECKING:
    # The engine loads when shrink runs, not with every other command (start-up time).
    from ..reduce import ShrinkProgress, ShrinkResult

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "the smallest tape that still fails the same way (for a fixture)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``shrink`` options."""
    parser.add_argument("path", metavar="TAPE", help="a tape whose replay fails")
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="where to write the small tape"
    )
    parser.add_argument(
        "--until",
        metavar="CMD",
        help="a shell command that decides instead of a replay: {} is the candidate's path; "
        "exit 0 means it is still interesting",
    )
    parser.add_argument(
        "--budget", type=seconds, metavar="SECONDS", help="stop after SECONDS with the best so far"
    )
    add_workers_option(parser, "-j", "--jobs", auto=False)
    parser.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="give up on a candidate after SECONDS (default: 10 times the tape's replay, "
        "at least 30 s)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def _progress_line(stream: Any) -> Callable[[ShrinkProgress], None] | None:
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()):
        return None

    def show(progress: ShrinkProgress) -> None:
        stream.write(
            f"\r\x1b[Kshrink: {progress.candidates:,} candidates, {progress.entries:,} "
            f"entries now, {progress.seconds:.1f} s ({progress.phase})"
        )
        stream.flush()

    return show


def run(args: argparse.Namespace) -> int:
    """``sessiontape shrink``."""
    from ..reduce import check_output, shrink

    check_output(args.path, args.output)
    recording = read_recording(args.path)
    try:
        result = shrink(
            recording,
            args.output,
            jobs=args.jobs,
            until=args.until,
            budget=args.budget,
            timeout=args.timeout,
            progress=_progress_line(sys.stderr),
        )
    finally:
        if sys.stderr.isatty():
            sys.stderr.write("\r\x1b[K")
    return _report(args, result)


def _report(args: argparse.Namespace, result: ShrinkResult) -> int:
    from ._validate import ERROR, check

    errors = [f for f in check(load(args.output), secrets=False) if f.severity == ERROR]
    figures = {
        "input": args.path,
        "output": args.output,
        "entries_before": result.entries_before,
        "entries_after": result.entries_after,
        "failure": str(result.failure),
        "candidates": result.candidates,
        "seconds": round(result.seconds, 3),
        "seconds_per_candidate": (
            round(result.seconds / result.candidates, 4) if result.candidates else None
        ),
        "search_seconds": round(result.search_seconds, 3),
        "replay_seconds": round(result.replay_seconds, 4),
        "steps": result.steps,
        "interrupted": result.interrupted,
        "budget_spent": result.budget_spent,
        "valid": not errors,
    }
    if args.json:
        print_json(figures)
    else:
        stopped = (
            " (interrupted: the best so far)"
            if result.interrupted
            else " (budget spent: the best so far)"
            if result.budget_spent
            else ""
        )
        print(
            f"{args.path}: {plural(result.entries_before, 'entry', 'entries')} -> "
            f"{plural(result.entries_after, 'entry', 'entries')}, still failing with "
            f"{result.failure}; {plural(result.candidates, 'candidate')} in "
            f"{result.seconds:.1f} s{stopped}; wrote {args.output}."
        )
    if errors:
        raise CommandError(
            f"{args.output}: the shrunk tape does not validate ({errors[0].message}). This is "
            "a bug in sessiontape shrink; please report it with the tape."
        )
    return 130 if result.interrupted else 0
