"""Update mode: today's code departs from the tape; the tape is rewritten to match it.

A replay run with ``update=True`` collects its mismatches as usual. At the end, those the
tape can answer become changes to the tape (a :class:`~sessiontape.report.Rewrite` each):

- a substitute call made with other arguments keeps its recorded answer and takes
  today's request (masked noise keeps its recorded form: it is not a change);
- a verify call (a store mutation) takes today's request and today's result;
- a recorded call today's code no longer makes is dropped, with the calls recorded
  inside it;
- a verify call today's code adds is added, with today's arguments and result, after
  the last call its worker made;
- a session that ends with another outcome takes today's outcome.

A call the tape cannot answer (a new process call, an agent turn it never had), a crash
or an outcome that differs, is not invented: the update fails and writes nothing. When
nothing changes, nothing is written. Otherwise the new tape is written by
``cassette.replace_cassette`` (beside, flushed, renamed over), one entry per line: lines
of unchanged calls are kept byte for byte, so ``git diff`` shows exactly the changes.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from .._context import worker_var
from .._errors import UsageError
from .._time import REAL
from .._version import __version__
from ..cassette import (
    BOUNDARY_PROCESS,
    CallEntry,
    Entry,
    ErrorInfo,
    ExactBytes,
    Recording,
    Rerecorded,
    SessionStart,
    Sidecar,
    boundary_of,
    check_rewritable,
    encode_entry,
    replace_cassette,
    request_of,
    sidecar_dir,
    write_new_cassette,
)
from ..report import Change, Mismatch, MismatchKind, ReplayReport, Rewrite
from ._match import Noise
from ._outcome import Outcome
from ._select import Selectors

__all__ = ["ADDABLE", "FIXABLE", "Added", "UpdatePlan", "Updater", "line_seq"]

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

_SEQ_AT_START: Final = re.compile(rb'^\{"kind":"[a-z_]+","seq":(\d+),')
_REPLACE: Final = msgspec.structs.replace
_PROCESS_REQUEST: Final = ("argv", "cwd", "env", "input")
_METHOD_REQUEST: Final = ("args", "kwargs")


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


class Added(msgspec.Struct, frozen=True):
    """A call today's code made that the tape did not have, placed after ``after`` (the
    seq of the last call its worker made; ``None`` at the start of the session)."""

    after: int | None
    entry: CallEntry


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
        header: SessionStart | None = None,
    ) -> None:
        self.recording = recording
        self._noise = noise
        self._update = update
        self._live = live
        #: The header to write (a live re-record notes itself in it), if it changes.
        self._header = header
        self._changed: dict[int, Any] = {}
        self._dropped: set[int] = set()
        # Calls added at one place keep the order they were opened in (provisional seqs
        # count down from -1).
        self._added = sorted(added, key=lambda a: -a.entry.seq)
        #: Mismatches an update cannot answer: the update fails, nothing is written.
        self.unfixable: list[Mismatch] = []
        #: Every change, in the order of the report's mismatches.
        self.rewrites: list[Rewrite] = []
        for mismatch in mismatches:
            if not self._apply(mismatch, verify):
                self.unfixable.append(mismatch)
        if self._dropped:
            self._drop_nested()
        for add in self._added:
            entry = add.entry
            self.rewrites.append(
                Rewrite(
                    tape=recording.path,
                    seq=None,
                    change=Change.ADDED,
                    boundary=boundary_of(entry) or "",
                    worker=entry.worker,
                    new=request_of(entry),
                )
            )

    @property
    def changes(self) -> bool:
        """Whether the tape changes at all."""
        return bool(self._changed or self._dropped or self._added or self._header)

    @property
    def counts(self) -> tuple[int, int]:
        """How many calls are added and dropped."""
        return len(self._added), len(self._dropped)

    # -- from mismatches to changes -----------------------------------------------------

    def _entry(self, seq: int | None) -> CallEntry | None:
        if seq is None:
            return None
        return self._changed.get(seq) or self.recording.by_seq(seq)  # type: ignore[return-value]

    def _note(self, m: Mismatch, change: Change, **fields: Any) -> None:
        self.rewrites.append(
            Rewrite(
                tape=self.recording.path,
                seq=m.seq,
                change=change,
                boundary=m.boundary,
                worker=m.worker,
                **fields,
            )
        )

    def _apply(self, m: Mismatch, verify: frozenset[str]) -> bool:
        if not self._update and not _live_answers(m, verify):
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
            self._changed[end.seq] = _REPLACE(self._changed.get(end.seq, end), outcome=m.actual)
            for diff in m.diffs:
                self._note(m, Change.OUTCOME, field=diff.path, old=diff.expected, new=diff.actual)
            return True
        entry = self._entry(m.seq)
        if entry is None or m.seq in self._dropped:
            return False
        if m.kind is MismatchKind.UNCONSUMED:
            self._dropped.add(entry.seq)
            self._note(m, Change.DROPPED, old=request_of(entry))
            return True
        if m.kind is MismatchKind.ARGUMENT_MISMATCH:
            return self._new_request(m, entry)
        return self._new_result(m, entry)

    def _new_request(self, m: Mismatch, entry: CallEntry) -> bool:
        if not isinstance(m.actual, dict):
            return False
        recorded = request_of(entry)
        today = self._noise.keep_recorded(m.boundary, recorded, m.actual)
        names = _PROCESS_REQUEST if m.boundary == BOUNDARY_PROCESS else _METHOD_REQUEST
        fields: dict[str, Any] = {
            n: today[n] for n in names if n in today and today[n] != recorded[n]
        }
        if m.boundary == BOUNDARY_PROCESS and today.get("exact") != recorded.get("exact"):
            # The bytes of values that are not UTF-8 go with the readable argv and env.
            fields["exact"] = _exact_of(today)
        if not fields:
            return True  # only noise differed
        self._changed[entry.seq] = _REPLACE(entry, **fields)
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
        self._changed[entry.seq] = new
        for diff in m.diffs:
            self._note(m, Change.RESULT, field=diff.path, old=diff.expected, new=diff.actual)
        return True

    def _drop_nested(self) -> None:
        """Drop the calls recorded inside a dropped call too (a dropped agent turn takes
        the model process it ran along)."""
        dropped = self._dropped
        for entry in self.recording.entries:  # in seq order: a parent comes first
            if entry.parent is not None and entry.parent in dropped:
                dropped.add(entry.seq)

    # -- the new tape -------------------------------------------------------------------

    def lines(self, original: bytes) -> Iterator[bytes]:
        """The new tape's lines, from the bytes of the tape as it is on disk.

        The lines keep their order in the file, an added call goes right after the line
        of the call its worker made before it, and the line of a call nothing changed is
        kept byte for byte, unless calls were added: then every seq after the first one
        added moves up (seqs stay gapless, in the order the calls were made) and each
        parent link follows its parent's new seq.
        """
        changed, dropped = self._changed, self._dropped
        by_seq = self.recording.by_seq
        end = self.recording.end
        counts = self._counts() if (dropped or self._added) and end is not None else None
        after: dict[int | None, list[CallEntry]] = {}
        for add in self._added:
            after.setdefault(add.after, []).append(add.entry)
        renumber: dict[int, int] = {}
        if self._added:
            renumber = self._new_seqs()
        header_seq = self.recording.header.seq
        if self._header is not None:
            changed = {**changed, header_seq: self._header}
        for line in original.splitlines(keepends=True):
            if not line.strip():
                continue
            seq = line_seq(line)
            if seq is None:
                yield line  # kept as it was: not ours to judge here
                continue
            if seq not in dropped:
                entry: Entry | None = changed.get(seq)
                fields: dict[str, Any] = {}
                if counts is not None and end is not None and seq == end.seq:
                    fields["counts"] = counts
                if self._added:
                    fields["seq"] = renumber.get(seq, seq)
                    old = by_seq(seq)
                    parent = old.parent if old is not None else None
                    if parent is not None:
                        fields["parent"] = renumber.get(parent)
                    if fields["seq"] == seq and fields.get("parent", parent) == parent:
                        del fields["seq"]
                        fields.pop("parent", None)
                if entry is None and not fields:
                    yield line
                else:
                    base = entry if entry is not None else by_seq(seq)
                    yield line if base is None else encode_entry(_REPLACE(base, **fields))
            new_calls = after.pop(seq, [])
            if seq == header_seq:
                new_calls += after.pop(None, [])
            for new in new_calls:
                yield self._encode_added(new, renumber)
        for rest in after.values():  # anchored on a line the file did not have
            for new in rest:
                yield self._encode_added(new, renumber)

    @staticmethod
    def _encode_added(entry: CallEntry, renumber: dict[int, int]) -> bytes:
        parent = entry.parent
        return encode_entry(
            _REPLACE(
                entry,
                seq=renumber[entry.seq],
                parent=None if parent is None else renumber.get(parent),
            )
        )

    def _kept(self) -> Iterator[tuple[Entry, bool]]:
        """The entries of the new tape in seq order, the added ones after their anchors;
        each with whether it was on the tape (an added one has no seq of its own yet)."""
        after: dict[int | None, list[CallEntry]] = {}
        for add in self._added:
            after.setdefault(add.after, []).append(add.entry)
        header = self.recording.header
        for entry in self.recording.entries:
            if entry.seq not in self._dropped:
                yield self._changed.get(entry.seq, entry), True
            for new in after.pop(entry.seq, ()):
                yield new, False
            if entry is header:  # calls added before their worker's first call
                for new in after.pop(None, ()):
                    yield new, False
        for rest in after.values():
            for new in rest:
                yield new, False

    def _counts(self) -> dict[str, int]:
        return dict(Counter(_tag(e) for e, _ in self._kept()))

    def _new_seqs(self) -> dict[int, int]:
        """The new seq of each entry, by its seq on the tape (an added call's provisional
        seq is negative, so the two never meet)."""
        first = self.recording.header.seq
        return {entry.seq: first + i for i, (entry, _) in enumerate(self._kept())}


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


def _copy_sidecar(source: Path, target: Path) -> None:
    """Copy the sidecar payloads of the tape at ``source`` beside ``target`` too: the new
    tape keeps the entries that point at them (a full tape replays on its own)."""
    directory = sidecar_dir(source)
    if not directory.is_dir():
        return
    old, new = Sidecar(source), Sidecar(target)
    for file in directory.iterdir():
        name = file.name
        gz = name.endswith(".gz")
        stem = name[:-3] if gz else name
        if stem.startswith("sha256-"):
            old.copy_to(new, stem.replace("-", ":", 1), gz=gz)


def _live_answers(m: Mismatch, verify: frozenset[str]) -> bool:
    """Whether a live re-record (without update) answers ``m``: a mismatch of a verify
    boundary, which runs for real and takes today's calls, or the session's outcome,
    which today's live answers may change."""
    if m.kind is MismatchKind.OUTCOME_MISMATCH:
        return True
    return m.boundary in verify and (m.kind in ADDABLE or m.kind in _VERIFY_FIXABLE)


