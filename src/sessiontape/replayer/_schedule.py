"""What a chaos schedule is: a seed, a strategy and its depth, and the strategies.

A :class:`Schedule` names one interleaving of the application's worker threads among the
many a tape admits. The scheduler (``_scheduler.py``) asks its strategy, at every
scheduling point, which of the threads waiting there runs next. Everything the strategy
decides comes from ``random.Random(seed)`` and from the order in which threads were
started (itself decided by earlier choices), never from thread ids, timing or hash
randomisation: the same seed gives the same schedule on any machine.
"""

from __future__ import annotations

import dataclasses
import enum
import random
from collections.abc import Sequence
from typing import Final, Protocol, TypeVar

from .._errors import UsageError

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_STALL_LIMIT",
    "Schedule",
    "Strategy",
    "Waiter",
    "eligible",
    "make_strategy",
    "pct_bound",
]

#: PCT's default bug depth: two ordering constraints (d = 3) find most races seen in
#: practice (Burckhardt et al. report depth 1 to 3 for the bugs they studied).
DEFAULT_DEPTH: Final = 3
#: Real seconds a thread waiting at a scheduling point gives the running thread to reach
#: its next one before the schedule is stopped as a possible deadlock. Generous: a
#: replayed step takes microseconds, and a loaded CI machine must not raise false alarms.
DEFAULT_STALL_LIMIT: Final = 10.0


class Strategy(str, enum.Enum):
    """How the scheduler picks the next thread to run."""

    #: Probabilistic concurrency testing: random priorities, ``depth - 1`` change points.
    PCT = "pct"
    #: A uniform choice among the waiting threads at every scheduling point.
    RANDOM = "random"


@dataclasses.dataclass(frozen=True)
class Schedule:
    """One chaos schedule: replay the tape with its threads interleaved by ``seed``.

    ``strategy`` is ``"pct"`` (the default) or ``"random"``; ``depth`` is PCT's bug depth
    ``d`` (``d - 1`` priority change points). ``stall_limit`` is how many real seconds a
    thread may run without reaching its next scheduling point (a boundary call, a
    ``tape.clock`` sleep) while others wait, before the schedule stops as a possible
    deadlock. Pass it to :func:`sessiontape.replay`::

        sessiontape.replay(path, schedule=sessiontape.Schedule(seed=17))
    """

    seed: int
    strategy: Strategy | str = Strategy.PCT
    depth: int = DEFAULT_DEPTH
    stall_limit: float = DEFAULT_STALL_LIMIT
    #: Decisions forced before the strategy decides: at the i-th scheduling decision (a
    #: pick among two or more threads that may run), the thread started ``prefix[i]``-th
    #: runs. ``explain`` keeps a failing schedule's first decisions this way.
    prefix: tuple[int, ...] = ()
    #: Note every decision (``ChaosResult.decisions``): the thread picked, the threads
    #: passed over, and the calls each made next. Off by default: a plain schedule
    #: takes a shortcut (PCT's sticky pick) that tracing gives up.
    trace: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise UsageError(f"a schedule's seed must be an int >= 0, got {self.seed!r}.")
        try:
            object.__setattr__(self, "strategy", Strategy(self.strategy))
        except ValueError:
            choices = ", ".join(s.value for s in Strategy)
            raise UsageError(
                f"unknown chaos strategy {self.strategy!r}; use one of {choices}."
            ) from None
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1:
            raise UsageError(f"a schedule's depth must be an int >= 1, got {self.depth!r}.")
        if not isinstance(self.prefix, tuple) or not all(
            isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in self.prefix
        ):
            raise UsageError(
                "a schedule's prefix must be a tuple of thread orders (ints >= 0), got "
                f"{self.prefix!r}."
            )
        if not self.stall_limit > 0:
            raise UsageError(
                f"a schedule's stall_limit must be a positive number of seconds, got "
                f"{self.stall_limit!r}."
            )

    @property
    def traced(self) -> bool:
        """Whether the scheduler notes its decisions (tracing, or forcing a prefix)."""
        return self.trace or bool(self.prefix)

    @property
    def label(self) -> str:
        """``seed 17, pct depth 3`` (or ``seed 17, random``), for reports."""
        if self.strategy is Strategy.PCT:
            return f"seed {self.seed}, pct depth {self.depth}"
        return f"seed {self.seed}, random"


