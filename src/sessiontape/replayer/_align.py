"""Alignment: each actual request against the head of its worker's queue.

This is the replay hot path. A request that equals the head is served at once; otherwise
it is normalised, compared field by field (noise masks applied), and classified: a later
entry matches (the ones skipped are unconsumed), the same call with other arguments, or a
call the tape does not have here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from .._context import worker_var
from ..cassette import BOUNDARY_PROCESS, CallEntry, Recording, boundary_of, request_of
from ..report import Candidate, MismatchKind, describe, nearest_candidate
from ._index import TapeIndex
from ._match import Matcher, Noise, compare, matches
from ._outcome import Outcome

__all__ = ["Aligner", "Normalize"]

#: Turns today's raw request into its recorded form, given the head's recorded request
#: (or ``None`` when the queue is empty).
Normalize = Callable[[Mapping[str, Any], Any], Mapping[str, Any]]


class Aligner:
    """Matches requests with a :class:`TapeIndex`, reporting to an :class:`Outcome`."""

    def __init__(
        self,
        recording: Recording,
        index: TapeIndex,
        outcome: Outcome,
        *,
        noise: Noise,
        matcher: Matcher | None,
        lookahead: int,
    ) -> None:
        self._recording = recording
        self._index = index
        self._queues = index.queues
        self._outcome = outcome
        self.noise = noise
        self._matcher = matcher
        self.lookahead = lookahead

    def _compare(self, boundary: str, entry: CallEntry, actual: Mapping[str, Any]) -> Any:
        return compare(boundary, request_of(entry), actual, noise=self.noise, matcher=self._matcher)

    def _matches(self, boundary: str, entry: CallEntry, actual: Mapping[str, Any]) -> bool:
        return matches(boundary, request_of(entry), actual, noise=self.noise, matcher=self._matcher)

    def nearest(self, boundary: str, actual: Mapping[str, Any]) -> Candidate | None:
        """The recorded call of ``boundary`` closest to ``actual``, as a hint."""
        hidden = self._index.hidden
        candidates = (
            (e.seq, e.worker, request_of(e), "")
            for e in self._recording.calls
            if boundary_of(e) == boundary and e.seq not in hidden
        )
        found = nearest_candidate(dict(actual), candidates)
        if found is None:
            return None
        # Described once, the one found: describing every call scanned cost more than the
        # scan (a failing replay looks for the nearest call at each call the tape lacks).
        entry = self._recording.by_seq(found.seq)
        summary = describe(entry) if entry is not None else ""
        return msgspec.structs.replace(found, summary=summary)

    @staticmethod
    def _same_call(boundary: str, entry: CallEntry, actual: Mapping[str, Any]) -> bool:
        """Whether a request is the recorded call with other arguments (rather than an
        extra call): same program and subcommand, or same method."""
        expected = request_of(entry)
        if boundary == BOUNDARY_PROCESS:
            return bool(expected["argv"][:2] == list(actual["argv"][:2]))
        return bool(expected["method"] == actual["method"])

    def take(
        self, boundary: str, actual: Mapping[str, Any], normalize: Normalize | None = None
    ) -> CallEntry | None:
        """Align a request with the caller's queue; return the entry that answers it.

        Head matches: served. A later entry within the lookahead matches exactly: the
        entries skipped are reported unconsumed. The head is the same call with other
        arguments: an argument mismatch, answered with the head's result. Otherwise an
        unexpected call; the head stays for the next request.

        With ``normalize``, ``actual`` is today's raw request: it is compared with the head
        as it is first, and normalised only when that fails, reusing the parts equal to the
        head's. That gives the same verdict as normalising first, because scrubbing is
        idempotent: a raw part equal to the recorded (scrubbed) one scrubs to itself.
        """
        worker = worker_var.get()
        key = (boundary, worker)
        queue = self._queues.get(key)
        outcome = self._outcome
        if normalize is not None:
            expected = request_of(queue[0]) if queue else None
            if expected == actual and queue:
                head = queue.popleft()
                outcome.position[worker] = head.seq
                return head
            actual = normalize(actual, expected)
        if not queue:
            self._no_entry(boundary, worker, actual, exhausted=queue is not None)
            return None
        head = queue[0]
        diffs, total = self._compare(boundary, head, actual)
        if not diffs:
            queue.popleft()
            outcome.position[worker] = head.seq
            return head
        # Does a later entry match? Then the code skipped the ones before it.
        for offset in range(1, min(self.lookahead, len(queue) - 1) + 1):
            later = queue[offset]
            if self._matches(boundary, later, actual):
                for _ in range(offset):
                    skipped = queue.popleft()
                    outcome.mismatch(
                        MismatchKind.UNCONSUMED,
                        seq=skipped.seq,
                        worker=worker,
                        boundary=boundary,
                        message=f"the recorded call {describe(skipped)} was skipped: the "
                        f"next request matched seq {later.seq}.",
                        expected=request_of(skipped),
                        position=skipped.seq,
                    )
                outcome.position[worker] = later.seq
                return queue.popleft()
        if self._same_call(boundary, head, actual):
            queue.popleft()
            outcome.mismatch(
                MismatchKind.ARGUMENT_MISMATCH,
                seq=head.seq,
                worker=worker,
                boundary=boundary,
                message=f"the {boundary} call at seq {head.seq} was made with other "
                f"arguments than recorded ({describe(head)}).",
                expected=request_of(head),
                actual=dict(actual),
                diffs=diffs,
                total=total,
            )
            outcome.position[worker] = head.seq
            return head
        outcome.mismatch(
            MismatchKind.UNEXPECTED_CALL,
            seq=head.seq,
            worker=worker,
            boundary=boundary,
            message=f"worker {worker!r} made a {boundary} call that is not on the tape here; "
            f"the next recorded call is seq {head.seq} ({describe(head)}).",
            expected=request_of(head),
            actual=dict(actual),
            diffs=diffs,
            total=total,
            nearest=self.nearest(boundary, actual),
        )
        outcome.count_extra()
        return None

    def _no_entry(
        self, boundary: str, worker: str, actual: Mapping[str, Any], *, exhausted: bool
    ) -> None:
        """A request for a queue that is empty (exhausted) or never existed (unexpected)."""
        nearest = self.nearest(boundary, actual)
        if exhausted:
            last = self._index.last_seq[(boundary, worker)]
            self._outcome.mismatch(
                MismatchKind.EXHAUSTED,
                seq=last,
                worker=worker,
                boundary=boundary,
                message=f"worker {worker!r} made more {boundary} calls than were "
                f"recorded; the last one was seq {last}.",
                actual=dict(actual),
                nearest=nearest,
            )
        else:
            self._outcome.mismatch(
                MismatchKind.UNEXPECTED_CALL,
                seq=None,
                worker=worker,
                boundary=boundary,
                message=f"worker {worker!r} made a {boundary} call, but the tape has no "
                f"{boundary} calls for that worker.",
                actual=dict(actual),
                nearest=nearest,
            )
        self._outcome.count_extra()
