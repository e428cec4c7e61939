"""A saved chaos schedule replayed in plain mode: a regression test of the race it found.

A tape written by ``--sessiontape-chaos-save`` (its header's ``schedule`` says so) holds
each worker's calls as the schedule ran them, up to the failure; its store calls are in
the schedule's order, which a plain replay keeps (``_order.py``), so the program takes
the schedule's path and meets the same failure. What the schedule never let a worker do
after that is not on the tape. So :class:`SavedScheduleEngine` stops a worker where the
schedule stopped it: at its first call once every saved call of that worker is served,
before the call runs (a store call would change the state the failure is about), with
:class:`ScheduleStopped`, which ends the thread quietly. The failure found is then
first and alone: no call past the schedule's end becomes a mismatch, and the recorded
outcome, the recorded crash and the invariants at the end (of the whole production run)
are not checked once a worker was stopped.

A worker that still has saved calls left and makes another call has diverged, and is
reported as in any replay. A schedule whose failure no longer happens (the race is
fixed, the calls unchanged) passes.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from .._context import worker_var
from ..cassette import CallEntry, Recording, SavedSchedule
from ..report import ReplayMismatch, ReplayReport
from ._engine import UNSET, ReplayEngine
from ._scheduler import ScheduleStopped

__all__ = ["SavedScheduleEngine"]


class SavedScheduleEngine(ReplayEngine):
    """The plain replay of a saved chaos schedule (see the module's docstring)."""

    def __init__(self, recording: Recording, **options: Any) -> None:
        super().__init__(recording, **options)
        saved = recording.header.schedule
        assert saved is not None
        self.saved: SavedSchedule = saved
        mine: dict[str, list[deque[CallEntry]]] = {}
        for (_, worker), queue in self._index.queues.items():
            mine.setdefault(worker, []).append(queue)
        self._mine = mine
        self._lock = threading.Lock()
        #: The workers stopped where the schedule stopped them.
        self.stopped: set[str] = set()

    def queue(self, boundary: str) -> deque[CallEntry] | None:
        worker = worker_var.get()
        queue = self._index.queues.get((boundary, worker))
        if not queue and not any(self._mine.get(worker, ())):
            with self._lock:
                self.stopped.add(worker)
            raise ScheduleStopped
        return queue

    def head(self, boundary: str) -> CallEntry | None:
        queue = self.queue(boundary)
        return queue[0] if queue else None

    def application_error(self, exc: BaseException, frame: str | None = None) -> None:
        if not isinstance(exc, ScheduleStopped):
            super().application_error(exc, frame)

    def _check_the_end(self, outcome: Any) -> None:
        # A run stopped where the schedule stopped did not reach the recorded end: its
        # outcome, whether it crashed, and its state then say nothing.
        if not self.stopped:
            super()._check_the_end(outcome)

    def finish(self, outcome: Any = UNSET) -> ReplayReport:
        if self._outcome.report is not None:
            return self._outcome.report
        try:
            report = super().finish(outcome)
        except ReplayMismatch as exc:  # strict: the report says what the tape is all the same
            exc.report.saved_schedule = self._note()
            raise
        report.saved_schedule = self._note()
        return report

    def _note(self) -> str:
        saved = self.saved
        label = f"seed {saved.seed}, strategy {saved.strategy}"
        if saved.strategy == "pct":
            label += f", depth {saved.depth}"
        note = f"a chaos schedule of {saved.tape} ({label}), saved when it "
        note += f"failed with {saved.kind}: {saved.message}" if saved.kind else "passed"
        if self.stopped:
            who = ", ".join(sorted(self.stopped))
            note += f"; stopped where the schedule stopped them: {who}"
        return note

    def close(self, exc: BaseException | None) -> bool:
        """Finish; an application stopped where the schedule stopped it ended normally."""
        if isinstance(exc, ScheduleStopped):
            super().close(None)
            return True
        return super().close(exc)
