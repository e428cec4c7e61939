"""The recorded crashes of workers, held against the replay's.

A worker's crash (a thread that died, a future or an asyncio task whose exception nobody
read: ``boundaries/_crashes.py``) is an ``error`` entry of that worker, and the session
went on. On replay, the same crash in the same worker (same type, same message once
scrubbed) passes; another one is an ``error_mismatch``; a recorded one the replay never
met is an ``error_mismatch`` at its seq when the replay finishes. A crash of a worker
whose recording has none left is not settled here: it is the outcome's
``application_error``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Final

from ..cassette import Error, Recording
from ..report import MismatchKind, diff_values_counted
from ..scrub import Scrubber, qualname

__all__ = ["WorkerCrashes"]

#: How a worker's crash ended it, by the ``origin`` of its ``error`` entry.
_ENDED: Final = {
    "thread": "its thread ended",
    "future": "in a future nobody read",
    "task": "in an asyncio task nobody awaited",
}
#: The pseudo-boundary of whole-session checks (the outcome's).
_SESSION: Final = "session"


def _ended(origin: str) -> str:
    return _ENDED.get(origin, origin)


class WorkerCrashes:
    """The recorded crashes of workers not met yet; ``collect`` reports a mismatch (the
    outcome's, which never raises)."""

    def __init__(self, recording: Recording, collect: Callable[..., None]) -> None:
        self._collect = collect
        self._lock = threading.Lock()
        #: Per worker, in seq order.
        self._left: dict[str, deque[Error]] = {}
        for error in recording.worker_errors:
            self._left.setdefault(error.worker, deque()).append(error)

    def met(self, exc: BaseException, worker: str, origin: str, scrubber: Scrubber) -> bool:
        """``worker`` crashed with ``exc``: whether that settles it (the worker's next
        recorded crash reproduced, or an ``error_mismatch`` when it differs from it);
        ``False`` when no recorded crash of the worker is left."""
        with self._lock:
            recorded = self._left.get(worker)
            error = recorded.popleft() if recorded else None
        if error is None:
            return False
        actual = {"type": qualname(type(exc)), "message": scrubber.text(str(exc))}
        expected = {"type": error.type, "message": error.message}
        if actual == expected:
            return True
        diffs, total = diff_values_counted(expected, actual)
        self._collect(
            MismatchKind.ERROR_MISMATCH,
            seq=error.seq,
            worker=worker,
            boundary=_SESSION,
            message=f"worker {worker!r} died of {actual['type']}: {actual['message']} "
            f"({_ended(origin)}), not of the recorded {error.type}: {error.message} "
            f"({_ended(error.origin)}).",
            expected=expected,
            actual=actual,
            diffs=diffs,
            total=total,
        )
        return True

    def check_missed(self) -> None:
        """Report every recorded crash the replay did not meet (at the end)."""
        with self._lock:
            missed = sorted((e for q in self._left.values() for e in q), key=lambda e: e.seq)
            self._left.clear()
        for error in missed:
            self._collect(
                MismatchKind.ERROR_MISMATCH,
                seq=error.seq,
                worker=error.worker,
                boundary=_SESSION,
                message=f"the recorded worker {error.worker!r} died of {error.type}: "
                f"{error.message} ({_ended(error.origin)}), but in the replay it did not.",
                expected={"type": error.type, "message": error.message},
                position=error.seq,
            )
