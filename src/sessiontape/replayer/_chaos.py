"""Chaos replay: the tape served under a schedule, its calls answered by what they ask.

:class:`ChaosEngine` is a :class:`ReplayEngine` whose boundary-facing methods (the
``ReplaySide`` protocol the boundaries already speak) are also scheduling points: before a
worker's boundary call goes ahead, the scheduler (``_scheduler.py``) may let another
worker run first. Nothing changes for the boundaries, and nothing of this runs in a plain
replay (a plain replay builds a plain engine).

Under another interleaving than the recorded one, a worker may ask what another worker
asked in production (it claimed that worker's task). So a substituted call is answered by
the recorded call that asked the same, from whichever worker's queue holds it, the
asking worker's own name read as the recording worker's (``_across.py``). A call that no
recorded call answers makes the schedule *inadmissible*: it stops, and that is not a
failure (``_admit.py`` says why, and which mask would admit it). Verify-boundary calls
(the store) run for real and in whatever order the schedule makes; their results are not
compared with the recorded ones (another order gives other results), but the project's
invariants are checked after each of them.

The report of a schedule holds what failed it first (the invariant it broke, the worker
that died, the other outcome) and no call it never reached (``_trace.py`` keeps the calls
as they ran, which ``_chaos_save.py`` writes as a tape of its own).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from .._context import worker_var
from ..cassette import (
    BOUNDARY_PROCESS,
    BoundaryKind,
    Call,
    CallEntry,
    ProcessCall,
    Recording,
    StoreMutation,
    request_of,
)
from ..report import (
    ChaosFailure,
    ChaosResult,
    ChaosVerdict,
    FailureKind,
    MismatchKind,
    ReplayReport,
    summarize_value,
)
from ._across import AcrossWorkers
from ._admit import inadmissible
from ._align import Normalize
from ._chaos_save import save_schedule, saved_schedule
from ._clock import FakeClock
from ._decisions import traced_decisions
from ._engine import UNSET, ReplayEngine
from ._invariants import Invariant, violation
from ._outcome import Outcome, context_for
from ._renamed import renamed
from ._schedule import Schedule, Strategy
from ._scheduler import Scheduler, ScheduleStopped
from ._trace import NO_REQUEST, Trace, boundary_name

__all__ = ["ChaosEngine", "ScheduleStopped", "ScheduledClock"]

#: Scheduling decisions allowed per recorded call before a run counts as a livelock.
_STEPS_PER_CALL: Final = 50
#: The verdict's failure kinds, by the replay report's mismatch kinds.
_FAILING: Final = {
    MismatchKind.OUTCOME_MISMATCH: FailureKind.OUTCOME,
    MismatchKind.ERROR_MISMATCH: FailureKind.EXCEPTION,
    MismatchKind.APPLICATION_ERROR: FailureKind.EXCEPTION,
    MismatchKind.INVARIANT_VIOLATED: FailureKind.INVARIANT,
}


class ScheduledClock(FakeClock):
    """The virtual clock of a chaos replay: every sleep is also a scheduling point, at
    which the sleeping thread lets the others go first."""

    def __init__(self, start_ns: int, mono_start_ns: int, scheduler: Scheduler) -> None:
        super().__init__(start_ns, mono_start_ns)
        self._scheduler = scheduler

    def sleep(self, seconds: float) -> None:
        # FakeClock.sleep's virtual move, without its real sleep(0): the scheduling point
        # hands the processor on itself, and a real sleep would wait for the GIL.
        before = self.monotonic_ns()
        self.advance(seconds)
        with self._lock:
            self._slept_ns += self.monotonic_ns() - before
            self._sleeps += 1
        self._scheduler.point(sleeping=True)


def _is_verify(entry: CallEntry) -> bool:
    if isinstance(entry, StoreMutation):
        return True
    return isinstance(entry, Call) and entry.mode == BoundaryKind.VERIFY.value


class ChaosEngine(ReplayEngine):
    """A replay engine that runs the application's threads under ``schedule``."""

    def __init__(self, recording: Recording, *, schedule: Schedule, **options: Any) -> None:
        options["strict"] = False  # a schedule ends with its verdict, never mid-way
        super().__init__(recording, **options)
        self.schedule = schedule
        index = self._index
        self._verify_boundaries = {
            boundary
            for (boundary, _), queue in index.queues.items()
            if queue and _is_verify(queue[0])
        }
        self._verify_seqs = {seq for seqs in index.verify_order.values() for seq in seqs}
        self._across = AcrossWorkers(index.queues, self._aligner.matches)
        #: A stand-in entry per verify boundary, for a call with no recorded twin.
        self._tokens = {
            boundary: queues[0][1][0]
            for boundary, queues in self._across.by_boundary.items()
            if boundary in self._verify_boundaries and queues[0][1]
        }
        self._workers = len({worker for (_, worker) in index.queues})
        self.scheduler = Scheduler(
            schedule,
            steps=index.loaded + 1,
            max_steps=_STEPS_PER_CALL * (index.loaded + 10),
            on_stall=self._stalled,
            on_error=self._thread_died,
            position=lambda: len(self.trace.calls),
        )
        self._point = self.scheduler.point
        header = recording.header
        self.clock = ScheduledClock(header.ts_ns, header.mono_ns, self.scheduler)
        self._chaos_invariants: list[Invariant] = []
        #: The calls in the order they ran.
        self.trace = Trace()
        self._lock = threading.Lock()
        self._verdict: ChaosVerdict | None = None
        self._failure: ChaosFailure | None = None
        self._why_inadmissible: str | None = None
        self._inadmissible_call: str | None = None
        self.result: ChaosResult | None = None

    # -- the verdict ------------------------------------------------------------------

    def _settle(
        self, verdict: ChaosVerdict, *, failure: ChaosFailure | None = None, why: str | None = None
    ) -> bool:
        """Fix the verdict (the first one wins); whether this call fixed it."""
        with self._lock:
            if self._verdict is not None:
                return False
            self._verdict = verdict
            self._failure = failure
            self._why_inadmissible = why
            return True

    def _fail(self, kind: FailureKind, message: str, worker: str | None) -> bool:
        """Fail the schedule (unless its verdict is fixed already); whether this did."""
        failure = ChaosFailure(
            kind=kind, message=message, worker=worker, after=len(self.trace.calls)
        )
        if self._settle(ChaosVerdict.FAILED, failure=failure):
            self.scheduler.stop()
            return True
        return False

    def _stalled(self, message: str) -> None:
        # The scheduler's lock is held: settle only, it stops itself.
        self._settle(
            ChaosVerdict.FAILED,
            failure=ChaosFailure(
                kind=FailureKind.DEADLOCK,
                message=f"possible deadlock: {message}",
                after=len(self.trace.calls),
            ),
        )

    def _thread_died(self, exc: BaseException, worker: str) -> None:
        if self._fail(FailureKind.EXCEPTION, self._exception_text(exc), worker):
            self._outcome.application_error(exc, worker, None)

    def _exception_text(self, exc: BaseException) -> str:
        # Scrubbed: the message may name today's temporary directories.
        return f"{type(exc).__qualname__}: {self.scrubber.text(str(exc))}"

    def _inadmissible(self, boundary: str, request: Mapping[str, Any]) -> ScheduleStopped:
        if self._verdict is None:  # the reason is worked out once, by the first to stop
            hidden = self._index.hidden
            recorded = (e for e in self.recording.calls if e.seq not in hidden)
            why, call = inadmissible(boundary, request, worker_var.get(), recorded)
            if self._settle(ChaosVerdict.INADMISSIBLE, why=why):
                self._inadmissible_call = call
                self.scheduler.stop()
        return ScheduleStopped()

    # -- scheduling points: the boundary-facing methods ----------------------------------

    def queue(self, boundary: str) -> deque[CallEntry] | None:
        self._point()
        # Verify calls too: their worker's head is taken as in a plain replay, else take().
        return self._index.queues.get((boundary, worker_var.get()))

    def head(self, boundary: str) -> CallEntry | None:
        queue = self.queue(boundary)
        return queue[0] if queue else None

    # A call answered by a recorded entry is described by that entry when the result is
    # built: nothing of the request is kept.

    def took(self, entry: CallEntry) -> None:
        super().took(entry)
        verify = entry.seq in self._verify_seqs
        self.trace.add(worker_var.get(), entry, None, NO_REQUEST, verify=verify)

    def serve_head(self, queue: deque[CallEntry], head: CallEntry) -> None:
        super().serve_head(queue, head)
        self.trace.add(worker_var.get(), head, None, NO_REQUEST)

    def take_head(self, boundary: str) -> CallEntry:
        head = super().take_head(boundary)
        verify = boundary in self._verify_boundaries
        self.trace.add(worker_var.get(), head, boundary, NO_REQUEST, verify=verify)
        return head

    def take(
        self, boundary: str, actual: Mapping[str, Any], normalize: Normalize | None = None
    ) -> CallEntry | None:
        return self._take(boundary, actual, normalize, any_input=False)

    def take_before_stdin(self, boundary: str, actual: Mapping[str, Any]) -> CallEntry | None:
        # Its stdin is not known yet: any recorded call that asked the same but for its
        # stdin answers it, until stdin_differs() finds the one that got the stdin written.
        return self._take(boundary, actual, None, any_input=True)

    def _take(
        self,
        boundary: str,
        actual: Mapping[str, Any],
        normalize: Normalize | None,
        *,
        any_input: bool,
    ) -> CallEntry | None:
        me = worker_var.get()
        entry, named = self._across.find(boundary, actual, normalize, me, any_input=any_input)
        if normalize is not None and entry is None:
            actual = normalize(actual, None)
        if boundary in self._verify_boundaries:
            self.trace.add(me, entry, boundary, actual, verify=True, named=named)
            return entry if entry is not None else self._tokens[boundary]
        if entry is None:
            raise self._inadmissible(boundary, actual)
        self._outcome.position[me] = entry.seq
        self.trace.add(me, entry, boundary, NO_REQUEST, named=named)
        return entry

    def stdin_differs(self, entry: CallEntry, written: bytes) -> CallEntry | None:
        """The recorded call that asked what ``entry`` asked but with the stdin
        ``written``, in ``entry``'s place (which goes back to the front of its queue):
        ``entry`` was taken before the stdin was written. None answers it: inadmissible."""
        assert isinstance(entry, ProcessCall)
        me = worker_var.get()
        asked = request_of(entry)
        if self.trace.order_of(me, entry) in self.trace.renamed:  # as the caller asked it
            asked = renamed(asked, entry.worker, me)
        asked = {**asked, "input": self.codec.comparable(written, entry.input)}
        found = self._across.for_stdin(entry, asked, me)
        if found is None:
            raise self._inadmissible(BOUNDARY_PROCESS, asked)
        other, named = found
        self._index.queues[(BOUNDARY_PROCESS, entry.worker)].appendleft(entry)
        self.trace.replace(me, entry, other, named)
        self._outcome.position[me] = other.seq
        return other

    def unanswered(self, boundary: str, what: str) -> Any:
        if self._settle(
            ChaosVerdict.INADMISSIBLE,
            why=f"worker {worker_var.get()!r}: {what} has no recorded answer",
        ):
            self._inadmissible_call = f"{boundary} call"
            self.scheduler.stop()
        return ScheduleStopped()

    def served(self, entry: CallEntry) -> None:
        if entry.seq in self._verify_seqs:
            return  # a verify call ran for real, now: its recorded time says nothing
        super().served(entry)

    def clock_at(self, entry: CallEntry) -> None:
        if entry.seq not in self._verify_seqs:
            super().clock_at(entry)

    def mismatch(self, kind: MismatchKind, **fields: Any) -> None:
        if kind is MismatchKind.STORE_MISMATCH:
            # Another order gives other results: not a finding, but the real result is
            # what a saved schedule records.
            self.trace.gave(fields.get("actual"))
            return
        super().mismatch(kind, **fields)

    def wait_turn(self, name: str, boundary: str, seq: int) -> None:
        return None  # the schedule, not the recording, orders verify calls

    def wait_order_end(self, name: str) -> None:
        return None  # likewise

    def turn_done(self, name: str, seq: int) -> None:
        order = self.trace.ended()
        message = violation(self._chaos_invariants) if self._chaos_invariants else None
        if message is not None:
            if self._fail(FailureKind.INVARIANT, message, worker_var.get()):
                _violated(self._outcome, self.trace, message, order)
            raise ScheduleStopped

    def add_invariant(self, check: Invariant) -> None:
        self._chaos_invariants.append(check)

    def application_error(self, exc: BaseException, frame: str | None = None) -> None:
        if not isinstance(exc, ScheduleStopped):
            worker = worker_var.get()
            if self._fail(FailureKind.EXCEPTION, self._exception_text(exc), worker):
                self._outcome.application_error(exc, worker, frame)

    def save(self, target: Path) -> Path:
        """Write the schedule as it ran to the cassette ``target`` (see ``_chaos_save``)."""
        saved = saved_schedule(self.recording, self.schedule, self._failure)
        return save_schedule(str(self.recording.path), self.trace, self._tokens, target, saved)

    # -- ending -----------------------------------------------------------------------

    def finish(self, outcome: Any = UNSET) -> ReplayReport:
        if self._outcome.report is not None:
            return self._outcome.report
        if self._verdict is not None:
            # Stopped: what the application did after that says nothing.
            return self._failure_first(super().finish())
        if self._chaos_invariants:
            message = violation(self._chaos_invariants)
            if message is not None and self._fail(
                FailureKind.INVARIANT, f"at the end: {message}", None
            ):
                _violated(self._outcome, self.trace, message, None)
        report = super().finish(outcome)
        found = _finding(report)
        if found is not None:
            self._fail(found[0], self.scrubber.text(found[1]), None)
        return self._failure_first(report)

    def _check_the_end(self, outcome: Any) -> None:
        # Stopped: the run did not reach its end (the verdict's checks are its own).
        if self._verdict is None:
            super()._check_the_end(outcome)

    def _unconsumed(self) -> list[tuple[tuple[str, str], deque[CallEntry]]]:
        # Calls a schedule did not make are its consequence (it stopped, or another order
        # made fewer calls), never a finding: none is reported unconsumed.
        return []

    def _failure_first(self, report: ReplayReport) -> ReplayReport:
        """The report with the mismatch that failed the schedule first (its kind is the
        failure's); what else the replay noticed follows."""
        failure = self._failure
        kinds = {k for k, found in _FAILING.items() if failure and found is failure.kind}
        first = next((m for m in report.mismatches if m.kind in kinds), None)
        if first is not None:
            report.mismatches = [first, *(m for m in report.mismatches if m is not first)]
            report.context = context_for(self.recording, self._index.hidden, first)
        return report

    def close(self, exc: BaseException | None) -> bool:
        """Finish the schedule; an exception that left the application is its verdict's
        business (never raised on: the result says what happened)."""
        if (
            exc is not None
            and not isinstance(exc, ScheduleStopped)
            and self._verdict is None
            and not self._outcome.check_crash(exc, self.scrubber)
        ):
            self._fail(FailureKind.EXCEPTION, self._exception_text(exc), None)
        self.finish()
        self._settle(ChaosVerdict.PASSED)
        schedule = self.schedule
        self.result = ChaosResult(
            cassette=os.path.basename(str(self.recording.path)),
            seed=schedule.seed,
            strategy=Strategy(schedule.strategy).value,
            depth=schedule.depth,
            verdict=self._verdict or ChaosVerdict.PASSED,
            failure=self._failure,
            inadmissible=self._why_inadmissible,
            inadmissible_call=self._inadmissible_call,
            steps=self.scheduler.steps,
            threads=self.scheduler.threads,
            recorded_calls=self.loaded,
            recorded_workers=self._workers,
            calls=self.trace.described(),
            decisions=traced_decisions(self.scheduler.decider, self.trace),
        )
        return exc is not None


