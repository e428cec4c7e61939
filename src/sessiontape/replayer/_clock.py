"""The virtual clock replay runs on.

Code that takes a :class:`Clock` by injection works under replay with no patching: hand it a
:class:`FakeClock`. Code that calls ``time``, ``datetime`` and ``asyncio`` directly needs
:meth:`FakeClock.install` (``_timepatch.py``), so hours of recorded back-off take no time.

What the code reads: at each replayed call, the time production read there (the replay
moves the clock to the call's recorded start, or end). Between two calls it reads the end
of the last call served, plus the virtual sleeps since: not what production read, which
is not recorded. A time read there and sent in a request is matched with the recorded one
when both fall in the same recorded gap between the worker's calls (``_timegaps.py``), so
such a request replays with no mask; the program's own copy of the time is today's.

Virtual time never goes backwards. Concurrent workers replayed in a different interleaving
deliver their recorded timestamps out of order; :meth:`FakeClock.advance_to` then leaves the
clock where it is, so every reader sees a non-decreasing time.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import operator
import threading
from collections.abc import Iterator
from typing import Final

from .._errors import UsageError
from .._time import EPOCH_UTC, MAX_WALL_NS, NS_PER_S, REAL
from . import _timepatch
from ._timepatch import IGNORED_MODULES

__all__ = ["IGNORED_MODULES", "FakeClock"]

#: Why a move past the largest datetime fails (two places raise it).
_PAST_MAX: Final = "virtual wall time would pass the largest datetime (year 9999)"


def _seconds_to_ns(seconds: float, what: str) -> int:
    # Mirror time.sleep's argument checks, so replay fails where production would have.
    if isinstance(seconds, int):
        ns = operator.index(seconds) * NS_PER_S
    else:
        if getattr(type(seconds), "__float__", None) is None:
            raise TypeError(
                f"'{type(seconds).__name__}' object cannot be interpreted as an integer or float"
            )
        value = float(seconds)
        if math.isnan(value):
            raise ValueError("Invalid value NaN (not a number)")
        if value < 0:
            ns = -1
        elif math.isinf(value):
            raise OverflowError(f"{what}: cannot move virtual time by an infinite length")
        else:
            ns = round(value * NS_PER_S)
    if ns < 0:
        raise ValueError(f"{what} length must be non-negative; virtual time never goes backwards")
    return ns


class FakeClock:
    """Virtual wall and monotonic time for replay.

    A replay moves it to each served call's recorded times: the code reads what production
    read at its boundary calls, and between two calls the end of the last one served (plus
    virtual sleeps), not what production read then (see the module's documentation for
    how a request carrying such a time is matched).

    ``start_ns`` is the wall time (ns since the epoch) the clock starts at, typically the
    cassette's first timestamp; ``mono_start_ns`` the monotonic reading at that moment
    (defaults to ``start_ns``; pass the recorded one if you will pass ``mono_ns`` to
    :meth:`advance_to`). :meth:`sleep` returns at once and moves both forward.

    Time is monotonic non-decreasing: :meth:`advance_to` with a timestamp behind the clock
    (workers replayed in another interleaving than the recorded one) does nothing. Sleeps
    from several threads add up on the one shared timeline, as there is no scheduler to run
    them side by side. All methods are thread-safe.
    """

    def __init__(self, start_ns: int, mono_start_ns: int | None = None) -> None:
        start = operator.index(start_ns)
        if not 0 <= start <= MAX_WALL_NS:
            raise ValueError(f"start_ns={start} is outside the range a datetime can hold")
        self._lock = threading.Lock()
        self._wall_ns = start
        self._mono_ns = start if mono_start_ns is None else operator.index(mono_start_ns)
        self._slept_ns = 0
        self._sleeps = 0
        self._holds = 0

    # -- reads ------------------------------------------------------------------------

    def now(self) -> _dt.datetime:
        """Virtual wall-clock time as a timezone-aware UTC datetime (microsecond precision)."""
        return EPOCH_UTC + _dt.timedelta(microseconds=self._wall_ns // 1000)

    def time(self) -> float:
        """Virtual wall-clock seconds since the epoch."""
        return self._wall_ns / NS_PER_S

    def time_ns(self) -> int:
        """Virtual wall-clock nanoseconds since the epoch."""
        return self._wall_ns

    def monotonic(self) -> float:
        """Virtual monotonic seconds."""
        return self._mono_ns / NS_PER_S

    def monotonic_ns(self) -> int:
        """Virtual monotonic nanoseconds."""
        return self._mono_ns

    @property
    def slept_ns(self) -> int:
        """Total virtual time spent in :meth:`sleep`, in nanoseconds."""
        return self._slept_ns

    @property
    def sleeps(self) -> int:
        """How many times :meth:`sleep` was called."""
        return self._sleeps

    @property
    def installed(self) -> bool:
        """Whether this clock is the one :meth:`install` put in place."""
        return _timepatch.active_clock() is self

    @property
    def held(self) -> bool:
        """Whether work in flight (see :meth:`hold`) keeps virtual time from jumping ahead."""
        return self._holds > 0

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Keep installed asyncio loops from jumping virtual time while the block runs.

        A loop that waits for a timer moves the clock to it when nothing else can happen
        first; a thread producing what the loop waits for (an executor call, a replayed
        process's output) holds the clock, and the loop then waits for it in real time.
        """
        with self._lock:
            self._holds += 1
        try:
            yield
        finally:
            with self._lock:
                self._holds -= 1

    # -- moves ------------------------------------------------------------------------

    def sleep(self, seconds: float) -> None:
        """Return at once, moving virtual wall and monotonic time forward by ``seconds``.

        Raises ``ValueError`` for a negative or NaN length, like :func:`time.sleep`.
        """
        ns = _seconds_to_ns(seconds, "sleep")
        with self._lock:
            self._move_locked(self._wall_ns + ns, self._mono_ns + ns)
            self._slept_ns += ns
            self._sleeps += 1
        # A real sleep lets other threads run; without this a thread polling in a sleep
        # loop would hold the GIL and starve the workers it is waiting for.
        REAL.sleep(0)

    def advance(self, seconds: float) -> None:
        """Move virtual wall and monotonic time forward by ``seconds`` (not counted as sleep)."""
        ns = _seconds_to_ns(seconds, "advance")
        with self._lock:
            self._move_locked(self._wall_ns + ns, self._mono_ns + ns)

    def advance_ns(self, ns: int) -> None:
        """Move virtual wall and monotonic time forward by ``ns`` nanoseconds."""
        if ns < 0:
            raise ValueError(
                "advance length must be non-negative; virtual time never goes backwards"
            )
        with self._lock:
            self._move_locked(self._wall_ns + ns, self._mono_ns + ns)

    def advance_to(self, ts_ns: int, mono_ns: int | None = None) -> None:
        """Move virtual time forward to a recorded timestamp; never backwards.

        Wall time becomes ``max(current, ts_ns)``. Monotonic time becomes
        ``max(current, mono_ns)`` when ``mono_ns`` is given, otherwise it moves by as much
        as wall time did. A timestamp behind the clock is not an error: concurrent workers
        replayed in a different interleaving deliver them out of order.
        """
        # The replay hot path (once or twice per replayed call): plain comparisons rather
        # than max(), and operator.index() only for what is not already an int.
        target = ts_ns if type(ts_ns) is int else operator.index(ts_ns)
        if mono_ns is not None and type(mono_ns) is not int:
            mono_ns = operator.index(mono_ns)
        with self._lock:
            wall = self._wall_ns
            mono = self._mono_ns
            if mono_ns is None:
                if target > wall:
                    self._move_locked(target, mono + (target - wall))
            elif target > wall:
                # _move_locked inline: the branch of nearly every replayed call.
                if target > MAX_WALL_NS:
                    raise OverflowError(_PAST_MAX)
                self._wall_ns = target
                if mono_ns > mono:
                    self._mono_ns = mono_ns
            elif mono_ns > mono:
                self._move_locked(wall, mono_ns)

    def _move_locked(self, wall_ns: int, mono_ns: int) -> None:
        # Checked before anything changes, so a failed move leaves the clock as it was.
        if wall_ns > MAX_WALL_NS:
            raise OverflowError(_PAST_MAX)
        self._wall_ns = wall_ns
        self._mono_ns = mono_ns

    # -- process patching -------------------------------------------------------------

    def install(self) -> contextlib.AbstractContextManager[FakeClock]:
        """Make unmodified code in this process read and sleep on this clock.

        Patching happens now, so ``install()`` also works without ``with``; undo it with
        :meth:`uninstall`. As a context manager it uninstalls on exit, even if the block
        raises. Under install:

        * ``time.time``/``time_ns`` read virtual wall time to the ns, and
          ``datetime.now``/``utcnow``/``today``, ``date.today`` read it through freezegun's
          date classes (microsecond precision; naive ``now()`` is UTC);
        * ``time.monotonic``/``monotonic_ns``/``perf_counter``/``perf_counter_ns`` read
          virtual monotonic time;
        * ``time.sleep`` (and ``from time import sleep`` copies) sleeps virtually;
        * asyncio event loops run on virtual time: a loop with nothing to do but wait for a
          timer moves the clock to it, so ``asyncio.sleep`` returns at once, except while
          :meth:`hold` says work for it is in flight (``run_in_executor`` holds the clock
          until its call ends); ``threading`` and ``queue`` timeouts stay real;
        * modules in :data:`IGNORED_MODULES` and freezegun's default ignore list keep real
          time when they call these functions themselves.

        Raises :class:`~sessiontape.UsageError` if a FakeClock is already installed or a
        freezegun ``freeze_time`` is active.
        """
        _timepatch.install(self)
        return _Installation(self)

    def uninstall(self) -> None:
        """Undo :meth:`install`, restoring every patched function exactly."""
        if _timepatch.active_clock() is not self:
            raise UsageError(
                "this FakeClock is not installed; call uninstall() only after install() "
                "and only once"
            )
        _timepatch.uninstall(self)

    def __repr__(self) -> str:
        return (
            f"FakeClock(now={self.now().isoformat()}, monotonic={self.monotonic():.6f}, "
            f"sleeps={self._sleeps}, slept={self._slept_ns / NS_PER_S:g}s)"
        )


class _Installation(contextlib.AbstractContextManager[FakeClock]):
    """What :meth:`FakeClock.install` returns: the clock is already installed."""

    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock

    def __enter__(self) -> FakeClock:
        return self._clock

    def __exit__(self, *exc_info: object) -> None:
        # The block may have uninstalled by hand; that is not an error here.
        if self._clock.installed:
            self._clock.uninstall()
