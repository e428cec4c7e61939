"""The scheduler: the application's threads run one at a time between scheduling points.

A chaos replay (``_chaos.py``) passes the *baton* from thread to thread. The thread that
holds it runs; every other scheduled thread waits at a scheduling point (a boundary call,
a ``tape.clock`` sleep) until the strategy (``_schedule.py``) hands the baton to it.
Between two scheduling points a worker touches only its own state, so these are the only
points where an interleaving can differ.

Threads are known by the order they were started in (the thread that entered the tape is
0), never by id. A thread started while the tape is active joins the waiting threads at
once (its starter, holding the baton, puts it there) and waits for the baton before
running any application code; one that joins another leaves the scheduler for the join
and is put back among the waiting by the joined thread's end. A ``ThreadPoolExecutor``
task is scheduled the same way, and a thread waiting for tasks is *parked* until the end
of one satisfies its wait (``_pool.py``). So the waiting threads, and
their order, are what the schedule made them, never how fast a thread got somewhere; and
a pick never waits for a thread to wake first (a thread picked before it arrives finds
the baton its own when it does).

Nothing here runs in a plain replay: the chaos engine installs it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

from .._context import starting_internal, worker_var
from .._time import REAL
from ._forcing import Decider
from ._schedule import Schedule, make_strategy

__all__ = ["ScheduleStopped", "Scheduler"]

_REAL_START: Final = threading.Thread.start
_REAL_JOIN: Final = threading.Thread.join
_get_ident: Final = threading.get_ident


class ScheduleStopped(BaseException):
    """Raised in the application's threads at their scheduling points once a schedule
    has stopped (inadmissible, or failed). A ``BaseException``, so that an application
    catching ``Exception`` does not carry on past it."""


class _Thread:
    """One scheduled thread."""

    __slots__ = ("ended", "joiners", "order", "priority", "sleeping", "streak", "wake", "worker")

    def __init__(self, order: int, lock: threading.Lock) -> None:
        self.order = order
        #: Its own condition on the scheduler's lock: a hand-over wakes only the thread
        #: that gets the baton.
        self.wake = threading.Condition(lock)
        self.sleeping = False
        self.streak = 0
        self.priority = 0.0
        self.worker = "?"
        self.ended = False
        #: Threads waiting in ``join()`` for this one.
        self.joiners: list[_Thread] = []


class Scheduler:
    """Hands the baton among the application's threads, as ``schedule`` decides.

    ``steps`` estimates how many scheduling decisions a run takes (PCT places its change
    points among them); ``max_steps`` bounds them (past it, no progress is assumed).
    ``on_error(exc, worker)`` is called in a scheduled thread that an exception ends,
    while it still holds the baton (``worker``: its last ambient worker id).
    ``on_stall(message)`` is called once (with the scheduler's lock held) when the
    schedule must stop because a thread never reached its next scheduling point.
    """

    def __init__(
        self,
        schedule: Schedule,
        *,
        steps: int,
        max_steps: int,
        on_stall: Callable[[str], None],
        on_error: Callable[[BaseException, str], None],
        position: Callable[[], int] = lambda: 0,
    ) -> None:
        self.schedule = schedule
        self._strategy = make_strategy(schedule, steps)
        #: When the schedule traces or forces a prefix, its decisions go through this.
        self.decider = Decider(self._strategy, schedule, position) if schedule.traced else None
        self._strategy = self.decider or self._strategy
        #: The steps at which the strategy changes something (PCT's change points).
        self._changes = self._strategy.changes
        self._limit = schedule.stall_limit
        self._max_steps = max_steps
        self._on_stall = on_stall
        self._on_error = on_error
        #: Guards the scheduler's state; each thread waits on a condition of its own on it.
        self._lock = threading.Lock()
        self._all: list[_Thread] = []
        self._by_ident: dict[int, _Thread] = {}
        self._waiting: list[_Thread] = []
        #: Threads out of the running until something a scheduled thread does when it
        #: ends makes ``ready()`` true (a pool task's future done), in the order they
        #: left: (thread, ready, whether its wait has a timeout).
        self._parked: list[tuple[_Thread, Callable[[], bool], bool]] = []
        self._running: _Thread | None = None
        self._last: _Thread | None = None
        self._started = 0
        #: Steps in a row that ended in a sleep.
        self._sleeps = 0
        #: Whether the last pick still stands for the thread it chose (see point()).
        self._settled = False
        #: Scheduling decisions made so far.
        self.steps = 0
        #: Threads the scheduler has run (the one that entered the tape included).
        self.threads = 0
        self._progress = REAL.monotonic()
        #: Set once the schedule has stopped: every thread then raises at its next point.
        self.stopped = False

    # -- the thread that entered the tape ------------------------------------------------

    @contextmanager
    def running(self) -> Iterator[None]:
        """Schedule the calling thread (it holds the baton) and the threads started in
        the block; at its end, stop whatever still waits."""
        me = self._new_thread()
        me.worker = worker_var.get()
        with self._lock:
            self._by_ident[_get_ident()] = me
            self._running = me
        start, join = threading.Thread.start, threading.Thread.join
        threading.Thread.start = _patched_start(self)  # type: ignore[method-assign,assignment]
        threading.Thread.join = _patched_join(self)  # type: ignore[method-assign]
        try:
            yield
        finally:
            threading.Thread.start = start  # type: ignore[method-assign]
            threading.Thread.join = join  # type: ignore[method-assign]
            with self._lock:
                self.stopped = True
                self._end_locked(me)
                self._wake_all_locked()

    def _new_thread(self) -> _Thread:
        thread = _Thread(self._started, self._lock)
        self._all.append(thread)
        self._started += 1
        self.threads += 1
        self._strategy.admit(thread)
        return thread

    # -- tasks that are not threads of their own (``_pool.py``) --------------------------

    def current(self) -> _Thread | None:
        """The calling thread as the scheduler knows it (``None``: not scheduled)."""
        return self._by_ident.get(_get_ident())

    def enlist(self, *, waiting: bool) -> _Thread:
        """Register a task the baton's holder creates, in creation order: among the
        waiting at once when ``waiting``, else once :meth:`end` lets it in."""
        with self._lock:
            task = self._new_thread()
            if waiting:
                self._waiting.append(task)
                self._settled = False
            return task

    def end(self, me: _Thread, then: Callable[[], _Thread | None] = lambda: None) -> None:
        """``me`` ended (from any thread); ``then()``, asked under the lock, names a task
        that may run from now on (it takes the place ``me`` leaves)."""
        with self._lock:
            if self._by_ident.get(_get_ident()) is me:
                del self._by_ident[_get_ident()]
            if not me.ended:
                self._end_locked(me, then())

    def park(self, ready: Callable[[], bool], *, timed: bool = False) -> bool:
        """The baton's holder waits, out of the running, until ``ready()`` holds after a
        scheduled thread's end (or, ``timed``, until no other thread can run); then it
        waits for the baton. Whether it parked (not when unscheduled, or ready)."""
        me = self._by_ident.get(_get_ident())
        if me is None or self.stopped:
            return False
        with self._lock:
            if self.stopped or self._running is not me or ready():
                return False
            me.worker = worker_var.get()
            self._parked.append((me, ready, timed))
            self._settled = False
            self._running = None
            self._dispatch_locked()
            self._wait_locked(me)
        return True

    def _unpark_locked(self, *, timed: bool) -> None:
        """Back among the waiting: the parked whose ``ready()`` holds (``timed``: whose
        wait has a timeout), in the order they parked."""
        back = [p for p in self._parked if (p[2] if timed else p[1]())]
        if back:
            self._parked = [p for p in self._parked if p not in back]
            self._waiting.extend(thread for thread, _, _ in back)

    # -- scheduling points -----------------------------------------------------------

    def point(self, *, sleeping: bool = False) -> None:
        """A scheduling point of the calling thread: let the strategy pick who runs next,
        and wait for the baton. A thread the scheduler did not start passes through."""
        me = self._by_ident.get(_get_ident())
        if me is None:
            if self.stopped:
                raise ScheduleStopped
            return
        if (
            self._settled
            and not sleeping
            and self._running is me
            and self.steps + 1 not in self._changes
            and not self.stopped
        ):
            # The strategy would pick this thread again (PCT): the step is taken without
            # asking it, and without the lock (only the baton's holder picks, counts steps
            # or sets _settled; a timed join coming back now comes back just after).
            me.worker = worker_var.get()
            self.steps += 1
            self._sleeps = me.streak = 0
            return
        # acquire()/release() rather than ``with``: half the lock's cost, on every call.
        lock = self._lock
        lock.acquire()
        try:
            if self.stopped:
                raise ScheduleStopped
            me.worker = worker_var.get()
            self._settled = False
            if self._running is me:
                self._running = None
            me.sleeping = sleeping
            self._sleeps = self._sleeps + 1 if sleeping else 0
            me.streak = self._sleeps
            if not self._waiting and self._running is None:
                # Alone: it goes on, and the step still counts (PCT's change points).
                self.steps += 1
                self._strategy.alone(me, self.steps)
                me.sleeping = False
                self._running = self._last = me
                self._progress = REAL.monotonic()
                return
            self._waiting.append(me)
            self._dispatch_locked()
            self._wait_locked(me)
        finally:
            lock.release()

    def _dispatch_locked(self) -> None:
        """Hand the baton on, if it is free and some thread waits for it."""
        if self._running is None and not self._waiting and self._parked:
            self._unpark_locked(timed=True)  # nothing else can run: their timeouts pass
        if self._running is not None or not self._waiting or self.stopped:
            return
        self.steps += 1
        if self.steps > self._max_steps:
            self._stall_locked(
                f"the threads passed {self._max_steps} scheduling points without the "
                "replay coming to an end (a livelock: threads polling for each other)"
            )
            return
        chosen = self._strategy.pick(self._waiting, self.steps, self._last)
        self._waiting.remove(chosen)
        # Until a thread arrives, wakes or a change point comes, PCT picks the same.
        self._settled = self._strategy.sticky and chosen is self._by_ident.get(_get_ident())
        chosen.sleeping = False
        self._running = self._last = chosen
        self._progress = REAL.monotonic()
        if chosen is not self._by_ident.get(_get_ident()):
            chosen.wake.notify()

    def _wait_locked(self, me: _Thread) -> None:
        """Wait until ``me`` holds the baton; past the stall limit, stop the schedule."""
        while self._running is not me:
            if self.stopped:
                raise ScheduleStopped
            left = self._progress + self._limit - REAL.monotonic()
            if left <= 0:
                self._stall_locked(_stall_message(self._running, self._limit))
                raise ScheduleStopped
            me.wake.wait(left)

    def _wake_all_locked(self) -> None:
        for thread in self._all:
            thread.wake.notify_all()

    def _stall_locked(self, message: str) -> None:
        if not self.stopped:
            self.stopped = True
            self._wake_all_locked()
            # Called with the lock held: the callback must not take it.
            self._on_stall(message)

    def stop(self) -> None:
        """Stop the schedule: every scheduled thread raises at its next point."""
        with self._lock:
            self.stopped = True
            self._wake_all_locked()

    # -- threads starting, ending, joining ---------------------------------------------

    def arrive(self, me: _Thread) -> None:
        """A started thread's first scheduling point, before any application code."""
        with self._lock:
            self._by_ident[_get_ident()] = me
            if self.stopped:
                raise ScheduleStopped
            me.worker = worker_var.get()
            # Among the waiting since its start (perhaps picked already).
            self._wait_locked(me)

    def _end(self, me: _Thread) -> None:
        with self._lock:
            self._end_locked(me)
            self._by_ident.pop(_get_ident(), None)

    def _end_locked(self, me: _Thread, then: _Thread | None = None) -> None:
        me.ended = True
        if me in self._waiting:
            self._waiting.remove(me)
        # Its joiners' joins return now: they wait for the baton from here on, in the
        # order they joined, whenever their threads wake. So do the task that takes its
        # place and the waits its end satisfied.
        self._waiting.extend(me.joiners)
        me.joiners.clear()
        if then is not None:
            self._waiting.append(then)
        if self._parked:
            self._unpark_locked(timed=False)
        self._settled = False
        if self._running is me:
            self._running = None
        self._dispatch_locked()


# -- Thread.start and Thread.join, while the tape is open ----------------------------------


def _patched_start(scheduler: Scheduler) -> Callable[[threading.Thread], None]:
    current = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        if (
            scheduler.stopped
            or starting_internal()
            or getattr(thread, "_sessiontape_internal", False)
        ):
            current(thread)
            return
        with scheduler._lock:
            me = scheduler._new_thread()
            # Waiting from now on, in start order: a pick need not wait for it to
            # arrive, and never depends on which of the started threads came first.
            scheduler._waiting.append(me)
            scheduler._settled = False
        thread._sessiontape_scheduled = me  # type: ignore[attr-defined]
        run = thread.run

        def scheduled_run() -> None:
            try:
                scheduler.arrive(me)
                run()
            except ScheduleStopped:
                pass
            except BaseException as exc:
                # Reported while it still holds the baton: where it died is part of
                # the schedule, not of how fast the others were.
                scheduler._on_error(exc, me.worker)
                raise
            finally:
                scheduler._end(me)

        thread.run = scheduled_run  # type: ignore[method-assign]
        try:
            current(thread)
        except BaseException:
            with scheduler._lock:
                scheduler._end_locked(me)
            raise

    return start


def _patched_join(scheduler: Scheduler) -> Callable[..., None]:
    current = threading.Thread.join

    def join(thread: threading.Thread, timeout: float | None = None) -> None:
        me = scheduler._by_ident.get(_get_ident())
        target = _scheduled(thread, scheduler)
        if me is None or target is None or scheduler.stopped:
            current(thread, timeout)
            return
        with scheduler._lock:
            if target.ended or scheduler._running is not me:
                woken = None
            else:
                woken = target
                me.worker = worker_var.get()
                target.joiners.append(me)
                scheduler._running = None
                scheduler._dispatch_locked()
        if woken is None:
            current(thread, timeout)
            return
        try:
            _join_watching(scheduler, thread, timeout, current)
        finally:
            with scheduler._lock:
                back_early = me in target.joiners
                if back_early:
                    target.joiners.remove(me)
                if scheduler.stopped:
                    raise ScheduleStopped
                if back_early:
                    # Back before the joined thread ended (a join with a timeout):
                    # waiting again from now. (Had it ended, its end put us there.)
                    scheduler._settled = False
                    scheduler._waiting.append(me)
                    scheduler._dispatch_locked()
                scheduler._wait_locked(me)

    return join


def _stall_message(running: _Thread | None, limit: float) -> str:
    """Why a schedule stopped as a possible deadlock; ``running``: who held the baton."""
    if running is None:
        return (
            f"no scheduled thread reached a scheduling point within {limit:g}s "
            "(each waits in a join, or for a pool task, that does not end)"
        )
    return (
        f"worker {running.worker!r} did not reach its next scheduling point within "
        f"{limit:g}s (blocked outside a boundary call: a lock, a queue, a join "
        "of a thread that waits for it)"
    )


def _scheduled(thread: threading.Thread, scheduler: Scheduler) -> _Thread | None:
    scheduled = getattr(thread, "_sessiontape_scheduled", None)
    return scheduled if isinstance(scheduled, _Thread) else None


def _join_watching(
    scheduler: Scheduler, thread: threading.Thread, timeout: float | None, join: Any
) -> None:
    """``thread.join(timeout)``, checking meanwhile that the scheduled threads progress:
    a joined thread that waits for its joiner would otherwise hang the replay."""
    deadline = None if timeout is None else REAL.monotonic() + timeout
    while True:
        step = scheduler.steps
        wait = scheduler._limit
        if deadline is not None:
            wait = min(wait, deadline - REAL.monotonic())
        join(thread, max(0.0, wait))
        if not thread.is_alive() or scheduler.stopped:
            return
        if deadline is not None and REAL.monotonic() >= deadline:
            return
        with scheduler._lock:
            stalled = scheduler.steps == step and (
                REAL.monotonic() - scheduler._progress >= scheduler._limit
            )
            if stalled:
                scheduler._stall_locked(_stall_message(scheduler._running, scheduler._limit))
