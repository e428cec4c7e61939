"""From one replay's mismatches and the calls it made for real to the changes of its tape.

An :class:`UpdatePlan` holds every change as data, each with its kind
(:class:`~sessiontape.report.Change`) and the kind of decision it asks of a reviewer
(:class:`~sessiontape.report.ChangeCategory`):

- a request rewritten (``fix``): a substitute call made with other arguments keeps its
  recorded answer and takes today's request; a verify call takes today's request and
  result (a renamed method included); the outcome takes today's;
- a call dropped (``trim``): a recorded call today's code no longer makes, with the calls
  recorded inside it;
- a call added (``create``): a verify call run for real that the tape did not have, or a
  call recorded live that no recorded call stands for;
- a call re-recorded live whose answer changed (``update``).

A live re-record pairs the calls it ran for real with the recorded calls of its segment,
worker by worker, in order (``_pair``): a live call that asks what a recorded one asked
and got the same answer *is* that call, and the tape keeps its line byte for byte (its
recorded time and duration too), so a re-record with no change in the world writes
nothing; one whose answer changed takes the recorded call's place and seq. Only the
live calls no recorded call stands for are added, and only the recorded calls no live
call stands for are dropped. Where each change lands in the new file, and at which
time, is ``_newtape.py``'s work.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Final

import msgspec

from ..cassette import (
    BOUNDARY_PROCESS,
    Blob,
    CallEntry,
    Chunk,
    Entry,
    ErrorInfo,
    ExactBytes,
    ProcessCall,
    Recording,
    SessionStart,
    StoreMutation,
    boundary_of,
    eager,
    request_of,
)
from ..report import Change, Mismatch, MismatchKind, Rewrite, diff_values
from ._madeup import MadeUp
from ._match import Noise, compare, same_call
from ._newtape import NewTape
from ._select import Selectors

__all__ = [
    "ADDABLE",
    "FIXABLE",
    "VERIFY_FIXABLE",
    "Added",
    "UpdatePlan",
    "kept_counts",
    "live_answers",
    "stdin_hint",
]

#: The mismatch kinds an update can always answer.
FIXABLE: Final = frozenset(
    {
        MismatchKind.ARGUMENT_MISMATCH,
        MismatchKind.STORE_MISMATCH,
        MismatchKind.UNCONSUMED,
        MismatchKind.OUTCOME_MISMATCH,
    }
)
#: A call of a verify boundary the tape did not have: added, so answered too.
ADDABLE: Final = frozenset({MismatchKind.UNEXPECTED_CALL, MismatchKind.EXHAUSTED})
#: What a live re-record alone answers on a verify boundary (it runs for real anyway).
VERIFY_FIXABLE: Final = frozenset(
    {MismatchKind.ARGUMENT_MISMATCH, MismatchKind.STORE_MISMATCH, MismatchKind.UNCONSUMED}
)

_REPLACE: Final = msgspec.structs.replace
#: Where a process's stdin sits in its request, as a diff names it: ``input`` or
#: ``chunks[N].data`` (and what follows, for a payload compared field by field).
_STDIN_PATH: Final = re.compile(r"(?:input|chunks\[(\d+)\]\.data)(?![\w\[])")
_PROCESS_REQUEST: Final = ("argv", "cwd", "env", "input")
_METHOD_REQUEST: Final = ("args", "kwargs")
#: Fields that place a call (where and when), not what it asked or answered.
_PLACE: Final = frozenset({"seq", "ts_ns", "mono_ns", "duration_ns", "thread", "parent", "worker"})


class Added(msgspec.Struct, frozen=True):
    """A call today's code made that the tape did not have, placed after ``after`` (the
    seq of the last call its worker made; ``None`` at the start of the session).

    ``entry`` carries a provisional seq (negative, counting down in the order the calls
    started); ``real_start`` is when it started in real time (monotonic ns), which places
    it after the call before it and inside the call around it."""

    after: int | None
    entry: CallEntry
    real_start: int = 0


def live_answers(m: Mismatch, verify: frozenset[str]) -> bool:
    """Whether a live re-record (without update) answers ``m``: a mismatch of a verify
    boundary, which runs for real and takes today's calls, or the session's outcome,
    which today's live answers may change."""
    if m.kind is MismatchKind.OUTCOME_MISMATCH:
        return True
    return m.boundary in verify and (m.kind in ADDABLE or m.kind in VERIFY_FIXABLE)


