"""What the program writes to stdin is checked against the tape as it is written."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import sessiontape
from sessiontape import MismatchKind

from ._reverse import talk
from .conftest import PY


def _sessiontape_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("sessiontape-")]


def test_a_differing_write_names_the_seq_and_the_chunk(tmp_path: Path) -> None:
    path = tmp_path / "talk.jsonl"
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        talk(["abc", "hello"])
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            answers = talk(["abc", "howdy"])
        report = tape.finish()
    assert answers == ["cba\n", "olleh\n"]  # the recorded answers, as for any mismatch
    (mismatch,) = report.mismatches
    assert mismatch.kind is MismatchKind.ARGUMENT_MISMATCH
    assert mismatch.seq == 1
    assert "seq 1" in mismatch.message
    assert "stdin chunk 2" in mismatch.message
    assert [d.path for d in mismatch.diffs] == ["chunks[2].data"]
    assert (mismatch.expected, mismatch.actual) == ("hello\n", "howdy\n")
    assert _sessiontape_threads() == []


def test_stdin_given_to_run_is_checked_when_written(tmp_path: Path) -> None:
    path = tmp_path / "input.jsonl"
    code = "import sys; print(sys.stdin.read().upper())"
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        subprocess.run([PY, "-c", code], input=b"one", capture_output=True)
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            done = subprocess.run([PY, "-c", code], input=b"two", capture_output=True)
        report = tape.finish()
    assert done.stdout == b"ONE\n"
    (mismatch,) = report.mismatches
    assert mismatch.kind is MismatchKind.ARGUMENT_MISMATCH
    assert mismatch.mask_paths == ["process.input"]
    assert (mismatch.expected, mismatch.actual) == ("one", "two")
    assert _sessiontape_threads() == []
