"""Alignment: each actual request against the head of its worker's queue.

This is the replay hot path. A request that equals the head is served at once; otherwise
it is normalised, compared field by field (the values the program made up correlated,
times read between calls matched, noise masks applied), and classified: a later entry
matches (the ones skipped are unconsumed), the same call with other arguments, or a call
the tape does not have here.

The parts of a request the program sends after its call was matched (a process's stdin)
are compared here too (:meth:`Aligner.check`): one comparison serves every path.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import msgspec

from .._context import worker_var
from ..cassette import CallEntry, Recording, boundary_of, request_of
from ..report import Candidate, FieldDiff, MismatchKind, describe, nearest_candidate
from ._correlate import EARLIER_CALLS, ECHO_CALLS, Correlations, Found, detect, substitute
from ._index import TapeIndex
from ._match import Matcher, Noise, Path, compare, matches, same_call
from ._outcome import Outcome
from ._timegaps import TimeGaps

__all__ = ["Aligner", "AnswerTexts", "Normalize"]

#: Turns today's raw request into its recorded form, given the head's recorded request
#: (or ``None`` when the queue is empty).
Normalize = Callable[[Mapping[str, Any], Any], Mapping[str, Any]]
#: The texts of a recorded call's answers (in a conversation, those between the chunks of
#: the two indexes given), searched for the echo of a value the program made up.
AnswerTexts = Callable[[CallEntry, "int | None", "int | None"], Iterable[str]]


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
        answers: AnswerTexts,
        skipped: Callable[[CallEntry], None] | None = None,
    ) -> None:
        self._recording = recording
        self._index = index
        self._queues = index.queues
        self._outcome = outcome
        self.noise = noise
        self._matcher = matcher
        self.lookahead = lookahead
        self._answers = answers
        self._gaps = TimeGaps(recording)
        self._by_worker: dict[str, list[CallEntry]] = {}
        #: The values correlated so far (see ``_correlate``).
        self.correlations = Correlations()
        #: Told of each recorded call skipped (a verify call's turn is then over).
        self._skipped = skipped

    def _judge(
        self, boundary: str, entry: CallEntry, expected: Any, actual: Any, path: Path = ()
    ) -> tuple[list[FieldDiff], int, list[Found]]:
        """The one comparison of a request (or of the part at ``path``) with the recorded
        call it answers: the values correlated so far are today's, then the values the
        program made up and the times it read between calls are found, then noise is
        applied. Returns the diffs, their total and what was found."""
        if expected == actual:
            return [], 0, []
        worker = entry.worker
        correlations = self.correlations
        if correlations.pairs:
            expected = correlations.request(boundary, worker, expected)
            if expected == actual:
                return [], 0, []
        found = detect(
            expected,
            actual,
            path=path,
            noise=self.noise,
            worker=worker,
            gaps=self._gaps,
            answers=lambda: self._echoes(boundary, entry, path),
            earlier=lambda: self._earlier(entry, path),
        )
        if found.texts or found.numbers:
            expected = substitute(expected, found.texts, found.numbers)
        diffs, total = compare(
            boundary, expected, actual, noise=self.noise, matcher=self._matcher, path=path
        )
        return diffs, total, found.found

    def _echoes(self, boundary: str, entry: CallEntry, path: Path) -> Iterator[str]:
        """The recorded answers that follow the request: the call's own (after the stdin
        chunk at ``path``), then those of the next calls of its boundary and worker."""
        after = path[1] if len(path) > 1 and path[0] == "chunks" else None
        yield from self._answers(entry, after if isinstance(after, int) else None, None)
        queue = self._queues.get((boundary, entry.worker))
        if queue:
            # One C call (no Python code runs in it): safe while the worker takes its head.
            later = list(itertools.islice(queue, ECHO_CALLS + 1))
            for other in [e for e in later if e.seq > entry.seq][:ECHO_CALLS]:
                yield from self._answers(other, None, None)

    def _earlier(self, entry: CallEntry, path: Path) -> Iterator[str]:
        """The recorded answers the worker had before the request: the call's own (before
        the stdin chunk at ``path``), then those of its last calls before it (any
        boundary). A value found there came to the program; it did not make it up."""
        if len(path) > 1 and path[0] == "chunks" and isinstance(path[1], int):
            yield from self._answers(entry, None, path[1])
        calls = self._by_worker.get(entry.worker)
        if calls is None:
            calls = self._by_worker[entry.worker] = [
                e for e in self._recording.calls if e.worker == entry.worker
            ]
        at = bisect.bisect_left(calls, entry.seq, key=lambda e: e.seq)
        for other in reversed(calls[max(0, at - EARLIER_CALLS) : at]):
            yield from self._answers(other, None, None)

    def check(
        self, entry: CallEntry, path: Path, expected: Any, actual: Any
    ) -> tuple[list[FieldDiff], int]:
        """Compare the part at ``path`` of ``entry``'s request, sent by the program after
        its call was matched (a process's stdin), as :meth:`take` compares requests."""
        boundary = boundary_of(entry) or ""
        diffs, total, found = self._judge(boundary, entry, expected, actual, path)
        if found:
            self.correlations.add(boundary, entry.worker, entry.seq, found)
        return diffs, total

    def matches(self, boundary: str, entry: CallEntry, actual: Mapping[str, Any]) -> bool:
        """Whether ``actual`` is the recorded call (its correlated values as today's),
        without building diffs: the lookahead asks this of many entries."""
        expected: Any = request_of(entry)
        correlations = self.correlations
        if correlations.pairs and expected != actual:
            expected = correlations.request(boundary, entry.worker, expected)
        return matches(boundary, expected, actual, noise=self.noise, matcher=self._matcher)

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
        diffs, total, found = self._judge(boundary, head, request_of(head), actual)
        if not diffs:
            queue.popleft()
            outcome.position[worker] = head.seq
            if found:
                self.correlations.add(boundary, worker, head.seq, found)
            return head
        # Does a later entry match? Then the code skipped the ones before it.
        for offset in range(1, min(self.lookahead, len(queue) - 1) + 1):
            later = queue[offset]
            if self.matches(boundary, later, actual):
                for _ in range(offset):
                    skipped = queue.popleft()
                    if self._skipped is not None:
                        self._skipped(skipped)
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
        if same_call(boundary, request_of(head), actual):
            queue.popleft()
            if found:  # answered with the head's result: what the program made up follows
                self.correlations.add(boundary, worker, head.seq, found)
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
