"""Recording is transparent: the pipe relays never keep an end open that the program
would have seen close, nor log bytes the other side never received."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import select
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from subprocess import PIPE
from typing import Any

import pytest

import sessiontape

from .conftest import PY, RoundTrip


def _relays() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("sessiontape-relay")]


def _stdin_events_after_exit() -> int:
    """What ``poll()`` says of a dead child's stdin, once the program knows it is dead."""
    proc = subprocess.Popen([PY, "-c", "pass"], stdin=PIPE)
    proc.wait()
    assert proc.stdin is not None
    poller = select.poll()
    poller.register(proc.stdin, select.POLLOUT)
    try:
        (_, events), *_ = poller.poll(1000)
    finally:
        proc.stdin.close()
    return events


def test_a_dead_childs_stdin_reports_its_reader_gone_while_recording(tmp_path: Path) -> None:
    plain = _stdin_events_after_exit()
    assert plain & select.POLLERR  # what the kernel says without sessiontape
    with sessiontape.record(tmp_path / "t.jsonl") as tape, tape.patch_subprocess():
        recorded = _stdin_events_after_exit()
        # and nothing of the relay is left once the program knows the child is gone
        assert _relays() == []
    assert recorded == plain


@pytest.mark.parametrize("held_after", ["close_relay", "relay_done"])
def test_a_stdin_relay_already_leaving_is_gone_once_the_program_knows_its_child_died(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held_after: str
) -> None:
    # The interleaving a loaded machine makes (issue 34): the child exits, its stdin relay
    # sees the reader gone and closes its ends, and is descheduled on its way out; the
    # program's wait() learns of the exit then, and must not return while the relay's
    # thread still runs. Here the relay is held at that point until it is joined.
    from sessiontape.boundaries._popen import _record

    joined = threading.Event()
    real_step = getattr(_record._Tracked, held_after)
    real_join = threading.Thread.join

    def held(self: Any, *args: Any) -> None:
        real_step(self, *args)
        if threading.current_thread().name.endswith("-stdin"):
            joined.wait(60)  # a hang's timeout: joining it sets the event at once

    def join(self: threading.Thread, timeout: float | None = None) -> None:
        if self.name.startswith("sessiontape-relay"):
            joined.set()
        real_join(self, timeout)

    monkeypatch.setattr(_record._Tracked, held_after, held)
    monkeypatch.setattr(threading.Thread, "join", join)
    try:
        with sessiontape.record(tmp_path / "t.jsonl") as tape, tape.patch_subprocess():
            proc = subprocess.Popen([PY, "-c", "pass"], stdin=PIPE)
            assert proc.stdin is not None
            poller = select.poll()
            poller.register(proc.stdin, 0)  # woken by the relay closing its ends only
            ((_, events),) = poller.poll(60_000)
            assert events & select.POLLERR
            proc.wait()
            left = _relays()
            proc.stdin.close()
    finally:
        joined.set()
    assert left == []


def test_writing_to_a_dead_childs_stdin_breaks_the_pipe_while_recording(tmp_path: Path) -> None:
    with sessiontape.record(tmp_path / "t.jsonl") as tape, tape.patch_subprocess():
        proc = subprocess.Popen([PY, "-c", "pass"], stdin=PIPE)
        proc.wait()
        assert proc.stdin is not None
        with pytest.raises(BrokenPipeError):
            proc.stdin.write(b"x" * 100_000)  # past the buffer: written at once
        proc.stdin.close()
    (call,) = sessiontape.load(tmp_path / "t.jsonl").calls
    # The child read nothing, so the tape says nothing was written to it.
    assert call.input in (None, "")


def test_the_recorded_stdin_is_what_the_child_read(tmp_path: Path) -> None:
    # The child reads 5 bytes and exits; the program goes on writing until the pipe breaks.
    code = "import os, sys; sys.stdout.write(os.read(0, 5).decode())"
    with sessiontape.record(tmp_path / "t.jsonl") as tape, tape.patch_subprocess():
        proc = subprocess.Popen([PY, "-c", code], stdin=PIPE, stdout=PIPE)
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(b"hello")
        proc.stdin.flush()
        seen = proc.stdout.read()
        proc.wait()
        with pytest.raises(BrokenPipeError):
            proc.stdin.write(b"more bytes the child never reads\n" * 10_000)
        proc.stdout.close()
        proc.stdin.close()
    (call,) = sessiontape.load(tmp_path / "t.jsonl").calls
    assert seen == b"hello"
    assert call.input == "hello"


