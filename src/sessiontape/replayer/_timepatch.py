"""Virtual time installed into the process: what :meth:`FakeClock.install` patches.

Under install, ``time.time``/``time_ns``/``monotonic``/``monotonic_ns``/``perf_counter``/
``perf_counter_ns``/``sleep`` read and move the active :class:`FakeClock` (exact to the ns),
``datetime.datetime``/``date`` are freezegun's ``FakeDatetime``/``FakeDate`` answering with
the clock's wall time, and asyncio event loops run on the clock too: a loop with nothing to
do but wait for its next timer jumps virtual time to it, so ``asyncio.sleep(3600)`` returns
at once (for programs that have imported asyncio when the replay starts). Modules in
:data:`IGNORED_MODULES` (pytest, sessiontape itself, threading...) keep real time when they
call these functions themselves.

Code that did ``from time import sleep`` holds copies the module patch does not reach, so
every loaded module is searched for them. That search is what made a replay's fixed cost
grow with the module count (freezegun re-hashes ``dir()`` of every module on every start):
here each module's findings are cached with the size of its namespace, so a later install
re-reads only modules that are new or changed.
"""

from __future__ import annotations

import contextlib
import copyreg
import datetime as _dt
import selectors
import sys
import threading
import time as _time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Final, Protocol

from .._time import NS_PER_S, REAL, naive_utc
from ._copies import COPIES
from ._inflight import IN_FLIGHT

__all__ = [
    "IGNORED_MODULES",
    "VirtualClock",
    "active_clock",
    "install",
    "lingering",
    "loop_on_clock",
    "uninstall",
]

#: Module prefixes that keep real time under install, on top of freezegun's own default
#: ignore list (``threading``, ``queue``, ``multiprocessing``, ...). pytest's timer and
#: sessiontape's own bookkeeping must measure the real machine, and the xdist/execnet
#: transport must not see a clock that jumps by hours.
IGNORED_MODULES: Final[tuple[str, ...]] = (
    "sessiontape",
    "_pytest",
    "pluggy",
    "msgspec",
    "xdist",
    "execnet",
)

#: Real seconds an asyncio loop waits at a time for work the replay is still feeding it
#: (:meth:`FakeClock.hold`) before it looks again whether its next timer may be jumped to.
HOLD_POLL: Final = 0.05


class VirtualClock(Protocol):
    """What the patched functions need of the clock they read (``FakeClock``)."""

    @property
    def held(self) -> bool:
        """Whether work in flight keeps virtual time from jumping ahead."""

    def time_ns(self) -> int:
        """Virtual wall-clock ns since the epoch."""

    def monotonic_ns(self) -> int:
        """Virtual monotonic ns."""

    def sleep(self, seconds: float) -> None:
        """Sleep virtually."""

    def advance_ns(self, ns: int) -> None:
        """Move virtual time forward."""

    def hold(self) -> AbstractContextManager[None]:
        """Keep virtual time from jumping ahead while the block runs."""


_lock: Final = threading.RLock()
#: The installed clock, read by every patched function.
_active: VirtualClock | None = None
_ignore: tuple[str, ...] = IGNORED_MODULES


def active_clock() -> VirtualClock | None:
    """The installed :class:`FakeClock`, if any."""
    return _active


def loop_on_clock(loop: object) -> bool:
    """Whether the asyncio event loop ``loop`` keeps the installed clock's time (its
    ``time()`` is virtual monotonic time, and an idle loop jumps to its next timer)."""
    patched = _loop_time
    if _active is None or patched is None:
        return False
    return getattr(type(loop), "time", None) is patched


def _caller_ignored(depth: int = 2) -> bool:
    name = sys._getframe(depth).f_globals.get("__name__")
    return isinstance(name, str) and name.startswith(_ignore)


# -- the patched functions ------------------------------------------------------------
# Each reads the active clock unless its direct caller is an ignored module.


def _fake_time() -> float:
    clock = _active
    if clock is None or _caller_ignored():
        return REAL.time()
    return clock.time_ns() / NS_PER_S