def _finding(report: ReplayReport) -> tuple[FailureKind, str] | None:
    """The first mismatch of a schedule that ran to its end that fails it (another outcome,
    a crash, a worker's death), in words: kind and message."""
    for mismatch in report.ordered_mismatches():
        kind = _FAILING.get(mismatch.kind)
        if kind is not None and mismatch.kind is not MismatchKind.INVARIANT_VIOLATED:
            message = mismatch.message.rstrip(".")
            if mismatch.diffs:
                message += ": " + "; ".join(
                    f"{d.path or 'outcome'} recorded {summarize_value(d.expected, 40)}, "
                    f"now {summarize_value(d.actual, 40)}"
                    for d in mismatch.diffs[:3]
                )
            return kind, message
    return None


def _violated(outcome: Outcome, trace: Trace, message: str, order: int | None) -> None:
    """The report's mismatch for a violated invariant: after the verify call at
    ``order`` of the schedule (``None``: at the end), as a plain replay words it."""
    seq = boundary = None
    if order is not None:
        _, boundary, entry, _ = trace.calls[order - 1]
        seq = entry.seq if entry is not None else None
        boundary = boundary or boundary_name(entry)
    where = "at the end" if order is None else f"after the call at seq {seq}"
    if order is not None and seq is None:
        where = f"after call #{order} of the schedule (a {boundary} call the tape lacks)"
    outcome.collect(
        MismatchKind.INVARIANT_VIOLATED,
        seq=seq,
        worker=worker_var.get(),
        boundary=boundary or "session",
        message=f"an invariant does not hold {where}: {message}",
        actual={"message": message},
    )