class UpdatePlan:
    """The changes one replay makes to its tape, and the new tape's lines."""

    def __init__(
        self,
        recording: Recording,
        mismatches: Sequence[Mismatch],
        added: Sequence[Added],
        *,
        noise: Noise,
        verify: frozenset[str],
        update: bool = True,
        live: Selectors | None = None,
    ) -> None:
        self.recording = recording
        self._noise = noise
        self._made_up = MadeUp(recording, noise)
        self._update = update
        self._live = live
        #: New entries by the seq of the recorded call they replace.
        self.changed: dict[int, Entry] = {}
        #: Seqs of the recorded calls the new tape leaves out.
        self.dropped: set[int] = set()
        #: Seqs (recorded, or provisional for added calls) of the calls placed anew on the
        #: time axis: their real duration, after the call before them (see ``_newtape``).
        self.timed: set[int] = set()
        #: When each call run for real started, in real time, by its seq in the new tape's
        #: terms (recorded for a call that took a recorded call's place).
        self.real_start: dict[int, int] = {}
        # Calls added at one place keep the order they were opened in (provisional seqs
        # count down from -1).
        self.inserted: list[Added] = sorted(added, key=lambda a: -a.entry.seq)
        #: Mismatches an update cannot answer: the update fails, nothing is written.
        self.unfixable: list[Mismatch] = []
        self._notes: list[tuple[float, int, Rewrite]] = []
        self._dropped_by: dict[int, Mismatch] = {}
        for mismatch in mismatches:
            if not self._apply(mismatch, verify):
                self.unfixable.append(mismatch)
        if self.dropped:
            self._drop_nested()
        if self.inserted and self.dropped:
            self._pair_live()
        for seq in sorted(self.dropped):
            entry = recording.by_seq(seq)
            if entry is not None and seq in self._dropped_by:
                self._note_at(seq, Change.DROPPED, entry, old=request_of(entry))  # type: ignore[arg-type]
        for add in self.inserted:
            entry = add.entry
            self.real_start[entry.seq] = add.real_start
            self.timed.add(entry.seq)
            at = add.after if add.after is not None else -1
            self._notes.append(
                (
                    at + 0.5,
                    len(self._notes),
                    Rewrite(
                        tape=recording.path,
                        seq=None,
                        change=Change.ADDED,
                        boundary=boundary_of(entry) or "",
                        worker=entry.worker,
                        new=request_of(entry),
                    ),
                )
            )
        #: Every change, in the order of the tape.
        self.rewrites: list[Rewrite] = [r for _, _, r in sorted(self._notes, key=lambda n: n[:2])]

    @property
    def changes(self) -> bool:
        """Whether the tape changes at all (a live re-record's note aside)."""
        return bool(self.changed or self.dropped or self.inserted)

    @property
    def counts(self) -> tuple[int, int]:
        """How many calls are added and dropped."""
        return len(self.inserted), len(self.dropped)

    # -- from mismatches to changes -----------------------------------------------------

    def _entry(self, seq: int | None) -> CallEntry | None:
        if seq is None:
            return None
        return self.changed.get(seq) or self.recording.by_seq(seq)  # type: ignore[return-value]

    def _note_at(self, seq: int, change: Change, entry: Any, **fields: Any) -> None:
        self._notes.append(
            (
                seq,
                len(self._notes),
                Rewrite(
                    tape=self.recording.path,
                    seq=seq,
                    change=change,
                    boundary=boundary_of(entry) or "session",
                    worker=entry.worker,
                    **fields,
                ),
            )
        )

    def _note(self, m: Mismatch, change: Change, **fields: Any) -> None:
        self._notes.append(
            (
                m.seq if m.seq is not None else -1,
                len(self._notes),
                Rewrite(
                    tape=self.recording.path,
                    seq=m.seq,
                    change=change,
                    boundary=m.boundary,
                    worker=m.worker,
                    **fields,
                ),
            )
        )

    def _apply(self, m: Mismatch, verify: frozenset[str]) -> bool:
        if not self._update and not live_answers(m, verify):
            # A live re-record alone drops the recorded calls of its segment, and takes
            # today's calls of the verify boundaries (our own state, which the segment
            # drives); nothing else.
            entry = self._entry(m.seq)
            if (
                m.kind is not MismatchKind.UNCONSUMED
                or entry is None
                or self._live is None
                or not self._live.picks_entry(entry)
            ):
                return False
        if m.kind in ADDABLE:
            # Answered by the call added for it (see ``Added``), when it ran for real.
            return m.boundary in verify
        if m.kind not in FIXABLE:
            return False
        end = self.recording.end
        if m.kind is MismatchKind.OUTCOME_MISMATCH:
            if end is None:
                return False
            self.changed[end.seq] = _REPLACE(self.changed.get(end.seq, end), outcome=m.actual)
            for diff in m.diffs:
                self._note(m, Change.OUTCOME, field=diff.path, old=diff.expected, new=diff.actual)
            return True
        entry = self._entry(m.seq)
        if entry is None or m.seq in self.dropped:
            return False
        if m.kind is MismatchKind.UNCONSUMED:
            self.dropped.add(entry.seq)
            self._dropped_by[entry.seq] = m
            return True
        if m.kind is MismatchKind.ARGUMENT_MISMATCH:
            return self._new_request(m, entry)
        return self._new_result(m, entry)

    def _new_request(self, m: Mismatch, entry: CallEntry) -> bool:
        if not isinstance(m.actual, dict):
            return isinstance(entry, ProcessCall) and self._new_stdin(m, entry)
        recorded = request_of(entry)
        today = self._noise.keep_recorded(m.boundary, recorded, m.actual)
        fields = _request_fields(entry, recorded, today)
        if not fields:
            return True  # only noise differed
        self.changed[entry.seq] = _REPLACE(self.changed.get(entry.seq, entry), **fields)
        for diff in m.diffs:
            self._note(m, Change.REQUEST, field=diff.path, old=diff.expected, new=diff.actual)
        return True

    def _new_stdin(self, m: Mismatch, entry: ProcessCall) -> bool:
        new = _stdin_rewritten(m, self.changed.get(entry.seq, entry))
        if new is None:
            return False
        self.changed[entry.seq] = new
        for diff in m.diffs:
            self._note(m, Change.REQUEST, field=diff.path, old=diff.expected, new=diff.actual)
        return True

    def _new_result(self, m: Mismatch, entry: CallEntry) -> bool:
        actual = m.actual
        if not isinstance(actual, dict):
            return False
        if "error" in actual:
            error = actual["error"]
            new = _REPLACE(
                entry,
                result=None,
                error=ErrorInfo(type=str(error["type"]), message=str(error["message"])),
            )
        else:
            new = _REPLACE(entry, result=actual.get("result"), error=None)
        self.changed[entry.seq] = new
        for diff in m.diffs:
            self._note(m, Change.RESULT, field=diff.path, old=diff.expected, new=diff.actual)
        return True

    def _drop_nested(self) -> None:
        """Drop the calls recorded inside a dropped call too (a dropped agent turn takes
        the model process it ran along)."""
        dropped = self.dropped
        for entry in self.recording.entries:  # in seq order: a parent comes first
            if entry.parent is not None and entry.parent in dropped:
                dropped.add(entry.seq)
                self._dropped_by.setdefault(entry.seq, self._dropped_by[entry.parent])

    # -- live calls in the places of the recorded calls they stand for --------------------

    def _pair_live(self) -> None:
        """Pair each worker's calls run for real with the recorded calls dropped from its
        queue, boundary by boundary, in the order both were made; then settle each pair."""
        recorded: dict[tuple[str, str], list[CallEntry]] = {}
        for seq in sorted(self.dropped):
            entry = self.recording.by_seq(seq)
            if entry is not None and boundary_of(entry) is not None:
                key = (boundary_of(entry) or "", entry.worker)
                recorded.setdefault(key, []).append(eager(entry))
        today: dict[tuple[str, str], list[Added]] = {}
        for add in self.inserted:
            key = (boundary_of(add.entry) or "", add.entry.worker)
            today.setdefault(key, []).append(add)
        pairs: list[tuple[CallEntry, Added]] = []
        for key, adds in today.items():
            recs = recorded.get(key)
            if recs:
                pairs += _pair(recs, adds, _alike(key[0], self._noise))
        if not pairs:
            return
        #: The recorded seq each paired live call takes (its provisional seq's stand-in).
        taken = {add.entry.seq: rec.seq for rec, add in pairs}
        paired = set(taken)
        workers = {add.entry.seq: (add.entry.worker, rec.seq) for rec, add in pairs}
        self.inserted = [a for a in self.inserted if a.entry.seq not in paired]
        for rec, add in pairs:
            self.dropped.discard(rec.seq)
            self._dropped_by.pop(rec.seq, None)
            self.real_start[rec.seq] = add.real_start
            self._settle(rec, add.entry, taken)
        # A live call inserted after a live call that took a recorded place goes after that
        # place (its anchor was the last call served to its worker before both).
        self.inserted = _reanchored(self.inserted, workers)

    def _settle(self, rec: CallEntry, live: CallEntry, taken: dict[int, int]) -> None:
        """Put ``live`` in the place of ``rec``: nothing changes when it asked and got
        the same (the values the program made up today put back as recorded: see
        ``_madeup``); otherwise its line takes ``rec``'s seq (and ``rec``'s time when it
        asked the same, for only the world's answer changed)."""
        boundary = boundary_of(rec) or ""
        live = self._made_up.put_back(rec, live)
        recorded = request_of(rec)
        today = self._noise.keep_recorded(boundary, recorded, request_of(live))
        fields: dict[str, Any] = _request_fields(live, request_of(live), today)
        parent = live.parent
        if parent is not None and parent < 0:
            parent = taken.get(parent, parent)  # a provisional seq, mapped when written
        fields.update(seq=rec.seq, thread=rec.thread, parent=parent)
        same_request = today == recorded
        if same_request:
            fields.update(ts_ns=rec.ts_ns, mono_ns=rec.mono_ns, duration_ns=rec.duration_ns)
        new = _REPLACE(live, **fields)
        old_data, new_data = msgspec.to_builtins(rec), msgspec.to_builtins(new)
        if old_data == new_data:
            return  # the recorded call, re-recorded as it was: its line stays
        self.changed[rec.seq] = new
        if not same_request:
            self.timed.add(rec.seq)
        requested = set(recorded) | {"operation", "method", "exact"}
        for diff in diff_values(_what(old_data), _what(new_data)):
            top = diff.path.split(".", 1)[0].split("[", 1)[0]
            change = Change.REQUEST if top in requested else Change.ANSWER
            self._note_at(rec.seq, change, rec, field=diff.path, old=diff.expected, new=diff.actual)

    # -- the new tape -------------------------------------------------------------------

    def new_tape(self, header: SessionStart | None = None) -> NewTape:
        """The new tape these changes make (``header``: the header to write, if it
        changes)."""
        return NewTape(
            self.recording,
            changed=self.changed,
            dropped=self.dropped,
            inserted=[(a.after, a.entry) for a in self.inserted],
            timed=self.timed,
            real_start=self.real_start,
            header=header,
            counts=self._counts() if (self.dropped or self.inserted) else None,
        )

    def _counts(self) -> dict[str, int]:
        return kept_counts(
            self.recording, self.changed, self.dropped, [a.entry for a in self.inserted]
        )