def _fake_time_ns() -> int:
    clock = _active
    if clock is None or _caller_ignored():
        return REAL.time_ns()
    return clock.time_ns()


def _fake_monotonic() -> float:
    clock = _active
    if clock is None or _caller_ignored():
        return REAL.monotonic()
    return clock.monotonic_ns() / NS_PER_S


def _fake_monotonic_ns() -> int:
    clock = _active
    if clock is None or _caller_ignored():
        return REAL.monotonic_ns()
    return clock.monotonic_ns()


_REAL_PERF_COUNTER: Final = REAL.perf_counter
_REAL_PERF_COUNTER_NS: Final = REAL.perf_counter_ns


def _fake_perf_counter() -> float:
    clock = _active
    if clock is None or _caller_ignored():
        return _REAL_PERF_COUNTER()
    return clock.monotonic_ns() / NS_PER_S


def _fake_perf_counter_ns() -> int:
    clock = _active
    if clock is None or _caller_ignored():
        return _REAL_PERF_COUNTER_NS()
    return clock.monotonic_ns()


def _fake_sleep(seconds: float) -> None:
    """``time.sleep`` replaced by sessiontape's FakeClock.install(): sleeps virtually."""
    clock = _active
    # Ignored modules (pytest, xdist's transport, threading helpers) keep really waiting:
    # a virtual sleep would make their poll loops spin and move the clock.
    if clock is None or _caller_ignored():
        REAL.sleep(seconds)
    else:
        clock.sleep(seconds)


_fake_sleep.__qualname__ = "FakeClock.install.<sleep>"


class _ClockTime:
    """Stands in for freezegun's frozen-time factory: the clock's wall time, when read."""

    __slots__ = ("_clock",)

    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock

    def __call__(self) -> _dt.datetime:
        return naive_utc(self._clock.time_ns())


_REAL_MONOTONIC_NS: Final = REAL.monotonic_ns


# -- asyncio --------------------------------------------------------------------------

_loop_classes: tuple[object, type[Any], type[Any]] | None = None


def _asyncio_classes() -> tuple[type[Any], type[Any]]:
    """The event loop and selector classes ``asyncio.run`` would use now, found once per
    event loop policy (making a loop to see them costs a socketpair)."""
    global _loop_classes
    import asyncio

    policy = asyncio.get_event_loop_policy()
    if _loop_classes is None or _loop_classes[0] is not policy:
        loop = asyncio.new_event_loop()
        try:
            selector = getattr(loop, "_selector", None)
            selector_class = type(selector) if selector is not None else selectors.DefaultSelector
            _loop_classes = (policy, type(loop), selector_class)
        finally:
            loop.close()
    return _loop_classes[1], _loop_classes[2]


