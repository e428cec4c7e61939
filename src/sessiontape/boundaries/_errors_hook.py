"""Application errors during replay, from any thread: reported, not only printed.

While a replay tape is open, ``threading.excepthook`` is chained: an exception that ends
a worker thread is reported to the engine (type, message, worker, the seq of the last
entry that worker consumed, the innermost frame of the application) before the previous
hook prints it as usual. It then heads the calls the dead worker never made.
"""

from __future__ import annotations

import contextlib
import os
import sysconfig
import threading
import traceback
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Final

from .._context import ESCAPED_FROM, worker
from ..replayer import ScheduleStopped
from ._protocols import ReplaySide

__all__ = ["application_frame", "reporting_thread_errors"]

_SKIP: Final = tuple(
    {
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
        sysconfig.get_paths()["stdlib"] + os.sep,
        sysconfig.get_paths()["platstdlib"] + os.sep,
    }
)


def application_frame(tb: TracebackType | None) -> str | None:
    """``file:line in function`` of the innermost frame outside sessiontape and the
    standard library (the innermost frame at all when there is none)."""
    frames = traceback.extract_tb(tb)
    for frame in reversed(frames):
        if not os.path.abspath(frame.filename).startswith(_SKIP):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    if frames:
        last = frames[-1]
        return f"{last.filename}:{last.lineno} in {last.name}"
    return None


@contextlib.contextmanager
def reporting_thread_errors(engine: ReplaySide) -> Iterator[None]:
    """Report to ``engine`` every exception that ends a thread in the block."""
    previous = threading.excepthook

    def hook(args: Any) -> None:
        exc = args.exc_value
        if isinstance(exc, ScheduleStopped):
            return  # stopped where a saved schedule stopped it: an end, not a death
        if args.exc_type is not SystemExit and exc is not None:
            # The thread's worker block has ended by now: report it under the worker the
            # exception escaped from (which took its calls), not the thread's own name.
            escaped = getattr(exc, ESCAPED_FROM, None)
            named = worker(escaped) if isinstance(escaped, str) else contextlib.nullcontext()
            # A strict replay raises on the report itself: the hook must still print.
            with contextlib.suppress(Exception), named:
                engine.application_error(exc, application_frame(args.exc_traceback))
        previous(args)

    threading.excepthook = hook
    try:
        yield
    finally:
        if threading.excepthook is hook:
            threading.excepthook = previous