_VERIFY_FIXABLE: Final = frozenset(
    {MismatchKind.ARGUMENT_MISMATCH, MismatchKind.STORE_MISMATCH, MismatchKind.UNCONSUMED}
)


#: The failures a live call can cause by running in a world the replay only pretended.
_LIVE_FAILURES: Final = frozenset({MismatchKind.ERROR_MISMATCH, MismatchKind.APPLICATION_ERROR})


def _live_hint(m: Mismatch, live: Selectors) -> Mismatch:
    """``m`` with a next step for a live re-record that failed: a live call runs in
    today's world, where the calls served from the tape changed nothing (no repository
    was made, no file written), so the segment may need to grow."""
    if m.kind not in _LIVE_FAILURES:
        return m
    wider = sorted({s.boundary for s in live.items if s.boundary is not None})
    grow = (
        f"re-record the boundary for every worker (--sessiontape-live={','.join(wider)})"
        if wider
        else "re-record the boundaries it needs for every worker (--sessiontape-live=process)"
    )
    return _REPLACE(
        m,
        next_step=(
            f"This was a live re-record of {', '.join(s.text for s in live.items)}: its calls "
            "ran for real in a world that the calls served from the tape did not change; if "
            f"this failure is one of them missing what those made, {grow}."
        ),
    )