def _patch_asyncio(undo: list[Callable[[], None]]) -> None:
    """Run asyncio loops on the active clock, jumping to the next timer when there is
    nothing else to do, and hold virtual time while an executor does work for a loop.
    With no clock active (the patch lingering between replays) loops keep real time."""
    loop_class, selector_class = _asyncio_classes()
    real_select = selector_class.select
    real_run_in_executor = loop_class.run_in_executor

    def loop_time(self: object) -> float:
        clock = _active
        ns = clock.monotonic_ns() if clock is not None else _REAL_MONOTONIC_NS()
        return ns / NS_PER_S

    def select(self: object, timeout: float | None = None) -> Any:
        clock = _active
        if clock is None or timeout is None or timeout <= 0:
            return real_select(self, timeout)
        if sys._getframe(1).f_globals.get("__name__") != "asyncio.base_events":
            return real_select(self, timeout)
        # The count is read before the look at the loop's own descriptors: a producer's
        # output that the look missed was made in a burst of work that moves the count or
        # is still going on when the producers are asked (``_inflight``).
        count = IN_FLIGHT.count
        ready = real_select(self, 0)
        if ready:
            return ready
        if clock.held or IN_FLIGHT.busy():
            # A thread is still producing what the loop waits for: wait for it in real
            # time, a little at a time, and let the loop look at its timers again.
            return real_select(self, min(timeout, HOLD_POLL))
        if IN_FLIGHT.count != count:
            return []  # a producer worked meanwhile: look again before jumping
        # Nothing can happen before the next timer: move virtual time to it.
        clock.advance_ns(int(timeout * NS_PER_S) + 1)
        return []

    def run_in_executor(self: Any, executor: Any, func: Any, *args: Any) -> Any:
        future = real_run_in_executor(self, executor, func, *args)
        clock = _active
        if clock is None:
            return future
        release = clock.hold()
        release.__enter__()
        future.add_done_callback(lambda _: release.__exit__(None, None, None))
        return future

    real_shutdown = loop_class.shutdown_default_executor

    async def shutdown_default_executor(self: Any, *args: Any, **kwargs: Any) -> Any:
        # asyncio.run() joins the default executor's threads from one more thread, and
        # from 3.12 waits for it under a 300 s timer: held, the loop waits for the join in
        # real time instead of jumping to that timer (and warning) on a loaded machine.
        clock = _active
        if clock is None:
            return await real_shutdown(self, *args, **kwargs)
        with clock.hold():
            return await real_shutdown(self, *args, **kwargs)

    global _loop_time
    _loop_time = loop_time
    undo.append(_forget_loop_time)
    _set(loop_class, "time", loop_time, undo)
    _set(selector_class, "select", select, undo)
    _set(loop_class, "run_in_executor", run_in_executor, undo)
    _set(loop_class, "shutdown_default_executor", shutdown_default_executor, undo)


# -- install / uninstall --------------------------------------------------------------


def _set(target: object, name: str, value: object, undo: list[Callable[[], None]]) -> None:
    original = getattr(target, name)
    setattr(target, name, value)
    undo.append(lambda: setattr(target, name, original))


#: uuid's handles on the C library's time-based uuid generation.
_UUID_CLOCKS: Final = ("_generate_time_safe", "_UuidCreate", "_last_timestamp")


def _set_all(
    changes: list[tuple[object, str, object]], undo: list[Callable[[], None]]
) -> list[tuple[object, str, object, object]]:
    """Make each change, and add one undo step that reverts them all (in reverse order).

    Returns ``(object, name, new value, original)`` for each change made.
    """
    made: list[tuple[object, str, object, object]] = []

    def revert() -> None:
        for target, name, _, original in reversed(made):
            setattr(target, name, original)

    undo.append(revert)
    for target, name, value in changes:
        made.append((target, name, value, getattr(target, name)))
        setattr(target, name, value)
    return made


def _register_pickler(cls: type, pickler: Any, undo: list[Callable[[], None]]) -> None:
    copyreg.dispatch_table[cls] = pickler

    def unregister() -> None:
        copyreg.dispatch_table.pop(cls, None)

    undo.append(unregister)


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


def _freezegun_ignore() -> tuple[str, ...]:
    from freezegun import config

    return tuple(config.settings.default_ignore_list)


#: The steps undoing the process patch while it is applied (with or without a clock).
_applied: list[Callable[[], None]] | None = None
#: The patched event loops' ``time`` (see :func:`loop_on_clock`), while they are patched.
_loop_time: Callable[[object], float] | None = None


def _forget_loop_time() -> None:
    global _loop_time
    _loop_time = None


#: Whether asyncio's loop and selector classes are patched (asyncio may be imported later).
_asyncio_patched = False
#: Depth of :func:`lingering` blocks: the patch stays applied between clocks inside them.
_linger = 0


def prepare() -> None:
    """Do now the one-time work of the process's first :func:`install`: import freezegun,
    plan the patch, search every loaded module for copies of the time functions (the
    findings are cached, see ``_copies.py``) and find asyncio's loop classes. Nothing is
    patched.

    For a session about to replay tape after tape: the first replay then costs what the
    others do, and the set-up is not counted against whichever replay happens to be first.
    """
    global _plan
    from freezegun import api as fg

    with _lock:
        if _plan is None or not _plan.current(fg):
            _plan = _Plan(fg)
        COPIES.find(_plan.fake_of, IGNORED_MODULES + _freezegun_ignore())
    _asyncio_classes()