def _alike(boundary: str, noise: Noise) -> Callable[[CallEntry, CallEntry], int]:
    """How alike a recorded call and a live one are: 2 the same request (noise aside), 1
    the same call with other arguments, 0 another call."""

    def alike(rec: CallEntry, live: CallEntry) -> int:
        expected, actual = request_of(rec), request_of(live)
        if not compare(boundary, expected, actual, noise=noise)[0]:
            return 2
        return int(same_call(boundary, expected, actual))

    return alike


def kept_counts(
    recording: Recording,
    changed: Mapping[int, Entry],
    dropped: Collection[int],
    inserted: Sequence[Entry],
) -> dict[str, int]:
    """The entries of each kind a new tape holds (its session end's ``counts``): the
    recorded ones it keeps, as changed, and those inserted."""

    def kept() -> Iterator[Entry]:
        for entry in recording.entries:
            if entry.seq not in dropped:
                yield changed.get(entry.seq, entry)
        yield from inserted

    return dict(Counter(str(type(e).__struct_config__.tag) for e in kept()))


def _what(data: dict[str, Any]) -> dict[str, Any]:
    """A call's fields without those that place it (what it asked and answered)."""
    return {k: v for k, v in data.items() if k not in _PLACE}


def stdin_hint(m: Mismatch) -> Mismatch:
    """``m``, when it is stdin an update cannot write (see :func:`_stdin_rewritten`), with
    the next step that takes it: the call run for real and recorded again (the update's
    own next step, ``--sessiontape-update``, is what just failed)."""
    if not (
        m.kind is MismatchKind.ARGUMENT_MISMATCH
        and m.boundary == BOUNDARY_PROCESS
        and m.diffs
        and _STDIN_PATH.match(m.diffs[0].path)
    ):
        return m
    return _REPLACE(
        m,
        next_step="An update rewrites stdin only where the tape holds it in its line; this "
        "stdin goes to the sidecar. If the change is intended, record the call again for "
        f"real: --sessiontape-live=process@{m.worker} --sessiontape-update.",
    )


