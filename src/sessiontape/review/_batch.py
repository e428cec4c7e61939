"""Deciding pending changes by id, without a terminal: ``accept`` and ``reject``.

Every id is looked up first, in every pending file of the paths given: an id that no
pending file holds, or a pending file whose tape changed since, stops the whole command
before anything is written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .._errors import UsageError
from ..cassette import Decision
from ._pending import PendingTape, Saved, find_pending

__all__ = ["decide", "open_pending"]


def open_pending(paths: Sequence[str | os.PathLike[str]]) -> list[PendingTape]:
    """Every tape's pending changes under ``paths`` (see ``find_pending``), each checked
    against its tape (a :class:`StalePending` for the first that changed since)."""
    return [PendingTape(p) for p in find_pending(paths)]


def decide(
    decision: Decision,
    ids: Sequence[str],
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    every: bool = False,
) -> list[tuple[PendingTape, list[str], Saved]]:
    """Accept or reject the changes ``ids`` (or ``every`` change not decided yet) of the
    pending files under ``paths``; per tape touched: the ids decided and what was
    written."""
    if not ids and not every:
        raise UsageError(f"name the changes to {decision} (their ids), or pass --all.")
    tapes = open_pending(paths)
    where = {c.id: t for t in tapes for c in t.changes}
    unknown = [i for i in ids if i not in where]
    if unknown:
        shown = ", ".join(unknown)
        raise UsageError(
            f"no pending change {shown} under {', '.join(map(str, paths or ['.']))}; list "
            "them with: sessiontape pending --json"
        )
    chosen: dict[int, list[str]] = {}
    if every:
        for tape in tapes:
            chosen[id(tape)] = tape.decide_all(decision)
    for change_id in ids:
        tape = where[change_id]
        tape.decide(change_id, decision)
        chosen.setdefault(id(tape), []).append(change_id)
    done: list[tuple[PendingTape, list[str], Saved]] = []
    for tape in tapes:
        decided = chosen.get(id(tape))
        # A tape behind its decisions, or whose every change is decided already (both: a
        # kill cut an accept short, before or after it wrote the tape): its save completes
        # it, and removes the pending file.
        if decided or tape.behind or not tape.undecided:
            done.append((tape, decided or [], tape.save()))
    return done
