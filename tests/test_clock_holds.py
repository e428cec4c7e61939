"""The virtual clock's holds: an asyncio loop never jumps past work in flight.

Under ``FakeClock.install()`` a loop with nothing to do jumps virtual time to its next
timer. Work done by another thread for the loop (an executor call, asyncio.run's join of
the default executor, a replay-side producer such as a replayed process's pump) must make
it wait in real time instead. These tests run that work while other threads keep the
interpreter busy, many times over, so that a thread scheduled late (a loaded machine)
cannot make a loop jump: each would fail at once without its hold.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import warnings
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sessiontape.replayer import IN_FLIGHT, FakeClock

S = 1_000_000_000
START_NS = 1_622_548_800 * S
MONO_START_NS = 5_000 * S
ROUNDS = 20


@pytest.fixture
def installed() -> Iterator[FakeClock]:
    with FakeClock(START_NS, MONO_START_NS).install() as clock:
        yield clock


@contextmanager
def busy_threads(count: int = 2) -> Iterator[None]:
    """Threads that keep the interpreter busy until the block ends (they delay every other
    thread, as a loaded machine does)."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    threads = [threading.Thread(target=spin, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def run(main: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """``asyncio.run(main())`` in a fresh thread, bounded."""
    results: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            results.append(asyncio.run(main()))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "asyncio.run hung under FakeClock.install()"
    if errors:
        raise errors[0]
    return results[0]


def real_wait(seconds: float) -> None:
    threading.Event().wait(seconds)  # threading keeps real time under install


class Producer:
    """A replay-side thread that writes one byte into a pipe the loop reads, after a
    little real work: busy from its start to its write (as a pump is while serving)."""

    def __init__(self, fd: int, work: float) -> None:
        self.fd = fd
        self.work = work
        self.working = True

    def busy(self) -> bool:
        return self.working

    def start(self) -> None:
        IN_FLIGHT.add(self)
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        real_wait(self.work)
        os.write(self.fd, b"x")
        IN_FLIGHT.idle()
        self.working = False
        IN_FLIGHT.discard(self)


def test_a_busy_producer_keeps_the_loop_from_jumping(installed: FakeClock) -> None:
    async def main() -> bytes:
        loop = asyncio.get_running_loop()
        read, write = os.pipe()
        got: asyncio.Future[bytes] = loop.create_future()
        loop.add_reader(read, lambda: got.done() or got.set_result(os.read(read, 1)))
        try:
            Producer(write, 0.02).start()
            return await asyncio.wait_for(got, timeout=5)
        finally:
            loop.remove_reader(read)
            os.close(read)
            os.close(write)

    with busy_threads():
        for _ in range(ROUNDS):
            assert run(main) == b"x"
    assert installed.monotonic_ns() < MONO_START_NS + 5 * S


def test_an_idle_producer_lets_the_loop_jump(installed: FakeClock) -> None:
    class Idle:
        def busy(self) -> bool:
            return False

    idle = Idle()
    IN_FLIGHT.add(idle)
    try:

        async def main() -> None:
            await asyncio.sleep(3600)

        run(main)
    finally:
        IN_FLIGHT.discard(idle)
    assert installed.monotonic_ns() >= MONO_START_NS + 3600 * S


def test_executor_calls_under_load(installed: FakeClock) -> None:
    def real_work() -> str:
        real_wait(0.02)
        return "worked"

    async def main() -> str:
        loop = asyncio.get_running_loop()
        return await asyncio.wait_for(loop.run_in_executor(None, real_work), timeout=5)

    with busy_threads():
        for _ in range(ROUNDS):
            assert run(main) == "worked"
    assert not installed.held
    assert installed.monotonic_ns() < MONO_START_NS + 5 * S


def test_asyncio_run_joins_the_default_executor_in_real_time(installed: FakeClock) -> None:
    # asyncio.run() ends by joining the default executor's threads; from Python 3.12 it
    # waits for the join under a 300 s timer, which a loop on virtual time would jump to
    # (with a RuntimeWarning) while a thread of the executor is still finishing its work.
    async def main() -> None:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        asyncio.get_running_loop().set_default_executor(pool)
        pool.submit(real_wait, 0.2)  # not through run_in_executor: nothing holds for it

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with busy_threads():
            run(main)
    assert installed.monotonic_ns() < MONO_START_NS + 300 * S
    assert not installed.held


def test_a_pump_holds_the_loop_until_its_exit_callbacks_ran(installed: FakeClock) -> None:
    # A replayed process's pump ends its output, then tells asyncio's watcher the process
    # exited: the loop must wait for that call too, however long it takes to come.
    from sessiontape.boundaries._popen._pump import Pump

    async def main() -> str:
        loop = asyncio.get_running_loop()
        exited: asyncio.Future[str] = loop.create_future()
        stdin_r, stdin_w = os.pipe()
        out_r, out_w = os.pipe()

        def on_finish() -> None:
            real_wait(0.2)  # a slow watcher callback
            loop.call_soon_threadsafe(exited.set_result, "exited")

        pump = Pump(
            [("stdin", "x"), ("stdout", "y")],
            stdin=stdin_r,
            outputs={"stdout": out_w, "stderr": None},
            decode=lambda index, payload: str(payload).encode(),
            ends_by_itself=True,
            name="test",
        )
        pump.on_finish = on_finish
        pump.start()  # gated on the stdin: a thread waits for it
        try:
            os.write(stdin_w, b"x")
            os.close(stdin_w)
            return await asyncio.wait_for(exited, timeout=5)
        finally:
            pump.stop(5)
            os.close(out_r)

    with busy_threads():
        for _ in range(5):
            assert run(main) == "exited"
    assert installed.monotonic_ns() < MONO_START_NS + 5 * S