async def _cancel_right_after_start(loop: asyncio.AbstractEventLoop) -> None:
    # CPython's test_asyncio.test_subprocess test_cancel_post_init: the transport is
    # closed (the child killed) while it is being made, and awaits the child's end.
    sleeper = [PY, "-c", "import time; time.sleep(3600)"]
    coro = loop.subprocess_exec(asyncio.SubprocessProtocol, *sleeper)
    task = loop.create_task(coro)
    loop.call_soon(task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _cancel_post_init() -> None:
    loop = asyncio.new_event_loop()
    try:
        # A hang would be for ever: stop the loop after 20 s so that it shows as an error.
        loop.call_later(20, loop.stop)
        loop.run_until_complete(_cancel_right_after_start(loop))
    finally:
        loop.close()


def test_an_asyncio_subprocess_cancelled_after_start_ends_while_recording(tmp_path: Path) -> None:
    _cancel_post_init()  # plain: returns at once
    with sessiontape.record(tmp_path / "t.jsonl") as tape, tape.patch_subprocess():
        _cancel_post_init()
    (call,) = sessiontape.load(tmp_path / "t.jsonl").calls
    assert call.returncode == -9


def _our_thread_objects() -> list[threading.Thread]:
    gc.collect()
    return [
        o
        for o in gc.get_objects()
        # type(), not isinstance(): isinstance() reads __class__, which some objects
        # compute (openai's lazy pandas proxy imports pandas, mid-walk, and crashes).
        if issubclass(type(o), threading.Thread) and o.name.startswith("sessiontape-")
    ]


def _join_ours() -> None:
    for thread in _our_thread_objects():
        if thread.ident is not None:  # started
            thread.join(60)


def _our_threads_left() -> list[str]:
    """The sessiontape threads the program can still see, running or as objects (CPython
    3.10's test support counts both, ``threading._dangling``), once those still running
    have ended. A thread that has already let the program go (an output relay after the
    end of file) may still be returning: each is joined (a minute, which only a hang
    reaches), found as an object rather than in ``threading.enumerate()``: one past
    ``Thread._delete`` has left that table, and the interpreter holds its object until
    its C frame is gone, which is what ``join()`` waits for (issue 34)."""
    _join_ours()
    return sorted(thread.name for thread in _our_thread_objects())


async def _asyncio_communicate() -> tuple[bytes, int | None]:
    proc = await asyncio.create_subprocess_exec(
        PY, "-c", "import sys; print(sys.stdin.read().upper())", stdin=PIPE, stdout=PIPE
    )
    out, _ = await proc.communicate(b"abc")
    return out, proc.returncode


def _drive_processes(d: Path) -> tuple[object, ...]:
    code = "import sys\nfor line in sys.stdin: print(line.strip().upper(), flush=True)"
    proc = subprocess.Popen([PY, "-c", code], stdin=PIPE, stdout=PIPE, stderr=PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b"one\n")
    proc.stdin.flush()
    first = proc.stdout.readline()  # a conversation: replayed by a pump thread
    rest = proc.communicate(b"two\n")
    done = subprocess.run([PY, "-c", "print('x')"], capture_output=True, check=True)
    aio = asyncio.run(_asyncio_communicate())
    return first, rest, proc.returncode, done.stdout, aio, _our_threads_left()


def test_no_thread_of_ours_outlives_the_processes_it_served(
    round_trip: Callable[..., RoundTrip],
) -> None:
    # Relays (recording), pumps and asyncio's wait guards (replay) end with the process
    # they serve, and nothing keeps their objects: a program that counts the threads it
    # can see after its processes ended counts none of ours.
    trip = round_trip(_drive_processes)
    assert trip.recorded[:-1] == (b"ONE\n", (b"TWO\n", b""), 0, b"x\n", (b"ABC\n", 0))
    assert trip.recorded[-1] == []
    assert trip.replayed == trip.recorded
    assert trip.spawned_on_replay == 0
    assert trip.report.ok, trip.report.render()


def test_a_relay_descheduled_past_threadings_table_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The interleaving of issue 34's second failure: an output relay has passed on the end
    # of file and left threading's table (``Thread._delete``), and is descheduled before
    # its C frame lets go of its object. The count above must wait for it, not miss it in
    # ``threading.enumerate()`` and then find its object. Here it is held at that point
    # until it is joined.
    joined = threading.Event()
    real_delete = threading.Thread._delete  # type: ignore[attr-defined]
    real_join = threading.Thread.join

    def delete(self: threading.Thread) -> None:
        real_delete(self)
        if self.name.startswith("sessiontape-relay") and self.name.endswith("-stdout"):
            joined.wait(60)  # a hang's timeout: joining it sets the event at once

    def join(self: threading.Thread, timeout: float | None = None) -> None:
        if self.name.startswith("sessiontape-relay"):
            joined.set()
        real_join(self, timeout)

    monkeypatch.setattr(threading.Thread, "_delete", delete)
    monkeypatch.setattr(threading.Thread, "join", join)
    try:
        with sessiontape.record(tmp_path / "t.jsonl") as tape, tape.patch_subprocess():
            done = subprocess.run([PY, "-c", "print('x')"], stdout=PIPE, check=True)
            left = _our_threads_left()
    finally:
        joined.set()
    assert done.stdout == b"x\n"
    assert left == []
