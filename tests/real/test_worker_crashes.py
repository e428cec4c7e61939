"""A worker's crash is recorded, and replaying it passes when it reproduces.

Three real programs, each of whose workers run real processes: plain threads, a
``ThreadPoolExecutor`` whose futures' exceptions are not all read, and asyncio tasks.
Recorded with one worker crashing, each tape holds that crash as an ``error`` entry of the
worker (``origin`` thread, future or task) and a ``session_end``: the session went on.
The same program replays green; the program changed so that it no longer crashes, or
crashes otherwise, fails with an ``error_mismatch`` naming the worker and both crashes.
The hooks that see the crashes are put back when the tape closes, and the program's own
``threading.excepthook`` and loop exception handler still run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import MismatchKind
from sessiontape.cassette import SessionResume, encode_entry
from sessiontape.cli import main as cli

from .conftest import PY

#: A program under a tape: ``crash`` is the message its crashing worker raises (or None).
Program = Callable[[sessiontape.Tape, "str | None"], Any]

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


def threads(tape: sessiontape.Tape, crash: str | None) -> Any:
    """Three worker threads; worker w1 raises after its calls (the thread dies)."""
    runner = tape.process_runner()

    def work(i: int) -> None:
        with sessiontape.worker(f"w{i}"):
            runner.run([PY, "-c", f"print({i})"])
            if crash is not None and i == 1:
                raise ValueError(crash)

    started = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return {"workers": 3}


def pool(tape: sessiontape.Tape, crash: str | None) -> Any:
    """Four pool tasks; the program reads the results of all but task 1, whose exception
    sits unread in its future until the session ends."""
    runner = tape.process_runner()

    def task(i: int) -> str:
        out = runner.run([PY, "-c", f"print({i})"], text=True).stdout
        if crash is not None and i == 1:
            raise KeyError(crash)
        return str(out)

    with ThreadPoolExecutor(max_workers=2) as executor:
        futures = [executor.submit(task, i) for i in range(4)]
    return [f.result() for i, f in enumerate(futures) if i != 1]


def dropped_future(tape: sessiontape.Tape, crash: str | None) -> Any:
    """A task submitted and forgotten: its future is garbage collected unread."""
    runner = tape.process_runner()

    def task() -> None:
        runner.run([PY, "-c", "print('fire')"])
        if crash is not None:
            raise RuntimeError(crash)

    with ThreadPoolExecutor(max_workers=1) as executor:
        executor.submit(task)
    gc.collect()
    return None


def tasks(tape: sessiontape.Tape, crash: str | None) -> Any:
    """Three asyncio tasks, one per worker; the program waits for w1's task but never
    retrieves its exception."""
    runner = tape.async_process_runner()

    async def work(i: int) -> None:
        with sessiontape.worker(f"w{i}"):
            await runner.run([PY, "-c", f"print({i})"])
            if crash is not None and i == 1:
                raise ConnectionError(crash)

    async def main() -> None:
        others = [asyncio.create_task(work(i)) for i in (0, 2)]
        forgotten = asyncio.create_task(work(1))
        await asyncio.wait([forgotten])
        del forgotten  # never retrieved: asyncio reports it as the task is collected
        gc.collect()
        await asyncio.gather(*others)

    asyncio.run(main())
    return {"workers": 3}


PROGRAMS: dict[str, tuple[Program, str, str]] = {
    # program, the crashed worker, the origin of its error entry
    "threads": (threads, "w1", "thread"),
    "pool": (pool, "main/2", "future"),
    "dropped-future": (dropped_future, "main/1", "future"),
    "asyncio": (tasks, "w1", "task"),
}


def _record(path: Path, program: Program, crash: str | None) -> None:
    with sessiontape.record(path) as tape:
        outcome = program(tape, crash)
        tape.finish(outcome)


def _replay(path: Path, program: Program, crash: str | None) -> sessiontape.ReplayReport:
    with sessiontape.replay(path) as tape:
        outcome = program(tape, crash)
        return tape.finish(outcome)


def _crashed(tmp_path: Path, name: str) -> tuple[Path, sessiontape.Error]:
    """The tape of program ``name`` recorded with its worker crashing, and that crash."""
    path = tmp_path / f"{name}.jsonl"
    _record(path, PROGRAMS[name][0], "task t7 broke")
    (recorded,) = sessiontape.load(path).worker_errors
    return path, recorded


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_worker_crash_is_recorded_and_replays_green(tmp_path: Path, name: str) -> None:
    program, worker, origin = PROGRAMS[name]
    path = tmp_path / f"{name}.jsonl"
    _record(path, program, "task t7 broke")
    report = _replay(path, program, "task t7 broke")
    assert report.ok, report.render()
    assert report.mismatches == []

    recording = sessiontape.load(path)
    assert recording.end is not None  # the session went on and ended
    assert recording.error is None  # ... and did not crash
    errors = [(e.worker, e.origin, e.message) for e in recording.worker_errors]
    expected_message = "'task t7 broke'" if name == "pool" else "task t7 broke"
    assert errors == [(worker, origin, expected_message)]
    assert cli(["validate", str(path)]) == 0


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_worker_that_no_longer_crashes_is_reported(tmp_path: Path, name: str) -> None:
    program, worker, origin = PROGRAMS[name]
    path, recorded = _crashed(tmp_path, name)

    report = _replay(path, program, None)
    assert not report.ok
    (mismatch,) = report.mismatches
    assert (mismatch.kind, mismatch.worker, mismatch.seq) == (
        MismatchKind.ERROR_MISMATCH,
        worker,
        recorded.seq,
    )
    ended = {
        "thread": "its thread ended",
        "future": "in a future nobody read",
        "task": "in an asyncio task nobody awaited",
    }[origin]
    assert mismatch.message == (
        f"the recorded worker {worker!r} died of {recorded.type}: {recorded.message} "
        f"({ended}), but in the replay it did not."
    )
    assert "error_mismatch" in report.render()


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_worker_that_crashes_otherwise_is_reported(tmp_path: Path, name: str) -> None:
    program, worker, _ = PROGRAMS[name]
    path, recorded = _crashed(tmp_path, name)

    report = _replay(path, program, "task t8 broke")
    (mismatch,) = report.mismatches
    assert (mismatch.kind, mismatch.worker) == (MismatchKind.ERROR_MISMATCH, worker)
    assert mismatch.expected == {"type": recorded.type, "message": recorded.message}
    assert mismatch.actual == {
        "type": recorded.type,
        "message": recorded.message.replace("t7", "t8"),
    }
    assert [d.path for d in mismatch.diffs] == ["message"]
    assert mismatch.message.startswith(f"worker {worker!r} died of {recorded.type}: ")
    assert f"not of the recorded {recorded.type}: {recorded.message}" in mismatch.message


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_crash_the_recording_did_not_have_is_an_application_error(
    tmp_path: Path, name: str
) -> None:
    program, worker, _ = PROGRAMS[name]
    path = tmp_path / f"{name}.jsonl"
    _record(path, program, None)
    assert sessiontape.load(path).worker_errors == []

    report = _replay(path, program, "task t7 broke")
    (mismatch,) = report.mismatches
    assert (mismatch.kind, mismatch.worker) == (MismatchKind.APPLICATION_ERROR, worker)
    assert "task t7 broke" in mismatch.message


def _hooks() -> tuple[object, ...]:
    return (
        threading.excepthook,
        vars(Future)["set_exception"],
        vars(Future)["result"],
        vars(Future)["exception"],
        vars(asyncio.BaseEventLoop)["call_exception_handler"],
    )


def test_the_hooks_are_put_back_and_the_programs_own_still_run(tmp_path: Path) -> None:
    seen_by_program: list[str] = []
    previous = threading.excepthook

    def own_hook(args: Any) -> None:
        seen_by_program.append(f"thread: {args.exc_value}")

    threading.excepthook = own_hook
    try:
        before = _hooks()
        path = tmp_path / "t.jsonl"
        with sessiontape.record(path) as tape:
            assert _hooks() != before
            threads(tape, "task t7 broke")

            async def main() -> None:
                loop = asyncio.get_running_loop()
                loop.set_exception_handler(
                    lambda _, context: seen_by_program.append(f"loop: {context['exception']}")
                )
                task = asyncio.create_task(asyncio.sleep(0, result=None))
                await task
                failing = loop.create_future()
                failing.set_exception(OSError("never retrieved"))
                del failing
                gc.collect()

            with sessiontape.worker("w-loop"):
                asyncio.run(main())
            tape.finish()
        assert _hooks() == before
    finally:
        threading.excepthook = previous
    assert seen_by_program == ["thread: task t7 broke", "loop: never retrieved"]
    errors = [(e.worker, e.origin, e.message) for e in sessiontape.load(path).worker_errors]
    assert errors == [("w1", "thread", "task t7 broke"), ("w-loop", "task", "never retrieved")]


def test_a_future_read_after_a_timeout_is_still_unread_until_its_exception_is(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    with sessiontape.record(path) as tape:
        future: Future[None] = Future()
        with pytest.raises(concurrent.futures.TimeoutError):  # (not the builtin on 3.10)
            future.result(timeout=0)  # no exception yet: this read did not read one
        with sessiontape.worker("w9"):
            future.set_exception(ValueError("set late"))
        unread: Future[None] = Future()
        read: Future[None] = Future()
        for f in (unread, read):
            f.set_exception(ValueError(f"{'unread' if f is unread else 'read'}"))
        assert isinstance(read.exception(), ValueError)
        tape.finish()
    errors = [(e.worker, e.origin, e.message) for e in sessiontape.load(path).worker_errors]
    assert sorted(errors) == [("main", "future", "unread"), ("w9", "future", "set late")]


def test_a_tape_tells_the_sessions_crash_from_its_workers() -> None:
    common: dict[str, Any] = {"ts_ns": 1, "mono_ns": 1, "thread": "T"}
    at = "2026-01-01T00:00:00+00:00"
    start = sessiontape.SessionStart(seq=0, run_id="r", recorded_at=at, **common)
    died = sessiontape.Error(seq=1, worker="w1", type="E", message="a", origin="thread", **common)
    # A line written before origin existed is the session's crash, as it always was.
    line = b'{"kind":"error","seq":2,"ts_ns":1,"mono_ns":1,"type":"E","message":"b"}\n'
    data = encode_entry(start) + encode_entry(died) + line
    crashed = sessiontape.loads(data)
    assert crashed.error is not None
    assert (crashed.error.seq, crashed.error.origin) == (2, "session")
    assert crashed.worker_errors == [died]
    assert crashed.crashed
    # A later run resumes the tape: its session is the one that counts.
    resume = SessionResume(seq=3, recorded_at=at, **common)
    resumed = sessiontape.loads(data + encode_entry(resume))
    assert (resumed.error, resumed.worker_errors) == (None, [])


def test_a_slice_keeps_the_crashes_of_the_workers_it_keeps(tmp_path: Path) -> None:
    path, recorded = _crashed(tmp_path, "threads")
    crashes = {}
    for worker in ("w0", "w1"):
        sliced = tmp_path / f"{worker}.jsonl"
        assert cli(["slice", str(path), "-o", str(sliced), "--worker", worker]) == 0
        crashes[worker] = [(e.worker, e.message) for e in sessiontape.load(sliced).worker_errors]
    assert crashes == {"w0": [], "w1": [("w1", recorded.message)]}
