"""What a folder of tapes covers and what it repeats; ``--minimize`` keeps each behaviour once.

Every tape is replayed as ``pytest --replay DIR`` replays it (through the project's
``sessiontape_replay`` hook, spread over ``-n`` worker processes as ``-n auto`` spreads
it), and covers the call shapes it replays: the boundary and the normalised request (a
process's program, subcommand and flag names, a store's operation, an agent's step kind
and request keys, a user boundary's method). With ``--coverage SRC`` it also covers the
lines of SRC its replay executes (coverage.py, the ``coverage`` extra).

``--minimize`` picks the smallest set of tapes that covers everything the whole corpus
covers (greedy set cover: the tape adding most first, the shorter of two equal ones), so
the only tape of a shape is always kept, and lists the others; ``--move-to DIR2`` moves
those there (their sidecar payloads with them). Nothing is deleted, nothing is written
over, and only files proven to be cassettes are moved. A tape whose replay fails is
reported (exit 1) and kept.

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
import shutil
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..cassette import is_cassette, load, sidecar_dir
from ..report import call_shape
from ._common import CommandError, add_workers_option, plural, print_json

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


@dataclass
class _Tape:
    name: str
    path: Path
    entries: int
    shapes: set[str]
    lines: frozenset[str] = frozenset()
    passed: bool = True
    skipped: bool = False
    problem: str = ""
    features: set[str] = field(default_factory=set)


def _replayed(paths: Sequence[Path], root: str, args: argparse.Namespace) -> list[Any]:
    from ._pool import Pool

    jobs = 1 if args.dist == "no" else max(1, args.numprocesses)
    with Pool(root, jobs=jobs, coverage=args.coverage) as pool:
        return pool.run([str(p) for p in paths])


def _cover(tapes: list[_Tape]) -> list[_Tape]:
    """Greedy set cover: tapes that fail are kept as they are; then, while something is
    uncovered, the tape that covers most of it (fewer entries first on a tie)."""
    keep = [t for t in tapes if not t.passed or t.skipped]
    covered: set[str] = set()
    for tape in keep:
        covered |= tape.features
    wanted = set().union(*(t.features for t in tapes)) - covered if tapes else set()
    candidates = [t for t in tapes if t.passed and not t.skipped]
    while wanted:
        best = max(candidates, key=lambda t: (len(t.features & wanted), -t.entries, t.name))
        gain = best.features & wanted
        if not gain:  # pragma: no cover - every wanted feature comes from some tape
            break
        keep.append(best)
        wanted -= gain
        candidates.remove(best)
    return sorted(keep, key=lambda t: t.name)


def _move(tapes: list[_Tape], target: Path) -> list[str]:
    """Move each tape (and its sidecar) under ``target``; never over an existing file."""
    moved: list[str] = []
    for tape in tapes:
        destination = target / tape.name
        if not tape.path.is_file() or tape.path.is_symlink() or not is_cassette(tape.path):
            print(
                f"sessiontape: warning: {tape.path}: not moved (not a cassette file).",
                file=sys.stderr,
            )
            continue
        if destination.exists():
            print(
                f"sessiontape: warning: {tape.path}: not moved, {destination} exists.",
                file=sys.stderr,
            )
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        blobs = sidecar_dir(tape.path)
        shutil.move(str(tape.path), str(destination))
        if blobs.is_dir() and not sidecar_dir(destination).exists():
            shutil.move(str(blobs), str(sidecar_dir(destination)))
        moved.append(tape.name)
    return moved


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
    tapes: list[_Tape] = []
    for name, path in found:
        recording = load(path)
        shapes = {s for s in (call_shape(e) for e in recording.entries) if s is not None}
        tapes.append(_Tape(name, path, len(recording.entries), shapes))
    for tape, verdict in zip(tapes, _replayed([t.path for t in tapes], anchor, args), strict=True):
        # A tape pytest does not collect (one a `tape` fixture recorded: its test replays
        # it) is kept as it is, and covers what it holds.
        skipped = verdict.signature is not None and verdict.signature.kind == "uncollected"
        tape.passed = verdict.passed or skipped
        tape.skipped = skipped
        tape.problem = "" if tape.passed else verdict.summary or "its replay failed"
        tape.lines = verdict.lines
        tape.features = {f"shape {s}" for s in tape.shapes} | {f"line {n}" for n in tape.lines}
    return _report(args, tapes)


def _report(args: argparse.Namespace, tapes: list[_Tape]) -> int:
    shapes = Counter(s for t in tapes for s in t.shapes)
    lines = set().union(*(t.lines for t in tapes)) if tapes else set()
    keep = _cover(tapes)
    kept = {t.name for t in keep}
    rest = [t for t in tapes if t.name not in kept]
    failing = [t for t in tapes if not t.passed]
    moved: list[str] = []
    if args.minimize and args.move_to is not None:
        moved = _move(rest, Path(args.move_to))
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
