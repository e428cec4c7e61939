"""A schedule's decisions: noted as they are made, and a prefix of them forced.

A *decision* is a pick among two or more threads that may run. When a schedule traces
(``Schedule(trace=True)``) or forces a prefix (``Schedule(prefix=...)``), the scheduler's
strategy is wrapped in a :class:`Decider`: the first ``len(prefix)`` decisions go to the
threads the prefix names (by start order), the rest to the strategy, and each is noted.
A decider is never sticky, so PCT's shortcut (a step taken without a pick) is off and
every decision is seen; the picks are the same. ``explain`` is built on this: it keeps a
failing schedule's first decisions and lets the strategy choose the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from ._schedule import Schedule, Waiter, _Base, eligible

__all__ = ["Decider", "Decision"]

W = TypeVar("W", bound=Waiter)


class Decision(NamedTuple):
    """One scheduling decision."""

    #: The scheduling step it was made at.
    step: int
    #: The thread picked (start order), and the threads that could have run instead.
    chosen: int
    others: tuple[int, ...]
    #: The thread that took the step before (preempted, when it is among ``others``).
    last: int | None
    #: The scheduler's ``position()`` then: how many calls had run before it.
    mark: int


class Decider(_Base):
    """``strategy``, with ``schedule.prefix`` forced and every decision noted;
    ``position()`` says how many calls had run (the chaos engine's count)."""

    sticky = False

    def __init__(self, strategy: _Base, schedule: Schedule, position: Callable[[], int]) -> None:
        super().__init__(strategy.rng)
        self._strategy = strategy
        self.changes = strategy.changes
        self._prefix = schedule.prefix
        self._position = position
        #: Whether the schedule asked for its decisions (not only for a prefix).
        self.tracing = schedule.trace
        self._threads: list[Waiter] = []
        #: The decisions made so far, in order.
        self.decisions: list[Decision] = []
        #: The 1-based index of the first forced decision whose thread could not run
        #: (the run is not the one the prefix came from), or 0.
        self.diverged = 0

    def admit(self, waiter: Waiter) -> None:
        self._threads.append(waiter)
        self._strategy.admit(waiter)

    def alone(self, waiter: Waiter, step: int) -> None:
        self._strategy.alone(waiter, step)

    def workers(self) -> dict[int, str]:
        """Each thread's worker (its ambient worker at its last point), by start order."""
        return {t.order: str(getattr(t, "worker", "?")) for t in self._threads}

    def pick(self, waiting: Sequence[W], step: int, last: W | None) -> W:
        choices = eligible(waiting, last)
        chosen: W | None = None
        index = len(self.decisions)
        if len(choices) > 1 and index < len(self._prefix):
            chosen = next((t for t in choices if t.order == self._prefix[index]), None)
            if chosen is None and not self.diverged:
                self.diverged = index + 1
        if chosen is None:
            chosen = self._strategy.pick(waiting, step, last)
        if len(choices) > 1:
            self.decisions.append(
                Decision(
                    step,
                    chosen.order,
                    tuple(t.order for t in choices if t is not chosen),
                    last.order if last is not None else None,
                    self._position(),
                )
            )
        return chosen
