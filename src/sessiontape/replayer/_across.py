"""A chaos schedule's call answered by what it asks, from whichever worker recorded it.

Under another interleaving than the recorded one, a worker may ask what another worker
asked in production (it claimed that worker's task). :class:`AcrossWorkers` finds the
recorded call that asked the same (normalised and compared as the aligner compares):
the calling worker's next call first, then the other workers' next calls, then any call
not yet served. Compared with another worker's call, the asking worker's own name in the
request reads as that worker's (``_renamed.py``).

A process started before its stdin is written (``subprocess.run(input=...)`` starts it,
then writes) is first matched without its stdin; once written, :meth:`for_stdin` finds
the recorded call that got that stdin, among those that ran alike.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..cassette import BOUNDARY_PROCESS, CallEntry, ProcessCall, request_of
from ._align import Normalize
from ._renamed import renamed

__all__ = ["AcrossWorkers"]

#: ``compare(boundary, entry, request)``: field diffs first (none: the same request).
Compare = Callable[[str, CallEntry, Mapping[str, Any]], bool]


class AcrossWorkers:
    """Every worker's queue of recorded calls, by boundary, and the search through them."""

    __slots__ = ("_compare", "by_boundary")

    def __init__(
        self, queues: Mapping[tuple[str, str], deque[CallEntry]], compare: Compare
    ) -> None:
        self.by_boundary: dict[str, list[tuple[str, deque[CallEntry]]]] = {}
        for (boundary, worker), queue in sorted(queues.items()):
            self.by_boundary.setdefault(boundary, []).append((worker, queue))
        self._compare = compare

    def _ordered(self, boundary: str, me: str) -> list[tuple[str, deque[CallEntry]]]:
        return sorted(self.by_boundary.get(boundary, ()), key=lambda wq: wq[0] != me)

    def find(
        self,
        boundary: str,
        actual: Mapping[str, Any],
        normalize: Normalize | None,
        me: str,
        *,
        any_input: bool = False,
    ) -> tuple[CallEntry | None, bool]:
        """The recorded call of ``boundary`` that asked ``actual``, taken off its queue,
        and whether it asked it in its own worker's name where ``me`` gave its own.

        A raw request (``normalize`` given) equal to a queue head's is that call, with no
        scrubbing; otherwise it is normalised and compared as the aligner compares. With
        ``any_input``, a process call's stdin is not compared (it is not written yet).
        """
        ordered = self._ordered(boundary, me)
        if not ordered:
            return None, False
        if normalize is not None:
            for _, queue in ordered:
                if queue and request_of(queue[0]) == actual:
                    return queue.popleft(), False
            actual = normalize(actual, None)
        compare = self._compare

        def same(entry: CallEntry, request: Mapping[str, Any]) -> bool:
            if any_input:
                request = {**request, "input": request_of(entry).get("input")}
            return compare(boundary, entry, request)

        found = self._search(ordered, me, actual, same)
        if found is None:
            return None, False
        queue, i, named = found
        entry = queue[i]
        del queue[i]
        return entry, named

    def for_stdin(
        self, entry: ProcessCall, asked: Mapping[str, Any], me: str
    ) -> tuple[CallEntry, bool] | None:
        """The recorded process call that ran as ``entry`` ran and asked ``asked`` (with
        the stdin ``me`` wrote), taken off its queue; ``None`` when there is none."""
        ordered = self._ordered(BOUNDARY_PROCESS, me)

        def same(other: CallEntry, request: Mapping[str, Any]) -> bool:
            if not _behaves_as(other, entry):
                return False
            return self._compare(BOUNDARY_PROCESS, other, request)

        found = self._search(ordered, me, asked, same)
        if found is None:
            return None
        queue, i, named = found
        other = queue[i]
        del queue[i]
        return other, named

    @staticmethod
    def _search(
        ordered: Iterable[tuple[str, deque[CallEntry]]],
        me: str,
        actual: Mapping[str, Any],
        same: Callable[[CallEntry, Mapping[str, Any]], bool],
    ) -> tuple[deque[CallEntry], int, bool] | None:
        """Where the call that asked ``actual`` is: heads first, then the rest."""
        theirs: dict[str, Mapping[str, Any]] = {}

        def asked(worker: str, entry: CallEntry) -> bool | None:
            """``False``: ``entry`` asked ``actual``; ``True``: it did with ``worker``'s
            name for the caller's; ``None``: it asked something else."""
            if same(entry, actual):
                return False
            if worker == me:
                return None
            request = theirs.get(worker)
            if request is None:
                request = theirs[worker] = renamed(actual, me, worker)
            return True if request is not actual and same(entry, request) else None

        queues = list(ordered)
        for worker, queue in queues:
            if queue:
                how = asked(worker, queue[0])
                if how is not None:
                    return queue, 0, how
        for worker, queue in queues:
            for i in range(1, len(queue)):
                how = asked(worker, queue[i])
                if how is not None:
                    return queue, i, how
        return None


def _behaves_as(one: CallEntry, other: ProcessCall) -> bool:
    """Whether two recorded process calls ran alike but for what they were given and gave
    (a replayed ``Popen`` set up for one can serve the other)."""
    return isinstance(one, ProcessCall) and _behaviour(one) == _behaviour(other)


def _behaviour(call: ProcessCall) -> tuple[Any, ...]:
    return (
        call.chunks is None,
        call.polls,
        call.wait_timeouts,
        call.timeouts,
        call.signals,
        call.signals_after_eof,
        call.unfinished,
    )
