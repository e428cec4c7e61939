"""``ThreadPoolExecutor`` tasks under a chaos schedule: each task is a scheduled thread.

A pool thread is sessiontape's own (it is started inside ``submit``, see ``_context``);
the *task* is the application's. So the scheduler knows a task, not the thread that runs
it: a task is registered when it is submitted (its order is its submission's, decided by
the schedule so far) and is among the waiting threads as long as the pool has room for
it, exactly as the executor runs it: at most ``max_workers`` tasks at once, the others in
submission order as running ones end. The pool thread that takes a task waits for the
baton before the task's first line, and gives it up when the task's future is done (its
first done-callback: the future's result is set and its waiters are woken by then).

The thread that waits for tasks (``Future.result()``/``exception()``, ``as_completed``,
``wait``, ``shutdown(wait=True)``, and so the executor's ``with`` block) leaves the
running while it waits: it is put back among the waiting by the end of the task that
satisfied its wait, so what it sees next is what the schedule made, never how fast a
pool thread got somewhere. A wait with a timeout also comes back when no other thread
can run. A wait on futures this schedule did not submit, and anything submitted from a
thread running an asyncio event loop (``run_in_executor``: the loop waits for it in its
selector, not through these), keep their plain behaviour.

Nothing here runs in a plain replay: a chaos replay's tape installs it with its scheduler.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, _base
from contextlib import contextmanager
from typing import Any

from .._context import starting_internal
from ._scheduler import Scheduler, _Thread

__all__ = ["scheduled_pools"]

#: The attribute a scheduled task's future carries: its scheduler and its task.
_TASK = "_sessiontape_task"


class _Pool:
    """One executor's tasks as the schedule sees them."""

    __slots__ = ("capacity", "queued", "running", "tasks")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.running = 0
        #: Submitted, waiting for room in the pool (in submission order).
        self.queued: deque[_Thread] = deque()
        self.tasks: list[_Thread] = []

    def next_up(self, ended: _Thread) -> _Thread | None:
        """``ended`` ended (asked under the scheduler's lock): the task that takes its
        room, if any."""
        if ended in self.queued:  # cancelled before it ran: it held no room
            self.queued.remove(ended)
            return None
        if not self.queued:
            self.running -= 1
            return None
        return self.queued.popleft()


def _in_event_loop() -> bool:
    import asyncio

    return asyncio._get_running_loop() is not None


@contextmanager
def scheduled_pools(scheduler: Scheduler) -> Iterator[None]:
    """Schedule ``ThreadPoolExecutor`` tasks submitted in the block (see the module)."""
    pools: weakref.WeakKeyDictionary[ThreadPoolExecutor, _Pool] = weakref.WeakKeyDictionary()
    base: Any = _base
    real_submit = ThreadPoolExecutor.submit
    real_shutdown = ThreadPoolExecutor.shutdown
    real_result = Future.result
    real_exception = Future.exception
    real_waiters = base._create_and_install_waiters

    def task_of(future: object) -> _Thread | None:
        """The task behind ``future``, if this schedule submitted it."""
        tagged = getattr(future, _TASK, None)
        return tagged[1] if tagged is not None and tagged[0] is scheduler else None

    def run_task(task: _Thread, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        scheduler.arrive(task)  # before the task's first line: its turn, by the schedule
        return fn(*args, **kwargs)

    def submit(
        executor: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Future[Any]:
        if (
            scheduler.stopped
            or starting_internal()
            or scheduler.current() is None
            or _in_event_loop()
        ):
            return real_submit(executor, fn, *args, **kwargs)
        pool = pools.get(executor)
        if pool is None:
            pool = pools[executor] = _Pool(getattr(executor, "_max_workers", 1 << 30))
        room = pool.running < pool.capacity
        task = scheduler.enlist(waiting=room)
        if room:
            pool.running += 1
        else:
            pool.queued.append(task)
        pool.tasks.append(task)
        try:
            future = real_submit(executor, run_task, task, fn, *args, **kwargs)
        except BaseException:
            scheduler.end(task, lambda: pool.next_up(task))
            raise
        setattr(future, _TASK, (scheduler, task))
        future.add_done_callback(lambda _: scheduler.end(task, lambda: pool.next_up(task)))
        return future

    def result(future: Future[Any], timeout: float | None = None) -> Any:
        task = task_of(future)
        if task is not None:
            scheduler.park(lambda: task.ended, timed=timeout is not None)
        return real_result(future, timeout)

    def exception(future: Future[Any], timeout: float | None = None) -> BaseException | None:
        task = task_of(future)
        if task is not None:
            scheduler.park(lambda: task.ended, timed=timeout is not None)
        return real_exception(future, timeout)

    def create_and_install_waiters(fs: Iterable[Future[Any]], return_when: str) -> Any:
        waiter = real_waiters(fs, return_when)
        pending = [f for f in fs if not f.done()]
        # A future this schedule did not submit ends whenever it ends: a plain wait.
        if pending and all(task_of(f) is not None for f in pending):
            waiter.event = _ParkingEvent(waiter.event, scheduler)
        return waiter

    def shutdown(
        executor: ThreadPoolExecutor, wait: bool = True, *, cancel_futures: bool = False
    ) -> None:
        pool = pools.get(executor)
        if wait and pool is not None and scheduler.current() is not None:
            if cancel_futures:  # the queued tasks go first: the running ones then end
                real_shutdown(executor, False, cancel_futures=True)
            tasks = pool.tasks
            scheduler.park(lambda: all(task.ended for task in tasks))
        real_shutdown(executor, wait, cancel_futures=cancel_futures)

    patches: tuple[tuple[Any, str, Any], ...] = (
        (ThreadPoolExecutor, "submit", submit),
        (ThreadPoolExecutor, "shutdown", shutdown),
        (Future, "result", result),
        (Future, "exception", exception),
        (base, "_create_and_install_waiters", create_and_install_waiters),
    )
    previous = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, ours in patches:
        setattr(owner, name, ours)
    try:
        yield
    finally:
        for owner, name, theirs in reversed(previous):
            setattr(owner, name, theirs)


class _ParkingEvent:
    """A waiter's event (``as_completed``, ``wait``) whose ``wait()`` parks the caller
    until a scheduled task's end sets it."""

    __slots__ = ("_event", "_scheduler")

    def __init__(self, event: Any, scheduler: Scheduler) -> None:
        self._event = event
        self._scheduler = scheduler

    def wait(self, timeout: float | None = None) -> bool:
        event = self._event
        self._scheduler.park(event.is_set, timed=timeout is not None)
        return bool(event.wait(timeout))

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return bool(self._event.is_set())
