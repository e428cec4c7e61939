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
import threading
from pathlib import Path
from typing import Any, Final

import msgspec

from .._context import worker_var
from .._errors import UsageError
from .._time import REAL
from .._version import __version__
from ..cassette import (
    CallEntry,
    Recording,
    Rerecorded,
    SessionStart,
    Sidecar,
    check_pending_target,
    check_rewritable,
    pending_path,
    remove_pending,
    replace_cassette,
    sidecar_dir,
    write_new_cassette,
    write_pending,
)
from ..report import Mismatch, MismatchKind, ReplayReport
from ._clock import FakeClock
from ._match import Noise
from ._outcome import Outcome
from ._pending import propose
from ._plan import ADDABLE, FIXABLE, VERIFY_FIXABLE, Added, UpdatePlan, stdin_hint
from ._select import Selectors

__all__ = ["Updater"]

_REPLACE: Final = msgspec.structs.replace


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


#: The failures a live call can cause by running in a world the replay only pretended.
_LIVE_FAILURES: Final = frozenset({MismatchKind.ERROR_MISMATCH, MismatchKind.APPLICATION_ERROR})


def _waiting(m: Mismatch) -> Mismatch:
    """``m``, a change the update would make, with a next step that says so."""
    return _REPLACE(
        m,
        next_step="The update takes this change once the calls listed before it are "
        "answered; nothing was written.",
    )


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
        clock: FakeClock | None = None,
        pending: bool = False,
    ) -> None:
        if recording.path == "<memory>":
            raise UsageError(
                "update and live need a cassette file to write; this recording was loaded "
                "from memory. Pass the cassette's path to replay()."
            )
        path = Path(recording.path)
        if update:
            check_rewritable(path)  # refused before anything runs
        if pending:
            check_pending_target(pending_path(path))
        self.update = update
        #: The changes go into a pending file beside the tape for a reviewer, not the tape.
        self.pending = pending
        self.live = live
        self._app_version = app_version
        #: Where the new tape goes: over the old one, or beside it (``x.rerecorded.jsonl``).
        self.target = path if update else path.with_name(f"{path.stem}.rerecorded.jsonl")
        self._recording = recording
        self._outcome = outcome
        self._clock = clock
        #: The boundaries that run for real (verify boundaries).
        self.verify: set[str] = set()
        self._added: list[Added] = []
        self._lock = threading.Lock()
        self._provisional = itertools.count(-1, -1)
        #: Where each live call started: after its worker's last call then (see ``add``),
        #: and when, in real time.
        self._anchors: dict[int, tuple[int | None, int]] = {}
        outcome.answered = self.answered

    def provisional_seq(self) -> int:
        """A seq for a live call starting now (negative: renumbered when the tape is
        written); the call goes after the calling worker's last call so far."""
        anchor = self._outcome.position.get(worker_var.get())
        with self._lock:
            seq = next(self._provisional)
            self._anchors[seq] = (anchor, REAL.monotonic_ns())
            return seq

    def started(self, seq: int) -> int | None:
        """When the live call ``seq`` started, in real time (monotonic ns)."""
        found = self._anchors.get(seq)
        return None if found is None else found[1]

    def answered(self, kind: MismatchKind, boundary: str) -> bool:
        """Whether the update (or the live re-record) answers a mismatch of ``kind`` on
        ``boundary``: strict mode lets it by."""
        if not self.update:
            if kind is MismatchKind.OUTCOME_MISMATCH:
                return True
            return boundary in self.verify and (kind in ADDABLE or kind in VERIFY_FIXABLE)
        return kind in FIXABLE or (kind in ADDABLE and boundary in self.verify)

    def add(self, entry: CallEntry, position: dict[str, int]) -> None:
        """Add ``entry``, made by the calling worker just now, after that worker's last
        recorded call (``position``). A verify call run for real (seq 0) takes a
        provisional seq, the worker and the thread; a live call (its provisional seq,
        negative) comes complete. Where it lands on the tape's time axis is decided when
        the tape is written (``_newtape.py``)."""
        worker = worker_var.get()
        anchor = position.get(worker)
        real_start = REAL.monotonic_ns() - entry.duration_ns
        with self._lock:  # a process's entry may be written later, by another thread
            if entry.seq in self._anchors:
                anchor, real_start = self._anchors[entry.seq]
        if entry.seq >= 0:
            # A verify call run for real: it started at the virtual time the replay is at
            # now, less its real duration.
            fields: dict[str, Any] = {"worker": worker, "thread": threading.current_thread().name}
            if self._clock is not None:
                took = entry.duration_ns
                wall, mono = self._clock.time_ns(), self._clock.monotonic_ns()
                fields.update(ts_ns=max(0, wall - took), mono_ns=max(0, mono - took))
            with self._lock:
                fields["seq"] = next(self._provisional)
            entry = _REPLACE(entry, **fields)
        with self._lock:
            self._added.append(Added(anchor, entry, real_start))

    def _header(self, added: int, dropped: int) -> SessionStart | None:
        if self.live is None:
            return None
        header = self._recording.header
        notes = list(header.rerecorded or [])
        note = Rerecorded(
            segments=self.live.texts,
            # Real time: the replay's clock is the tape's virtual one.
            at=REAL.datetime.now(_dt.timezone.utc).isoformat(),
            app_version=self._app_version or header.app_version,
            sessiontape_version=__version__,
            added=added,
            dropped=dropped,
        )
        last = notes[-1] if notes else None
        if last is not None and _REPLACE(last, at=note.at, added=added, dropped=dropped) == note:
            # The same segment re-recorded again by the same code: one note, the latest
            # time, the calls added and dropped in all (the header does not grow per run).
            notes[-1] = _REPLACE(note, added=last.added + added, dropped=last.dropped + dropped)
        else:
            notes.append(note)
        return _REPLACE(header, rerecorded=notes)

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
            # They come first; an update lists what it would have changed after them.
            kept = list(plan.unfixable)
            if self.update:
                blocking = {id(m) for m in kept}
                kept = [stdin_hint(m) for m in kept]
                kept += [_waiting(m) for m in mismatches if id(m) not in blocking]
            if self.live is not None:
                kept = [_live_hint(m, self.live) for m in kept]
            return done.build_report(kept=kept)
        written: str | None = None
        if plan.changes:
            # A live re-record notes itself in the header, when it changed anything.
            header = self._header(*plan.counts)
            with open(self._recording.path, "rb") as file:
                original = file.read()
            if self.pending:
                return self._propose(plan, header, original)
            tape = plan.new_tape(header)
            if not self.update:
                _copy_sidecar(Path(self._recording.path), self.target)
            write = replace_cassette if self.update else write_new_cassette
            written = str(write(self.target, tape.lines(original)))
        elif self.pending:
            # Today's code needs no change: changes proposed by an earlier run are moot.
            remove_pending(pending_path(self.target))
        report = done.build_report(kept=[])
        # A call run live was answered too: a replay whose calls were all live passed.
        report.ok = report.consumed > 0 or bool(self._added)
        report.rewrites = plan.rewrites
        report.rewritten_to = written
        return report

    def _propose(
        self, plan: UpdatePlan, header: SessionStart | None, original: bytes
    ) -> ReplayReport:
        """Write the changes beside the tape for a reviewer; the replay fails, pointing
        at them (the tape stays as it is until they are accepted)."""
        proposed = propose(plan, header, original, self.target)
        where = write_pending(pending_path(self.target), proposed)
        report = self._outcome.build_report(kept=[])
        report.ok = False
        report.rewrites = plan.rewrites
        report.pending_to = str(where)
        report.pending = [c.category for c in proposed.changes]
        return report
