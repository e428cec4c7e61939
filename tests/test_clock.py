"""Tests for the real and virtual clocks and for FakeClock.install()'s process patching."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sys
import threading
import time
import types
from collections.abc import Iterator
from typing import Any

import freezegun
import freezegun.api
import msgspec
import pytest

from sessiontape._clock import Clock
from sessiontape._errors import UsageError
from sessiontape._time import RealClock, msgspec_enc_hook, to_real_datetime
from sessiontape.replayer import IGNORED_MODULES, FakeClock, lingering

S = 1_000_000_000
# 2021-06-01T12:00:00.5Z: half a second is exact in binary, so float reads compare exactly.
START_NS = 1_622_548_800 * S + S // 2
START_UTC = dt.datetime(2021, 6, 1, 12, 0, 0, 500_000, tzinfo=dt.timezone.utc)
MONO_START_NS = 5_000 * S

# Kept inside a dict: freezegun replaces module attributes that are real time functions,
# so a bare module-level copy would turn virtual under install().
REAL = {
    "sleep": time.sleep,
    "time": time.time,
    "monotonic": time.monotonic,
    "perf_counter": time.perf_counter,
    "datetime": dt.datetime,
    "get_fake_monotonic": freezegun.api._get_fake_monotonic,
    "limit": freezegun.api.call_stack_inspection_limit,
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START_NS, MONO_START_NS)


@pytest.fixture
def installed(clock: FakeClock) -> Iterator[FakeClock]:
    with clock.install() as active:
        yield active


def assert_process_restored() -> None:
    assert time.sleep is REAL["sleep"]
    assert time.time is REAL["time"]
    assert time.monotonic is REAL["monotonic"]
    assert time.perf_counter is REAL["perf_counter"]
    assert dt.datetime is REAL["datetime"]
    assert freezegun.api._get_fake_monotonic is REAL["get_fake_monotonic"]
    assert freezegun.api.call_stack_inspection_limit == REAL["limit"]
    assert not freezegun.api.freeze_factories


# -- FakeClock without install ------------------------------------------------------------


def test_both_clocks_satisfy_the_protocol() -> None:
    assert isinstance(RealClock(), Clock)
    assert isinstance(FakeClock(START_NS), Clock)


def test_fake_clock_starts_where_told(clock: FakeClock) -> None:
    assert clock.time_ns() == START_NS
    assert clock.time() == 1_622_548_800.5
    assert clock.now() == START_UTC
    assert clock.now().tzinfo is dt.timezone.utc
    assert type(clock.now()) is REAL["datetime"]
    assert clock.monotonic_ns() == MONO_START_NS
    assert clock.monotonic() == 5_000.0
    assert (clock.sleeps, clock.slept_ns) == (0, 0)


def test_monotonic_defaults_to_the_wall_start() -> None:
    assert FakeClock(START_NS).monotonic_ns() == START_NS


def test_start_must_be_an_int_within_datetime_range() -> None:
    with pytest.raises(TypeError):
        FakeClock(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="outside the range"):
        FakeClock(-1)


def test_sleep_advances_virtual_time_and_counts(clock: FakeClock) -> None:
    clock.sleep(1.5)
    clock.sleep(0)
    clock.sleep(2)
    assert clock.time_ns() == START_NS + 3 * S + S // 2
    assert clock.monotonic_ns() == MONO_START_NS + 3 * S + S // 2
    assert clock.slept_ns == 3 * S + S // 2
    assert clock.sleeps == 3


def test_sleep_does_not_touch_the_process_when_not_installed(clock: FakeClock) -> None:
    clock.sleep(3600)
    assert time.sleep is REAL["sleep"]
    assert time.time() != clock.time()


def test_sleep_rejects_what_time_sleep_rejects(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        clock.sleep(-1)
    with pytest.raises(ValueError, match="non-negative"):
        clock.sleep(-1e-12)
    with pytest.raises(ValueError, match="NaN"):
        clock.sleep(float("nan"))
    with pytest.raises(OverflowError):
        clock.sleep(float("inf"))
    with pytest.raises(TypeError, match="'str' object"):
        clock.sleep("1")  # type: ignore[arg-type]
    assert clock.time_ns() == START_NS
    assert (clock.sleeps, clock.slept_ns) == (0, 0)


def test_advance_moves_time_but_is_not_a_sleep(clock: FakeClock) -> None:
    clock.advance(90)
    assert clock.time_ns() == START_NS + 90 * S
    assert clock.monotonic_ns() == MONO_START_NS + 90 * S
    assert (clock.sleeps, clock.slept_ns) == (0, 0)
    with pytest.raises(ValueError, match="never goes backwards"):
        clock.advance(-1)


def test_advance_past_datetime_max_fails_and_leaves_the_clock(clock: FakeClock) -> None:
    with pytest.raises(OverflowError, match="year 9999"):
        clock.advance(10**12)
    assert clock.time_ns() == START_NS


def test_advance_to_a_recorded_time_past_datetime_max_fails_and_leaves_the_clock(
    clock: FakeClock,
) -> None:
    # Both times given (a replayed call's end): the branch nearly every call takes.
    with pytest.raises(OverflowError, match="year 9999"):
        clock.advance_to(10**21, MONO_START_NS + S)
    assert (clock.time_ns(), clock.monotonic_ns()) == (START_NS, MONO_START_NS)
    clock.advance_to(START_NS + S, MONO_START_NS + 2 * S)
    assert (clock.time_ns(), clock.monotonic_ns()) == (START_NS + S, MONO_START_NS + 2 * S)


def test_advance_to_moves_forward_only(clock: FakeClock) -> None:
    clock.advance_to(START_NS + 10 * S)
    assert clock.time_ns() == START_NS + 10 * S
    # Monotonic follows by the same amount when no recorded monotonic time is given.
    assert clock.monotonic_ns() == MONO_START_NS + 10 * S

    clock.advance_to(START_NS + 4 * S)
    assert clock.time_ns() == START_NS + 10 * S
    assert clock.monotonic_ns() == MONO_START_NS + 10 * S
    assert (clock.sleeps, clock.slept_ns) == (0, 0)


def test_advance_to_with_recorded_monotonic_time(clock: FakeClock) -> None:
    clock.advance_to(START_NS + 10 * S, MONO_START_NS + 7 * S)
    assert clock.time_ns() == START_NS + 10 * S
    assert clock.monotonic_ns() == MONO_START_NS + 7 * S

    # Out of order: the wall time is behind; the monotonic one is ahead and still applies.
    clock.advance_to(START_NS + 9 * S, MONO_START_NS + 8 * S)
    assert clock.time_ns() == START_NS + 10 * S
    assert clock.monotonic_ns() == MONO_START_NS + 8 * S

    clock.advance_to(START_NS, MONO_START_NS)
    assert clock.time_ns() == START_NS + 10 * S
    assert clock.monotonic_ns() == MONO_START_NS + 8 * S


def test_advance_to_rejects_float_timestamps(clock: FakeClock) -> None:
    with pytest.raises(TypeError):
        clock.advance_to(1.5)  # type: ignore[arg-type]


def test_threads_sleeping_concurrently_add_up_exactly(clock: FakeClock) -> None:
    def worker() -> None:
        for _ in range(100):
            clock.sleep(0.25)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    assert clock.sleeps == 800
    assert clock.slept_ns == 200 * S
    assert clock.time_ns() == START_NS + 200 * S


def test_real_clock_is_not_affected_by_freezegun() -> None:
    real = RealClock()
    with freezegun.freeze_time("2001-01-01"):
        assert dt.datetime.now().year == 2001
        assert real.now().year >= 2024
        assert real.now().tzinfo is dt.timezone.utc
        assert type(real.now()) is REAL["datetime"]
        assert real.time() > 1_700_000_000
        assert real.time_ns() > 1_700_000_000 * S
        first = real.monotonic_ns()
        real.sleep(0.001)
        assert real.monotonic_ns() > first


# -- install(): what the process reads ------------------------------------------------------


def test_install_reads_virtual_wall_time(installed: FakeClock) -> None:
    assert dt.datetime.now(dt.timezone.utc) == START_UTC
    assert dt.datetime.now() == START_UTC.replace(tzinfo=None)
    assert dt.datetime.utcnow() == START_UTC.replace(tzinfo=None)
    assert dt.date.today() == dt.date(2021, 6, 1)
    assert time.time() == 1_622_548_800.5
    assert time.time_ns() == START_NS


def test_install_reads_virtual_monotonic_time(installed: FakeClock) -> None:
    assert time.monotonic() == 5_000.0
    assert time.monotonic_ns() == MONO_START_NS
    assert time.perf_counter() == 5_000.0
    installed.advance_to(START_NS + 60 * S, MONO_START_NS + 30 * S)
    assert time.monotonic_ns() == MONO_START_NS + 30 * S
    assert time.time() == 1_622_548_860.5


def test_install_time_sleep_is_virtual(installed: FakeClock) -> None:
    time.sleep(3600)
    assert installed.sleeps == 1
    assert installed.slept_ns == 3600 * S
    assert time.time() == 1_622_552_400.5
    assert time.monotonic() == 8_600.0
    assert dt.datetime.now(dt.timezone.utc) == START_UTC + dt.timedelta(hours=1)


def test_every_move_reaches_freezegun(installed: FakeClock) -> None:
    installed.advance(1)
    installed.sleep(2)
    installed.advance_to(START_NS + 10 * S)
    installed.advance_to(START_NS)
    assert time.time() == installed.time()
    assert time.time_ns() == installed.time_ns()
    assert dt.datetime.now(dt.timezone.utc) == installed.now()
    assert dt.datetime.utcnow() == installed.now().replace(tzinfo=None)
    assert time.monotonic() == installed.monotonic()


def test_six_hundred_one_second_sleeps_take_no_real_time(clock: FakeClock) -> None:
    perf_counter = time.perf_counter  # a local copy stays real under install()
    started = perf_counter()
    with clock.install():
        for _ in range(600):
            time.sleep(1)
        assert time.time() == 1_622_549_400.5
    assert clock.sleeps == 600
    assert clock.slept_ns == 600 * S
    assert clock.monotonic_ns() == MONO_START_NS + 600 * S
    assert perf_counter() - started < 5  # sanity bound only


def test_threads_sleeping_under_install(installed: FakeClock) -> None:
    seen: list[float] = []

    def worker() -> None:
        for _ in range(50):
            time.sleep(1)
        seen.append(time.time())

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    assert installed.slept_ns == 200 * S
    assert installed.sleeps == 200
    assert max(seen) == 1_622_549_000.5


def test_from_time_import_sleep_copies_are_patched_and_restored(clock: FakeClock) -> None:
    before = types.ModuleType("clock_probe_before")
    before.sleep = time.sleep  # type: ignore[attr-defined]
    sys.modules[before.__name__] = before
    try:
        with clock.install():
            assert before.sleep is time.sleep
            before.sleep(5)
            after = types.ModuleType("clock_probe_imported_during_install")
            after.sleep = time.sleep  # type: ignore[attr-defined]
            sys.modules[after.__name__] = after
        assert clock.slept_ns == 5 * S
        assert before.sleep is REAL["sleep"]
        assert after.sleep is REAL["sleep"]
    finally:
        sys.modules.pop("clock_probe_before", None)
        sys.modules.pop("clock_probe_imported_during_install", None)


def test_a_module_that_gains_a_copy_between_installs_is_patched_the_second_time(
    clock: FakeClock,
) -> None:
    # The copies found are cached per module; a module read by the first install and
    # given a `from time import time` afterwards must be read again by the next one.
    probe = types.ModuleType("clock_probe_gains_a_copy")
    sys.modules[probe.__name__] = probe
    try:
        with clock.install():
            pass
        probe.now = time.time  # type: ignore[attr-defined]
        probe.mono = time.monotonic_ns  # type: ignore[attr-defined]
        with clock.install():
            assert probe.now() == clock.time()  # type: ignore[attr-defined]
            assert probe.mono() == MONO_START_NS  # type: ignore[attr-defined]
        assert probe.now is REAL["time"]  # type: ignore[attr-defined]
    finally:
        sys.modules.pop(probe.__name__, None)


def test_time_ns_is_exact_to_the_nanosecond(installed: FakeClock) -> None:
    installed.advance_to(START_NS + 123_456_789)
    assert time.time_ns() == START_NS + 123_456_789
    assert time.perf_counter_ns() == installed.monotonic_ns()


def test_ignored_modules_keep_real_sleep_and_time(installed: FakeClock) -> None:
    namespace: dict[str, object] = {"__name__": "_pytest.probe", "time": time}
    exec(
        "def probe():\n    time.sleep(0)\n    return time.time()\n",
        namespace,
    )
    probe = namespace["probe"]
    assert callable(probe)
    real_now = probe()
    assert installed.sleeps == 0
    assert real_now > 1_700_000_000


def test_an_ignored_caller_of_freezeguns_fakes_gets_real_time(installed: FakeClock) -> None:
    # time.strftime/localtime/gmtime are freezegun's fakes under install; for an ignored
    # caller they fall back to freezegun's own real_* copies, which must stay real.
    namespace: dict[str, object] = {"__name__": "_pytest.probe", "time": time}
    exec("def probe():\n    return time.strftime('%Y'), time.localtime().tm_year\n", namespace)
    probe = namespace["probe"]
    assert callable(probe)
    year, local_year = probe()
    assert int(year) >= 2025
    assert local_year >= 2025
    assert freezegun.api.real_strftime is not time.strftime


def test_pytest_timer_stays_real(installed: FakeClock) -> None:
    import _pytest.timing

    assert "_pytest" in IGNORED_MODULES
    assert {"sessiontape", "pluggy", "msgspec", "xdist", "execnet"} <= set(IGNORED_MODULES)
    # Copies in ignored modules are left alone, so pytest's durations measure the machine.
    assert _pytest.timing.perf_counter is REAL["perf_counter"]
    assert _pytest.timing.time is REAL["time"]
    assert _pytest.timing.Instant().time > 1_700_000_000


def test_test_body_reads_virtual_time_despite_pytest_on_the_stack(installed: FakeClock) -> None:
    # freezegun checks five frames up for an ignored module; from a test body that reaches
    # pytest and pluggy. install() narrows it to the direct caller.
    def nested() -> float:
        return time.time()

    assert time.time() == installed.time()
    assert nested() == installed.time()


def test_threading_timeouts_stay_real(installed: FakeClock) -> None:
    assert threading.Event().wait(0.01) is False
    condition = threading.Condition()
    with condition:
        assert condition.wait(timeout=0.01) is False
    release = threading.Event()
    blocked = threading.Thread(target=release.wait)
    blocked.start()
    blocked.join(timeout=0.01)
    assert blocked.is_alive()
    release.set()
    blocked.join(timeout=60)
    assert not blocked.is_alive()
    assert installed.sleeps == 0


def test_asyncio_sleep_does_not_hang(installed: FakeClock) -> None:
    results: list[str] = []

    async def main() -> str:
        await asyncio.sleep(0.01)
        await asyncio.wait_for(asyncio.sleep(0), timeout=1)
        return "done"

    def run() -> None:
        results.append(asyncio.run(main()))

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(timeout=60)
    assert not runner.is_alive(), "asyncio.run hung under FakeClock.install()"
    assert results == ["done"]


def _run_in_thread(coro_fn: Any) -> Any:
    """``asyncio.run(coro_fn())`` in a fresh thread, bounded, returning its result."""
    results: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(asyncio.run(coro_fn()))
        except BaseException as exc:
            errors.append(exc)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "asyncio.run hung under FakeClock.install()"
    if errors:
        raise errors[0]
    return results[0]


def test_asyncio_sleep_is_virtual(installed: FakeClock) -> None:
    async def main() -> tuple[float, float, float]:
        loop = asyncio.get_running_loop()
        before = loop.time()
        await asyncio.sleep(3600)
        return before, loop.time(), time.monotonic()

    before, after, monotonic = _run_in_thread(main)
    assert before == 5_000.0
    assert after >= 8_600.0
    assert after - 8_600.0 < 1e-6
    assert monotonic == after
    assert time.time() >= 1_622_552_400.5


def test_asyncio_timeouts_fire_in_virtual_time(installed: FakeClock) -> None:
    async def main() -> float:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.sleep(600), timeout=30)
            return -1.0
        return asyncio.get_running_loop().time()

    assert 5_030.0 <= _run_in_thread(main) < 5_030.001


def test_asyncio_waits_in_real_time_for_an_executor_call(installed: FakeClock) -> None:
    # Without the hold, the loop would see nothing to do but a 5 s timer and jump to it,
    # timing out a call that takes 50 ms of real time.
    def real_work() -> str:
        threading.Event().wait(0.05)
        return "worked"

    async def main() -> str:
        loop = asyncio.get_running_loop()
        return await asyncio.wait_for(loop.run_in_executor(None, real_work), timeout=5)

    assert _run_in_thread(main) == "worked"
    assert not installed.held
    assert installed.monotonic_ns() < MONO_START_NS + 5 * S


def test_a_held_clock_keeps_asyncio_from_jumping(installed: FakeClock) -> None:
    released = threading.Event()

    async def main() -> bool:
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()

        # Held before the thread starts: a hold taken inside it could come after the
        # loop has looked (a loaded machine starts threads late) and jumped to 2 s.
        hold = installed.hold()
        hold.__enter__()

        def producer() -> None:
            try:
                released.wait(0.1)
                loop.call_soon_threadsafe(waiter.set_result, True)
            finally:
                hold.__exit__(None, None, None)

        threading.Thread(target=producer).start()
        try:
            return bool(await asyncio.wait_for(waiter, timeout=2))
        except asyncio.TimeoutError:
            return False

    assert _run_in_thread(main) is True


# -- msgspec and freezegun's datetime subclasses ---------------------------------------------


def test_msgspec_encodes_datetimes_under_install(installed: FakeClock) -> None:
    aware = dt.datetime.now(dt.timezone.utc)
    assert type(aware) is not REAL["datetime"]
    encoded = msgspec.json.encode(
        {"at": aware, "naive": dt.datetime.now(), "day": dt.date.today()},
        enc_hook=msgspec_enc_hook,
    )
    assert encoded == (
        b'{"at":"2021-06-01T12:00:00.500000Z","naive":"2021-06-01T12:00:00.500000",'
        b'"day":"2021-06-01"}'
    )
    assert msgspec.json.encode(aware, enc_hook=msgspec_enc_hook) == msgspec.json.encode(
        installed.now()
    )


def test_msgspec_enc_hook_refuses_other_types() -> None:
    with pytest.raises(TypeError, match="Encoding objects of type object is unsupported"):
        msgspec_enc_hook(object())
    with pytest.raises(TypeError, match="Encoding objects of type object is unsupported"):
        msgspec.json.encode(object(), enc_hook=msgspec_enc_hook)


def test_to_real_datetime_keeps_every_field(installed: FakeClock) -> None:
    fake = dt.datetime(2021, 11, 7, 1, 30, 0, 123_456, fold=1)
    assert type(fake) is not REAL["datetime"]
    real = to_real_datetime(fake)
    assert type(real) is REAL["datetime"]
    assert (real, real.fold, real.tzinfo) == (fake, 1, None)

    aware = dt.datetime.now(dt.timezone(dt.timedelta(hours=2)))
    real_aware = to_real_datetime(aware)
    assert type(real_aware) is REAL["datetime"]
    assert real_aware == aware
    assert real_aware.utcoffset() == dt.timedelta(hours=2)

    plain = REAL["datetime"](2020, 1, 1)
    assert to_real_datetime(plain) is plain


# -- install(): lifecycle -------------------------------------------------------------------


def test_install_restores_everything_on_exit(clock: FakeClock) -> None:
    with clock.install() as active:
        assert active is clock
        installed_inside = clock.installed
        assert time.sleep is not REAL["sleep"]
    assert installed_inside
    assert not clock.installed
    assert_process_restored()


def test_install_restores_everything_when_the_block_raises(clock: FakeClock) -> None:
    def sleep_then_fail() -> None:
        with clock.install():
            time.sleep(10)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        sleep_then_fail()
    assert not clock.installed
    assert_process_restored()
    assert clock.slept_ns == 10 * S


def test_a_lingering_patch_is_pointed_at_each_clock_and_restored_at_the_end() -> None:
    first = FakeClock(START_NS, MONO_START_NS)
    second = FakeClock(START_NS + 3600 * S, MONO_START_NS)
    with lingering():
        with first.install():
            assert time.time_ns() == START_NS
        # Between clocks the patch stays, reading real time: nothing is frozen.
        assert time.sleep is not REAL["sleep"]
        assert time.time() > 1_700_000_000
        assert dt.datetime.now(dt.timezone.utc).year >= 2025
        assert not freezegun.api.freeze_factories
        with second.install():
            assert time.time_ns() == START_NS + 3600 * S
            assert dt.datetime.now(dt.timezone.utc) == START_UTC + dt.timedelta(hours=1)
            time.sleep(5)
        assert second.slept_ns == 5 * S
        assert first.slept_ns == 0
    assert_process_restored()


def test_a_module_imported_while_lingering_reads_the_next_clock() -> None:
    first = FakeClock(START_NS, MONO_START_NS)
    second = FakeClock(START_NS + 3600 * S, MONO_START_NS)
    probe = types.ModuleType("clock_probe_imported_while_lingering")
    try:
        with lingering():
            with first.install():
                pass
            # Imported between two replays, it takes the real date class then in place.
            probe.datetime = dt.datetime  # type: ignore[attr-defined]
            sys.modules[probe.__name__] = probe
            assert probe.datetime is REAL["datetime"]  # type: ignore[attr-defined]
            with second.install():
                now = probe.datetime.now(dt.timezone.utc)  # type: ignore[attr-defined]
                assert now == START_UTC + dt.timedelta(hours=1)
        assert probe.datetime is REAL["datetime"]  # type: ignore[attr-defined]
        assert_process_restored()
    finally:
        sys.modules.pop(probe.__name__, None)


def test_lingering_without_a_clock_changes_nothing() -> None:
    with lingering():
        assert time.sleep is REAL["sleep"]
    assert_process_restored()


def test_nested_install_is_a_usage_error(clock: FakeClock) -> None:
    other = FakeClock(START_NS)
    with clock.install():
        with pytest.raises(UsageError, match="a FakeClock is already installed; "):
            clock.install()
        with pytest.raises(UsageError, match="a FakeClock is already installed; "):
            other.install()
        # The failed attempts left the first installation working.
        time.sleep(1)
        assert clock.slept_ns == 1 * S
        assert other.slept_ns == 0
    assert_process_restored()


def test_install_inside_freeze_time_is_a_usage_error(clock: FakeClock) -> None:
    with freezegun.freeze_time("2001-01-01"), pytest.raises(UsageError, match="freeze_time"):
        clock.install()
    assert_process_restored()


def test_install_and_uninstall_without_with(clock: FakeClock) -> None:
    clock.install()
    try:
        assert time.time() == clock.time()
    finally:
        clock.uninstall()
    assert_process_restored()
    with pytest.raises(UsageError, match="not installed"):
        clock.uninstall()


def test_uninstall_inside_the_block_is_fine(clock: FakeClock) -> None:
    with clock.install():
        clock.uninstall()
        assert time.sleep is REAL["sleep"]
    assert_process_restored()


def test_clocks_can_be_installed_one_after_another(clock: FakeClock) -> None:
    with clock.install():
        time.sleep(1)
    later = FakeClock(START_NS + 100 * S)
    with later.install():
        assert time.time() == 1_622_548_900.5
        time.sleep(1)
    assert (clock.slept_ns, later.slept_ns) == (1 * S, 1 * S)
    assert_process_restored()


def test_real_clock_imported_under_freeze_time_is_still_real() -> None:
    import subprocess

    code = (
        "import freezegun, time\n"
        "with freezegun.freeze_time('2001-01-01'):\n"
        "    from sessiontape._time import RealClock, to_real_datetime\n"
        "    import datetime\n"
        "    real = RealClock()\n"
        "    assert real.now().year >= 2024, real.now()\n"
        "    assert real.time() > 1_700_000_000\n"
        "    assert type(real.now()).__module__ == 'datetime'\n"
        "    assert type(to_real_datetime(datetime.datetime.now())).__module__ == 'datetime'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
