"""Nothing starts unseen: a process started outside the interception (os.system,
os.posix_spawn, fork and exec by hand or by the ``sh`` library, a pty, subprocess with
no patch) is reported where it was started, while recording and on replay."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import sessiontape

from .conftest import PY

HERE = os.path.abspath(__file__)


def _line(ahead: int = 1) -> str:
    """``file:line`` of the line ``ahead`` lines after the caller's: where a call starts."""
    return f"{__file__}:{sys._getframe(1).f_lineno + ahead}"


def _program(marker: Path, lines: list[tuple[str, str]]) -> None:
    """Starts processes every way but the intercepted one, and one the intercepted way."""
    subprocess.run([PY, "-c", "pass"], check=True)  # intercepted: never reported
    lines.append(("os.system", _line()))
    os.system(f"echo system >> {marker}")
    lines.append(("os.posix_spawn", _line()))
    pid = os.posix_spawn("/bin/sh", ["sh", "-c", f"echo spawn >> {marker}"], dict(os.environ))
    os.waitpid(pid, 0)
    lines.append(("os.fork", _line()))
    pid = os.fork()
    if pid == 0:  # the child: exec as the sh library does (its own events are not reported)
        try:
            os.execv("/bin/sh", ["sh", "-c", f"echo fork >> {marker}"])
        finally:
            os._exit(127)
    os.waitpid(pid, 0)
    lines.append(("os.forkpty", _line()))
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execv("/bin/sh", ["sh", "-c", f"echo pty >> {marker}"])
        finally:
            os._exit(127)
    # EIO once the child's end closes
    with open(fd, "rb", closefd=True) as out, contextlib.suppress(OSError):
        out.read()
    os.waitpid(pid, 0)


def _record(path: Path, program: Callable[[], None]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sessiontape.record(path) as tape, tape.patch_subprocess():
            program()
    return [str(w.message) for w in caught if w.category is sessiontape.RecordingWarning]


def test_processes_started_unseen_are_reported_where_they_started(tmp_path: Path) -> None:
    then, now = tmp_path / "then", tmp_path / "now"
    then.mkdir()
    now.mkdir()
    tape = tmp_path / "t.jsonl"
    recorded: list[tuple[str, str]] = []
    notices = _record(tape, lambda: _program(then / "ran", recorded))
    assert (then / "ran").read_text().split() == ["system", "spawn", "fork", "pty"]
    # Recording: one warning per place, naming the event and the caller's file:line.
    assert len(notices) == 4, notices
    for (event, where), notice in zip(recorded, notices, strict=True):
        assert f"at {where} ({event}:" in notice
        assert "the tape does not hold it" in notice
    replayed: list[tuple[str, str]] = []
    with sessiontape.replay(tape) as replaying:
        with replaying.patch_subprocess():
            _program(now / "ran", replayed)
        report = replaying.finish()
    # Lenient replay: the intercepted call is served; the others ran for real, and the
    # report says each, where it was started.
    assert report.ok, report.render()
    assert report.consumed == 1
    assert (now / "ran").read_text().split() == ["system", "spawn", "fork", "pty"]
    found = [(w.actual["event"], w.actual["where"]) for w in report.warnings]
    assert found == replayed
    assert all(w.kind is sessiontape.MismatchKind.UNSEEN_PROCESS for w in report.warnings)
    text = report.render()
    assert "4 warnings" in text
    assert replayed[0][1] in text
    again = sessiontape.ReplayReport.from_json(report.to_json())
    assert [w.actual["where"] for w in again.warnings] == [w for _, w in replayed]


def test_strict_replay_stops_an_unseen_process_before_it_starts(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    marker = tmp_path / "ran"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sessiontape.RecordingWarning)
        with sessiontape.record(tape) as recording, recording.patch_subprocess():
            subprocess.run([PY, "-c", "pass"], check=True)
            os.system(f"echo system >> {marker}")
    marker.unlink()
    with sessiontape.replay(tape, strict=True) as replaying, replaying.patch_subprocess():
        subprocess.run([PY, "-c", "pass"], check=True)
        where = _line(2)
        with pytest.raises(sessiontape.ReplayMismatch) as raised:
            os.system(f"echo system >> {marker}")
    assert not marker.exists()  # raised from the audit hook: the process never started
    (mismatch,) = raised.value.report.mismatches
    assert mismatch.kind is sessiontape.MismatchKind.UNSEEN_PROCESS
    assert mismatch.actual["where"] == where
    assert mismatch.next_step.startswith("Start this process through subprocess")


def test_the_sh_library_is_reported_on_replay(tmp_path: Path) -> None:
    sh = pytest.importorskip("sh")
    tape = tmp_path / "t.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sessiontape.record(tape) as recording, recording.patch_subprocess():
            subprocess.run([PY, "-c", "pass"], check=True)
            assert sh.echo("recorded").strip() == "recorded"
    (notice,) = [w for w in caught if w.category is sessiontape.RecordingWarning]
    assert "os.fork" in str(notice.message)
    with sessiontape.replay(tape) as replaying:
        with replaying.patch_subprocess():
            subprocess.run([PY, "-c", "pass"], check=True)
            where = _line()
            assert sh.echo("replayed").strip() == "replayed"  # it ran for real ...
        report = replaying.finish()
    # ... and the report says so: the program's own line, through sh's.
    (warning,) = report.warnings
    assert warning.actual["event"] == "os.fork"
    assert warning.actual["where"].startswith(f"{where} (via ")
    assert f"{os.sep}sh{os.sep}" in warning.actual["where"]


def test_intercepted_and_runner_processes_are_not_reported(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"

    def program(runner: sessiontape.ProcessRunner) -> None:
        subprocess.run([PY, "-c", "pass"], check=True)
        subprocess.run("true", shell=True, check=True)
        subprocess.check_output(["echo", "x"])
        runner.run(["echo", "runner"])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sessiontape.record(tape) as recording, recording.patch_subprocess():
            program(recording.process_runner(sessiontape.SubprocessRunner()))
    assert [w for w in caught if w.category is sessiontape.RecordingWarning] == []
    with sessiontape.replay(tape) as replaying:
        with replaying.patch_subprocess():
            program(replaying.process_runner(sessiontape.SubprocessRunner()))
        report = replaying.finish()
    assert report.ok, report.render()
    assert report.consumed == 4
    assert report.warnings == []


def test_subprocess_without_the_patch_is_reported(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sessiontape.record(tape) as recording:
            recording.process_runner(sessiontape.SubprocessRunner()).run(["true"])
            subprocess.run(["true"], check=True)
    (notice,) = [w for w in caught if w.category is sessiontape.RecordingWarning]
    assert "(subprocess.Popen: true)" in str(notice.message)
    assert f"{HERE}:" in str(notice.message)


def test_no_tape_no_report() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        os.system("true")
    assert caught == []
