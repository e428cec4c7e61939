"""Real time: the clock recording reads, captured before anything can patch it.

:data:`REAL` holds the functions and classes of :mod:`time` and :mod:`datetime` as they were
when sessiontape was imported, so freezegun (or a :class:`~sessiontape.FakeClock` installed
by a replay) never changes what the recorder reads. :class:`Clock` is the protocol an
application injects; :class:`RealClock` is the machine's clock behind it.
"""

from __future__ import annotations

import datetime as _dt
import sys
import time as _time
import types
from collections.abc import Callable
from typing import Any, Final, NamedTuple, Protocol, TypeVar, cast, runtime_checkable

__all__ = [
    "EPOCH_NAIVE",
    "EPOCH_UTC",
    "MAX_WALL_NS",
    "NS_PER_S",
    "REAL",
    "Clock",
    "RealClock",
    "msgspec_enc_hook",
    "naive_utc",
    "to_real_datetime",
]

NS_PER_S: Final = 1_000_000_000
_T = TypeVar("_T")


def _real_class(cls: type[_T], name: str) -> type[_T]:
    # If this module is first imported while freezegun is active, ``datetime.datetime`` is
    # its FakeDatetime subclass; the real class is further up the MRO.
    for klass in cls.__mro__:
        if klass.__module__ == "datetime" and klass.__name__ == name:
            return cast("type[_T]", klass)
    return cls


def _real_time_function(name: str) -> Callable[..., Any]:
    func = getattr(_time, name)
    if isinstance(func, types.BuiltinFunctionType):
        return cast("Callable[..., Any]", func)
    # Imported while freezegun had patched ``time``: it keeps the originals as ``real_*``.
    saved = getattr(sys.modules.get("freezegun.api"), f"real_{name}", None)
    if isinstance(saved, types.BuiltinFunctionType):
        return cast("Callable[..., Any]", saved)
    return cast("Callable[..., Any]", func)


class _Originals(NamedTuple):
    datetime: type[_dt.datetime]
    date: type[_dt.date]
    time: Callable[[], float]
    time_ns: Callable[[], int]
    monotonic: Callable[[], float]
    monotonic_ns: Callable[[], int]
    sleep: Callable[[float], None]


# Held in a tuple, not as module attributes: freezegun's freeze_time() replaces every module
# attribute that *is* a real time function or datetime class (unless the module is on its
# ignore list, which a user's own freeze_time does not extend), and RealClock must stay real.
REAL: Final = _Originals(
    datetime=_real_class(_dt.datetime, "datetime"),
    date=_real_class(_dt.date, "date"),
    time=_real_time_function("time"),
    time_ns=_real_time_function("time_ns"),
    monotonic=_real_time_function("monotonic"),
    monotonic_ns=_real_time_function("monotonic_ns"),
    sleep=_time.sleep,
)
EPOCH_NAIVE: Final = REAL.datetime(1970, 1, 1)
EPOCH_UTC: Final = REAL.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
# The last instant a datetime can hold; a virtual wall time past it could not be read.
MAX_WALL_NS: Final = (REAL.datetime.max - EPOCH_NAIVE) // _dt.timedelta(microseconds=1) * 1000


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


class RealClock:
    """The machine's clock, used while recording.

    It calls the functions ``time`` held when this module was imported, so freezegun or an
    installed :class:`FakeClock` never changes what it reads.
    """

    __slots__ = ()

    def now(self) -> _dt.datetime:
        """Current wall-clock time as a timezone-aware UTC datetime."""
        return REAL.datetime.now(_dt.timezone.utc)

    def time(self) -> float:
        """Wall-clock seconds since the epoch."""
        return REAL.time()

    def time_ns(self) -> int:
        """Wall-clock nanoseconds since the epoch."""
        return REAL.time_ns()

    def monotonic(self) -> float:
        """Monotonic seconds."""
        return REAL.monotonic()

    def monotonic_ns(self) -> int:
        """Monotonic nanoseconds."""
        return REAL.monotonic_ns()

    def sleep(self, seconds: float) -> None:
        """Really wait ``seconds``."""
        REAL.sleep(seconds)

    def __repr__(self) -> str:
        return "RealClock()"


def naive_utc(wall_ns: int) -> _dt.datetime:
    """A wall time in ns since the epoch as a naive UTC datetime (microsecond precision)."""
    return EPOCH_NAIVE + _dt.timedelta(microseconds=wall_ns // 1000)


def to_real_datetime(value: _dt.datetime) -> _dt.datetime:
    """Return ``value`` as a plain :class:`datetime.datetime`, not a subclass.

    Under :meth:`FakeClock.install`, ``datetime.now()`` returns freezegun's ``FakeDatetime``,
    which msgspec (and anything checking ``type(x) is datetime``) refuses.
    """
    if type(value) is REAL.datetime:
        return value
    return REAL.datetime(
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        value.microsecond,
        value.tzinfo,
        fold=value.fold,
    )


def msgspec_enc_hook(obj: object) -> object:
    """``enc_hook`` for msgspec encoders: turns freezegun's datetimes and dates into real ones.

    Any other type raises ``TypeError``, the error msgspec itself raises for an unsupported
    type, so callers see the same failure with or without the hook.
    """
    if isinstance(obj, REAL.datetime):
        return to_real_datetime(obj)
    if isinstance(obj, REAL.date):
        return REAL.date(obj.year, obj.month, obj.day)
    raise TypeError(f"Encoding objects of type {type(obj).__qualname__} is unsupported")
