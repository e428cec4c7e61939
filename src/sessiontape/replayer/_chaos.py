"""Chaos replay: the tape served under a schedule, its calls answered by what they ask.

:class:`ChaosEngine` is a :class:`ReplayEngine` whose boundary-facing methods (the
``ReplaySide`` protocol the boundaries already speak) are also scheduling points: before a
worker's boundary call goes ahead, the scheduler (``_scheduler.py``) may let another
worker run first. Nothing changes for the boundaries, and nothing of this runs in a plain
replay (a plain replay builds a plain engine).

Under another interleaving than the recorded one, a worker may ask what another worker
asked in production (it claimed that worker's task). So a substituted call is answered by
the recorded call that asked the same (normalised as the aligner does), from whichever
worker's queue holds it: the calling worker's next call first, then the other workers'
next calls, then any call not yet served. A call that no recorded call answers makes the
schedule *inadmissible*: it stops, and that is not a failure. Verify-boundary calls (the
store) run for real and in whatever order the schedule makes; their results are not
compared with the recorded ones (another order gives other results), but the project's
invariants are checked after each of them.
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
    ErrorInfo,
    Recording,
    StoreMutation,
    boundary_of,
    request_of,
    stored_result,
)
from ..report import (
    SHOWN_PER_WORKER,
    ChaosCall,
    ChaosDecision,
    ChaosFailure,
    ChaosResult,
    ChaosVerdict,
    DescribedCalls,
    FailureKind,
    MismatchKind,
    ReplayReport,
    summarize_value,
)
from ._align import Normalize
from ._chaos_save import save_schedule
from ._clock import FakeClock
from ._decisions import decisions_of
from ._engine import UNSET, ReplayEngine
from ._invariants import Invariant, violation
from ._schedule import Schedule, Strategy
from ._scheduler import Scheduler, ScheduleStopped

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


_NO_REQUEST: Final[Mapping[str, Any]] = {}


def _is_verify(entry: CallEntry) -> bool:
    if isinstance(entry, StoreMutation):
        return True
    return isinstance(entry, Call) and entry.mode == BoundaryKind.VERIFY.value


def _what(entry: CallEntry | None, request: Mapping[str, Any], boundary: str) -> str:
    """A call in short: ``git merge --no-ff ...`` or ``claim_next('worker-1')``, as
    recorded (no path of today's)."""
    if entry is not None:
        request = request_of(entry)
    if boundary == BOUNDARY_PROCESS:
        # Joined plainly (shlex's quoting costs more than the rest of a schedule's report).
        text = " ".join(str(a) for a in request.get("argv") or ())
    else:
        args = [summarize_value(a, 30) for a in request.get("args") or ()]
        args += [f"{k}={summarize_value(v, 30)}" for k, v in (request.get("kwargs") or {}).items()]
        text = f"{request.get('method')}({', '.join(args)})"
    return text if len(text) <= 72 else text[:71] + "…"


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
        self._by_boundary: dict[str, list[tuple[str, deque[CallEntry]]]] = {}
        for (boundary, worker), queue in sorted(index.queues.items()):
            self._by_boundary.setdefault(boundary, []).append((worker, queue))
        #: A stand-in entry per verify boundary, for a call with no recorded twin.
        self._tokens = {
            boundary: queues[0][1][0]
            for boundary, queues in self._by_boundary.items()
            if boundary in self._verify_boundaries and queues[0][1]
        }
        self._workers = len({worker for (_, worker) in index.queues})
        #: The calls in the order they ran (worker, boundary or None: the entry's, entry,
        #: request), and by order for each verify call what a saved schedule needs:
        #: (recorded seq or None, its normalised request, its real result or None).
        self.calls: list[tuple[str, str | None, CallEntry | None, Mapping[str, Any]]] = []
        self.scheduler = Scheduler(
            schedule,
            steps=index.loaded + 1,
            max_steps=_STEPS_PER_CALL * (index.loaded + 10),
            on_stall=self._stalled,
            on_error=self._thread_died,
            position=self.calls.__len__,
        )
        self._point = self.scheduler.point
        header = recording.header
        self.clock = ScheduledClock(header.ts_ns, header.mono_ns, self.scheduler)
        self._chaos_invariants: list[Invariant] = []
        self.answers: dict[int, tuple[int | None, Mapping[str, Any] | None, Any]] = {}
        #: Per thread, the order of the verify call under way.
        self._open: dict[int, int] = {}
        #: The verify calls that ended (by order): a None answer is the recorded one.
        self._done: set[int] = set()
        self._lock = threading.Lock()
        self._verdict: ChaosVerdict | None = None
        self._failure: ChaosFailure | None = None
        self._why_inadmissible: str | None = None
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

    def _fail(self, kind: FailureKind, message: str, worker: str | None) -> None:
        failure = ChaosFailure(kind=kind, message=message, worker=worker, after=len(self.calls))
        if self._settle(ChaosVerdict.FAILED, failure=failure):
            self.scheduler.stop()

    def _stalled(self, message: str) -> None:
        # The scheduler's lock is held: settle only, it stops itself.
        self._settle(
            ChaosVerdict.FAILED,
            failure=ChaosFailure(
                kind=FailureKind.DEADLOCK,
                message=f"possible deadlock: {message}",
                after=len(self.calls),
            ),
        )

    def _thread_died(self, exc: BaseException, worker: str) -> None:
        self._fail(FailureKind.EXCEPTION, self._exception_text(exc), worker)

    def _exception_text(self, exc: BaseException) -> str:
        # Scrubbed: the message may name today's temporary directories.
        return f"{type(exc).__qualname__}: {self.scrubber.text(str(exc))}"

    def _inadmissible(self, boundary: str, request: Mapping[str, Any]) -> ScheduleStopped:
        worker = worker_var.get()
        why = (
            f"worker {worker!r} made a {boundary} call that no recorded call answers: "
            f"{_what(None, request, boundary)}"
        )
        if self._settle(ChaosVerdict.INADMISSIBLE, why=why):
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

    def _trace(
        self,
        entry: CallEntry | None,
        boundary: str | None,
        request: Mapping[str, Any],
        *,
        verify: bool = False,
    ) -> None:
        """Note a call as it runs (described only when the result is built); a verify
        call's real result joins it later (mismatch(), turn_done()) for a saved schedule."""
        self.calls.append((worker_var.get(), boundary, entry, request))
        if verify:
            order = len(self.calls)
            self.answers[order] = (entry.seq if entry is not None else None, request, None)
            self._open[threading.get_ident()] = order

    # A call answered by a recorded entry is described by that entry when the result is
    # built: nothing of the request is kept.

    def took(self, entry: CallEntry) -> None:
        super().took(entry)
        self._trace(entry, None, _NO_REQUEST, verify=entry.seq in self._verify_seqs)

    def serve_head(self, queue: deque[CallEntry], head: CallEntry) -> None:
        super().serve_head(queue, head)
        self.calls.append((worker_var.get(), None, head, _NO_REQUEST))

    def take_head(self, boundary: str) -> CallEntry:
        head = super().take_head(boundary)
        self._trace(head, boundary, _NO_REQUEST, verify=boundary in self._verify_boundaries)
        return head

    def take(
        self, boundary: str, actual: Mapping[str, Any], normalize: Normalize | None = None
    ) -> CallEntry | None:
        entry = self._find(boundary, actual, normalize)
        if normalize is not None and entry is None:
            actual = normalize(actual, None)
        if boundary in self._verify_boundaries:
            self._trace(entry, boundary, actual, verify=True)
            return entry if entry is not None else self._tokens[boundary]
        if entry is None:
            raise self._inadmissible(boundary, actual)
        self._outcome.position[worker_var.get()] = entry.seq
        self._trace(entry, boundary, _NO_REQUEST)
        return entry

    def _find(
        self, boundary: str, actual: Mapping[str, Any], normalize: Normalize | None
    ) -> CallEntry | None:
        """The recorded call of ``boundary`` that asked ``actual``, taken off its queue:
        the caller's next call, another worker's next call, then any call left.

        A raw request (``normalize`` given) equal to a queue head's is that call, with no
        scrubbing; otherwise it is normalised and compared as the aligner compares."""
        queues = self._by_boundary.get(boundary)
        if not queues:
            return None
        me = worker_var.get()
        ordered = sorted(queues, key=lambda wq: wq[0] != me)
        if normalize is not None:
            for _, queue in ordered:
                if queue and request_of(queue[0]) == actual:
                    return queue.popleft()
            actual = normalize(actual, None)
        same = self._aligner._compare
        for _, queue in ordered:
            if queue and not same(boundary, queue[0], actual)[0]:
                return queue.popleft()
        for _, queue in ordered:
            for i in range(1, len(queue)):
                if not same(boundary, queue[i], actual)[0]:
                    entry = queue[i]
                    del queue[i]
                    return entry
        return None

    def unanswered(self, boundary: str, what: str) -> Any:
        if self._settle(
            ChaosVerdict.INADMISSIBLE,
            why=f"worker {worker_var.get()!r}: {what} has no recorded answer",
        ):
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
            order = self._open.get(threading.get_ident())
            if order is not None:
                seq, request, _ = self.answers[order]
                self.answers[order] = (seq, request, fields.get("actual"))
            return
        super().mismatch(kind, **fields)

    def wait_turn(self, name: str, boundary: str, seq: int) -> None:
        return None  # the schedule, not the recording, orders verify calls

    def turn_done(self, name: str, seq: int) -> None:
        order = self._open.pop(threading.get_ident(), None)
        if order is not None:
            self._done.add(order)
        message = violation(self._chaos_invariants) if self._chaos_invariants else None
        if message is not None:
            self._fail(FailureKind.INVARIANT, message, worker_var.get())
            raise ScheduleStopped

    def add_invariant(self, check: Invariant) -> None:
        self._chaos_invariants.append(check)

    def application_error(self, exc: BaseException, frame: str | None = None) -> None:
        if not isinstance(exc, ScheduleStopped):
            self._fail(FailureKind.EXCEPTION, self._exception_text(exc), worker_var.get())

    def token_for(self, boundary: str) -> CallEntry:
        """The recorded call standing in for ``boundary``'s calls with no recorded twin."""
        return self._tokens[boundary]

    def save(self, target: Path) -> Path:
        """Write the schedule as it ran to the cassette ``target`` (see ``_chaos_save``)."""
        answers = _saved_answers(self.calls, self.answers, self._done, self._tokens)
        return save_schedule(str(self.recording.path), self.calls, answers, self.token_for, target)

    # -- ending -----------------------------------------------------------------------

    def finish(self, outcome: Any = UNSET) -> ReplayReport:
        if self._outcome.report is not None:
            return self._outcome.report
        if self._verdict is not None:
            # Stopped: what the application did after that says nothing.
            return super().finish()
        if self._chaos_invariants:
            message = violation(self._chaos_invariants)
            if message is not None:
                self._fail(FailureKind.INVARIANT, f"at the end: {message}", None)
        report = super().finish(outcome)
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
                self._fail(kind, self.scrubber.text(message), None)
                break
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
            steps=self.scheduler.steps,
            threads=self.scheduler.threads,
            recorded_calls=self.loaded,
            recorded_workers=self._workers,
            calls=_described(list(self.calls)),
            decisions=_decisions(self) if schedule.trace else (),
        )
        return exc is not None


