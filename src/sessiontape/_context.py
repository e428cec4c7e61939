"""Ambient context: which worker is running, and which boundary call is open around us.

Both live in :mod:`contextvars` so they follow asyncio tasks. A new thread starts with a
fresh context, so worker threads set their id explicitly with :func:`worker`.
``worker_var`` and ``parent_var`` are the variables themselves, for the recording and
replay engines; applications use :func:`worker` and :func:`current_worker`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

__all__ = ["DEFAULT_WORKER", "current_worker", "parent_var", "worker", "worker_var"]

DEFAULT_WORKER: Final = "main"

#: The ambient worker id: replay keeps one queue per (boundary, worker).
worker_var: Final[ContextVar[str]] = ContextVar("sessiontape_worker", default=DEFAULT_WORKER)
#: seq of the boundary call open around the current code, for ``parent`` links.
parent_var: Final[ContextVar[int | None]] = ContextVar("sessiontape_parent", default=None)


@contextmanager
def worker(worker_id: str) -> Iterator[str]:
    """Set the ambient worker id for the calls made inside the block.

    Replay keeps one queue per worker, so each worker thread should enter this block at
    the start of its loop (threads do not inherit the id of the thread that started them)::

        def work(i):
            with sessiontape.worker(f"worker-{i}"):
                ...
    """
    if not isinstance(worker_id, str) or not worker_id:
        raise TypeError(f"worker id must be a non-empty str, got {worker_id!r}")
    token = worker_var.set(worker_id)
    try:
        yield worker_id
    finally:
        worker_var.reset(token)


def current_worker() -> str:
    """The ambient worker id (``"main"`` outside any :func:`worker` block)."""
    return worker_var.get()
