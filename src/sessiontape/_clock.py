"""The :class:`Clock` protocol: what sessiontape needs from a clock an application injects.

Kept apart from ``_time.py``, which reads real time and must stay the cheapest module of
all (it is imported first, and this module needs :mod:`typing`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import datetime as _dt

__all__ = ["Clock"]


@runtime_checkable
class Clock(Protocol):
    """What sessiontape needs from a clock; inject one to make code replayable unpatched."""

    def now(self) -> _dt.datetime:
        """Current wall-clock time as a timezone-aware UTC datetime."""

    def time(self) -> float:
        """Wall-clock seconds since the epoch, like :func:`time.time`."""

    def time_ns(self) -> int:
        """Wall-clock nanoseconds since the epoch, like :func:`time.time_ns`."""

    def monotonic(self) -> float:
        """Monotonic seconds, like :func:`time.monotonic`."""

    def monotonic_ns(self) -> int:
        """Monotonic nanoseconds, like :func:`time.monotonic_ns`."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, like :func:`time.sleep`."""
