"""The recorded calls not yet used, indexed by what they asked: a fork's answers after it parts.

After a fork parts from its tape, a call is answered by a recorded call that asked exactly
the same, from whichever worker recorded it and wherever it stands in the tape: the
calling worker's own calls first, in their order. Most calls after a fork ask what the
worker's next recorded call asked; that one is the answer (its own calls come first, and
it is the first of them not used), found without any index. Looking any other up by
scanning the tape per call would make a fork quadratic; so the first call that needs it
indexes the calls not yet used, by their request's canonical JSON (a process call's
without its stdin, which the program may write later: the few calls in a bucket are
compared with it). A fork whose workers all ask what they asked never builds it. Each
candidate is judged as chaos judges one (``Aligner.matches``: correlated values, noise).
Only when a comparison could be loose (noise masks or patterns, a custom matcher, values
correlated) does a miss fall back on the calls of the same program or method; a plain
tape never scans.

Calls are used once. A call used elsewhere (served from its worker's queue) is noted in
``used`` and skipped where it still stands: nothing is ever removed from the middle of a
queue. A call put back (:meth:`Asked.add` with ``first``) comes before its worker's next
one: from then on every call is looked up in the index.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from ..cassette import BOUNDARY_PROCESS, CallEntry, boundary_of, request_of

__all__ = ["Asked", "content_key"]

#: ``matches(boundary, entry, request)``: whether ``entry`` asked ``request``.
Matches = Callable[[str, CallEntry, Mapping[str, Any]], bool]

_ENCODE = msgspec.json.Encoder(order="sorted").encode


def content_key(boundary: str, request: Mapping[str, Any]) -> bytes:
    """What a request asked, as bytes equal for equal requests (a process's stdin left out)."""
    if boundary == BOUNDARY_PROCESS and "input" in request:
        request = {k: v for k, v in request.items() if k != "input"}
    return boundary.encode() + b"\0" + _ENCODE(request)


def _coarse_key(boundary: str, request: Mapping[str, Any]) -> tuple[str, str]:
    """The program (``argv[0]``'s name) or method a request calls."""
    if boundary == BOUNDARY_PROCESS:
        argv = request.get("argv") or [""]
        return boundary, os.path.basename(str(argv[0]))
    return boundary, str(request.get("method", ""))


class Asked:
    """The recorded calls not yet used, by content (see the module's documentation).

    ``entries`` gives the recorded calls after the fork not yet taken from their queues
    (called once, when the index is first needed); ``next_of(boundary, worker)`` the
    worker's next recorded call of ``boundary`` not used (``None``: none).
    """

    __slots__ = (
        "_coarse",
        "_entries",
        "_exact",
        "_lock",
        "_matches",
        "_next_of",
        "_put_back",
        "used",
    )

    def __init__(
        self,
        entries: Callable[[], Iterable[CallEntry]],
        used: set[int],
        matches: Matches,
        next_of: Callable[[str, str], CallEntry | None],
    ) -> None:
        self.used = used
        self._matches = matches
        self._entries = entries
        self._next_of = next_of
        self._lock = threading.Lock()
        self._put_back = False
        self._exact: dict[bytes, dict[str, deque[CallEntry]]] | None = None
        self._coarse: dict[tuple[str, str], deque[CallEntry]] = {}

    def _index(self) -> dict[bytes, dict[str, deque[CallEntry]]]:
        """The calls not yet used by content, indexed now if they were not yet."""
        exact = self._exact
        if exact is not None:
            return exact
        with self._lock:
            if self._exact is None:
                exact = {}
                used = self.used
                for entry in self._entries():
                    if entry.seq not in used:
                        self._put(exact, entry, first=False)
                self._exact = exact
            return self._exact

    def add(self, entry: CallEntry, *, first: bool = False) -> None:
        """Index ``entry`` (``first``: put back, ahead of the calls that asked the same)."""
        exact = self._index()
        if first:
            self._put_back = True
        self._put(exact, entry, first=first)

    def _put(
        self, exact: dict[bytes, dict[str, deque[CallEntry]]], entry: CallEntry, *, first: bool
    ) -> None:
        boundary = boundary_of(entry) or ""
        request = request_of(entry)
        by_worker = exact.setdefault(content_key(boundary, request), {})
        bucket = by_worker.setdefault(entry.worker, deque())
        coarse = self._coarse.setdefault(_coarse_key(boundary, request), deque())
        if first:
            bucket.appendleft(entry)
            coarse.appendleft(entry)
        else:
            bucket.append(entry)
            coarse.append(entry)

    def take(
        self,
        boundary: str,
        actual: Mapping[str, Any],
        me: str,
        *,
        any_input: bool = False,
        loose: bool = False,
    ) -> CallEntry | None:
        """The recorded call not yet used that asked ``actual`` (the calling worker's
        own first), marked used; ``None`` when none did. With ``any_input`` a process
        call's stdin is not compared (it is not written yet); with ``loose`` a request
        no call asked byte for byte is compared with the calls of its program or method."""
        matches = self._matches

        def same(entry: CallEntry) -> bool:
            request = actual
            if any_input:
                request = {**actual, "input": request_of(entry).get("input")}
            return matches(boundary, entry, request)

        key = content_key(boundary, actual)
        if not self._put_back:
            # The worker's next call is the first of its own not used: the index's answer
            # when it asked the same.
            mine = self._next_of(boundary, me)
            if (
                mine is not None
                and content_key(boundary, request_of(mine)) == key
                and same(mine)
                and mine.seq not in self.used
            ):
                self.used.add(mine.seq)
                return mine
        by_worker = self._index().get(key)
        if by_worker:
            own = by_worker.get(me)
            ordered = [own] if own else []
            ordered += [q for w, q in sorted(by_worker.items()) if w != me]
            for bucket in ordered:
                found = self._first(bucket, same)
                if found is not None:
                    return found
        if loose:
            coarse = self._coarse.get(_coarse_key(boundary, actual))
            if coarse:
                return self._first(coarse, same)
        return None

    def _first(
        self, bucket: deque[CallEntry], same: Callable[[CallEntry], bool]
    ) -> CallEntry | None:
        used = self.used
        while bucket and bucket[0].seq in used:
            bucket.popleft()  # used elsewhere: gone from the front for good
        for entry in bucket:
            if entry.seq not in used and same(entry):
                used.add(entry.seq)
                return entry
        return None
