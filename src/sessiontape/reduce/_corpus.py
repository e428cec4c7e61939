"""What a corpus of tapes covers, which tapes keep all of it, and moving the others out.

Every tape is replayed as ``pytest --replay DIR`` replays it (through the project's
``sessiontape_replay`` hook, spread over worker processes as ``-n`` spreads it), and
covers the call shapes it replays (``report.call_shape``: the boundary and the normalised
request) and, with ``coverage``, the lines of that folder its replay executes
(coverage.py). A tape whose replay fails covers nothing: it is listed as failing, and never
stands in for a passing one. The tapes to keep are the smallest set of passing tapes that
covers everything the passing tapes cover (greedy set cover: the tape adding most first,
the shorter of two equal ones), so the only tape of a shape is always kept.
:func:`move_out` moves the others to another folder, with their sidecar payloads: nothing
is deleted, nothing is written over, and only files proven to be cassettes are moved.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..cassette import is_cassette, load, sidecar_dir
from ..report import call_shape
from ._pool import Pool
from ._verdict import Verdict

__all__ = ["CorpusResult", "CorpusTape", "Moved", "move_out", "survey"]


@dataclass
class CorpusTape:
    """One tape of a corpus: what it holds, how its replay went, what it covers."""

    #: Its name in the corpus (the path under the folder, with ``/``), and its file.
    name: str
    path: Path
    entries: int
    #: The call shapes it holds.
    shapes: set[str]
    #: The lines of the ``coverage`` folder its replay ran (``file:line``).
    lines: frozenset[str] = frozenset()
    passed: bool = True
    #: pytest does not collect it (a ``tape`` fixture recorded it: its test replays it).
    skipped: bool = False
    #: Why its replay failed (empty when it passed).
    problem: str = ""
    #: What it covers: ``shape ...`` and ``line ...`` features.
    features: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class CorpusResult:
    """What :func:`survey` found: every tape, and which of them keep everything covered."""

    tapes: list[CorpusTape]
    #: The smallest set of passing tapes that covers all the passing tapes cover, by name.
    keep: list[CorpusTape]
    #: The other passing tapes: each adds nothing the kept ones do not cover.
    redundant: list[CorpusTape]
    #: Tapes whose replay failed: they cover nothing, are neither kept in the place of a
    #: passing tape nor redundant, and stay where they are.
    failing: list[CorpusTape]
    #: How many passing tapes hold each call shape.
    shapes: Counter[str]
    #: Every line the passing replays ran (empty without ``coverage``).
    lines: frozenset[str]


@dataclass(frozen=True)
class Moved:
    """What :func:`move_out` moved, and why it left the others where they are."""

    moved: list[str]
    #: One sentence per tape not moved (``PATH: not moved, DEST exists.``).
    refused: list[str]


def _replayed(paths: Sequence[Path], anchor: str, jobs: int, coverage: str | None) -> list[Verdict]:
    with Pool(anchor, jobs=jobs, coverage=coverage) as pool:
        return pool.run([str(p) for p in paths])


def survey(
    tapes: Sequence[tuple[str, Path]],
    *,
    anchor: str,
    jobs: int,
    coverage: str | None = None,
) -> CorpusResult:
    """Replay each of ``tapes`` (``(name, file)``) in ``jobs`` worker processes and say
    what each covers, and which to keep.

    ``anchor`` is the path pytest is started on (the corpus folder), so it finds the
    project's rootdir and conftests as ``pytest --replay ANCHOR`` would. ``coverage`` is a
    folder whose executed lines count as covered too (coverage.py must be installed).
    """
    found: list[CorpusTape] = []
    for name, path in tapes:
        recording = load(path)
        shapes = {s for s in (call_shape(e) for e in recording.entries) if s is not None}
        found.append(CorpusTape(name, path, len(recording.entries), shapes))
    verdicts = _replayed([t.path for t in found], anchor, jobs, coverage)
    for tape, verdict in zip(found, verdicts, strict=True):
        # A tape pytest does not collect (one a `tape` fixture recorded: its test replays
        # it) is kept as it is, and covers what it holds.
        skipped = verdict.signature is not None and verdict.signature.kind == "uncollected"
        tape.passed = verdict.passed or skipped
        tape.skipped = skipped
        tape.problem = "" if tape.passed else verdict.summary or "its replay failed"
        tape.lines = verdict.lines
        tape.features = {f"shape {s}" for s in tape.shapes} | {f"line {n}" for n in tape.lines}
    # A tape whose replay fails covers nothing: what it holds was not shown to replay.
    covering = [t for t in found if t.passed]
    keep = _cover(covering)
    kept = {t.name for t in keep}
    return CorpusResult(
        tapes=found,
        keep=keep,
        redundant=[t for t in covering if t.name not in kept],
        failing=[t for t in found if not t.passed],
        shapes=Counter(s for t in covering for s in t.shapes),
        lines=frozenset().union(*(t.lines for t in covering)) if covering else frozenset(),
    )


def _cover(tapes: list[CorpusTape]) -> list[CorpusTape]:
    """Greedy set cover of passing tapes: those pytest does not collect are kept as they
    are; then, while something is uncovered, the tape that covers most of it (fewer
    entries first on a tie)."""
    keep = [t for t in tapes if t.skipped]
    covered: set[str] = set()
    for tape in keep:
        covered |= tape.features
    wanted = set().union(*(t.features for t in tapes)) - covered if tapes else set()
    candidates = [t for t in tapes if not t.skipped]
    while wanted:
        best = max(candidates, key=lambda t: (len(t.features & wanted), -t.entries, t.name))
        gain = best.features & wanted
        if not gain:  # pragma: no cover - every wanted feature comes from some tape
            break
        keep.append(best)
        wanted -= gain
        candidates.remove(best)
    return sorted(keep, key=lambda t: t.name)


def move_out(tapes: Sequence[CorpusTape], target: str | os.PathLike[str]) -> Moved:
    """Move each tape (and its sidecar) under ``target``, at its name; never over an
    existing file, and only a file that is a cassette."""
    moved: list[str] = []
    refused: list[str] = []
    for tape in tapes:
        destination = Path(target) / tape.name
        if not tape.path.is_file() or tape.path.is_symlink() or not is_cassette(tape.path):
            refused.append(f"{tape.path}: not moved (not a cassette file).")
            continue
        if destination.exists():
            refused.append(f"{tape.path}: not moved, {destination} exists.")
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        blobs = sidecar_dir(tape.path)
        shutil.move(str(tape.path), str(destination))
        if blobs.is_dir() and not sidecar_dir(destination).exists():
            shutil.move(str(blobs), str(sidecar_dir(destination)))
        moved.append(tape.name)
    return Moved(moved, refused)
