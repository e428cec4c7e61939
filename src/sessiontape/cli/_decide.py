"""``sessiontape pending``, ``accept`` and ``reject``: pending changes for scripts.

``pending [PATH...] [--json]`` lists every pending change under the paths (a tape, a
pending file, or a folder searched recursively; the current folder by default): id,
tape, category, worker, boundary, seq, field changes. ``accept ID...|--all`` and
``reject ID...|--all`` decide them without a terminal; accepting writes the tape the way
every rewrite does (a new file beside, flushed, validated, renamed over). An id no
pending file holds, or a pending file whose tape changed since, stops the command before
anything is written.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Final

from ._common import plural, print_json

if TYPE_CHECKING:
    from ..cassette import Decision

__all__ = ["ACCEPT", "PENDING", "REJECT", "WHAT"]

#: What happened to the call, in words, by ``PendingChange.change``.
WHAT: Final = {
    "request": "request rewritten",
    "result": "result rewritten",
    "outcome": "outcome rewritten",
    "dropped": "call no longer made, dropped",
    "added": "call created",
    "answer": "answer changed, re-recorded live",
}


def _add_paths(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--path",
        dest="paths",
        action="append",
        default=[],
        metavar="PATH",
        help="a tape, a pending file or a folder to look in (repeatable; default: the "
        "current folder, recursively)",
    )


class _Pending:
    """List the pending changes under the paths given (the current folder by default):
    per change its id, tape, category (fix, trim, create, update), worker, boundary, seq
    and the fields that change. --json for scripts; every id it prints is one ``sessiontape
    accept`` and ``sessiontape reject`` take."""

    SUMMARY: Final = "list the pending changes an update left beside its tapes (--json)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "paths", nargs="*", metavar="PATH", help="tapes, pending files or folders"
        )
        parser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: argparse.Namespace) -> int:
        from ..review import open_pending  # the replay engine: only when a command runs

        tapes = open_pending(args.paths)
        if args.json:
            print_json([c for t in tapes for c in t.to_data()])
            return 0
        if not tapes:
            print("no pending changes")
            return 0
        for tape in tapes:
            print(f"{tape.tape}: {plural(len(tape.undecided), 'pending change')}")
            for c in tape.undecided:
                at = f"seq {c.seq}" if c.seq is not None else "new call"
                what = WHAT.get(c.change, c.change)
                print(f"  {c.id:<16} {at} ({c.worker}, {c.boundary}) {what}")
        print("review them: sessiontape review")
        return 0


class _Decide:
    """Decide pending changes by id (as ``sessiontape pending --json`` lists them), or
    every change still pending with --all."""

    def __init__(self, decision: Decision) -> None:
        self.decision: Decision = decision
        self.SUMMARY = (
            f"{decision} pending changes by id, or --all (accepting writes the tape)"
            if decision == "accept"
            else f"{decision} pending changes by id, or --all (the tape keeps its recording)"
        )
        self.__doc__ = (
            f"{decision.capitalize()} pending changes by id (as ``sessiontape pending "
            "--json`` lists them), or every change still pending with --all. Accepted "
            "changes are written into the tape (a new file beside, validated, renamed "
            "over); a rejected change keeps the recorded entry, so the test keeps failing "
            "there. Once every change of a tape is decided its pending file is removed."
        )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("ids", nargs="*", metavar="ID", help="the changes' ids")
        parser.add_argument(
            "--all", dest="every", action="store_true", help="every change still pending"
        )
        _add_paths(parser)

    def run(self, args: argparse.Namespace) -> int:
        from ..review import decide

        done = decide(self.decision, args.ids, args.paths, every=args.every)
        for tape, ids, saved in done:
            wrote = f"; wrote {saved.tape}" if saved.tape is not None else ""
            left = len(tape.undecided)
            rest = f"; {plural(left, 'change')} still pending" if left else "; nothing pending"
            print(f"{tape.tape}: {plural(len(ids), 'change')} {self.decision}ed{wrote}{rest}")
        if not done:
            where = ", ".join(map(os.fspath, args.paths or ["."]))
            print(f"no pending changes under {where}")
        return 0


PENDING: Final = _Pending()
ACCEPT: Final = _Decide("accept")
REJECT: Final = _Decide("reject")