def install(clock: VirtualClock) -> None:
    """Make ``clock`` the time of the process: apply the patch (unless it lingers from a
    clock before) and point it at ``clock``.

    Raises :class:`UsageError` while another clock is installed or a freezegun
    ``freeze_time`` is active.
    """
    global _active, _applied, _asyncio_patched, _ignore
    from freezegun import api as fg

    from .._errors import UsageError

    with _lock:
        if _active is not None:
            raise UsageError(
                "a FakeClock is already installed; leave its `with clock.install():` block "
                "(or call uninstall()) before installing another, or drive the second clock "
                "without install()"
            )
        if fg.freeze_factories:
            raise UsageError(
                "freezegun's freeze_time is already active; FakeClock.install() patches time "
                "through freezegun itself, so stop the freeze_time first, or drive this "
                "FakeClock without install()"
            )
        if _applied is None:
            _ignore = IGNORED_MODULES + _freezegun_ignore()
            _dates.clear()
            undo: list[Callable[[], None]] = []
            try:
                _patch(fg, undo)
            except BaseException:
                _run_undo(undo)
                raise
            _applied = undo
            _asyncio_patched = False
        else:  # lingering from a clock before: catch up and put the date classes back
            _catch_up(fg)
            _set_dates(fakes=True)
        # Only a program that has imported asyncio can have event loops to run on the
        # clock; importing it here would cost every replay of a program that never does.
        if not _asyncio_patched and "asyncio" in sys.modules:
            _patch_asyncio(_applied)
            _asyncio_patched = True
        # freezegun's FakeDatetime and FakeDate answer from its stacks: a factory reading
        # this clock, no tz offset, the ignore list, no ticking.
        factories: list[Any] = fg.freeze_factories  # ours quacks like freezegun's factories
        factories.append(_ClockTime(clock))
        fg.tz_offsets.append(_ZERO)
        fg.ignore_lists.append(_ignore)
        fg.tick_flags.append(False)
        _active = clock


def uninstall(clock: VirtualClock) -> None:
    """Stop ``clock`` being the time of the process; undo the patch, unless it lingers."""
    global _active, _parked_modules
    from freezegun import api as fg

    with _lock:
        if _active is not clock:
            return
        _active = None
        for stack in (fg.freeze_factories, fg.tz_offsets, fg.ignore_lists, fg.tick_flags):
            if stack:
                stack.pop()
        if not _linger:
            _release_locked()
        else:  # park: real date classes (freezegun's need a clock), the rest stays
            _set_dates(fakes=False)
            _parked_modules = len(sys.modules)


def _release_locked() -> None:
    global _applied
    undo, _applied = _applied, None
    if undo is not None:
        _run_undo(undo)
    _dates.clear()


@contextlib.contextmanager
def lingering() -> Iterator[None]:
    """Keep the process patch applied between the clocks installed in the block.

    Replaying one tape after another (a corpus), each replay then only points the patch
    at its clock instead of applying and undoing it. Between replays the patched
    functions give real time, and ``datetime.now()`` returns real time as freezegun's
    ``FakeDatetime``; so linger only while no other code runs between the replays.
    """
    global _linger
    with _lock:
        _linger += 1
    try:
        yield
    finally:
        with _lock:
            _linger -= 1
            if not _linger and _active is None:
                _release_locked()


