"""The new tape of an update or a live re-record: its lines, in order, on one time axis.

:class:`NewTape` takes the changes an :class:`~._plan.UpdatePlan` decided and writes the
new file from the old one's bytes, in three steps:

1. **Order.** The lines keep their order in the file; a dropped call's line goes; an
   added call goes right after the line of the call its worker made before it.
2. **Time.** The tape's time axis is the recorded one: every line keeps its recorded
   time, a live call that took a recorded call's place with the same request keeps that
   call's time and duration (only the world's answer changed), and only the calls made
   anew (added, or re-recorded with another request) are placed: each starts where its
   worker is on the axis (in a recorded call's place, where that call started; an added
   call at the end of its worker's call before it, plus the real pause between two calls
   made for real; a call made inside another at its real offset in it; never before the
   end of its worker's call before it) and lasts its real duration. When such a call
   does not fit before its worker's next call, that worker's calls from there on move
   later by what it lacks (its work took that much longer; the other workers' lines stay
   as they were), and the session's end moves after the last call: no two calls of a
   worker overlap, time runs forwards on every lane, and ``stats`` never counts a worker
   busier than the session was long.
3. **Seqs.** Seqs stay as they were up to the first call added or dropped; from there on
   they are renumbered gapless, in the order the calls were made (the recorded seqs, each
   added call after its worker's call before it), and every parent link follows.

A line nothing changed (not its entry, time, seq or parent) is kept byte for byte, so
``git diff`` of the tape shows exactly the changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

import msgspec

from ..cassette import CallEntry, Entry, Recording, SessionEnd, SessionStart, encode_entry

__all__ = ["NewTape", "line_seq"]

_SEQ_AT_START: Final = re.compile(rb'^\{"kind":"[a-z_]+","seq":(\d+),')
_REPLACE: Final = msgspec.structs.replace


class _SeqOnly(msgspec.Struct):
    seq: int


_SEQ_DECODER: Final = msgspec.json.Decoder(_SeqOnly)


def line_seq(line: bytes) -> int | None:
    """The seq of one cassette line, read without decoding the rest (``None``: none)."""
    found = _SEQ_AT_START.match(line)
    if found is not None:
        return int(found.group(1))
    try:
        return _SEQ_DECODER.decode(line).seq
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None


class _Line:
    """One line of the new tape: the old line kept, or an entry to write."""

    __slots__ = ("entry", "fields", "line", "seq")

    def __init__(self, seq: int | None, line: bytes | None, entry: Entry | None) -> None:
        #: The seq in the old tape's terms (provisional, negative, for an added call).
        self.seq = seq
        self.line = line
        #: The new entry (``None``: the old line's, unchanged).
        self.entry = entry
        #: Fields that change on top of it (time, seq, parent, counts).
        self.fields: dict[str, Any] = {}


class NewTape:
    """The new tape's lines, from the changes and the old tape's bytes."""

    def __init__(
        self,
        recording: Recording,
        *,
        changed: Mapping[int, Entry],
        dropped: set[int],
        inserted: list[tuple[int | None, CallEntry]],
        timed: set[int],
        real_start: Mapping[int, int],
        header: SessionStart | None,
        counts: dict[str, int] | None,
    ) -> None:
        self._recording = recording
        self._changed = dict(changed)
        if header is not None:
            self._changed[recording.header.seq] = header
        self._dropped = dropped
        self._inserted = inserted
        self._timed = timed
        self._real_start = real_start
        self._counts = counts

    @property
    def changes(self) -> bool:
        """Whether the new tape differs from the old one."""
        return bool(self._changed or self._dropped or self._inserted)

    def lines(self, original: bytes) -> Iterator[bytes]:
        """The new tape's lines, from the bytes of the tape as it is on disk."""
        lines = self._ordered(original)
        if self._timed or self._dropped or self._inserted:
            in_time = self._in_seq_order(lines)
            if self._timed:
                self._place(in_time)
            if self._dropped or self._inserted:
                self._renumber(in_time)
        end = self._recording.end
        by_seq = self._recording.by_seq
        for item in lines:
            if self._counts is not None and end is not None and item.seq == end.seq:
                item.fields["counts"] = self._counts
            if item.entry is None and not item.fields:
                assert item.line is not None
                yield item.line
                continue
            base = item.entry if item.entry is not None else by_seq(item.seq)  # type: ignore[arg-type]
            if base is None:  # a line the loader did not keep: not ours to judge
                assert item.line is not None
                yield item.line
                continue
            yield encode_entry(_REPLACE(base, **item.fields) if item.fields else base)

    # -- order ----------------------------------------------------------------------------

    def _ordered(self, original: bytes) -> list[_Line]:
        after: dict[int | None, list[CallEntry]] = {}
        for anchor, entry in self._inserted:
            after.setdefault(anchor, []).append(entry)
        header_seq = self._recording.header.seq
        dropped, changed = self._dropped, self._changed
        out: list[_Line] = []
        for line in original.splitlines(keepends=True):
            if not line.strip():
                continue
            seq = line_seq(line)
            if seq is None:
                out.append(_Line(None, line, None))  # kept as it was: not ours to judge here
                continue
            if seq not in dropped:
                out.append(_Line(seq, line, changed.get(seq)))
            new_calls = after.pop(seq, [])
            if seq == header_seq:
                new_calls += after.pop(None, [])
            out += [_Line(new.seq, None, new) for new in new_calls]
        for rest in after.values():  # anchored on a line the file did not have
            out += [_Line(new.seq, None, new) for new in rest]
        return out

    def _in_seq_order(self, lines: list[_Line]) -> list[_Line]:
        """The lines in the order their calls were made: by recorded seq (a line may be
        written after later ones: a process's entry is written when its pipes close), each
        added call right after the call its worker made before it."""
        by_seq = {item.seq: item for item in lines if item.seq is not None}
        after: dict[int | None, list[_Line]] = {}
        for anchor, new in self._inserted:
            after.setdefault(anchor, []).append(by_seq.pop(new.seq))
        recording = self._recording
        header_seq = recording.header.seq
        out: list[_Line] = []
        for entry in recording.entries:
            item = by_seq.pop(entry.seq, None)
            if item is not None:
                out.append(item)
            out += after.pop(entry.seq, [])
            if entry.seq == header_seq:
                out += after.pop(None, [])
        for rest in after.values():
            out += rest
        # Lines the loader did not keep (an earlier session's, before a resume) last.
        out += sorted(by_seq.values(), key=lambda item: item.seq)  # type: ignore[arg-type, return-value]
        return out

    # -- time -----------------------------------------------------------------------------

    def _place(self, lines: list[_Line]) -> None:
        """Give each call made anew its start on the time axis, and move what follows a
        call that does not fit in its worker's lane (see the module's docstring)."""
        recording = self._recording
        header = recording.header
        timed, real_start = self._timed, self._real_start
        shift: dict[str, int] = {}  # per worker: how much later its recorded calls now come
        lane_end: dict[str, int] = {}  # per worker: where its last call ended (wall)
        offset: dict[str, int] = {}  # per worker: mono - wall of its last entry
        pushed: dict[str, tuple[int, int]] = {}  # per worker: end (wall, mono) of its
        # last call placed anew, until a later call of the worker is placed after it
        real_end: dict[str, int] = {}  # per worker: when its last call placed anew ended
        placed: dict[int, tuple[int, int]] = {}  # live calls: start on the axis, real start
        latest = (0, 0)  # the end (wall, mono) of the latest call of any worker
        for item in lines:
            if item.seq is None:
                continue
            entry = item.entry if item.entry is not None else recording.by_seq(item.seq)
            if entry is None:
                continue
            worker = entry.worker
            duration = int(getattr(entry, "duration_ns", 0) or 0)
            real = real_start.get(item.seq)
            parent = placed.get(entry.parent) if entry.parent is not None else None
            moved = shift.get(worker, 0)
            if item.seq in timed:
                old = recording.by_seq(item.seq) if item.seq >= 0 else None
                if parent is not None and real is not None:
                    start = parent[0] + max(0, real - parent[1])
                elif old is not None:  # in a recorded call's place: there, or after
                    start = max(lane_end.get(worker, 0), old.ts_ns + moved)
                else:
                    start = lane_end.get(worker, entry.ts_ns)
                    if worker in real_end and real is not None:
                        start += max(0, real - real_end[worker])
                mono = start + offset.get(worker, header.mono_ns - header.ts_ns)
                item.fields.update(ts_ns=start, mono_ns=mono)
                ends = pushed.get(worker, (0, 0))
                pushed[worker] = (max(ends[0], start + duration), max(ends[1], mono + duration))
                if real is not None:
                    real_end[worker] = real + duration
            else:
                start, mono = entry.ts_ns + moved, entry.mono_ns + moved
                if isinstance(entry, SessionEnd):
                    # The session ends after every call of every worker.
                    need = max(latest[0] - start, latest[1] - mono, 0)
                elif parent is None and worker in pushed:
                    # The worker's call placed anew ends after this one starts: this one,
                    # and the worker's calls after it, move later.
                    ends = pushed[worker]
                    need = max(ends[0] - start, ends[1] - mono, 0)
                else:
                    need = 0
                start, mono = start + need, mono + need
                shift[worker] = moved + need
                if parent is None:
                    pushed.pop(worker, None)
                    real_end.pop(worker, None)
                if start != entry.ts_ns:
                    item.fields.update(ts_ns=start, mono_ns=mono)
                    if isinstance(entry, SessionEnd):
                        item.fields["duration_ns"] = entry.duration_ns + start - entry.ts_ns
            end = start + duration
            lane_end[worker] = max(lane_end.get(worker, end), end)
            mono = item.fields.get("mono_ns", entry.mono_ns)
            offset[worker] = mono - start
            latest = (max(latest[0], end), max(latest[1], mono + duration))
            if real is not None:
                placed[item.seq] = (start, real)

    # -- seqs -----------------------------------------------------------------------------

    def _renumber(self, lines: list[_Line]) -> None:
        """Gapless seqs in the order of ``lines`` (the order the calls were made), so seqs
        change only from the first call added or dropped; parents follow."""
        recording = self._recording
        first = recording.header.seq
        numbered = [item for item in lines if item.seq is not None]
        new_seq = {item.seq: first + i for i, item in enumerate(numbered)}
        for item in numbered:
            assert item.seq is not None
            entry = item.entry if item.entry is not None else recording.by_seq(item.seq)
            if entry is None:
                continue
            seq = new_seq[item.seq]
            if seq != entry.seq:
                item.fields["seq"] = seq
            parent = entry.parent
            if parent is not None:
                mapped = new_seq.get(parent)
                if mapped != parent:
                    item.fields["parent"] = mapped
