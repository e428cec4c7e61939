"""What ``shrink`` may cut from a tape, and how a cut tape is written back valid.

A :class:`Cut` is a candidate: which of the original entries it keeps, which items of the
recorded store snapshots it drops, and which entries it replaces by simpler values.
:class:`Cuts` turns a cut into entries that pass ``validate``: the header says what it
was shrunk from, seqs are renumbered from 0 without gaps, and every parent points at a
kept entry (an entry is only ever removed together with the calls nested in it).

The units the reductions remove are built here too: a task (its snapshot item and the
calls each worker made while it held it, found as ``slice --task`` finds them), a worker,
a top-level call with everything nested in it, one call, one snapshot item.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from ..cassette import (
    CallTree,
    Entry,
    Error,
    ProcessCall,
    Recording,
    SessionEnd,
    ShrunkFrom,
    StoreSnapshot,
    copy_payloads,
    encode_entry,
    is_call,
    write_new_cassette,
)
from ._tasks import task_windows_of

__all__ = ["Cut", "Cuts", "Unit", "simpler_outputs"]

#: The keys a snapshot item's id is read from, for finding the calls of its task.
_ID_KEYS: Final = ("id", "task_id", "key", "name")


@dataclass(frozen=True)
class Cut:
    """A candidate tape, as differences from the original."""

    #: The seqs of the original entries kept (the header is always kept).
    kept: frozenset[int]
    #: Snapshot items left out: (the snapshot's seq, the list's key or ``None``, index).
    dropped_items: frozenset[tuple[int, str | None, int]] = frozenset()
    #: Entries replaced by simpler ones, by original seq.
    values: Mapping[int, Entry] = field(default_factory=dict)


@dataclass(frozen=True)
class Unit:
    """Something a reduction removes at once: entries (with their nested calls) and items."""

    seqs: frozenset[int]
    items: frozenset[tuple[int, str | None, int]] = frozenset()
    label: str = ""


class Cuts:
    """The original recording, and what can be cut from it."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.header = recording.header
        self.entries: list[Entry] = [e for e in recording.entries if e.seq != self.header.seq]
        self.by_seq: dict[int, Entry] = {e.seq: e for e in self.entries}
        self.tree = CallTree(recording.entries)
        self._windows: dict[str, dict[str, tuple[int, int]]] | None = None

    @property
    def whole(self) -> Cut:
        """The cut that keeps everything."""
        return Cut(frozenset(self.by_seq))

    # -- cutting ---------------------------------------------------------------------------

    def without(self, cut: Cut, unit: Unit) -> Cut | None:
        """``cut`` less ``unit`` (each removed entry with everything nested in it), or
        ``None`` when that removes nothing."""
        removed: set[int] = set()
        for seq in unit.seqs:
            if seq in cut.kept and seq not in removed:
                removed.update(s for s in self.tree.subtree(seq) if s in cut.kept)
        items = unit.items - cut.dropped_items
        if not removed and not items:
            return None
        return Cut(cut.kept - removed, cut.dropped_items | items, cut.values)

    def without_all(self, cut: Cut, units: Iterable[Unit]) -> Cut | None:
        """``cut`` less every one of ``units``, or ``None`` when that removes nothing."""
        seqs: set[int] = set()
        items: set[tuple[int, str | None, int]] = set()
        for unit in units:
            seqs.update(unit.seqs)
            items.update(unit.items)
        return self.without(cut, Unit(frozenset(seqs), frozenset(items)))

    def alive(self, cut: Cut, unit: Unit) -> bool:
        """Whether ``unit`` still has something in ``cut`` to remove."""
        return any(s in cut.kept for s in unit.seqs) or bool(unit.items - cut.dropped_items)

    def size(self, cut: Cut) -> int:
        """The entries the cut's tape holds, header included."""
        return len(cut.kept) + 1

    def entries_of(self, cut: Cut, shrunk: ShrunkFrom) -> tuple[list[Entry], list[int]]:
        """The cut as a valid tape's entries, and the original seq of each new seq."""
        renumber: dict[int, int] = {self.header.seq: 0}
        origin = [self.header.seq]
        out: list[Entry] = [
            msgspec.structs.replace(
                self.header,
                seq=0,
                parent=None,
                run_id=f"{shrunk.run_id}-shrunk",
                shrunk_from=shrunk,
            )
        ]
        dropped: dict[int, set[tuple[str | None, int]]] = {}
        for snap, key, index in cut.dropped_items:
            dropped.setdefault(snap, set()).add((key, index))
        for entry in self.entries:
            if entry.seq not in cut.kept:
                continue
            entry = cut.values.get(entry.seq, entry)
            new = len(out)
            renumber[entry.seq] = new
            origin.append(entry.seq)
            parent = renumber.get(entry.parent) if entry.parent is not None else None
            if isinstance(entry, StoreSnapshot) and entry.seq in dropped:
                entry = msgspec.structs.replace(
                    entry, data=_drop_items(entry.data, dropped[entry.seq])
                )
            out.append(msgspec.structs.replace(entry, seq=new, parent=parent))
        return out, origin

    def write(self, cut: Cut, shrunk: ShrunkFrom, path: str) -> list[int]:
        """Write the cut's tape to ``path``, whole or not at all (a file already there is
        replaced only if it is a cassette), with the payloads its sidecar needs."""
        entries, origin = self.entries_of(cut, shrunk)
        kept = [self.by_seq[s] for s in origin[1:]]
        # The payloads first: the tape is checked against its sidecar before it is written.
        copy_payloads(self.recording.path, kept, path)
        write_new_cassette(path, (encode_entry(entry) for entry in entries))
        return origin

    # -- units -----------------------------------------------------------------------------

    def roots(self, cut: Cut) -> list[Unit]:
        """Each kept top-level call (or error), with everything nested in it, in seq order."""
        return [
            Unit(frozenset((e.seq,)), label=f"seq {e.seq}")
            for e in self.entries
            if e.seq in cut.kept and self.tree.root_of.get(e.seq) == e.seq and _removable(e)
        ]

    def calls(self, cut: Cut) -> list[Unit]:
        """Each kept call at any depth, in seq order."""
        return [
            Unit(frozenset((e.seq,)), label=f"seq {e.seq}")
            for e in self.entries
            if e.seq in cut.kept and _removable(e)
        ]

    def after(self, cut: Cut, seq: int, *, worker: str | None = None) -> Unit:
        """Every removable entry after ``seq`` (of ``worker`` only, when given), and the end."""
        return Unit(
            frozenset(
                e.seq
                for e in self.entries
                if e.seq > seq
                and e.seq in cut.kept
                and (_removable(e) or isinstance(e, SessionEnd))
                and (worker is None or e.worker == worker or isinstance(e, SessionEnd))
            ),
            label=f"after seq {seq}",
        )

    def workers(self, cut: Cut) -> list[Unit]:
        """Each worker's kept top-level calls (the main thread's are never a worker)."""
        by_worker: dict[str, set[int]] = {}
        for unit in self.roots(cut):
            (seq,) = unit.seqs
            worker = self.by_seq[seq].worker
            if worker != "main":
                by_worker.setdefault(worker, set()).add(seq)
        return [Unit(frozenset(s), label=f"worker {w}") for w, s in sorted(by_worker.items())]

    def items(self, cut: Cut) -> list[Unit]:
        """Each snapshot item still kept, alone."""
        return [
            Unit(frozenset(), frozenset((item,)), label=f"snapshot item {item[2]}")
            for item in self._snapshot_items(cut)
        ]

    def tasks(self, cut: Cut) -> list[Unit]:
        """Each snapshot item with an id, with the calls of its task: what each worker did
        from its first call that names the id to its last (as ``slice --task`` finds them,
        for every id in one pass over the tape)."""
        named = [(item, _item_id(self._item_value(item))) for item in self._snapshot_items(cut)]
        if self._windows is None:
            # One pass over the original tape, for every id of the original snapshots.
            every = [_item_id(self._item_value(i)) for i in self._snapshot_items(self.whole)]
            self._windows = task_windows_of(self.recording, {t for t in every if t})
        windows = self._windows
        roots: dict[str, list[int]] = {}
        for entry in self.entries:
            if entry.seq in cut.kept and self.tree.root_of.get(entry.seq) == entry.seq:
                roots.setdefault(entry.worker, []).append(entry.seq)
        units: list[Unit] = []
        for item, task in named:
            if task is None:
                continue
            seqs: set[int] = set()
            for worker, (first, last) in windows.get(task, {}).items():
                ordered = roots.get(worker, [])
                seqs.update(
                    ordered[bisect.bisect_left(ordered, first) : bisect.bisect_right(ordered, last)]
                )
            units.append(Unit(frozenset(seqs), frozenset((item,)), label=f"task {task}"))
        return units

    def _snapshot_items(self, cut: Cut) -> Iterator[tuple[int, str | None, int]]:
        for entry in self.entries:
            if isinstance(entry, StoreSnapshot) and entry.seq in cut.kept:
                for key, values in _lists(entry.data):
                    for index in range(len(values)):
                        item = (entry.seq, key, index)
                        if item not in cut.dropped_items:
                            yield item

    def _item_value(self, item: tuple[int, str | None, int]) -> Any:
        snap = self.by_seq[item[0]]
        assert isinstance(snap, StoreSnapshot)
        for key, values in _lists(snap.data):
            if key == item[1]:
                return values[item[2]]
        return None


