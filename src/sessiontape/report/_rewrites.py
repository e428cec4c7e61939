"""What an update or a live re-record changed in a tape: one :class:`Rewrite` per change.

A replay run with ``update=True`` (``--sessiontape-update``) or ``live=[...]``
(``--sessiontape-live``) lists each change it made to the tape the way ``syrupy
--snapshot-update`` lists its snapshots: the counts first, then each change (tape, seq,
field, old value, new value), in the report's text and in its JSON receipt.
"""

from __future__ import annotations

import enum
import shlex
from collections import Counter
from collections.abc import Sequence
from typing import Any

import msgspec

from ._values import summarize_value

__all__ = ["Change", "ChangeCategory", "Rewrite", "pending_line", "render_rewrites"]


class Change(str, enum.Enum):
    """What happened to one recorded call."""

    #: A substitute call made with other arguments: today's request, the recorded answer.
    REQUEST = "request"
    #: A verify call (a store mutation) that gave another result: today's result.
    RESULT = "result"
    #: The session ended with another outcome: today's outcome.
    OUTCOME = "outcome"
    #: A recorded call today's code no longer makes.
    DROPPED = "dropped"
    #: A call today's code makes that the tape did not have (a verify call run for real,
    #: or a call re-recorded live).
    ADDED = "added"
    #: A recorded call re-recorded live, in its place, whose answer changed (or whose
    #: request changed too): today's call and answer.
    ANSWER = "answer"


class ChangeCategory(str, enum.Enum):
    """The kind of decision a change asks of its reviewer (in the spirit of
    inline-snapshot's groups): what a pending change is filed under."""

    #: A request (or a verify call's result, or the outcome) rewritten to today's.
    FIX = "fix"
    #: A recorded call today's code no longer makes, dropped.
    TRIM = "trim"
    #: A call the tape did not have, recorded live (or run for real on a verify boundary).
    CREATE = "create"
    #: A call re-recorded live whose answer changed.
    UPDATE = "update"


_CATEGORIES: dict[Change, ChangeCategory] = {
    Change.REQUEST: ChangeCategory.FIX,
    Change.RESULT: ChangeCategory.FIX,
    Change.OUTCOME: ChangeCategory.FIX,
    Change.DROPPED: ChangeCategory.TRIM,
    Change.ADDED: ChangeCategory.CREATE,
    Change.ANSWER: ChangeCategory.UPDATE,
}


class Rewrite(msgspec.Struct, frozen=True):
    """One change to a tape: ``seq`` is the call's seq in the tape as it was (``None`` for
    an added call), ``field`` the path of the changed field (a noise-mask path without
    the boundary, as in a field diff), ``old`` and ``new`` its values."""

    tape: str
    seq: int | None
    change: Change
    boundary: str
    worker: str
    field: str = ""
    old: Any = None
    new: Any = None

    @property
    def category(self) -> ChangeCategory:
        """What kind of change this is, for a reviewer (see :class:`ChangeCategory`)."""
        return _CATEGORIES[self.change]


_VERBS = {
    Change.REQUEST: "request rewritten",
    Change.RESULT: "result rewritten",
    Change.OUTCOME: "outcome rewritten",
    Change.DROPPED: "dropped",
    Change.ADDED: "added",
    Change.ANSWER: "re-recorded live",
}


_FIELD_CHANGES = (Change.REQUEST, Change.RESULT, Change.OUTCOME, Change.ANSWER)


def render_rewrites(
    rewrites: Sequence[Rewrite], written: str | None, pending: str | None = None
) -> list[str]:
    """The text lines listing ``rewrites``: counts, then one line per change
    (``pending``: the pending file they were written to instead of the tape)."""
    if not rewrites:
        return []
    calls = Counter(r.change for r in rewrites if r.change in (Change.DROPPED, Change.ADDED))
    fields = Counter(r.change for r in rewrites if r.change in _FIELD_CHANGES)
    counts = ", ".join(
        [f"{n} field(s) of {c.value}s rewritten" for c, n in sorted(fields.items())]
        + [f"{n} call(s) {c.value}" for c, n in sorted(calls.items())]
    )
    if pending is not None:
        where = f"pending in {pending}, the tape is unchanged"
    else:
        where = f"wrote {written}" if written is not None else "nothing written"
    lines = [f"tape updated: {counts}; {where}"]
    for r in rewrites:
        at = f"seq {r.seq}" if r.seq is not None else "new call"
        head = f"  {r.tape} {at} ({r.worker}, {r.boundary}) {_VERBS[r.change]}"
        if r.field or r.change in _FIELD_CHANGES:
            head += (
                f": {r.field or '<value>'}: {summarize_value(r.old, 60)} -> "
                f"{summarize_value(r.new, 60)}"
            )
        elif r.new is not None or r.old is not None:
            head += f": {summarize_value(r.new if r.new is not None else r.old, 80)}"
        lines.append(head)
    return lines


def pending_line(tape: str, categories: Sequence[str]) -> str:
    """The one line a replay that left its changes pending fails with: how many, of which
    categories, and the command that reviews them."""
    counts = Counter(categories)
    kinds = ", ".join(f"{counts[c.value]} {c.value}" for c in ChangeCategory if counts[c.value])
    return (
        f"{tape}: {len(categories)} change(s) pending ({kinds}), the tape is unchanged; "
        f"review them: sessiontape review {shlex.quote(tape)}"
    )
