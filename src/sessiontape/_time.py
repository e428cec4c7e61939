"""Real time: the one place that reads it, captured before anything can patch it.

This is the first module ``import sessiontape`` (and so the pytest plugin) imports, and it
imports nothing but :mod:`sys`, :mod:`time` and :mod:`datetime`, so that it is cheap
enough to be imported first. Everything that must read the machine's time (the
recorder's timestamps, the writer, the runners' durations, the fake clock's own timers,
the pytest plugin) reads it through :data:`REAL`, never through :mod:`time` or
:mod:`datetime` at call time, and never through a copy taken later: sessiontape's other
modules are imported on first use, possibly while a user's ``freezegun.freeze_time`` or
``time_machine.travel`` is active.

The two tools patch differently, so the capture is twofold:

* freezegun replaces module attributes (``time.time``, ``datetime.datetime``). The
  functions captured here stay real; if this module itself is first imported under an
  active ``freeze_time``, the originals are taken from freezegun's saved ``real_*`` copies
  and the real ``datetime`` class from the fake one's MRO.
* time-machine patches the C functions themselves (``time.time``, ``time.time_ns``,
  ``datetime.datetime.now``...), so no reference taken at any time stays real while it
  travels. The wall-clock readers below go through its public ``escape_hatch`` while it
  travels (when ``time_machine`` is not loaded, that costs one dictionary lookup). It
  leaves the monotonic and performance counters alone, and so do the readers.

:class:`RealClock` is the machine's clock behind the :class:`~sessiontape.Clock` protocol
(``_clock.py``).
"""

from __future__ import annotations

import datetime as _dt
import sys
import time as _time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see the docstring)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final, TypeVar

    _T = TypeVar("_T")

__all__ = [
    "EPOCH_NAIVE",
    "EPOCH_UTC",
    "MAX_WALL_NS",
    "NS_PER_S",
    "REAL",
    "TIME_MACHINE",
    "RealClock",
    "msgspec_enc_hook",
    "naive_utc",
    "to_real_datetime",
]

NS_PER_S: Final = 1_000_000_000
#: The module whose presence in ``sys.modules`` means the wall clock may be travelling.
TIME_MACHINE: Final = "time_machine"
_BUILTIN: Final = type(len)
_modules: Final = sys.modules


def _real_class(cls: type[_T], name: str) -> type[_T]:
    # If this module is first imported while freezegun is active, ``datetime.datetime`` is
    # its FakeDatetime subclass; the real class is further up the MRO.
    for klass in cls.__mro__:
        if klass.__module__ == "datetime" and klass.__name__ == name:
            return klass
    return cls


def _real_time_function(name: str) -> Callable[..., Any]:
    func: Callable[..., Any] = getattr(_time, name)
    if type(func) is _BUILTIN:
        return func
    # Imported while freezegun had patched ``time``: it keeps the originals as ``real_*``.
    saved = getattr(_modules.get("freezegun.api"), f"real_{name}", None)
    if type(saved) is _BUILTIN:
        return saved
    return func


def _wall_clock(
    datetime: type[_dt.datetime],
) -> tuple[Callable[[], float], Callable[[], int], Callable[[_dt.tzinfo | None], _dt.datetime]]:
    """The wall-clock readers: ``time()``, ``time_ns()`` and ``now(tz)``.

    The real functions are held in their closures, never as module attributes, which
    freezegun would replace.
    """
    time_builtin: Callable[[], float] = _real_time_function("time")
    time_ns_builtin: Callable[[], int] = _real_time_function("time_ns")
    now_builtin = datetime.now

    def travelling() -> Any:
        # time-machine's escape hatch, while it travels (it answers only then); else None.
        machine = _modules.get("time_machine")
        hatch = None if machine is None else getattr(machine, "escape_hatch", None)
        return hatch if hatch is not None and hatch.is_travelling() else None

    def real_time() -> float:
        if TIME_MACHINE in _modules and (hatch := travelling()) is not None:
            return float(hatch.time.time())
        return time_builtin()

    def real_time_ns() -> int:
        if TIME_MACHINE in _modules and (hatch := travelling()) is not None:
            return int(hatch.time.time_ns())
        return time_ns_builtin()

    def real_now(tz: _dt.tzinfo | None = None) -> _dt.datetime:
        if TIME_MACHINE in _modules and (hatch := travelling()) is not None:
            now: _dt.datetime = hatch.datetime.datetime.now(tz)
            return now
        return now_builtin(tz)

    return real_time, real_time_ns, real_now


class _Real:
    """The real time functions and classes.

    Held as attributes of an object, not of this module: freezegun's ``freeze_time()``
    replaces every module attribute that *is* a real time function or datetime class
    (unless the module is on its ignore list, which a user's own ``freeze_time`` does
    not extend).
    """

    __slots__ = (
        "date",
        "datetime",
        "monotonic",
        "monotonic_ns",
        "now",
        "perf_counter",
        "perf_counter_ns",
        "sleep",
        "time",
        "time_ns",
        "time_ns_unless_travelling",
    )

    def __init__(self) -> None:
        #: The real classes, for ``isinstance`` and for building real values.
        self.datetime: type[_dt.datetime] = _real_class(_dt.datetime, "datetime")
        self.date: type[_dt.date] = _real_class(_dt.date, "date")
        #: Wall clock: ``time.time()``, ``time.time_ns()``, ``datetime.now(tz)``.
        self.time: Callable[[], float]
        self.time_ns: Callable[[], int]
        self.now: Callable[[_dt.tzinfo | None], _dt.datetime]
        self.time, self.time_ns, self.now = _wall_clock(self.datetime)
        #: ``time.time_ns`` itself: real while :data:`TIME_MACHINE` is not imported. For a
        #: path that runs per call and tests that first (``time_ns`` otherwise), to save a
        #: call of Python code.
        self.time_ns_unless_travelling: Callable[[], int] = _real_time_function("time_ns")
        #: Counters and sleep (time-machine leaves them alone; freezegun patches the names).
        self.monotonic: Callable[[], float] = _real_time_function("monotonic")
        self.monotonic_ns: Callable[[], int] = _real_time_function("monotonic_ns")
        self.perf_counter: Callable[[], float] = _real_time_function("perf_counter")
        self.perf_counter_ns: Callable[[], int] = _real_time_function("perf_counter_ns")
        self.sleep: Callable[[float], None] = _time.sleep


REAL: Final = _Real()
EPOCH_NAIVE: Final = REAL.datetime(1970, 1, 1)
EPOCH_UTC: Final = REAL.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
# The last instant a datetime can hold; a virtual wall time past it could not be read.
MAX_WALL_NS: Final = (REAL.datetime.max - EPOCH_NAIVE) // _dt.timedelta(microseconds=1) * 1000


class RealClock:
    """The machine's clock, used while recording.

    It reads :data:`REAL`, so freezegun, time-machine or an installed :class:`FakeClock`
    never changes what it reads.
    """

    __slots__ = ()

    def now(self) -> _dt.datetime:
        """Current wall-clock time as a timezone-aware UTC datetime."""
        return REAL.now(_dt.timezone.utc)

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