def _removable(entry: Entry) -> bool:
    """Calls, the session's error and its end (a tape without one compares no outcome);
    the header, snapshots and resumes are kept (snapshots lose items instead)."""
    return is_call(entry) or isinstance(entry, (Error, SessionEnd))


def _lists(data: Any) -> Iterator[tuple[str | None, list[Any]]]:
    """The lists of a snapshot whose items can be left out: the snapshot itself, or the
    values of its top-level keys."""
    if isinstance(data, list):
        yield None, data
    elif isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, list):
                yield str(key), value


def _drop_items(data: Any, dropped: set[tuple[str | None, int]]) -> Any:
    if isinstance(data, list):
        return [v for i, v in enumerate(data) if (None, i) not in dropped]
    if isinstance(data, dict):
        return {
            k: [x for i, x in enumerate(v) if (str(k), i) not in dropped]
            if isinstance(v, list)
            else v
            for k, v in data.items()
        }
    return data


def _item_id(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in _ID_KEYS:
            found = value.get(key)
            if isinstance(found, (str, int)) and not isinstance(found, bool):
                return str(found)
    return None


_LINE: Final = re.compile(r"(?<=\n)")


def simpler_outputs(entry: Entry) -> Iterator[tuple[str, Entry]]:
    """Simpler versions of a process call's recorded output: empty, then half its lines."""
    if not isinstance(entry, ProcessCall):
        return
    for name in ("stdout", "stderr"):
        value = getattr(entry, name)
        if not isinstance(value, str) or not value:
            continue
        yield f"{name} emptied", msgspec.structs.replace(entry, **{name: ""})
        lines = _LINE.split(value)
        if len(lines) > 2:
            half = "".join(lines[: len(lines) // 2])
            yield f"{name} halved", msgspec.structs.replace(entry, **{name: half})
