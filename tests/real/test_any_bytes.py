"""argv and environment values with any bytes (POSIX allows them) record and replay
losslessly: readable in the tape, exact beside it, compared by their bytes."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sessiontape

from .conftest import PY, RoundTrip

BAD_VALUE = "abc\udcff"  # os.fsdecode(b"abc\xff")
BAD_ARG = os.fsdecode(b"caf\xe9")  # Latin-1, not UTF-8
BAD_NAME = os.fsdecode(b"N\xffME")
SHOW = "import os, sys; print(os.environb.get(b'X'), os.environb.get(b'N\\xffME'), sys.argv[1:])"


def _program(value: str, arg: Any) -> Callable[[Path], Any]:
    def program(d: Path) -> Any:
        env = {**os.environ, "X": value, BAD_NAME: "named"}
        first = subprocess.run([PY, "-c", SHOW, arg, b"raw\xfe"], env=env, stdout=subprocess.PIPE)
        # The calls after it are recorded too: one bad value never stops the recording.
        second = subprocess.run([PY, "-c", "print('after')"], stdout=subprocess.PIPE)
        return first.stdout, second.stdout

    return program


def test_non_utf8_env_and_argv_record_and_replay(round_trip: Callable[..., RoundTrip]) -> None:
    done = round_trip(_program(BAD_VALUE, BAD_ARG))
    assert done.recorded[0] == b"b'abc\\xff' b'named' ['caf\\udce9', 'raw\\udcfe']\n"
    assert done.recorded[1] == b"after\n"
    assert done.replayed == done.recorded
    assert done.report.ok, done.report.render()
    assert done.report.consumed == 2
    assert done.spawned_on_replay == 0
    first, second = done.processes
    # Readable in the tape ...
    assert first.argv[3:] == ["caf\\xe9", "raw\\xfe"]
    assert first.env is not None
    assert first.env["X"] == "abc\\xff"
    assert first.env["N\\xffME"] == "named"
    # ... and exact beside it.
    assert [os.fsencode(a) for a in first.exact_argv()[3:]] == [b"caf\xe9", b"raw\xfe"]
    exact_env = first.exact_env()
    assert exact_env is not None
    assert os.fsencode(exact_env["X"]) == b"abc\xff"
    assert exact_env[BAD_NAME] == "named"
    assert second.exact is None
    text = (done.recorded_in.parent / "tape" / "real.jsonl").read_text("utf-8")
    assert '"X":"abc\\\\xff"' in text


@pytest.mark.parametrize(
    ("value", "arg"),
    [
        ("abc\\xff", BAD_ARG),  # the readable form of the recorded bytes, as text
        (os.fsdecode(b"abc\xfe"), BAD_ARG),  # another byte
        (BAD_VALUE, "caf\\xe9"),
    ],
)
def test_other_bytes_are_a_mismatch(tmp_path: Path, value: str, arg: str) -> None:
    tape_path = tmp_path / "t.jsonl"
    with sessiontape.record(tape_path) as tape, tape.patch_subprocess():
        _program(BAD_VALUE, BAD_ARG)(tmp_path)
    with sessiontape.replay(tape_path) as replaying:
        with replaying.patch_subprocess():
            _program(value, arg)(tmp_path)
        report = replaying.finish()
    assert not report.ok
    assert report.first is not None
    assert report.first.kind is sessiontape.MismatchKind.ARGUMENT_MISMATCH
    assert any(d.path.startswith("exact") for d in report.first.diffs), report.render()


def test_a_secret_in_bytes_is_redacted_in_both_forms(tmp_path: Path) -> None:
    secret = "ghp_" + "a1B2" * 9
    tape_path = tmp_path / "t.jsonl"
    with sessiontape.record(tape_path) as tape, tape.patch_subprocess():
        subprocess.run(["true", f"--token={secret}\udcff"], check=True)
        subprocess.run(["true"], env={**os.environ, "GITHUB_TOKEN": secret + "\udcff"}, check=True)
    text = tape_path.read_text("utf-8")
    assert secret not in text
    first, second = sessiontape.load(tape_path).calls
    assert isinstance(first, sessiontape.ProcessCall)
    assert isinstance(second, sessiontape.ProcessCall)
    assert secret not in "".join(first.exact_argv())
    assert secret not in str(second.exact_env())


def test_old_tapes_without_the_field_load(tmp_path: Path) -> None:
    tape_path = tmp_path / "t.jsonl"
    with sessiontape.record(tape_path) as tape, tape.patch_subprocess():
        subprocess.run(["true"], check=True)
    lines = tape_path.read_text("utf-8").splitlines()
    old = [line.replace(',"exact":null', "") for line in lines]
    assert old != lines
    tape_path.write_text("\n".join(old) + "\n", "utf-8")
    (call,) = sessiontape.load(tape_path).calls
    assert isinstance(call, sessiontape.ProcessCall)
    assert call.exact is None
    assert call.exact_argv() == ["true"]
