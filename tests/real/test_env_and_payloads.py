"""Environment deltas, payloads kept in the sidecar, and a recording that spawns nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import sessiontape
from sessiontape import CassetteError, MismatchKind, TruncatedPayloadError

from .conftest import PY, Spawns

CODE = "import os; print(os.environ.get('SESSIONTAPE_X'))"


def run_with_env(extra: dict[str, str], drop: str | None = None) -> str:
    env = {**os.environ, **extra}
    if drop is not None:
        env.pop(drop, None)
    return subprocess.run([PY, "-c", CODE], env=env, capture_output=True, text=True).stdout


def test_env_is_recorded_as_a_delta_and_replays_on_another_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "env.jsonl"
    monkeypatch.setenv("SESSIONTAPE_DROPPED", "1")
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        recorded = run_with_env({"SESSIONTAPE_X": "1"}, drop="SESSIONTAPE_DROPPED")
    (call,) = sessiontape.load(path).entries_for("process")
    assert call.env == {"SESSIONTAPE_X": "1", "SESSIONTAPE_DROPPED": None}
    # Another machine: another HOME and PATH, an extra variable.
    monkeypatch.setenv("HOME", "/somewhere/else")
    monkeypatch.setenv("PATH", "/opt/other/bin")
    monkeypatch.setenv("SESSIONTAPE_ONLY_HERE", "yes")
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            replayed = run_with_env({"SESSIONTAPE_X": "1"}, drop="SESSIONTAPE_DROPPED")
        report = tape.finish()
    assert replayed == recorded == "1\n"
    assert report.ok, report.render()


def test_env_differences_name_the_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env.jsonl"
    monkeypatch.setenv("SESSIONTAPE_DROPPED", "1")
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        run_with_env({"SESSIONTAPE_X": "1"}, drop="SESSIONTAPE_DROPPED")
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            run_with_env({"SESSIONTAPE_X": "2", "SESSIONTAPE_NEW": "n"})
        report = tape.finish()
    (mismatch,) = report.mismatches
    assert mismatch.kind is MismatchKind.ARGUMENT_MISMATCH
    assert sorted(mismatch.mask_paths) == [
        "process.env.SESSIONTAPE_DROPPED",
        "process.env.SESSIONTAPE_NEW",
        "process.env.SESSIONTAPE_X",
    ]


def test_an_environment_of_its_own_is_recorded_whole(tmp_path: Path) -> None:
    path = tmp_path / "own.jsonl"
    env = {"PATH": "/usr/bin:/bin", "SESSIONTAPE_X": "own"}
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        subprocess.run([PY, "-c", CODE], env=env, capture_output=True)
    (call,) = sessiontape.load(path).entries_for("process")
    assert call.env == {"PATH": "/usr/bin:/bin", "SESSIONTAPE_X": "own", "*": None}


def test_recording_spawns_nothing_itself(tmp_path: Path) -> None:
    with Spawns().counting() as spawns, sessiontape.record(tmp_path / "quiet.jsonl") as tape:
        tape.finish()
    assert spawns.started == []
    header = sessiontape.load(tmp_path / "quiet.jsonl").header
    assert header.platform.startswith(os.uname().sysname)


def _big(tape: sessiontape.Tape) -> sessiontape.ProcessResult:
    return tape.process_runner().run([PY, "-c", "print('y' * 100_000, end='')"])


def test_a_truncated_payload_fails_only_when_read(tmp_path: Path) -> None:
    path = tmp_path / "std.jsonl"
    with sessiontape.record(path) as tape:
        tape.codec.sidecar = None  # as a tape recorded before sidecars, or unwritable
        _big(tape)
    with sessiontape.replay(path) as tape:
        result = _big(tape)
        assert result.returncode == 0  # no error: the program reads only the code
        with pytest.raises(TruncatedPayloadError, match="seq 1: the recorded stdout"):
            _ = result.stdout
        assert tape.finish().ok


@pytest.mark.writes_invalid_tapes
def test_a_missing_sidecar_names_the_seq_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "side.jsonl"
    with sessiontape.record(path) as tape:
        _big(tape)
    (blob,) = (tmp_path / "side.jsonl.blobs").iterdir()
    blob.unlink()
    with sessiontape.replay(path) as tape:
        result = _big(tape)
        with pytest.raises(CassetteError) as caught:
            _ = result.stdout
    assert "seq 1: the recorded stdout (100000 bytes)" in str(caught.value)
    assert str(blob) in str(caught.value)


def test_patched_large_output_goes_to_the_sidecar_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "patched.jsonl"
    code = "import sys; sys.stdout.write('z' * 200_000)"
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        recorded = subprocess.run([PY, "-c", code], capture_output=True).stdout
    (call,) = sessiontape.load(path).entries_for("process")
    assert isinstance(call.stdout, sessiontape.Blob)
    assert call.stdout.sidecar
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            replayed = subprocess.run([PY, "-c", code], capture_output=True).stdout
        assert tape.finish().ok
    assert replayed == recorded == b"z" * 200_000


def test_a_runner_call_under_the_patch_is_recorded_once(tmp_path: Path) -> None:
    path = tmp_path / "once.jsonl"
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        tape.process_runner().run([PY, "-c", "print('once')"])
    assert len(sessiontape.load(path).entries_for("process")) == 1
    with sessiontape.replay(path) as tape, tape.patch_subprocess():
        assert tape.process_runner().run([PY, "-c", "print('once')"]).stdout == b"once\n"
        assert tape.finish().ok