class Waiter(Protocol):
    """A thread waiting at a scheduling point, as a strategy sees it."""

    #: Start order: 0 for the thread that entered the tape, then 1, 2, ... as started.
    order: int
    #: Whether it waits in a sleep (it yields: others go first when there are others).
    sleeping: bool
    #: PCT's priority (higher runs first).
    priority: float
    #: For the thread that took the last step: how many steps in a row, its own
    #: included, ended in a sleep.
    streak: int


W = TypeVar("W", bound=Waiter)


class _Base:
    #: Whether a pick stands until the threads waiting or the priorities change.
    sticky = False

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        #: The steps at which the strategy changes something (PCT's change points), each
        #: with the low priority the thread running at that step drops to.
        self.changes: dict[int, float] = {}

    def admit(self, waiter: Waiter) -> None:
        """Give a newly registered thread its priority."""
        waiter.priority = 0.0

    def pick(self, waiting: Sequence[W], step: int, last: W | None) -> W:
        raise NotImplementedError

    def alone(self, waiter: Waiter, step: int) -> None:
        """Step ``step`` goes to ``waiter``, the only thread that can run."""


class _Random(_Base):
    def pick(self, waiting: Sequence[W], step: int, last: W | None) -> W:
        return self.rng.choice(eligible(waiting, last))


class _Pct(_Base):
    """PCT (Burckhardt et al., ASPLOS 2010): each thread a random priority above
    ``depth``; at each of ``depth - 1`` change points, chosen uniformly among the
    estimated ``steps``, the thread that just ran drops to a priority below all initial
    ones; the waiting thread of highest priority always runs."""

    sticky = True

    def __init__(self, rng: random.Random, depth: int, steps: int) -> None:
        super().__init__(rng)
        self.depth = depth
        points = rng.sample(range(1, steps + 1), min(depth - 1, steps))
        self.changes = {step: float(depth - 1 - i) for i, step in enumerate(sorted(points))}

    def admit(self, waiter: Waiter) -> None:
        waiter.priority = self.depth + self.rng.random()

    def alone(self, waiter: Waiter, step: int) -> None:
        drop = self.changes.get(step)
        if drop is not None:
            waiter.priority = drop

    def pick(self, waiting: Sequence[W], step: int, last: W | None) -> W:
        drop = self.changes.get(step)
        if drop is not None and last is not None:
            last.priority = drop
        return max(eligible(waiting, last), key=lambda w: (w.priority, -w.order))


#: After this many steps in a row taken by threads that went back to sleep, a thread that
#: is not sleeping runs next (if one waits).
SLEEP_STREAK: Final = 8


def eligible(waiting: Sequence[W], last: W | None) -> Sequence[W]:
    """The threads the strategy may pick. A thread that just slept yields the next step
    to the others; and after :data:`SLEEP_STREAK` sleeps in a row, a thread that is not
    sleeping goes first. Otherwise sleepers compete like everyone (a timeout may fire
    at any point). Without this, threads polling a lock in a sleep loop could take
    every step while the thread holding the lock never runs."""
    if last is not None and last.streak >= SLEEP_STREAK:
        awake = [w for w in waiting if not w.sleeping]
        if awake:
            return awake
    if last is not None and last.sleeping and len(waiting) > 1:
        return [w for w in waiting if w is not last]
    return waiting


def make_strategy(schedule: Schedule, steps: int) -> _Base:
    """The strategy of ``schedule`` for a run of about ``steps`` scheduling decisions."""
    rng = random.Random(schedule.seed)
    if schedule.strategy is Strategy.PCT:
        return _Pct(rng, schedule.depth, max(1, steps))
    return _Random(rng)


def pct_bound(steps: int, threads: int, depth: int) -> float:
    """PCT's guarantee per run: a bug of depth ``depth`` is found with probability at
    least ``1 / (n * k ** (d - 1))`` (``n`` steps, ``k`` threads)."""
    return 1.0 / float(max(1, steps) * max(1, threads) ** (depth - 1))
