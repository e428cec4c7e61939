"""Pending changes: an update's plan as changes a reviewer decides, and the tape they make.

:func:`propose` turns an :class:`~._plan.UpdatePlan` into a
:class:`~sessiontape.cassette.PendingFile`: the parts of the new tape (entries changed,
dropped, inserted) grouped into changes. Parts that cannot go one without the other are
one change: a dropped call with the calls recorded inside it, an inserted call with the
calls made inside it, a live call re-recorded inside an inserted one. So whatever subset
of the changes a reviewer accepts, the parts taken make a valid tape.

:func:`pending_tape` is the tape a subset makes: the very :class:`~._newtape.NewTape` an
update in place writes, from the parts the accepted changes take (seqs renumbered
gapless from the first call added or dropped, parents mapped, calls placed on the time
axis), so there is one writer of changed tapes.

A change's id is stable: a digest of the tape's SHA-256 and of what the change is (its
category, the call's seq or, for a call created, where it goes and what it asks, and its
fields), so the same update of the same tape proposes the same ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Final

import msgspec

from ..cassette import (
    PENDING_FORMAT,
    PENDING_VERSION,
    CallEntry,
    Entry,
    FieldChange,
    Inserted,
    PendingChange,
    PendingFile,
    Placed,
    Recording,
    SessionStart,
    boundary_of,
    request_of,
    sha256_of,
)
from ..report import Change, Rewrite, jsonable
from ._newtape import NewTape
from ._plan import UpdatePlan, kept_counts

__all__ = ["pending_tape", "propose"]

_CATEGORY: Final = {
    Change.REQUEST: "fix",
    Change.RESULT: "fix",
    Change.OUTCOME: "fix",
    Change.DROPPED: "trim",
    Change.ADDED: "create",
    Change.ANSWER: "update",
}

#: One part of a new tape: ("changed" | "dropped" | "inserted", seq).
_Part = tuple[str, int]


class _Groups:
    """Union-find over parts: the parts that must go together."""

    def __init__(self) -> None:
        self._up: dict[_Part, _Part] = {}

    def add(self, part: _Part) -> None:
        self._up.setdefault(part, part)

    def find(self, part: _Part) -> _Part:
        up = self._up
        while up[part] != part:
            up[part] = up[up[part]]
            part = up[part]
        return part

    def join(self, a: _Part, b: _Part) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self._up[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[_Part]]:
        out: dict[_Part, list[_Part]] = {}
        for part in self._up:
            out.setdefault(self.find(part), []).append(part)
        return list(out.values())


def _fields(rewrites: Iterable[Rewrite]) -> list[FieldChange]:
    return [FieldChange(r.field, jsonable(r.old), jsonable(r.new)) for r in rewrites]


def _digest(*parts: Any) -> str:
    return hashlib.sha256(msgspec.json.encode(parts, enc_hook=repr)).hexdigest()


def propose(
    plan: UpdatePlan, header: SessionStart | None, original: bytes, tape: Path
) -> PendingFile:
    """The pending file of ``plan``, an update of the tape whose bytes are ``original``
    (``header``: the new header a live re-record notes itself in)."""
    recording = plan.recording
    end = recording.end
    groups = _Groups()
    changed = dict(plan.changed)
    inserted = {a.entry.seq: a for a in plan.inserted}
    for seq in changed:
        groups.add(("changed", seq))
    for seq in plan.dropped:
        groups.add(("dropped", seq))
        entry = recording.by_seq(seq)
        if entry is not None and entry.parent is not None and entry.parent in plan.dropped:
            groups.join(("dropped", seq), ("dropped", entry.parent))
    for seq, add in inserted.items():
        groups.add(("inserted", seq))
        parent = add.entry.parent
        if parent is not None and parent in inserted:
            groups.join(("inserted", seq), ("inserted", parent))
    for seq, new in changed.items():
        parent = new.parent
        if parent is not None and parent in inserted:
            groups.join(("changed", seq), ("inserted", parent))
    by_seq: dict[int | None, list[Rewrite]] = {}
    for r in plan.rewrites:
        at = end.seq if r.change is Change.OUTCOME and end is not None else r.seq
        by_seq.setdefault(at, []).append(r)
    base_sha = sha256_of(original)
    changes: list[PendingChange] = []
    seen: dict[str, int] = {}
    for group in sorted(groups.groups(), key=_order(inserted)):
        change = _change(group, recording, changed, inserted, by_seq)
        what = _digest(
            base_sha,
            change.category,
            change.change,
            change.worker,
            change.boundary,
            change.seq,
            _created_key(group, inserted),
            msgspec.to_builtins(change.fields, enc_hook=repr),
        )
        n = seen.get(what, 0)
        seen[what] = n + 1
        digest = what if n == 0 else _digest(what, n)
        changes.append(msgspec.structs.replace(change, id=f"{change.category}-{digest[:10]}"))
    return PendingFile(
        format=PENDING_FORMAT,
        version=PENDING_VERSION,
        tape=tape.name,
        tape_sha256=base_sha,
        base_sha256=base_sha,
        changes=changes,
        base=original.decode("utf-8"),
        changed={seq: Placed.of(entry) for seq, entry in changed.items()},
        dropped=sorted(plan.dropped),
        inserted=[Inserted(a.after, Placed.of(a.entry)) for a in plan.inserted],
        timed=sorted(plan.timed),
        real_start=dict(plan.real_start),
        header=header,
    )


def _order(inserted: dict[int, Any]) -> Any:
    """Changes in the order of the tape: by the recorded seq they touch, a call created
    after the call it follows."""

    def key(group: list[_Part]) -> tuple[float, int]:
        kind, seq = _lead(group)
        if kind == "inserted":
            after = inserted[seq].after
            return ((after if after is not None else -1) + 0.5, -seq)
        return (float(seq), 0)

    return key


def _created_key(group: list[_Part], inserted: dict[int, Any]) -> list[Any]:
    """What the calls a change creates ask, and where they go (provisional seqs vary
    between runs; these do not)."""
    out: list[Any] = []
    for kind, seq in sorted(group, key=lambda p: (p[0], -p[1])):
        if kind == "inserted":
            add = inserted[seq]
            out.append([add.after, add.entry.worker, jsonable(request_of(add.entry))])
    return out


def _lead(group: list[_Part]) -> _Part:
    """The part a change is named after: the first call created (provisional seqs count
    down as calls start), else the first recorded call (a parent comes before its
    children)."""
    created = [p for p in group if p[0] == "inserted"]
    if created:
        return max(created, key=lambda p: p[1])
    return min(group, key=lambda p: p[1])


def _change(
    group: list[_Part],
    recording: Recording,
    changed: dict[int, Entry],
    inserted: dict[int, Any],
    by_seq: dict[int | None, list[Rewrite]],
) -> PendingChange:
    """One change: its parts, what kind it is (its lead part's), and its fields."""
    kind, seq = _lead(group)
    entry: Any
    if kind == "inserted":
        entry, what, recorded_seq = inserted[seq].entry, Change.ADDED, None
    elif kind == "dropped":
        entry, what, recorded_seq = recording.by_seq(seq), Change.DROPPED, seq
    else:
        notes = by_seq.get(seq, [])
        entry, recorded_seq = changed[seq], seq
        kinds = [n.change for n in notes]
        # A call re-recorded live is an update, whether or not its request changed too.
        what = Change.ANSWER if Change.ANSWER in kinds else (kinds[0] if kinds else Change.REQUEST)
    fields: list[FieldChange] = []
    for part_kind, part_seq in sorted(group, key=lambda p: (p[0], abs(p[1]))):
        if part_kind == "changed":
            fields += _fields(by_seq.get(part_seq, []))
        elif part_kind == "dropped":
            old = recording.by_seq(part_seq)
            if old is not None:
                label = "" if part_seq == seq else f"seq {part_seq}"
                fields.append(FieldChange(label, jsonable(request_of(old)), None))  # type: ignore[arg-type]
        else:
            new: CallEntry = inserted[part_seq].entry
            label = "" if part_seq == seq else f"inside: {boundary_of(new) or ''}"
            fields.append(FieldChange(label, None, jsonable(request_of(new))))
    return PendingChange(
        id="",
        category=_CATEGORY[what],
        change=what.value,
        worker=str(entry.worker) if entry is not None else "",
        boundary=(boundary_of(entry) or "session") if entry is not None else "session",
        seq=recorded_seq,
        fields=fields,
        changed=sorted(s for k, s in group if k == "changed"),
        dropped=sorted(s for k, s in group if k == "dropped"),
        inserted=sorted((s for k, s in group if k == "inserted"), reverse=True),
    )


def pending_tape(pending: PendingFile, recording: Recording, accepted: Collection[str]) -> NewTape:
    """The tape ``recording`` (the pending file's base) becomes with the changes
    ``accepted`` (ids) taken and every other change left as recorded."""
    taken = [c for c in pending.changes if c.id in accepted]
    changed_seqs = {s for c in taken for s in c.changed}
    dropped = {s for c in taken for s in c.dropped}
    inserted_seqs = {s for c in taken for s in c.inserted}
    changed = {s: p.unpack() for s, p in pending.changed.items() if s in changed_seqs}
    inserted = [(i.after, i.entry) for i in pending.inserted if i.entry.seq in inserted_seqs]
    placed = changed_seqs | inserted_seqs
    return NewTape(
        recording,
        changed=changed,
        dropped=dropped,
        inserted=inserted,
        timed={s for s in pending.timed if s in placed},
        real_start={s: t for s, t in pending.real_start.items() if s in placed},
        header=pending.header if taken else None,
        counts=kept_counts(recording, changed, dropped, [e for _, e in inserted])
        if dropped or inserted
        else None,
    )
