"""asyncio waits around a replayed subprocess under the virtual clock (issue 19, defect 4).

With ``patch_time`` (the default) an event loop that finds nothing to do jumps virtual time
to its next timer. A replayed process's output comes from a pump thread: the loop must
wait for it in real time, however late the thread is scheduled, instead of jumping to an
``asyncio.wait_for`` timeout. Each test replays the same tape many times while other
threads compete for the interpreter (what a loaded machine does to the pump), and every
replay must return what the recording did.
"""

from __future__ import annotations

import asyncio
import threading
from asyncio.subprocess import PIPE
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import sessiontape

from .conftest import PY, Spawns

REPLAYS = 12


@contextmanager
def busy_threads(count: int = 2) -> Iterator[None]:
    """Threads that keep the interpreter busy (and so delay every other thread, the pump
    among them) until the block ends."""
    stop = threading.Event()

    def spin() -> None:
        n = 0
        while not stop.is_set():
            n += 1

    threads = [threading.Thread(target=spin, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join()


async def _cat() -> Any:
    proc = await asyncio.create_subprocess_exec("cat", stdin=PIPE, stdout=PIPE)
    return await proc.communicate(b"some data"), proc.returncode


async def _conversation() -> Any:
    code = "import sys\nfor line in sys.stdin: print(line.strip().upper(), flush=True)"
    proc = await asyncio.create_subprocess_exec(PY, "-c", code, stdin=PIPE, stdout=PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    seen = []
    for word in (b"one", b"two", b"three"):
        proc.stdin.write(word + b"\n")
        await proc.stdin.drain()
        seen.append(await proc.stdout.readline())
    proc.stdin.close()
    seen.append(await proc.wait())
    return seen


async def _big_output() -> Any:
    # More than a pipe holds: the pump writes it as the loop reads.
    proc = await asyncio.create_subprocess_exec(
        PY, "-c", "import sys; sys.stdout.write('x' * 300_000)", stdout=PIPE
    )
    out, _ = await proc.communicate()
    return len(out), proc.returncode


PROGRAMS: dict[str, Callable[[], Any]] = {
    "cat_communicate": _cat,
    "conversation": _conversation,
    "big_output": _big_output,
}


def run_bounded(program: Callable[[], Any]) -> Any:
    """``asyncio.run(asyncio.wait_for(program(), 60))``: a jump of the virtual clock past
    the 60 s while the process's output is in flight shows as ``TimeoutError``."""
    return asyncio.run(asyncio.wait_for(program(), 60))


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_asyncio_wait_for_around_a_replayed_process_under_load(name: str, tmp_path: Path) -> None:
    program = PROGRAMS[name]
    cassette = tmp_path / "then" / "t.jsonl"
    with sessiontape.record(cassette) as tape, tape.patch_subprocess():
        recorded = run_bounded(program)
    outcomes = []
    with busy_threads():
        for _ in range(REPLAYS):
            with (
                Spawns().counting() as spawned,
                sessiontape.replay(cassette) as tape,  # patch_time=True: the virtual clock
            ):
                with tape.patch_subprocess():
                    try:
                        replayed = run_bounded(program)
                    except TimeoutError as exc:  # asyncio.TimeoutError on 3.10
                        replayed = f"jumped past the timeout: {exc!r}"
                    except asyncio.TimeoutError as exc:
                        replayed = f"jumped past the timeout: {exc!r}"
                report = tape.finish()
            outcomes.append((replayed, report.ok, len(spawned.started)))
    assert outcomes == [(recorded, True, 0)] * REPLAYS
