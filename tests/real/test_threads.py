"""Threads that do not name themselves get their own queues, derived from where they
were started; an exception that kills one during replay is in the report."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import MismatchKind

from .conftest import PY, RoundTrip


def _echo(i: int) -> str:
    return subprocess.run([PY, "-c", f"print({i})"], capture_output=True, text=True).stdout


def pool(d: Path) -> Any:
    with ThreadPoolExecutor(max_workers=4) as executor:
        return list(executor.map(_echo, range(4)))


def test_a_thread_pool_replays_faithfully(round_trip: Callable[..., RoundTrip]) -> None:
    done = round_trip(pool)
    assert done.recorded == done.replayed == ["0\n", "1\n", "2\n", "3\n"]
    workers = sorted((p.worker, p.argv[-1]) for p in done.processes)
    assert workers == [("main/1", "print(0)"), ("main/2", "print(1)"),
                       ("main/3", "print(2)"), ("main/4", "print(3)")]  # fmt: skip
    assert done.report.ok, done.report.render()
    assert done.spawned_on_replay == 0


def plain_threads(d: Path) -> Any:
    results: dict[int, str] = {}

    def work(i: int) -> None:
        results[i] = _echo(i)
        if i == 0:  # a thread started by a thread
            inner = threading.Thread(target=lambda: results.__setitem__(9, _echo(9)))
            inner.start()
            inner.join()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_plain_threads_are_named_by_their_start_order(
    round_trip: Callable[..., RoundTrip],
) -> None:
    done = round_trip(plain_threads)
    assert done.recorded == done.replayed
    assert sorted(p.worker for p in done.processes) == ["main/1", "main/1/1", "main/2", "main/3"]
    assert done.report.ok, done.report.render()
    assert done.spawned_on_replay == 0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_thread_killed_by_an_exception_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"

    def work(fail: bool) -> None:
        out = _echo(1)
        if fail and out:
            raise RuntimeError("worker broke after its first call")
        _echo(2)

    def program(fail: bool) -> None:
        thread = threading.Thread(target=work, args=(fail,))
        thread.start()
        thread.join()

    with sessiontape.record(path) as tape, tape.patch_subprocess():
        program(False)
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            program(True)
        report = tape.finish()
    assert not report.ok
    kinds = [m.kind for m in report.mismatches]
    assert kinds == [MismatchKind.APPLICATION_ERROR, MismatchKind.UNCONSUMED]
    error = report.mismatches[0]
    first = sessiontape.load(path).entries_for("process")[0]
    assert (error.worker, error.seq) == ("main/1", first.seq)
    assert "RuntimeError: worker broke after its first call" in error.message
    assert "test_threads.py" in error.actual["frame"]
    assert "in work" in error.actual["frame"]
    assert "application_error" in report.render()
