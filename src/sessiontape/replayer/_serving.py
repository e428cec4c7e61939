"""Serving: how a replay hands the boundaries their recorded calls.

Each worker has a queue of recorded calls per boundary (``_index.TapeIndex``). A boundary
asks for the head of its queue, takes it (a request known to match), or has its request
aligned with the queue (``_align.Aligner``: skipped calls, other arguments, a call the tape
lacks); a call is then counted served, and virtual time moves to its end. This is the part
of :class:`~._engine.ReplayEngine` the boundaries call per request.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from .._context import worker_var
from ..cassette import CallEntry
from ..report import FieldDiff
from ._align import Aligner, Normalize
from ._clock import FakeClock
from ._index import TapeIndex
from ._match import Path
from ._outcome import Outcome

__all__ = ["Serving"]


class Serving:
    """The recorded calls served from the workers' queues (see the module's documentation);
    the base of :class:`~._engine.ReplayEngine`, which sets the attributes below."""

    clock: FakeClock
    _index: TapeIndex
    _outcome: Outcome
    _aligner: Aligner

    def head(self, boundary: str) -> CallEntry | None:
        """The next recorded call of ``boundary`` for the calling worker, if any."""
        queue = self._index.queues.get((boundary, worker_var.get()))
        return queue[0] if queue else None

    def queue(self, boundary: str) -> deque[CallEntry] | None:
        """The calling worker's queue of recorded calls of ``boundary`` (``None``: none was
        recorded). A boundary that takes its head itself reports it with :meth:`took`."""
        return self._index.queues.get((boundary, worker_var.get()))

    def took(self, entry: CallEntry) -> None:
        """Note that the calling worker took ``entry``, the head of its queue."""
        self._outcome.position[worker_var.get()] = entry.seq

    def serve_head(self, queue: deque[CallEntry], head: CallEntry) -> None:
        """Take ``head``, the first entry of the calling worker's ``queue``, and count it
        served at once: :meth:`took` and :meth:`served` in one step, for a substituted
        call recognised as its queue's head (nothing of ours runs between the two)."""
        queue.popleft()
        outcome = self._outcome
        seq = outcome.position[worker_var.get()] = head.seq
        outcome.served.append(seq)
        duration = head.duration_ns
        self.clock.advance_to(head.ts_ns + duration, head.mono_ns + duration)

    def take_head(self, boundary: str) -> CallEntry:
        """Take the head of the calling worker's queue: a request known to match it."""
        worker = worker_var.get()
        head = self._index.queues[(boundary, worker)].popleft()
        self._outcome.position[worker] = head.seq
        return head

    def take(
        self, boundary: str, actual: Mapping[str, Any], normalize: Normalize | None = None
    ) -> CallEntry | None:
        """The entry answering ``actual``, or ``None`` (the mismatch is in the report)."""
        return self._aligner.take(boundary, actual, normalize)

    def check(
        self, entry: CallEntry, path: Path, expected: Any, actual: Any
    ) -> tuple[list[FieldDiff], int]:
        """Compare the part at ``path`` of ``entry``'s request that the program sent after
        its call was matched (a process's stdin), as requests are (``Aligner.check``)."""
        return self._aligner.check(entry, path, expected, actual)

    def take_before_stdin(self, boundary: str, actual: Mapping[str, Any]) -> CallEntry | None:
        """:meth:`take` for a process started before its stdin is written (``Popen``
        starts it, ``communicate()`` writes later): ``actual["input"]`` is the head's,
        and the boundary compares what is written with the entry taken."""
        return self.take(boundary, actual)

    def stdin_differs(self, entry: CallEntry, written: bytes) -> CallEntry | None:
        """The entry answering a process taken before its stdin was written, whose
        stdin ``written`` is not ``entry``'s: ``None`` here (the boundary reports the
        difference); a chaos replay looks for the recorded call that got it."""
        return None

    def served(self, entry: CallEntry) -> None:
        """Count ``entry`` as served and move virtual time to the end of its call.

        A substituted call runs no code of ours, so nothing can read the time between its
        start and its end: one move, to the end, serves both.
        """
        self._outcome.served.append(entry.seq)
        duration = entry.duration_ns
        self.clock.advance_to(entry.ts_ns + duration, entry.mono_ns + duration)

    def clock_at(self, entry: CallEntry) -> None:
        """Move virtual time to the start of a recorded call (our code runs in it)."""
        self.clock.advance_to(entry.ts_ns, entry.mono_ns)