def _stdin_rewritten(m: Mismatch, base: Entry) -> ProcessCall | None:
    """``base`` with what the program wrote to its stdin today, compared after its call
    was matched (``m.actual`` is today's bytes in their stored form), where the recording
    has it: ``input``, or the data of stdin chunk N. ``None`` when it cannot be written: a
    payload today's run would keep in the sidecar (a comparison writes no sidecar file),
    or a place the recording lacks."""
    found = _STDIN_PATH.match(m.diffs[0].path) if m.diffs else None
    today = m.actual
    inline = isinstance(today, str) or (
        isinstance(today, Blob) and today.b64 is not None and not today.sidecar
    )
    if found is None or not inline or not isinstance(base, ProcessCall):
        return None
    index = found.group(1)
    if index is None:
        return _REPLACE(base, input=today)
    chunks = list(base.chunks or ())
    at = int(index)
    if at >= len(chunks) or chunks[at].stream != "stdin":
        return None
    chunks[at] = Chunk(stream="stdin", data=today)
    return _REPLACE(base, chunks=chunks)


def _request_fields(
    entry: CallEntry, recorded: dict[str, Any], today: dict[str, Any]
) -> dict[str, Any]:
    """The fields of ``entry`` that change when its request ``recorded`` becomes
    ``today`` (a renamed method too)."""
    names = _PROCESS_REQUEST if isinstance(entry, ProcessCall) else _METHOD_REQUEST
    fields: dict[str, Any] = {n: today[n] for n in names if n in today and today[n] != recorded[n]}
    if isinstance(entry, ProcessCall):
        if today.get("exact") != recorded.get("exact"):
            # The bytes of values that are not UTF-8 go with the readable argv and env.
            fields["exact"] = _exact_of(today)
    elif "method" in today and today["method"] != recorded["method"]:
        fields["operation" if isinstance(entry, StoreMutation) else "method"] = today["method"]
    return fields


