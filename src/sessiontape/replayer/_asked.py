"""The recorded calls not yet used, indexed by what they asked: a fork's answers after it parts.

After a fork parts from its tape, a call is answered by a recorded call that asked exactly
the same, from whichever worker recorded it and wherever it stands in the tape. Looking
that up by scanning the tape per call would make a fork quadratic; so the calls are
indexed once, when the fork parts, by their request's canonical JSON (a process call's
without its stdin, which the program may write later: the few calls in a bucket are
compared with it). Each candidate is then judged as chaos judges one
(``Aligner.matches``: correlated values, noise). Only when a comparison could be loose
(noise masks or patterns, a custom matcher, values correlated) does a miss fall back on
the calls of the same program or method; a plain tape never scans.

Calls are used once. A call used elsewhere (served from its worker's queue) is noted in
``used`` and skipped where it still stands: nothing is ever removed from the middle of a
queue.
"""

from __future__ import annotations

import os
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
    """The recorded calls not yet used, by content (see the module's documentation)."""

    __slots__ = ("_coarse", "_exact", "_matches", "used")

    def __init__(self, entries: Iterable[CallEntry], used: set[int], matches: Matches) -> None:
        self.used = used
        self._matches = matches
        self._exact: dict[bytes, dict[str, deque[CallEntry]]] = {}
        self._coarse: dict[tuple[str, str], deque[CallEntry]] = {}
        for entry in entries:
            if entry.seq not in used:
                self.add(entry)

    def add(self, entry: CallEntry, *, first: bool = False) -> None:
        """Index ``entry`` (``first``: ahead of the calls that asked the same)."""
        boundary = boundary_of(entry) or ""
        request = request_of(entry)
        by_worker = self._exact.setdefault(content_key(boundary, request), {})
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

        by_worker = self._exact.get(content_key(boundary, actual))
        if by_worker:
            mine = by_worker.get(me)
            ordered = [mine] if mine else []
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
