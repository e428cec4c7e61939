"""A command given as one string is refused, in every mode, before anything runs.

``runner.run("git status")`` would otherwise run (and record) the argv
``["g", "i", "t", ...]``: the runner interface takes a list, as ``subprocess`` does
without ``shell=True``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

import sessiontape
from sessiontape import ProcessResult, ProcessStream, SubprocessRunner, UsageError

FIX = (
    "runner.{method}('git status') got one string, not a list of arguments; pass a list "
    "such as ['git', 'status'] (shlex.split('git status') makes one), or "
    "['sh', '-c', 'git status'] to run it through a shell."
)


class CountingRunner:
    """A runner that counts the calls that reach it."""

    def __init__(self) -> None:
        self.calls = 0

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        self.calls += 1
        return ProcessResult(argv, 0, "ok\n" if text else b"ok\n")

    def stream(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = True,
    ) -> ProcessStream:
        self.calls += 1
        return ProcessStream(argv, text=text)


def _refused(runner: sessiontape.ProcessRunner, method: str) -> None:
    with pytest.raises(UsageError) as caught:
        getattr(runner, method)("git status", text=True)
    assert str(caught.value) == FIX.format(method=method)


@pytest.mark.parametrize("method", ["run", "stream"])
def test_the_real_runner_refuses_a_string(method: str) -> None:
    _refused(SubprocessRunner(), method)


@pytest.mark.parametrize("method", ["run", "stream"])
def test_recording_refuses_a_string_and_records_nothing(tmp_path: Path, method: str) -> None:
    inner = CountingRunner()
    path = tmp_path / "run.jsonl"
    with sessiontape.record(path) as tape:
        runner = tape.process_runner(inner)
        _refused(runner, method)
        runner.run(["git", "status"], text=True)
        tape.finish()
    assert inner.calls == 1
    recording = sessiontape.load(path)
    assert [c.argv for c in recording.calls if isinstance(c, sessiontape.ProcessCall)] == [
        ["git", "status"]
    ]
    # The refused call reserved no seq: the tape has no gap.
    assert recording.missing_seqs == []


@pytest.mark.parametrize("method", ["run", "stream"])
def test_replay_refuses_a_string(tmp_path: Path, method: str) -> None:
    path = tmp_path / "run.jsonl"
    with sessiontape.record(path) as tape:
        tape.process_runner(CountingRunner()).run(["git", "status"], text=True)
        tape.finish()
    with sessiontape.replay(path) as player:
        runner = player.process_runner()
        _refused(runner, method)
        assert runner.run(["git", "status"], text=True).stdout == "ok\n"
    assert player.report is not None
    assert player.report.ok


@pytest.mark.parametrize("method", ["run", "stream"])
def test_disabled_recording_refuses_a_string(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    monkeypatch.delenv(sessiontape.ENV_VAR, raising=False)
    with sessiontape.record(None) as tape:
        assert tape.mode is sessiontape.Mode.DISABLED
        _refused(tape.process_runner(), method)


def test_bytes_are_refused_too() -> None:
    with pytest.raises(UsageError, match=r"runner\.run\(b'ls -l'\) got one string"):
        SubprocessRunner().run(b"ls -l")  # type: ignore[arg-type]


def test_a_list_still_runs() -> None:
    result = SubprocessRunner().run([sys.executable, "-c", "print('hi')"], text=True)
    assert (result.returncode, result.stdout) == (0, "hi\n")