class _Plan:
    """What install puts where: each real time object of ``time`` and ``datetime`` and its
    stand-in. Built once per process (and again if those objects were replaced)."""

    def __init__(self, fg: Any) -> None:
        self.fg = fg
        self.fakes: dict[str, object] = {
            "time": _fake_time,
            "time_ns": _fake_time_ns,
            "monotonic": _fake_monotonic,
            "monotonic_ns": _fake_monotonic_ns,
            "perf_counter": _fake_perf_counter,
            "perf_counter_ns": _fake_perf_counter_ns,
            "sleep": _fake_sleep,
            "localtime": fg.fake_localtime,
            "gmtime": fg.fake_gmtime,
            "strftime": fg.fake_strftime,
        }
        #: ``time``'s own functions as they are without the patch.
        self.originals = {name: getattr(_time, name) for name in self.fakes}
        pairs = [(self.originals[name], fake) for name, fake in self.fakes.items()]
        pairs += [(REAL.datetime, fg.FakeDatetime), (REAL.date, fg.FakeDate)]
        #: id of a real object -> its stand-in, and back.
        self.fake_of = {id(real): fake for real, fake in pairs}
        self.real_of = {id(fake): real for real, fake in pairs}

    def current(self, fg: Any) -> bool:
        """Whether the plan still describes the process (nobody replaced the originals)."""
        names = self.originals
        return fg is self.fg and [getattr(_time, n) for n in names] == list(names.values())


_plan: _Plan | None = None


def _patch(fg: Any, undo: list[Callable[[], None]]) -> None:
    """Apply the process patch (everything but the clock it points at)."""
    global _plan
    if _plan is None or not _plan.current(fg):
        _plan = _Plan(fg)
    plan = _plan
    # Every attribute to replace, as (object, name, new value); set in one go below.
    changes: list[tuple[object, str, object]] = [
        # freezegun looks this many frames up for an ignored module in localtime/gmtime/
        # strftime; from a test body five reach pytest. Only the direct caller decides.
        (fg, "call_stack_inspection_limit", 1),
        *((_time, name, fake) for name, fake in plan.fakes.items()),
        (_dt, "datetime", fg.FakeDatetime),
        (_dt, "date", fg.FakeDate),
        # uuid1() reads the time through the C library unless these are None.
        *((uuid, name, None) for name in _UUID_CLOCKS if hasattr(uuid, name)),
    ]
    fake_of = plan.fake_of
    changes += [
        (module, attr, fake_of[id(real)]) for module, attr, real in COPIES.find(fake_of, _ignore)
    ]
    _note_dates(_set_all(changes, undo), fg)
    # Pickled real dates come back as freezegun's, as under freeze_time.
    _register_pickler(REAL.datetime, fg.pickle_fake_datetime, undo)
    _register_pickler(REAL.date, fg.pickle_fake_date, undo)
    names_at_start = list(sys.modules)
    undo.append(lambda: _restore_new_modules(names_at_start, plan.real_of))


_ZERO: Final = _dt.timedelta(0)
#: The changes that put freezegun's date classes in place, as (object, name, fake, real):
#: undone while the patch lingers with no clock (freezegun's classes need its stacks).
_dates: list[tuple[object, str, object, object]] = []
#: How many modules were loaded when the patch was last parked.
_parked_modules = 0


def _note_dates(made: list[tuple[object, str, object, object]], fg: Any) -> None:
    _dates.extend(c for c in made if c[2] is fg.FakeDatetime or c[2] is fg.FakeDate)


def _set_dates(fakes: bool) -> None:
    for target, name, fake, real in _dates:
        setattr(target, name, fake if fakes else real)


def _catch_up(fg: Any) -> None:
    """Before pointing a lingering patch at a clock: patch the copies in modules imported
    since it was parked (with the real date classes then in place, they took those)."""
    if len(sys.modules) == _parked_modules or _plan is None or _applied is None:
        return
    fake_of = _plan.fake_of
    changes: list[tuple[object, str, object]] = [
        (module, attr, fake_of[id(real)]) for module, attr, real in COPIES.find(fake_of, _ignore)
    ]
    if changes:
        _note_dates(_set_all(changes, _applied), fg)


def _restore_new_modules(names_at_start: list[str], real_of: dict[int, object]) -> None:
    """Modules imported while patched copied fakes; give them the real objects back."""
    if len(sys.modules) == len(names_at_start):
        return  # (sys.modules only grows in practice: the same size is the same modules)
    new = set(sys.modules) - set(names_at_start)
    for name in new:
        namespace = getattr(sys.modules.get(name), "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attribute, value in list(namespace.items()):
            real = real_of.get(id(value))
            if real is not None:
                namespace[attribute] = real
    COPIES.forget(new)
