"""A traced schedule's decisions, named by the calls whose order each one fixed.

The scheduler notes each pick among two or more threads (``Decision``): the thread
picked, those passed over, and how many calls had run. Here each becomes a
``ChaosDecision``: the next call of the picked thread, and the next call of the thread
passed over that it is named by, so that a person reads "w2's `next_pending()` ran before
w1's `take('alpha')`". Of the threads passed over, that is the one with a call soon
after that shares an argument with the picked thread's (the same task) on the same
boundary, then one that shares an argument, then one whose last call was the one the
picked thread is about to make (both read the same thing: the one that read first acts
on it next, a check-then-act or a read-then-write), then one whose next call is on the
same boundary, then the one it preempted, then the first started; the call named is that
shared one (the decision ran the picked call before all of the other thread's later
calls), else, for a thread that made the same call, its next call on the same boundary,
else the other thread's next call.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from ..cassette import request_of
from ..report import ChaosDecision
from ._admit import what_was_asked
from ._forcing import Decider, Decision
from ._renamed import renamed
from ._trace import Trace, boundary_name

__all__ = ["decisions_of", "traced_decisions"]

#: How many of a passed-over thread's next calls are searched for one that shares an
#: argument with the picked thread's call.
_LOOKAHEAD: Final = 8


def traced_decisions(decider: Decider | None, trace: Trace) -> Sequence[ChaosDecision]:
    """The decisions of a schedule that traced them (none for one that did not), named
    by the calls of ``trace`` (in the name of the worker that made each)."""
    if decider is None or not decider.tracing:
        return ()
    calls = trace.calls

    def describe(index: int) -> tuple[str, str]:
        worker, boundary, entry, request = calls[index]
        name = boundary or boundary_name(entry)
        if entry is not None and index + 1 in trace.renamed:
            request = renamed(request_of(entry), entry.worker, worker)
        elif entry is not None:
            request = request_of(entry)
        return what_was_asked(request, name), name

    return decisions_of(
        decider.decisions, decider.workers(), [worker for worker, _, _, _ in calls], describe
    )


def decisions_of(
    decisions: Sequence[Decision],
    workers: Mapping[int, str],
    call_workers: Sequence[str],
    describe: Callable[[int], tuple[str, str]],
) -> list[ChaosDecision]:
    """``decisions`` named: ``workers`` maps a thread's start order to its worker,
    ``call_workers`` holds the worker of each call as they ran, ``describe(i)`` the text
    and boundary of call ``i`` (0-based)."""
    by_worker: dict[str, list[int]] = {}
    for index, worker in enumerate(call_workers):
        by_worker.setdefault(worker, []).append(index)

    def worker_of(order: int) -> str:
        name = workers.get(order, "?")
        return name if name != "?" else f"thread-{order}"

    def calls_after(worker: str, mark: int) -> list[tuple[str, str | None]]:
        mine = by_worker.get(worker, [])
        at = bisect.bisect_left(mine, mark)
        return [describe(i) for i in mine[at : at + _LOOKAHEAD]]

    def call_before(worker: str, mark: int) -> tuple[str, str | None]:
        mine = by_worker.get(worker, [])
        at = bisect.bisect_left(mine, mark)
        return describe(mine[at - 1]) if at else ("", None)

    out = []
    for number, decision in enumerate(decisions, 1):
        worker = worker_of(decision.chosen)
        call, boundary = (calls_after(worker, decision.mark) or [("", None)])[0]
        mine = _arguments(call)
        ranked = []
        for position, order in enumerate(decision.others):
            theirs = calls_after(worker_of(order), decision.mark)
            before, before_boundary = call_before(worker_of(order), decision.mark)
            # The other thread made the call the picked one is about to make: it acts
            # on what it got next, and the picked thread's call comes in between.
            made = before_boundary == boundary and _operation(before) == _operation(call)
            same = bool(call) and made
            # Of the other thread's next calls, the first on the same boundary with an
            # argument in common, else the first with one, else (when it made the same
            # call) its first on the same boundary, else its next call.
            scored = [
                (not (mine & _arguments(text)), boundary != their_boundary, i, text)
                for i, (text, their_boundary) in enumerate(theirs)
                if i == 0 or mine & _arguments(text) or (same and their_boundary == boundary)
            ]
            shared, other_boundary, _, text = min(scored, default=(True, True, 0, ""))
            ranked.append(
                (shared, not same, other_boundary, order != decision.last, position, order, text)
            )
        *_, other, other_call = min(ranked)
        out.append(
            ChaosDecision(
                index=number,
                chosen=decision.chosen,
                others=decision.others,
                worker=worker,
                call=call,
                other=other,
                other_worker=worker_of(other),
                other_call=other_call,
            )
        )
    return out


def _operation(call: str) -> str:
    """What a call does, without its arguments: a method's name (``read_count()``:
    ``read_count``), or a command's program and first word (``git show HEAD:x``: ``git
    show``)."""
    if call.endswith(")") and "(" in call:
        return call[: call.index("(")]
    return " ".join(call.split()[:2])


def _arguments(call: str) -> set[str]:
    """The arguments of a call's text (``take('alpha', 'w1')``: ``'alpha'``, ``'w1'``),
    or a command's words past the program (``git show HEAD:x``: ``show``, ``HEAD:x``)."""
    if call.endswith(")") and "(" in call:
        inner = call[call.index("(") + 1 : -1]
        parts = [part.split("=", 1)[-1] for part in inner.split(", ")]
    else:
        parts = call.split()[2:]
    return {part.strip("'\"") for part in parts} - {""}
