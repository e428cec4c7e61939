"""Ambient context: which worker is running, and which boundary call is open around us.

Both live in :mod:`contextvars` so they follow asyncio tasks. A new thread starts with a
fresh context: a worker thread may name itself with :func:`worker`; one that does not is
given a name derived from where it was started, while a tape is active
(:func:`derived_workers`): the n-th thread or ``ThreadPoolExecutor`` task started by worker
``main`` is ``main/n``, the first one that thread starts ``main/n/1``, and so on.
Recording and replay derive the names the same way, so they agree as long as the program
starts its threads and submits its tasks in the same order from each worker.

``worker_var`` and ``parent_var`` are the variables themselves, for the recording and
replay engines; applications use :func:`worker` and :func:`current_worker`.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

__all__ = [
    "DEFAULT_WORKER",
    "ESCAPED_FROM",
    "LateSeq",
    "current_parent",
    "current_worker",
    "derived_workers",
    "internal_threads",
    "parent_var",
    "starting_internal",
    "worker",
    "worker_var",
]

DEFAULT_WORKER: Final = "main"

#: The ambient worker id: replay keeps one queue per (boundary, worker).
worker_var: Final[ContextVar[str]] = ContextVar("sessiontape_worker", default=DEFAULT_WORKER)


class LateSeq:
    """The seq of a recorded verify call (a store mutation), reserved late: when it ends,
    so that a store's calls are numbered in the order they took effect, not the order
    they started in (a mutation that waited for the store's lock took effect after the
    ones that overtook it; replay runs a store's calls in seq order). A call made inside
    it reserves it first, so that its ``parent`` stays lower than its own seq."""

    __slots__ = ("_lock", "_reserve", "_value")

    def __init__(self, reserve: Callable[[], int]) -> None:
        self._reserve = reserve
        self._lock = threading.Lock()
        self._value: int | None = None

    def seq(self) -> int:
        """The seq, reserved on the first call."""
        with self._lock:
            if self._value is None:
                self._value = self._reserve()
            return self._value


#: The boundary call open around the current code, for ``parent`` links: its seq, or a
#: :class:`LateSeq` to ask for it (read it with :func:`current_parent`).
parent_var: Final[ContextVar[int | LateSeq | None]] = ContextVar("sessiontape_parent", default=None)


def current_parent() -> int | None:
    """The seq of the boundary call open around the current code (``None``: none)."""
    parent = parent_var.get()
    return parent.seq() if isinstance(parent, LateSeq) else parent


@contextmanager
def worker(worker_id: str) -> Iterator[str]:
    """Set the ambient worker id for the calls made inside the block.

    Replay keeps one queue per worker. A thread that does not name itself is named after
    the order it was started in (see the module's documentation); name a worker thread
    yourself when that order is not fixed, at the start of its loop::

        def work(i):
            with sessiontape.worker(f"worker-{i}"):
                ...
    """
    if not isinstance(worker_id, str) or not worker_id:
        raise TypeError(f"worker id must be a non-empty str, got {worker_id!r}")
    token = worker_var.set(worker_id)
    try:
        yield worker_id
    except BaseException as exc:
        _escaping(exc, worker_id)
        raise
    finally:
        worker_var.reset(token)


#: The attribute :func:`worker` sets on an exception leaving its block: the worker id.
ESCAPED_FROM: Final = "_sessiontape_worker"


def _escaping(exc: BaseException, worker_id: str) -> None:
    """Note on ``exc`` the worker it escaped from (the innermost one), unless noted.

    Once it ends a thread, or sits unread in a future, the block has reset the worker;
    the crash hooks (``boundaries/_errors_hook.py``) record and replay the crash under
    this name.
    """
    if getattr(exc, ESCAPED_FROM, None) is None:
        with contextlib.suppress(AttributeError, TypeError):
            setattr(exc, ESCAPED_FROM, worker_id)


def current_worker() -> str:
    """The ambient worker id (``"main"`` outside any :func:`worker` block)."""
    return worker_var.get()


# -- derived names for threads that do not name themselves --------------------------------

_REAL_START: Final = threading.Thread.start
_REAL_SUBMIT: Final = ThreadPoolExecutor.submit
_lock = threading.Lock()
_installed = 0
_counters: dict[str, Iterator[int]] = {}
_internal = threading.local()


@contextmanager
def internal_threads() -> Iterator[None]:
    """Threads started in the block are not the application's: they take no derived name
    and do not advance the count (sessiontape's own pipe threads, a pool's threads)."""
    before = getattr(_internal, "on", False)
    _internal.on = True
    try:
        yield
    finally:
        _internal.on = before


def starting_internal() -> bool:
    """Whether threads started now are sessiontape's own (see :func:`internal_threads`)."""
    return bool(getattr(_internal, "on", False))


def _next_name() -> str:
    parent = worker_var.get()
    with _lock:
        counter = _counters.get(parent)
        if counter is None:
            counter = _counters[parent] = itertools.count(1)
        return f"{parent}/{next(counter)}"


def _start(self: threading.Thread) -> None:
    if getattr(_internal, "on", False) or getattr(self, "_sessiontape_internal", False):
        _REAL_START(self)
        return
    name = _next_name()
    run = self.run

    def run_as_worker() -> None:
        worker_var.set(name)  # the thread's own, fresh context
        run()

    self.run = run_as_worker  # type: ignore[method-assign]
    _REAL_START(self)


def _run_as(name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    token = worker_var.set(name)
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:
        _escaping(exc, name)  # the future holding it is read (or not) elsewhere
        raise
    finally:
        worker_var.reset(token)


def _submit(
    self: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
) -> Future[Any]:
    if getattr(_internal, "on", False):
        return _REAL_SUBMIT(self, fn, *args, **kwargs)
    # The name comes from the task, not the pool thread that runs it: which thread takes
    # which task is up to the scheduler, the order of submission is the program's.
    name = _next_name()
    with internal_threads():
        return _REAL_SUBMIT(self, _run_as, name, fn, *args, **kwargs)


@contextmanager
def derived_workers() -> Iterator[None]:
    """Name unnamed threads and pool tasks deterministically for the block (re-entrant).

    The counts start afresh when the outermost block is entered, so a recording and its
    replay name the same threads the same way.
    """
    global _installed
    with _lock:
        if _installed == 0:
            _counters.clear()
            threading.Thread.start = _start  # type: ignore[method-assign]
            ThreadPoolExecutor.submit = _submit  # type: ignore[method-assign,assignment]
        _installed += 1
    try:
        yield
    finally:
        with _lock:
            _installed -= 1
            if _installed == 0:
                threading.Thread.start = _REAL_START  # type: ignore[method-assign]
                ThreadPoolExecutor.submit = _REAL_SUBMIT  # type: ignore[method-assign]
