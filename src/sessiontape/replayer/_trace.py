"""The calls of a chaos schedule in the order they ran: what its result describes and what
a saved schedule is written from.

Each call is noted as it runs (the worker that made it, its boundary, the recorded call
that answered it, and for a call no recorded call answered, today's request); a verify
call also gets, by its order, what it really gave (``answers``), and a call answered by
another worker's recorded call in that worker's name is noted in ``renamed``. Nothing is
described until a result's calls are first read (``DescribedCalls``): most schedules pass
and nobody reads them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

from ..cassette import CallEntry, ErrorInfo, boundary_of, request_of, stored_result
from ..report import SHOWN_PER_WORKER, ChaosCall, DescribedCalls
from ._admit import what_was_asked
from ._renamed import renamed

__all__ = ["NO_REQUEST", "Ran", "Trace"]

#: A call as it ran: the worker, the boundary (``None``: the entry's), the recorded call
#: that answered it (``None``: a verify call with no recorded twin), today's request
#: (empty when a recorded call answered it).
Ran = tuple[str, str | None, CallEntry | None, Mapping[str, Any]]
#: A verify call's (recorded seq or None, normalised request, real result or None).
Answer = tuple[int | None, Mapping[str, Any] | None, Any]
NO_REQUEST: Final[Mapping[str, Any]] = {}


class Trace:
    """The calls of one schedule as they ran (see the module's docstring)."""

    __slots__ = ("_done", "_open", "answers", "calls", "renamed")

    def __init__(self) -> None:
        self.calls: list[Ran] = []
        #: By order, each verify call's answer (see ``Answer``).
        self.answers: dict[int, Answer] = {}
        #: The orders of the calls answered by another worker's recorded call that asked
        #: the same with that worker's name for the caller's (see ``_renamed.py``).
        self.renamed: set[int] = set()
        #: Per thread, the order of the verify call under way.
        self._open: dict[int, int] = {}
        #: The verify calls that ended (by order): a None answer is the recorded one.
        self._done: set[int] = set()

    def add(
        self,
        worker: str,
        entry: CallEntry | None,
        boundary: str | None,
        request: Mapping[str, Any],
        *,
        verify: bool = False,
        named: bool = False,
    ) -> None:
        """Note a call as it runs; a verify call's real result joins it later."""
        self.calls.append((worker, boundary, entry, request))
        order = len(self.calls)
        if named:
            self.renamed.add(order)
        if verify:
            self.answers[order] = (entry.seq if entry is not None else None, request, None)
            self._open[threading.get_ident()] = order

    def gave(self, actual: Any) -> None:
        """The verify call under way in this thread gave ``actual`` (a store mismatch's
        ``{"result": ...}`` or ``{"error": ...}``), not the recorded answer."""
        order = self._open.get(threading.get_ident())
        if order is not None:
            seq, request, _ = self.answers[order]
            self.answers[order] = (seq, request, actual)

    def ended(self) -> int | None:
        """The verify call under way in this thread has ended: its order."""
        order = self._open.pop(threading.get_ident(), None)
        if order is not None:
            self._done.add(order)
        return order

    def replace(self, worker: str, entry: CallEntry, other: CallEntry, named: bool) -> None:
        """``worker``'s last call answered by ``entry`` is answered by ``other`` instead."""
        order = self.order_of(worker, entry)
        if order is None:
            return
        _, boundary, _, request = self.calls[order - 1]
        self.calls[order - 1] = (worker, boundary, other, request)
        self.renamed.discard(order)
        if named:
            self.renamed.add(order)

    def order_of(self, worker: str, entry: CallEntry) -> int | None:
        """The order of ``worker``'s last call answered by ``entry`` (``None``: none)."""
        calls = self.calls
        for order in range(len(calls), 0, -1):
            if calls[order - 1][2] is entry and calls[order - 1][0] == worker:
                return order
        return None

    def described(self) -> DescribedCalls:
        """The calls as they ran, described when first read."""
        calls, named = list(self.calls), frozenset(self.renamed)
        return DescribedCalls(lambda: _describe(calls, named))

    def saved_answers(self, tokens: Mapping[str, CallEntry]) -> dict[int, Answer]:
        """``answers``, with the recorded answer of each verify call that ended with it
        (looked up only now: most schedules are never saved)."""
        saved = dict(self.answers)
        for order in self._done:
            seq, request, actual = saved[order]
            if actual is None:
                _, boundary, entry, _ = self.calls[order - 1]
                if entry is None:
                    entry = tokens[boundary or boundary_name(entry)]
                saved[order] = (seq, request, _recorded_answer(entry))
        return saved


def boundary_name(entry: CallEntry | None) -> str:
    return (boundary_of(entry) if entry is not None else None) or "?"


def _describe(calls: list[Ran], named: frozenset[int]) -> list[ChaosCall]:
    """The calls as they ran; only those a report shows get their text (in the name of
    the worker that made them)."""
    shown = _shown(calls)
    out = []
    for order, (worker, boundary, entry, request) in enumerate(calls, 1):
        name = boundary or boundary_name(entry)
        text = ""
        if order in shown:
            if entry is not None and order in named:
                request = renamed(request_of(entry), entry.worker, worker)
            elif entry is not None:
                request = request_of(entry)
            text = what_was_asked(request, name)
        seq = entry.seq if entry is not None else None
        out.append(ChaosCall(order=order, worker=worker, boundary=name, seq=seq, call=text))
    return out


def _shown(calls: list[Ran]) -> set[int]:
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


def _recorded_answer(entry: CallEntry) -> Any:
    """A verify call's recorded result or error, in the shape of a store mismatch's
    ``actual`` (``{"result": ...}`` or ``{"error": {...}}``)."""
    error: ErrorInfo | None = getattr(entry, "error", None)
    if error is not None:
        return {"error": {"type": error.type, "message": error.message}}
    return {"result": stored_result(getattr(entry, "result", None))}