def _described(
    calls: list[tuple[str, str | None, CallEntry | None, Mapping[str, Any]]],
) -> DescribedCalls:
    """The calls as they ran, described when the result's calls are first read (a
    passing schedule's seldom are)."""
    return DescribedCalls(lambda: _describe(calls))


def _describe(
    calls: list[tuple[str, str | None, CallEntry | None, Mapping[str, Any]]],
) -> list[ChaosCall]:
    """The calls as they ran; only those a report shows get their text."""
    shown = _shown(calls)
    out = []
    for order, (worker, boundary, entry, request) in enumerate(calls, 1):
        name = boundary or _boundary(entry)
        out.append(
            ChaosCall(
                order=order,
                worker=worker,
                boundary=name,
                seq=entry.seq if entry is not None else None,
                call=_what(entry, request, name) if order in shown else "",
            )
        )
    return out


def _shown(calls: list[tuple[str, str | None, CallEntry | None, Mapping[str, Any]]]) -> set[int]:
    """The orders of the calls a report shows: the last few of each worker."""
    shown: set[int] = set()
    left: dict[str, int] = {}
    for order in range(len(calls), 0, -1):
        worker = calls[order - 1][0]
        count = left.get(worker, 0)
        if count < SHOWN_PER_WORKER:
            shown.add(order)
            left[worker] = count + 1
    return shown