def _tag(entry: Entry) -> str:
    return str(type(entry).__struct_config__.tag)


class Updater:
    """The update mode or live re-record of one replay: what strict mode lets by, the
    calls added, and at the end the plan, the rewrite and the report."""

    def __init__(
        self,
        recording: Recording,
        outcome: Outcome,
        *,
        update: bool,
        live: Selectors | None = None,
        app_version: str | None = None,
    ) -> None:
        if recording.path == "<memory>":
            raise UsageError(
                "update and live need a cassette file to write; this recording was loaded "
                "from memory. Pass the cassette's path to replay()."
            )
        path = Path(recording.path)
        if update:
            check_rewritable(path)  # refused before anything runs
        self.update = update
        self.live = live
        self._app_version = app_version
        #: Where the new tape goes: over the old one, or beside it (``x.rerecorded.jsonl``).
        self.target = path if update else path.with_name(f"{path.stem}.rerecorded.jsonl")
        self._recording = recording
        self._outcome = outcome
        #: The boundaries that run for real (verify boundaries).
        self.verify: set[str] = set()
        self._added: list[Added] = []
        self._lock = threading.Lock()
        self._provisional = itertools.count(-1, -1)
        #: Where each live call started: after its worker's last call then (see ``add``).
        self._anchors: dict[int, int | None] = {}
        outcome.answered = self.answered

    def provisional_seq(self) -> int:
        """A seq for a live call starting now (negative: renumbered when the tape is
        written); the call goes after the calling worker's last call so far."""
        anchor = self._outcome.position.get(worker_var.get())
        with self._lock:
            seq = next(self._provisional)
            self._anchors[seq] = anchor
            return seq

    def answered(self, kind: MismatchKind, boundary: str) -> bool:
        """Whether the update (or the live re-record) answers a mismatch of ``kind`` on
        ``boundary``: strict mode lets it by."""
        if not self.update:
            if kind is MismatchKind.OUTCOME_MISMATCH:
                return True
            return boundary in self.verify and (kind in ADDABLE or kind in _VERIFY_FIXABLE)
        return kind in FIXABLE or (kind in ADDABLE and boundary in self.verify)

    def add(self, entry: CallEntry, position: dict[str, int]) -> None:
        """Add ``entry``, made by the calling worker just now, after that worker's last
        recorded call (``position``). A verify call run for real (seq 0) takes a
        provisional seq, the worker and the thread; a live call (its provisional seq,
        negative) comes complete. Either is timed at the start of the call before it on
        the tape, so each thread's times still run forwards in the new tape (the replay's
        virtual clock drifts from the tape's while real calls run)."""
        worker = worker_var.get()
        anchor = position.get(worker)
        with self._lock:  # a process's entry may be written later, by another thread
            if entry.seq in self._anchors:
                anchor = self._anchors.pop(entry.seq)
        before = self._recording.by_seq(anchor) if anchor is not None else None
        if before is None:
            before = self._recording.header
        fields: dict[str, Any] = {"ts_ns": before.ts_ns, "mono_ns": before.mono_ns}
        if entry.seq >= 0:
            with self._lock:
                seq = next(self._provisional)
            fields.update(seq=seq, worker=worker, thread=threading.current_thread().name)
        entry = _REPLACE(entry, **fields)
        with self._lock:
            self._added.append(Added(anchor, entry))

    def _header(self, added: int, dropped: int) -> SessionStart | None:
        if self.live is None:
            return None
        header = self._recording.header
        note = Rerecorded(
            segments=self.live.texts,
            # Real time: the replay's clock is the tape's virtual one.
            at=REAL.datetime.now(_dt.timezone.utc).isoformat(),
            app_version=self._app_version or header.app_version,
            sessiontape_version=__version__,
            added=added,
            dropped=dropped,
        )
        return _REPLACE(header, rerecorded=[*(header.rerecorded or []), note])

    def finish(self, noise: Noise) -> ReplayReport:
        """The report: the new tape written when every mismatch is answered."""
        done = self._outcome
        mismatches = done.mismatches()
        plan = UpdatePlan(
            self._recording,
            mismatches,
            self._added,
            noise=noise,
            verify=frozenset(self.verify),
            update=self.update,
            live=self.live,
        )
        if not done.served and not self._added:
            # Nothing was served or run: a replay that proves nothing writes nothing.
            return done.build_report()
        if plan.unfixable:
            # Nothing is invented: the mismatches the tape cannot answer fail the replay
            # and nothing is written (a partial rewrite would drop what they cut short).
            if self.live is None:
                return done.build_report(kept=plan.unfixable if not self.update else None)
            kept = plan.unfixable if not self.update else mismatches
            return done.build_report(kept=[_live_hint(m, self.live) for m in kept])
        header = self._header(*plan.counts)
        if header is not None:
            plan = UpdatePlan(
                self._recording,
                mismatches,
                self._added,
                noise=noise,
                verify=frozenset(self.verify),
                update=self.update,
                live=self.live,
                header=header,
            )
        written: str | None = None
        if plan.changes:
            with open(self._recording.path, "rb") as file:
                original = file.read()
            if not self.update:
                _copy_sidecar(Path(self._recording.path), self.target)
            write = replace_cassette if self.update else write_new_cassette
            written = str(write(self.target, plan.lines(original)))
        report = done.build_report(kept=[])
        # A call run live was answered too: a replay whose calls were all live passed.
        report.ok = report.consumed > 0 or bool(self._added)
        report.rewrites = plan.rewrites
        report.rewritten_to = written
        return report
