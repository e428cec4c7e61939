"""The outcome of a replay: the mismatches as they happen, the final checks, the report.

Mismatches are kept in timeline order: each is placed just after the last entry served to
its worker, so the first one in the report is the cause, not a downstream consequence,
and the order does not depend on how threads interleaved.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Final

from .._context import worker_var
from .._errors import UnrecordedCallError
from .._time import REAL
from ..cassette import CallEntry, Error, Recording, request_of
from ..report import (
    Candidate,
    FieldDiff,
    Mismatch,
    MismatchKind,
    ReplayMismatch,
    ReplayReport,
    compute_ok,
    describe,
    diff_values_counted,
    live_advice,
    suggest_next_step,
)
from ..scrub import Scrubber, qualname
from ._correlate import Correlations
from ._crashes import WorkerCrashes
from ._index import QueueKey

__all__ = ["Outcome", "context_for"]

#: At most this many warnings are kept (a program forking in a loop would fill memory).
_MAX_WARNINGS: Final = 1000
_perf_ns: Final = REAL.perf_counter_ns
#: The mismatches that count as extra calls.
_EXTRA_KINDS: Final = frozenset({MismatchKind.UNEXPECTED_CALL, MismatchKind.EXHAUSTED})
#: The pseudo-boundary of whole-session checks (outcome, crash).
_SESSION: Final = "session"


def _place(served: dict[str, int], recording: Recording, worker: str) -> float:
    """Where on the tape's timeline ``worker`` stands now: just after the last entry
    ``served`` to it, which is where its run left the tape; just before its first recorded
    call when it was served none yet; after everything for a worker the tape has no call
    of (one today's code adds, or whose calls a shrink candidate cut: what it does has no
    place on the tape, and happens whenever its thread runs)."""
    last = served.get(worker)
    if last is not None:
        return last + 0.5
    first = recording.first_seq(worker)
    return math.inf if first is None else first - 0.5


class Outcome:
    """Collects a replay's mismatches and builds its :class:`ReplayReport`.

    ``strict`` makes the first mismatch raise :class:`ReplayMismatch`, except while the
    final report is being built (:meth:`collect`).
    """

    def __init__(self, recording: Recording, *, strict: bool, loaded: int, hidden: set[int]):
        self.recording = recording
        self.strict = strict
        self.loaded = loaded
        self._hidden = hidden
        self._lock = threading.Lock()
        self._mismatches: list[tuple[float, int, Mismatch]] = []
        self._warnings: list[Mismatch] = []
        #: seq of the last entry served to each worker: where a divergence happens.
        self.position: dict[str, int] = {}
        #: The seqs served, in order (list.append is atomic: no lock on the hot path).
        self.served: list[int] = []
        self._extra = 0
        self._started_perf = _perf_ns()
        self.crash_checked = False
        self.report: ReplayReport | None = None
        #: In update mode: the mismatches the update answers, which strict mode lets by.
        self.answered: Callable[[MismatchKind, str], bool] | None = None
        #: The values correlated (set by the engine), listed in the report.
        self.correlations: Correlations | None = None
        #: The recorded crashes of workers, held against the replay's.
        self.crashes = WorkerCrashes(recording, self.collect)
        #: The verify boundaries (their calls run for real) and the selectors of the live
        #: re-record this replay is, if any: what the next steps' selector leaves out.
        self.verify: set[str] = set()
        self.live: tuple[str, ...] = ()
        #: Redacts secrets (paths kept) in what the application says, before the report holds it.
        self.scrub: Callable[[str], str] = str

    @property
    def started(self) -> bool:
        """Whether any call was served or any mismatch found yet."""
        return bool(self.served or self._mismatches)

    def count_extra(self) -> None:
        """Count a call that had no recorded entry to answer it."""
        with self._lock:
            self._extra += 1

    def mismatch(
        self,
        kind: MismatchKind,
        *,
        seq: int | None,
        worker: str,
        boundary: str,
        message: str,
        expected: Any = None,
        actual: Any = None,
        diffs: list[FieldDiff] | None = None,
        total: int = 0,
        nearest: Candidate | None = None,
        position: float | None = None,
    ) -> None:
        """Record a mismatch (and raise :class:`ReplayMismatch` in strict mode).

        ``position`` orders the report: by default where the worker stands on the tape
        (:func:`_place`).
        """
        diffs = diffs or []
        if position is None:
            position = _place(self.position, self.recording, worker)
        found = Mismatch(
            kind=kind,
            seq=seq,
            worker=worker,
            boundary=boundary,
            message=message,
            expected=expected,
            actual=actual,
            diffs=diffs,
            nearest=nearest,
            next_step=suggest_next_step(kind, boundary, worker, diffs),
            omitted_diffs=max(0, total - len(diffs)),
        )
        with self._lock:
            self._mismatches.append((position, len(self._mismatches), found))
        if self.strict and (self.answered is None or not self.answered(kind, boundary)):
            raise ReplayMismatch(self.build_report())

    def collect(self, kind: MismatchKind, **fields: Any) -> None:
        """Like :meth:`mismatch` but never raises: used while building the final report."""
        strict, self.strict = self.strict, False
        try:
            self.mismatch(kind, **fields)
        finally:
            self.strict = strict

    def application_error(self, exc: BaseException, worker: str, frame: str | None) -> None:
        """An exception ended a worker thread of the application: report it where the
        worker left the tape, ahead of the calls it never made."""
        last = self.position.get(worker)
        scrub = self.scrub
        said = scrub(str(exc))
        frame = scrub(frame) if frame else frame
        where = f" at {frame}" if frame else ""
        after = f"after seq {last}" if last is not None else "before its first call"
        self.collect(
            MismatchKind.APPLICATION_ERROR,
            seq=last,
            worker=worker,
            boundary=_SESSION,
            message=f"worker {worker!r} died {after} of {qualname(type(exc))}: {said}{where}.",
            actual={"type": qualname(type(exc)), "message": said, "frame": frame},
        )

    def unseen_process(self, event: str, command: str, where: str, worker: str) -> None:
        """A process was started outside the interception (seen through its audit event):
        a warning in the report, or in strict mode a mismatch (raised)."""
        command, where = self.scrub(command), self.scrub(where)
        fields: dict[str, Any] = {
            "seq": self.position.get(worker),
            "worker": worker,
            "boundary": "process",
            "message": (
                f"a process was started outside the interception at {where} ({event}: "
                f"{command}); the tape holds no answer for it, so it ran for real."
            ),
            "actual": {"event": event, "command": command, "where": where},
        }
        if self.strict:
            self.mismatch(MismatchKind.UNSEEN_PROCESS, **fields)
            return
        found = Mismatch(
            kind=MismatchKind.UNSEEN_PROCESS,
            next_step=suggest_next_step(MismatchKind.UNSEEN_PROCESS, "process", worker, []),
            **fields,
        )
        with self._lock:
            if len(self._warnings) < _MAX_WARNINGS:
                self._warnings.append(found)

    # -- the final checks -----------------------------------------------------------

    def check_outcome(self, raw: Any, scrub: Callable[[Any], Any]) -> None:
        """Compare the session's outcome (``raw`` data) with the recorded one, scrubbed
        first only if it differs (the recorded one is; scrubbing is idempotent)."""
        end = self.recording.end
        if end is None or raw == end.outcome or (actual := scrub(raw)) == end.outcome:
            return
        diffs, total = diff_values_counted(end.outcome, actual)
        self.collect(
            MismatchKind.OUTCOME_MISMATCH,
            seq=end.seq,
            worker=end.worker,
            boundary=_SESSION,
            message="the session ended with another outcome than recorded.",
            expected=end.outcome,
            actual=actual,
            diffs=diffs,
            total=total,
            position=end.seq,
        )

    def check_no_crash(self) -> None:
        """The replay ended normally: a recorded crash was then not reproduced."""
        recorded = self.recording.error
        if self.crash_checked or recorded is None:
            return
        self.crash_checked = True
        self._crash_mismatch(
            recorded,
            f"the recorded session crashed with {recorded.type}: {recorded.message}, but the "
            "replay did not crash.",
            None,
        )

    def _crash_mismatch(
        self,
        recorded: Error,
        message: str,
        actual: dict[str, str] | None,
        diffs: list[FieldDiff] | None = None,
        total: int = 0,
    ) -> None:
        """A mismatch against the recorded crash, placed where it happened."""
        self.collect(
            MismatchKind.ERROR_MISMATCH,
            seq=recorded.seq,
            worker=recorded.worker,
            boundary=_SESSION,
            message=message,
            expected={"type": recorded.type, "message": recorded.message},
            actual=actual,
            diffs=diffs,
            total=total,
            position=recorded.seq,
        )

    def check_unconsumed(self, queues: Iterable[tuple[QueueKey, deque[CallEntry]]]) -> None:
        """Every recorded call left in a queue was never made."""
        for (boundary, worker), queue in queues:
            while queue:
                entry = queue.popleft()
                self.collect(
                    MismatchKind.UNCONSUMED,
                    seq=entry.seq,
                    worker=worker,
                    boundary=boundary,
                    message=f"the recorded call {describe(entry)} was never made.",
                    expected=request_of(entry),
                    position=entry.seq,
                )

    def check_crash(self, exc: BaseException, scrubber: Scrubber) -> bool:
        """Compare an exception that escaped the replay with the recorded crash.

        Returns whether it is the recorded crash reproduced (then it is swallowed).
        """
        self.crash_checked = True
        recorded = self.recording.error
        if isinstance(exc, ReplayMismatch):
            return False
        actual = {"type": qualname(type(exc)), "message": scrubber.text(str(exc))}
        if isinstance(exc, UnrecordedCallError):
            # The missing answer is already a mismatch of its own; say what it means
            # for a recorded crash, and add nothing otherwise.
            if recorded is not None:
                self._crash_mismatch(
                    recorded,
                    f"the recorded session crashed with {recorded.type}: {recorded.message}, "
                    "but the replay ran past that point (and then made a call the tape has "
                    "no answer for).",
                    actual,
                )
            return False
        if recorded is None:
            self.collect(
                MismatchKind.ERROR_MISMATCH,
                seq=None,
                worker=worker_var.get(),
                boundary=_SESSION,
                message=f"the replay crashed with {actual['type']}: {actual['message']}, but "
                "the recorded session did not crash.",
                expected=None,
                actual=actual,
            )
            return False
        expected = {"type": recorded.type, "message": recorded.message}
        if expected == actual:
            return True
        diffs, total = diff_values_counted(expected, actual)
        self._crash_mismatch(
            recorded,
            f"the replay crashed with {actual['type']}: {actual['message']}, not with the "
            f"recorded {recorded.type}: {recorded.message}.",
            actual,
            diffs,
            total,
        )
        return False

    # -- the report -----------------------------------------------------------------

    def mismatches(self) -> list[Mismatch]:
        """Every mismatch found so far, in timeline order."""
        with self._lock:
            return [m for _, _, m in sorted(self._mismatches, key=lambda t: t[:2])]

    def build_report(self, kept: list[Mismatch] | None = None) -> ReplayReport:
        """The report of everything found so far (of the ``kept`` mismatches only, when
        given: an update leaves out the ones it answered)."""
        rec = self.recording
        with self._lock:
            mismatches = [m for _, _, m in sorted(self._mismatches, key=lambda t: t[:2])]
            detected = [m for _, _, m in self._mismatches]  # in the order they were found
            consumed = len(self.served)
            extra = self._extra
        if kept is not None:
            mismatches = kept
            extra = sum(1 for m in kept if m.kind in _EXTRA_KINDS)
        mismatches, selector = live_advice(mismatches, rec, self.verify, self.live, detected)
        unconsumed = sum(1 for m in mismatches if m.kind is MismatchKind.UNCONSUMED)
        report = ReplayReport(
            cassette=rec.path,
            run_id=rec.header.run_id,
            ok=compute_ok(mismatches, consumed),
            strict=self.strict,
            loaded=self.loaded,
            consumed=consumed,
            unconsumed=unconsumed,
            extra=extra,
            mismatches=mismatches,
            recorded_duration_ns=rec.duration_ns,
            replay_duration_ns=_perf_ns() - self._started_perf,
            crashed=rec.crashed,
            workers=rec.worker_ids(),
            warnings=list(self._warnings),
            correlations=self.correlations.report() if self.correlations is not None else [],
            live_selector=selector,
        )
        report.context = context_for(rec, self._hidden, report.first)
        return report


def context_for(recording: Recording, hidden: set[int], first: Mismatch | None) -> list[str]:
    """One line for each of the last calls of ``first``'s worker before it (the calls
    ``hidden`` from the replay left out)."""
    if first is None or first.seq is None:
        return []
    before = [
        e
        for e in recording.calls
        if e.seq < first.seq and e.worker == first.worker and e.seq not in hidden
    ]
    return [describe(e) for e in before[-3:]]
