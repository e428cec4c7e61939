"""Ambient context: which worker is running, and which boundary call is open around us.

Both live in :mod:`contextvars` so they follow asyncio tasks. A new thread starts with a
fresh context, so worker threads set their id explicitly with :func:`worker`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["DEFAULT_WORKER", "current_worker", "worker"]

DEFAULT_WORKER = "main"

_worker: ContextVar[str] = ContextVar("sessiontape_worker", default=DEFAULT_WORKER)
#: seq of the boundary call open around the current code, for ``parent`` links.
_parent: ContextVar[int | None] = ContextVar("sessiontape_parent", default=None)


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
    token = _worker.set(worker_id)
    try:
        yield worker_id
    finally:
        _worker.reset(token)


def current_worker() -> str:
    """The ambient worker id (``"main"`` outside any :func:`worker` block)."""
    return _worker.get()