def _exact_of(request: dict[str, Any]) -> ExactBytes | None:
    """A process call's ``exact`` field from its request form (``exact_request``)."""
    found = request.get("exact")
    if not found:
        return None
    argv = found.get("argv")
    return ExactBytes(
        argv={int(k): v for k, v in argv.items()} if argv else None,
        env=found.get("env") or None,
        env_names=found.get("env_names") or None,
    )


def _key(entry: CallEntry) -> bytes:
    return msgspec.json.encode(request_of(entry))


def _pair(
    recs: list[CallEntry], adds: list[Added], alike: Callable[[CallEntry, CallEntry], int]
) -> list[tuple[CallEntry, Added]]:
    """The recorded calls and live calls (each in the order they were made) that stand
    for each other: runs of identical requests first (``difflib``), then, between them,
    as many on each side pair in order when they run the same program; otherwise each
    recorded call with the first live call after the last pair that asks the same
    (noise aside), else with the first that is the same call with other arguments."""
    matcher = difflib.SequenceMatcher(
        None, [_key(r) for r in recs], [_key(a.entry) for a in adds], autojunk=False
    )
    pairs: list[tuple[CallEntry, Added]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += [(recs[i1 + k], adds[j1 + k]) for k in range(i2 - i1)]
        elif tag == "replace" and i2 - i1 == j2 - j1:
            # As many calls on each side between two runs of the same: each stands for
            # the one in its place when it runs the same program (or method).
            pairs += [
                (recs[i1 + k], adds[j1 + k])
                for k in range(i2 - i1)
                if _program(recs[i1 + k]) == _program(adds[j1 + k].entry)
            ]
        elif tag == "replace":
            cursor = j1
            for rec in recs[i1:i2]:
                found = _first(rec, adds, cursor, j2, alike, 2)
                if found is None:
                    found = _first(rec, adds, cursor, j2, alike, 1)
                if found is not None:
                    pairs.append((rec, adds[found]))
                    cursor = found + 1
    return pairs


def _program(entry: CallEntry) -> str:
    """The program a process call runs, or the method another call calls."""
    if isinstance(entry, ProcessCall):
        return entry.argv[0] if entry.argv else ""
    return str(request_of(entry)["method"])


def _first(
    rec: CallEntry,
    adds: list[Added],
    start: int,
    stop: int,
    alike: Callable[[CallEntry, CallEntry], int],
    level: int,
) -> int | None:
    for j in range(start, stop):
        if alike(rec, adds[j].entry) >= level:
            return j
    return None


def _reanchored(inserted: list[Added], taken: dict[int, tuple[str, int]]) -> list[Added]:
    """``inserted`` with each call's anchor moved past the recorded places taken by the
    live calls its worker started before it (``taken``: by provisional seq, the worker
    and the recorded seq it took)."""
    out: list[Added] = []
    for add in inserted:
        worker, seq = add.entry.worker, add.entry.seq
        # Provisional seqs count down: a higher one started earlier.
        places = [rec for s, (w, rec) in taken.items() if w == worker and s > seq]
        after = add.after
        if places and (after is None or max(places) > after):
            after = max(places)
        out.append(Added(after, add.entry, add.real_start))
    return out