def _decisions(engine: ChaosEngine) -> list[ChaosDecision]:
    """A traced schedule's decisions, named by the calls they ordered."""
    decider = engine.scheduler.decider
    assert decider is not None
    calls = engine.calls
    return decisions_of(
        decider.decisions,
        decider.workers(),
        [worker for worker, _, _, _ in calls],
        lambda i: _what_ran(calls[i]),
    )


def _what_ran(
    call: tuple[str, str | None, CallEntry | None, Mapping[str, Any]],
) -> tuple[str, str]:
    """One of the engine's calls in short (see _what), and its boundary."""
    _, boundary, entry, request = call
    boundary = boundary or _boundary(entry)
    return _what(entry, request, boundary), boundary


def _boundary(entry: CallEntry | None) -> str:
    return (boundary_of(entry) if entry is not None else None) or "?"


def _saved_answers(
    calls: list[tuple[str, str | None, CallEntry | None, Mapping[str, Any]]],
    answers: dict[int, tuple[int | None, Mapping[str, Any] | None, Any]],
    done: set[int],
    tokens: Mapping[str, CallEntry],
) -> dict[int, tuple[int | None, Mapping[str, Any] | None, Any]]:
    """``answers``, with the recorded answer of each verify call in ``done`` that ended
    with it (looked up only now: most schedules are never saved)."""
    saved = dict(answers)
    for order in done:
        seq, request, actual = saved[order]
        if actual is None:
            _, boundary, entry, _ = calls[order - 1]
            if entry is None:
                entry = tokens[boundary or _boundary(entry)]
            saved[order] = (seq, request, _recorded_answer(entry))
    return saved


def _recorded_answer(entry: CallEntry) -> Any:
    """A verify call's recorded result or error, in the shape of a store mismatch's
    ``actual`` (``{"result": ...}`` or ``{"error": {...}}``)."""
    error: ErrorInfo | None = getattr(entry, "error", None)
    if error is not None:
        return {"error": {"type": error.type, "message": error.message}}
    return {"result": stored_result(getattr(entry, "result", None))}
