"""What a folder of tapes covers and what it repeats; ``--minimize`` keeps each behaviour once.

The command parses and reports; the engine is :func:`sessiontape.reduce.survey` (replays,
call shapes, the set cover) and :func:`sessiontape.reduce.move_out`. Every tape is
replayed as ``pytest --replay DIR`` replays it (through the project's
``sessiontape_replay`` hook, spread over ``-n`` worker processes as ``-n auto`` spreads
it), and covers the call shapes it replays: the boundary and the normalised request (a
process's program, subcommand and flag names, a store's operation, an agent's step kind
and request keys, a user boundary's method). With ``--coverage SRC`` it also covers the
lines of SRC its replay executes (coverage.py, the ``coverage`` extra).

``--minimize`` picks the smallest set of passing tapes that covers everything the passing
tapes cover (greedy set cover: the tape adding most first, the shorter of two equal ones),
so the only tape of a shape is always kept, and lists the others; ``--move-to DIR2`` moves
those there (their sidecar payloads with them). Nothing is deleted, nothing is written
over, and only files proven to be cassettes are moved. A tape whose replay fails covers
nothing: it is listed as failing (exit 1), stays where it is, and never stands in for a
passing tape.

DIR may be a store URL (``s3://bucket/tapes``, ``file:///srv/tapes``, ``memory://x``): its
tapes are read through the local cache as ``list URL`` reads them, and replayed from
there. A store is only ever read: ``--move-to`` is refused for a URL, since moving a tape
out of a store would delete it there (where other CI jobs may be replaying it). For a
smaller store: ``pull URL DIR``, ``corpus DIR --minimize --move-to DIR2``, ``push DIR
NEW_URL``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ._common import CommandError, add_workers_option, plural, print_json

if TYPE_CHECKING:
    # The engine loads when corpus runs, not with every other command (start-up time).
    from ..reduce import CorpusResult

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "what a folder of tapes covers and repeats; --minimize keeps each shape once"

#: Repeated shapes shown in the plain report.
_SHOWN: Final = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``corpus`` options."""
    parser.add_argument(
        "path",
        metavar="DIR",
        help="a folder of cassettes, or a store URL (s3://bucket/tapes, file:///x: read "
        "through the local cache)",
    )
    parser.add_argument(
        "--minimize", action="store_true", help="list the smallest set that covers everything"
    )
    parser.add_argument(
        "--move-to",
        metavar="DIR2",
        help="with --minimize: move the other tapes to DIR2 (a local folder only; the tapes "
        "of a store URL are never moved)",
    )
    parser.add_argument(
        "--coverage", metavar="SRC", help="also cover the lines of SRC each replay executes"
    )
    add_workers_option(parser, "-n", "--numprocesses", auto=True)
    parser.add_argument(
        "--dist",
        choices=("load", "no"),
        default="load",
        help="'load' spreads the tapes over the workers; 'no' replays them in one",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _check_move_to(args: argparse.Namespace, url: bool) -> None:
    """Refuse a ``--move-to`` that would lose or hide tapes, before anything is replayed."""
    if args.move_to is None:
        return
    if not args.minimize:
        raise CommandError("--move-to moves what --minimize leaves out; add --minimize.")
    if url:
        # Moving out of a store deletes there, and other CI jobs may be reading it.
        raise CommandError(
            f"--move-to moves tapes out of a local folder, and {args.path} is a store: "
            "sessiontape never deletes or moves anything in a store. Leave --move-to out to "
            "list the tapes to keep; for a smaller store, 'sessiontape pull URL DIR', "
            "'sessiontape corpus DIR --minimize --move-to DIR2', then 'sessiontape push DIR "
            "NEW_URL'."
        )
    if "://" in args.move_to:
        raise CommandError(
            f"--move-to {args.move_to}: give a local folder; tapes are not moved to a store."
        )
    root = Path(args.path).resolve()
    target = Path(args.move_to).resolve()
    if target == root or root in target.parents:
        raise CommandError(
            f"{args.move_to}: is inside {args.path}, where the moved tapes would be found "
            "(and replayed) again; name a folder outside it."
        )


def _discovered(path: str, url: bool) -> tuple[list[tuple[str, Path]], str]:
    """The corpus's tapes as ``(name, local file)``, and the path pytest is anchored at.

    A store's tapes are read through the local cache, as ``list URL`` reads them (the
    fleet layer is imported only then); the anchor is then the store's cache folder.
    """
    if url:
        from ..fleet import LocalCache, TapeStore, user_cache_dir

        store = TapeStore(path)
        cache = LocalCache(user_cache_dir())
        found = [(tape.name, cache.fetch(store, tape)) for tape in store.tapes()]
        return found, str(cache.folder(store))
    if not Path(path).is_dir():
        raise CommandError(f"{path}: not a folder; name a folder of cassettes.")
    from ._catalog import _discover as discover

    return list(discover([path])), path


def run(args: argparse.Namespace) -> int:
    """``sessiontape corpus``."""
    from ..reduce import survey

    url = "://" in args.path
    _check_move_to(args, url)
    if args.coverage is not None:
        try:
            import coverage  # noqa: F401
        except ImportError:
            raise CommandError(
                "--coverage needs coverage.py: pip install 'sessiontape[coverage]'."
            ) from None
        args.coverage = os.path.abspath(args.coverage)
    found, anchor = _discovered(args.path, url)
    jobs = 1 if args.dist == "no" else max(1, args.numprocesses)
    return _report(args, survey(found, anchor=anchor, jobs=jobs, coverage=args.coverage))


def _report(args: argparse.Namespace, result: CorpusResult) -> int:
    from ..reduce import move_out

    tapes, keep, rest, failing = result.tapes, result.keep, result.redundant, result.failing
    shapes, lines = result.shapes, result.lines
    moved: list[str] = []
    if args.minimize and args.move_to is not None:
        done = move_out(rest, Path(args.move_to))
        for refused in done.refused:
            print(f"sessiontape: warning: {refused}", file=sys.stderr)
        moved = done.moved
    covered = f"{plural(len(shapes), 'call shape')}"
    if args.coverage is not None:
        covered += f" and {len(lines):,} lines"
    headline = f"{len(tapes):,} tapes -> {len(keep):,} keep all {covered}"
    if args.json:
        print_json(
            {
                "tapes": len(tapes),
                "keep": [t.name for t in keep],
                "redundant": [t.name for t in rest],
                "moved": moved,
                "shapes": len(shapes),
                "lines": len(lines) if args.coverage is not None else None,
                "shape_counts": dict(shapes.most_common()),
                "failing": {t.name: t.problem for t in failing},
            }
        )
    else:
        print(headline)
        if args.minimize:
            for tape in keep:
                print(f"keep     {tape.name}")
            for tape in rest:
                verb = "moved   " if tape.name in moved else "repeats "
                print(f"{verb} {tape.name}")
        else:
            single = sum(1 for count in shapes.values() if count == 1)
            print(
                f"{single} shapes have a single tape; {len(rest)} tapes add nothing the others "
                "do not cover ('--minimize' lists them, '--move-to DIR2' moves them)."
            )
            for shape, count in shapes.most_common(_SHOWN):
                if count > 1:
                    print(f"  {count:>5} tapes  {shape}")
        for tape in failing:
            print(f"failing  {tape.name}: {tape.problem}")
    return 1 if failing else 0
