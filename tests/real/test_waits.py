"""Waits, polls, kills and timeouts of real processes, replayed as recorded, never hanging.

Each program runs under recording in one directory and under replay in another (issue 19,
defects 2, 3, 5 and 7). Where a program drives its process differently on replay than it
did when recording, replay must say so in the report and raise within the guard rather
than hang: the guard tests shorten it to one second (``GUARD_SECONDS``, ``STALL_SECONDS``)
and run every program in a bounded thread, so that a regression fails instead of hanging
the suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from subprocess import PIPE, Popen
from typing import Any
from unittest import mock

import pytest

import sessiontape
from sessiontape import MismatchKind, UsageError
from sessiontape.boundaries._popen import _fake, _pump

from .conftest import PY, RoundTrip

#: Real seconds a program under test may take before the test calls it hung.
BOUND = 60.0


def bounded(program: Callable[[Path], Any]) -> Callable[[Path], Any]:
    """``program`` run in a thread of its own, joined within :data:`BOUND` seconds (the same
    when recording and replaying, so its worker is named alike both times)."""

    def run(d: Path) -> Any:
        results: list[Any] = []
        errors: list[BaseException] = []

        def target() -> None:
            try:
                results.append(program(d))
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(BOUND)
        assert not thread.is_alive(), f"{program.__name__} hung for {BOUND:g} s"
        if errors:
            raise errors[0]
        return results[0]

    run.__name__ = program.__name__
    return run


def replaying(d: Path) -> bool:
    """Whether the program runs under replay (``round_trip`` replays in ``now``)."""
    return d.name == "now"


def check_same(trip: RoundTrip) -> None:
    assert trip.replayed == trip.recorded
    assert trip.spawned_on_replay == 0
    assert trip.report.ok, trip.report.mismatches


@pytest.fixture
def short_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fake, "GUARD_SECONDS", 1.0)
    monkeypatch.setattr(_pump, "STALL_SECONDS", 1.0)


# -- replayed as recorded --------------------------------------------------------------------


def p_communicate_after_a_timeout(d: Path) -> Any:
    proc = Popen([PY, "-c", "import time; time.sleep(1); print('done')"], stdout=PIPE)
    try:
        proc.communicate(timeout=0.3)
        first = "returned"
    except subprocess.TimeoutExpired:
        first = "TimeoutExpired"
    return first, proc.communicate(), proc.returncode


def p_wait_timeout_no_pipes(d: Path) -> Any:
    proc = Popen([PY, "-c", "import time; time.sleep(0.3)"])
    try:
        first: Any = proc.wait(timeout=0.0001)
    except subprocess.TimeoutExpired as exc:
        first = ("TimeoutExpired", exc.timeout)
    return first, proc.wait()


def p_kill_from_a_timer_while_waiting(d: Path) -> Any:
    proc = Popen([PY, "-c", "import time; time.sleep(30)"])
    threading.Timer(0.2, proc.kill).start()
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        return "TimeoutExpired"


def p_polls_waits_and_a_kill(d: Path) -> Any:
    proc = Popen([PY, "-c", "import time; time.sleep(30)"], stdout=PIPE)
    seen: list[Any] = [proc.poll(), proc.poll()]
    for timeout in (0.01, 0.02):
        try:
            seen.append(proc.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            seen.append("TimeoutExpired")
    seen.append(proc.poll())
    proc.kill()
    seen += [proc.communicate(), proc.returncode, proc.poll()]
    return seen


def p_communicate_timeouts_then_kill(d: Path) -> Any:
    proc = Popen([PY, "-c", "print('started', flush=True); import time; time.sleep(30)"],
                 stdout=PIPE)  # fmt: skip
    seen: list[Any] = []
    for _ in range(2):
        try:
            proc.communicate(timeout=0.2)
        except subprocess.TimeoutExpired as exc:
            seen.append(("TimeoutExpired", exc.timeout))
    proc.kill()
    seen += [proc.communicate(), proc.returncode]
    return seen


def p_mock_patched_stdin(d: Path) -> Any:
    proc = Popen([PY, "-c", "print('hi')"], stdin=PIPE, stdout=PIPE)
    # No stream touched before the patch (on replay, they are not made yet).
    with mock.patch.object(proc, "stdin") as stand_in:
        out = proc.stdout.read()  # type: ignore[union-attr]
        during = proc.stdin is stand_in
    assert proc.stdin is not None
    proc.stdin.close()  # the real stream again: closing it works, on replay too
    return out, during, type(proc.stdin).__name__, proc.stdin.closed, proc.wait()


def p_mock_patched_stdin_communicate(d: Path) -> Any:
    proc = Popen([PY, "-c", "print('hi')"], stdin=PIPE, stdout=PIPE)
    with mock.patch.object(proc, "stdin"):
        out = proc.communicate()
    assert proc.stdin is not None
    proc.stdin.close()
    return out, type(proc.stdin).__name__, proc.returncode


async def _asyncio_kill_and_terminate() -> Any:
    seen = []
    for stop in ("kill", "terminate", "send_signal"):
        proc = await asyncio.create_subprocess_exec(
            PY, "-c", "import time; time.sleep(30)", stdout=PIPE
        )
        loop = asyncio.get_running_loop()
        if stop == "send_signal":
            loop.call_later(0.1, proc.send_signal, 2)  # SIGINT: KeyboardInterrupt, code 1
        else:
            loop.call_later(0.1, getattr(proc, stop))
        seen.append((await proc.communicate(), proc.returncode))
    return seen


def p_asyncio_kill_and_terminate(d: Path) -> Any:
    # From 3.13 asyncio's transport signals with os.kill, not through Popen.
    return asyncio.run(_asyncio_kill_and_terminate())


def p_terminate_after_the_output_ended(d: Path) -> Any:
    # CPython's test_pipe_cloexec_real_tools: the program reads the output to its end, then
    # terminate()s a process that is exiting by itself (here it ignores the signal, so the
    # race always goes the same way). Replay must not hold the output back for the signal.
    code = (
        "import os, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('out', flush=True); sys.stdout.close(); os.close(1); time.sleep(0.3)"
    )
    proc = Popen([PY, "-c", code], stdout=PIPE)
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.terminate()
    return out, proc.wait(), proc.poll()


AS_RECORDED: dict[str, Callable[[Path], Any]] = {
    "asyncio_kill_and_terminate": p_asyncio_kill_and_terminate,
    "communicate_after_a_timeout": p_communicate_after_a_timeout,
    "wait_timeout_no_pipes": p_wait_timeout_no_pipes,
    "kill_from_a_timer_while_waiting": p_kill_from_a_timer_while_waiting,
    "polls_waits_and_a_kill": p_polls_waits_and_a_kill,
    "communicate_timeouts_then_kill": p_communicate_timeouts_then_kill,
    "mock_patched_stdin": p_mock_patched_stdin,
    "mock_patched_stdin_communicate": p_mock_patched_stdin_communicate,
    "terminate_after_the_output_ended": p_terminate_after_the_output_ended,
}


@pytest.mark.parametrize("name", list(AS_RECORDED))
@pytest.mark.usefixtures("interruptible")  # asyncio_kill_and_terminate's SIGINT
def test_replays_as_recorded(name: str, round_trip: Callable[..., RoundTrip]) -> None:
    check_same(round_trip(bounded(AS_RECORDED[name])))


@pytest.mark.usefixtures("interruptible")  # the child's SIGINT ends it, at once
def test_asyncio_signals_are_recorded(round_trip: Callable[..., RoundTrip]) -> None:
    trip = round_trip(bounded(p_asyncio_kill_and_terminate))
    assert [entry.signals for entry in trip.processes] == [[9], [15], [2]]
    # Each ended the output (end-of-file came with it): none is counted as after it.
    assert [entry.signals_after_eof for entry in trip.processes] == [0, 0, 0]
    check_same(trip)


def test_a_signal_after_the_output_ended_is_recorded_as_such(
    round_trip: Callable[..., RoundTrip],
) -> None:
    trip = round_trip(bounded(p_terminate_after_the_output_ended))
    assert trip.recorded == (b"out\n", 0, 0)
    (entry,) = trip.processes
    assert (entry.signals, entry.signals_after_eof, entry.returncode) == ([15], 1, 0)


def test_the_recorded_waits_are_what_the_program_saw(
    round_trip: Callable[..., RoundTrip],
) -> None:
    trip = round_trip(bounded(p_polls_waits_and_a_kill))
    (entry,) = trip.processes
    assert trip.recorded[:5] == [None, None, "TimeoutExpired", "TimeoutExpired", None]
    # poll() twice, wait(timeout) twice, poll() once more, kill()'s own poll: 6 found it
    # running, 2 of them wait(timeout) calls.
    assert (entry.polls, entry.wait_timeouts, entry.signals) == (6, 2, [9])


def _printing_on_cue(first: bool) -> Any:
    """A program whose child prints its line at once (``first``) or on the program's cue
    (a byte through a FIFO in the work folder); the program's ``communicate(timeout=...)``
    times out either way, having read the line or not."""

    def program(d: Path) -> Any:
        cue = d / "cue"
        os.mkfifo(cue)
        ready = os.open(cue, os.O_RDWR)  # never blocks; the child's open then neither
        wait = f"open({str(cue)!r}, 'rb').read(1); "
        line = "os.write(1, b'partial\\n'); "  # one write: the line is all there or not
        code = f"import os, time; {line + wait if first else wait + line}time.sleep(30)"
        proc = Popen([PY, "-c", code], stdout=PIPE)
        try:
            if first:  # the line is there to be read before the timeout
                assert select.select([proc.stdout], [], [], BOUND)[0]
            try:
                proc.communicate(timeout=0.2)
            except subprocess.TimeoutExpired as exc:
                caught = exc.output
            os.write(ready, b"x")
            if not first and not replaying(d):  # the line comes now, after the timeout
                # (Replay serves it before the timeout, the exception carrying none of it
                # as recorded; it waits in communicate()'s buffer for the next call.)
                assert select.select([proc.stdout], [], [], BOUND)[0]
            proc.kill()
            out, _ = proc.communicate()
            return caught, out, proc.returncode
        finally:
            os.close(ready)

    return program


@pytest.mark.parametrize(("first", "caught", "read"), [(False, None, 0), (True, b"partial\n", 8)])
def test_a_timed_out_communicate_carries_what_it_had_read_when_recorded(
    round_trip: Callable[..., RoundTrip], first: bool, caught: bytes | None, read: int
) -> None:
    # Recorded, the line came after the timeout (or before it); replay delivers the output
    # before it times out, and the exception must still carry only what was read then.
    trip = round_trip(bounded(_printing_on_cue(first)))
    assert trip.recorded == (caught, b"partial\n", -9)
    check_same(trip)
    (entry,) = trip.processes
    assert entry.read_at_timeouts == [[read, 0]]


def test_a_tape_without_wait_timeouts_replays_as_before(tmp_path: Path, spawns: Any) -> None:
    # A tape from before wait(timeout) was counted apart: polls counts both kinds.
    cassette = tmp_path / "old.jsonl"
    with sessiontape.record(cassette) as tape, tape.patch_subprocess():
        recorded = p_wait_timeout_no_pipes(tmp_path)
    lines = cassette.read_text().splitlines()
    lines = [line.replace(',"wait_timeouts":1', "") for line in lines]
    assert not any("wait_timeouts" in line for line in lines)
    cassette.write_text("\n".join(lines) + "\n")
    with spawns.counting() as counted, sessiontape.replay(cassette) as tape:
        with tape.patch_subprocess():
            replayed = p_wait_timeout_no_pipes(tmp_path)
        assert tape.finish().ok
    assert replayed == recorded
    assert counted.started == []


# -- where replay cannot follow the tape: a mismatch, within the guard ----------------------


def guarded_mismatch(trip: RoundTrip, what: str) -> None:
    assert trip.spawned_on_replay == 0
    assert not trip.report.ok
    kinds = [m.kind for m in trip.report.mismatches]
    assert MismatchKind.ERROR_MISMATCH in kinds, trip.report.mismatches
    found = [m for m in trip.report.mismatches if m.kind is MismatchKind.ERROR_MISMATCH]
    # (A pump that sees all the output read may report that the kill never came too.)
    assert any(what in m.message and "would block" in m.message for m in found), found


def p_the_kill_does_not_come(d: Path) -> Any:
    # Pump path: recorded, another thread killed the process while the program waited
    # (without reading the output it left in the pipe). The kill is sent once the output is
    # there to be read (a process killed before it printed would leave none).
    proc = Popen([PY, "-c", "print('up', flush=True); import time; time.sleep(30)"],
                 stdout=PIPE)  # fmt: skip
    killer = None
    if not replaying(d):
        up, _, _ = select.select([proc.stdout], [], [], BOUND)
        assert up, "the process printed nothing"
        killer = threading.Thread(target=proc.kill)
        killer.start()
    try:
        return proc.wait()
    except UsageError as exc:
        return f"UsageError: {exc}"
    finally:
        if killer is not None:
            killer.join(BOUND)


def p_the_kill_does_not_come_wait_timeout(d: Path) -> Any:
    # No pipes: the pump serves no stream, only the end of the process.
    proc = Popen([PY, "-c", "import time; time.sleep(30)"])
    if not replaying(d):
        threading.Timer(0.2, proc.kill).start()
    try:
        return proc.wait(timeout=20)
    except UsageError as exc:
        return f"UsageError: {exc}"


def p_read_while_the_kill_does_not_come(d: Path) -> Any:
    # Read path: recorded, the program read the output to its end, which another thread's
    # kill brought (sent once the process is up: its first line was read); on replay no
    # kill comes, and the read must still return.
    proc = Popen([PY, "-c", "print('up', flush=True); import time; time.sleep(30)"],
                 stdout=PIPE)  # fmt: skip
    assert proc.stdout is not None
    first = proc.stdout.readline()
    killer = threading.Thread(target=proc.kill)
    if not replaying(d):
        killer.start()
    out = first + proc.stdout.read()
    if not replaying(d):
        killer.join(BOUND)
    return out, proc.wait()


def p_fewer_timeouts_than_recorded(d: Path) -> Any:
    # Timeouts: recorded, communicate(timeout=) timed out twice before the process ended;
    # on replay the program tries once, then communicate()s, which would wait for ever.
    proc = Popen([PY, "-c", "import time; time.sleep(0.8); print('done')"], stdout=PIPE)
    for _ in range(1 if replaying(d) else 2):
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=0.2)
    try:
        return proc.communicate()
    except UsageError as exc:
        return f"UsageError: {exc}"


def p_conversation_stalls(d: Path) -> Any:
    # Conversations: recorded, the program wrote a second line after reading the first
    # answer; on replay it does not, and reads on: the stall guard ends the output.
    code = "import sys\nfor line in sys.stdin: print(line.strip().upper(), flush=True)"
    proc = Popen([PY, "-c", code], stdin=PIPE, stdout=PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b"one\n")
    proc.stdin.flush()
    first = proc.stdout.readline()
    if not replaying(d):
        proc.stdin.write(b"two\n")
        proc.stdin.flush()
        second = proc.stdout.readline()
        proc.stdin.close()
        return first, second, proc.stdout.read(), proc.wait()
    return first, proc.stdout.read(), proc.wait()


async def _asyncio_kill_does_not_come(d: Path) -> Any:
    proc = await asyncio.create_subprocess_exec(
        PY, "-c", "import time; time.sleep(30)", stdout=PIPE
    )
    if not replaying(d):
        asyncio.get_running_loop().call_later(0.2, proc.kill)
    try:
        return await proc.communicate()
    except UsageError as exc:
        proc.kill()  # ends the replayed process, so that its transport closes with it
        await proc.wait()
        return f"UsageError: {exc}"


def p_asyncio_kill_does_not_come(d: Path) -> Any:
    return asyncio.run(_asyncio_kill_does_not_come(d))


GUARDED = {
    "pump": (p_the_kill_does_not_come, "wait()"),
    "no_pipes": (p_the_kill_does_not_come_wait_timeout, "wait(timeout=20)"),
    "timeouts": (p_fewer_timeouts_than_recorded, "communicate()"),
    "asyncio": (p_asyncio_kill_does_not_come, "Process.communicate()"),
}


@pytest.mark.parametrize("path", list(GUARDED))
def test_a_wait_the_tape_cannot_answer_is_a_mismatch_within_the_guard(
    path: str, round_trip: Callable[..., RoundTrip], short_guard: None
) -> None:
    program, call = GUARDED[path]
    trip = round_trip(bounded(program))
    assert isinstance(trip.replayed, str)
    assert trip.replayed.startswith("UsageError: seq ")
    guarded_mismatch(trip, call)


def test_a_stalled_conversation_is_a_mismatch_within_the_guard(
    round_trip: Callable[..., RoundTrip], short_guard: None
) -> None:
    trip = round_trip(bounded(p_conversation_stalls))
    assert trip.recorded == (b"ONE\n", b"TWO\n", b"", 0)
    assert trip.replayed[0] == b"ONE\n"
    assert trip.spawned_on_replay == 0
    assert not trip.report.ok
    assert any("wrote nothing to stdin" in m.message for m in trip.report.mismatches)


def test_a_read_the_recorded_kill_ended_returns_within_the_guard(
    round_trip: Callable[..., RoundTrip], short_guard: None
) -> None:
    trip = round_trip(bounded(p_read_while_the_kill_does_not_come))
    assert trip.recorded == (b"up\n", -9)
    assert trip.replayed == trip.recorded  # the output, then the recorded end
    assert trip.spawned_on_replay == 0
    assert not trip.report.ok
    (found,) = [m for m in trip.report.mismatches if m.kind is MismatchKind.ERROR_MISMATCH]
    assert "never came" in found.message


def test_no_pump_returns_at_once(round_trip: Callable[..., RoundTrip]) -> None:
    # A process that ended by itself and whose pipes nobody touched: no pump, no thread.
    def program(d: Path) -> Any:
        proc = Popen([PY, "-c", "print('x')"], stdout=PIPE)
        return proc.wait(), proc.poll(), proc.communicate(timeout=5)

    check_same(round_trip(bounded(program)))


# -- the dead worker's report -----------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_worker_is_named_by_its_worker_and_its_calls(
    round_trip: Callable[..., RoundTrip],
) -> None:
    def program(d: Path) -> Any:
        def work() -> None:
            with sessiontape.worker("w1"):
                for i in range(3 if replaying(d) else 2):
                    subprocess.run([PY, "-c", f"print({i})"], capture_output=True)

        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        return None

    trip = round_trip(program)
    deaths = [m for m in trip.report.mismatches if m.kind is MismatchKind.APPLICATION_ERROR]
    assert len(deaths) == 1
    (death,) = deaths
    assert death.worker == "w1"
    assert death.seq == trip.processes[-1].seq
    assert f"worker 'w1' died after seq {death.seq}" in death.message
    assert "before its first call" not in death.message


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("the pipes and signals here are POSIX's")


# -- a request written in part, under the virtual clock ----------------------------------------

LINES = "import sys\nfor line in sys.stdin: print(line.strip().upper(), flush=True)"


async def _ask_twice(second: bytes) -> list[bytes]:
    pipe = asyncio.subprocess.PIPE
    proc = await asyncio.create_subprocess_exec(PY, "-c", LINES, stdin=pipe, stdout=pipe)
    assert proc.stdin is not None
    assert proc.stdout is not None
    answers = []
    for request in (b"one\n", second):
        proc.stdin.write(request)
        await proc.stdin.drain()
        try:
            answers.append(await asyncio.wait_for(proc.stdout.readline(), 60))
        except asyncio.TimeoutError:
            answers.append(b"timed out")
    proc.stdin.close()
    await proc.wait()
    return answers


def p_asks_in_part_and_waits(d: Path) -> Any:
    # On replay the second request is written in part: its recorded answer waits for the rest.
    return asyncio.run(_ask_twice(b"tw" if replaying(d) else b"two\n"))


def test_a_request_written_in_part_waits_in_real_time_not_to_a_virtual_timeout(
    round_trip: Callable[..., RoundTrip], short_guard: None
) -> None:
    trip = round_trip(p_asks_in_part_and_waits)
    assert trip.recorded == [b"ONE\n", b"TWO\n"]
    # Not "timed out": the loop did not jump its 60 s timer while the pump held the
    # answer; the stall ended the output, so the read returned.
    assert trip.replayed == [b"ONE\n", b""]
    (mismatch,) = trip.report.mismatches
    assert "stdin chunk 2" in mismatch.message
    assert "wrote nothing to stdin" in mismatch.message


def p_leaves_a_request_unanswered(d: Path) -> Any:
    proc = Popen([PY, "-c", LINES], stdin=PIPE, stdout=PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b"one\n")
    proc.stdin.flush()
    first = proc.stdout.readline()
    proc.stdin.write(b"tw" if replaying(d) else b"two\n")
    proc.stdin.flush()
    if not replaying(d):
        proc.stdout.readline()
        proc.stdin.close()
        proc.wait()
    return first  # on replay, the block ends with the second request unanswered


def test_a_request_left_unanswered_when_interception_ends_is_reported(
    round_trip: Callable[..., RoundTrip],
) -> None:
    trip = round_trip(p_leaves_a_request_unanswered)
    assert trip.replayed == trip.recorded == b"ONE\n"
    (mismatch,) = [m for m in trip.report.mismatches if "nothing answered it" in m.message]
    assert mismatch.kind is MismatchKind.ARGUMENT_MISMATCH
    assert "stdin chunk 2" in mismatch.message
