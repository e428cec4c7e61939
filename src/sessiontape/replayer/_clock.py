"""The virtual clock replay runs on, and its installation into the process.

Code that takes a :class:`Clock` by injection works under replay with no patching: hand it a
:class:`FakeClock`. Code that calls ``time`` and ``datetime`` directly needs
:meth:`FakeClock.install`, which patches the process through freezegun (wall-clock and
monotonic reads) and replaces ``time.sleep`` itself (freezegun leaves sleep alone), so hours
of recorded back-off take no time and the code reads the times it read in production.

Virtual time never goes backwards. Concurrent workers replayed in a different interleaving
deliver their recorded timestamps out of order; :meth:`FakeClock.advance_to` then leaves the
clock where it is, so every reader sees a non-decreasing time.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import operator
import sys
import threading
import time as _time
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from .._errors import UsageError
from .._time import EPOCH_UTC, MAX_WALL_NS, NS_PER_S, REAL, naive_utc

if TYPE_CHECKING:
    from freezegun.api import FrozenDateTimeFactory

__all__ = ["IGNORED_MODULES", "FakeClock"]

#: Module prefixes that keep real time under :meth:`FakeClock.install`, on top of
#: freezegun's own default ignore list (``threading``, ``queue``, ``multiprocessing``, ...).
#: pytest's timer and sessiontape's own bookkeeping must measure the real machine, and the
#: xdist/execnet transport must not see a clock that jumps by hours.
IGNORED_MODULES: Final[tuple[str, ...]] = (
    "sessiontape",
    "_pytest",
    "pluggy",
    "msgspec",
    "xdist",
    "execnet",
)


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
        # freezegun's frozen-time factory, when installed without _ClockTime: moves update it.
        self._factory: FrozenDateTimeFactory | None = None
        self._undo: list[Callable[[], None]] = []

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
        return _installed is self

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

    def advance_to(self, ts_ns: int, mono_ns: int | None = None) -> None:
        """Move virtual time forward to a recorded timestamp; never backwards.

        Wall time becomes ``max(current, ts_ns)``. Monotonic time becomes
        ``max(current, mono_ns)`` when ``mono_ns`` is given, otherwise it moves by as much
        as wall time did. A timestamp behind the clock is not an error: concurrent workers
        replayed in a different interleaving deliver them out of order.
        """
        # Called twice per replayed call: skip operator.index() for plain ints.
        target = ts_ns if type(ts_ns) is int else operator.index(ts_ns)
        if mono_ns is not None and type(mono_ns) is not int:
            mono_ns = operator.index(mono_ns)
        with self._lock:
            wall = max(self._wall_ns, target)
            if mono_ns is None:
                mono = self._mono_ns + (wall - self._wall_ns)
            else:
                mono = max(self._mono_ns, mono_ns)
            if wall != self._wall_ns or mono != self._mono_ns:
                self._move_locked(wall, mono)

    def _move_locked(self, wall_ns: int, mono_ns: int) -> None:
        # Checked before anything changes, so a failed move leaves the clock as it was.
        if wall_ns > MAX_WALL_NS:
            raise OverflowError("virtual wall time would pass the largest datetime (year 9999)")
        if self._factory is not None:
            self._factory.move_to(naive_utc(wall_ns))
        self._wall_ns = wall_ns
        self._mono_ns = mono_ns

    # -- process patching -------------------------------------------------------------

    def install(self) -> contextlib.AbstractContextManager[FakeClock]:
        """Make unmodified code in this process read and sleep on this clock.

        Patching happens now, so ``install()`` also works without ``with``; undo it with
        :meth:`uninstall`. As a context manager it uninstalls on exit, even if the block
        raises. Under install:

        * ``time.time``/``time_ns``, ``datetime.now``/``utcnow``/``today``, ``date.today``
          read virtual wall time (freezegun, microsecond precision; naive ``now()`` is UTC);
        * ``time.monotonic``/``monotonic_ns``/``perf_counter`` read virtual monotonic time;
        * ``time.sleep`` (and ``from time import sleep`` copies) sleeps virtually;
        * asyncio event loops keep real time (freezegun's ``real_asyncio``), so
          ``asyncio.sleep`` waits for real; ``threading`` and ``queue`` timeouts are real;
        * modules in :data:`IGNORED_MODULES` and freezegun's default ignore list keep real
          time when they call these functions themselves.

        Raises :class:`~sessiontape.UsageError` if a FakeClock is already installed or a
        freezegun ``freeze_time`` is active.
        """
        _install(self)
        return _Installation(self)

    def uninstall(self) -> None:
        """Undo :meth:`install`, restoring every patched function exactly."""
        global _installed
        with _install_lock:
            if _installed is not self:
                raise UsageError(
                    "this FakeClock is not installed; call uninstall() only after install() "
                    "and only once"
                )
            undo, self._undo = self._undo, []
            _installed = None
            _run_undo(undo)

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
        with _install_lock:
            if self._clock.installed:
                self._clock.uninstall()


_install_lock: Final = threading.RLock()
_installed: FakeClock | None = None


def _run_undo(undo: list[Callable[[], None]]) -> None:
    # Every step runs even if an earlier one fails, so one broken restore does not leave
    # the rest of the process patched; the first failure is raised at the end.
    first: BaseException | None = None
    for step in reversed(undo):
        try:
            step()
        except BaseException as exc:
            if first is None:
                first = exc
    if first is not None:
        raise first


def _install(clock: FakeClock) -> None:
    global _installed
    with _install_lock:
        if _installed is not None:
            raise UsageError(
                "a FakeClock is already installed; leave its `with clock.install():` block "
                "(or call uninstall()) before installing another, or drive the second clock "
                "without install()"
            )
        from freezegun import api as freezegun_api
        from freezegun import freeze_time

        if freezegun_api.freeze_factories:
            raise UsageError(
                "freezegun's freeze_time is already active; FakeClock.install() patches time "
                "through freezegun itself, so stop the freeze_time first, or drive this "
                "FakeClock without install()"
            )
        undo: list[Callable[[], None]] = []
        try:
            _patch_freezegun(clock, freezegun_api, freeze_time, undo)
            _patch_sleep(clock, undo)
        except BaseException:
            _run_undo(undo)
            raise
        clock._undo = undo
        _installed = clock


def _set_attr(target: object, name: str, value: object, undo: list[Callable[[], None]]) -> None:
    original = getattr(target, name)
    setattr(target, name, value)
    undo.append(lambda: setattr(target, name, original))


def _patch_freezegun(
    clock: FakeClock,
    freezegun_api: types.ModuleType,
    freeze_time: Callable[..., Any],
    undo: list[Callable[[], None]],
) -> None:
    # freezegun looks this many frames up the stack for an ignored module. With `_pytest`
    # and `pluggy` ignored, five frames reach from a test body (or a hook implementation)
    # into pytest, and `time.time()` there would read real time. Only the direct caller
    # decides.
    _set_attr(freezegun_api, "call_stack_inspection_limit", 1, undo)
    # freezegun derives monotonic/perf_counter from the frozen wall time; these hooks make
    # them read the clock's own monotonic time, which advance_to can move independently.
    for name, getter in (
        ("_get_fake_monotonic", clock.monotonic),
        ("_get_fake_monotonic_ns", clock.monotonic_ns),
    ):
        if hasattr(freezegun_api, name):
            _set_attr(freezegun_api, name, getter, undo)

    freezer = freeze_time(
        naive_utc(clock.time_ns()),
        tick=False,
        # Without it asyncio's loop reads the frozen monotonic time and every
        # asyncio.sleep() hangs forever.
        real_asyncio=True,
        # freeze_time() appends freezegun's default ignore list to this one.
        ignore=list(IGNORED_MODULES),
    )
    factory = freezer.start()
    undo.append(freezer.stop)
    factories = freezegun_api.freeze_factories
    if factories and factories[-1] is factory:
        # freezegun asks its newest factory for the frozen time at every read: let this
        # clock answer, so a move (two per replayed call) leaves freezegun alone instead
        # of building a datetime each time, which cost more than the rest of the move.
        # freezer.stop() pops it like the factory it replaces.
        factories[-1] = _ClockTime(clock)
        return
    with clock._lock:
        clock._factory = factory
        # Another thread may have moved the clock since freeze_time() read it.
        factory.move_to(naive_utc(clock._wall_ns))

    def detach() -> None:
        with clock._lock:
            clock._factory = None

    undo.append(detach)


class _ClockTime:
    """Stands in for freezegun's frozen-time factory: the clock's wall time, when read."""

    __slots__ = ("_clock",)

    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock

    def __call__(self) -> _dt.datetime:
        return naive_utc(self._clock._wall_ns)


def _patch_sleep(clock: FakeClock, undo: list[Callable[[], None]]) -> None:
    original = _time.sleep
    ignore = tuple(IGNORED_MODULES) + tuple(_freezegun_default_ignore())

    def sleep(seconds: float) -> None:
        """``time.sleep`` replaced by sessiontape's FakeClock.install(): sleeps virtually."""
        # Ignored modules (pytest, xdist's transport, threading helpers) keep really
        # waiting: a virtual sleep would make their poll loops spin and move the clock.
        caller = sys._getframe(1).f_globals.get("__name__")
        if isinstance(caller, str) and caller.startswith(ignore):
            original(seconds)
        else:
            clock.sleep(seconds)

    sleep.__qualname__ = "FakeClock.install.<sleep>"
    _set_attr(_time, "sleep", sleep, undo)
    # `from time import sleep` made copies that patching the module does not reach.
    for module_name, module in list(sys.modules.items()):
        if module is None or module is _time or module_name.startswith(ignore):
            continue
        try:
            namespace = vars(module)
        except TypeError:
            continue
        for attr, value in list(namespace.items()):
            if value is original:
                _set_attr(module, attr, sleep, undo)

    modules_at_start = set(sys.modules)

    def restore_new_modules() -> None:
        # Modules imported during install copied the virtual sleep; give them the real one.
        for module_name in set(sys.modules) - modules_at_start:
            module = sys.modules.get(module_name)
            try:
                namespace = vars(module)
            except TypeError:
                continue
            for attr, value in list(namespace.items()):
                if value is sleep:
                    setattr(module, attr, original)

    undo.append(restore_new_modules)


def _freezegun_default_ignore() -> list[str]:
    from freezegun import config

    return list(config.settings.default_ignore_list)
