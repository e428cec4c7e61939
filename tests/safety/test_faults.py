"""Every recording fault is one warning and a kept prefix; the application is never hurt."""

from __future__ import annotations

import errno
import os
import warnings
from pathlib import Path

import pytest

import sessiontape
from sessiontape import RecordingWarning
from sessiontape.cassette import CassetteWriter, SessionEnd

from . import _faults


def record_one_call(path: Path) -> bytes:
    """Append one call to the cassette at ``path``; return what the application got."""
    with sessiontape.record(path, if_exists="append") as tape:
        return tape.process_runner(_faults.Runner()).run(["echo", "x"]).stdout  # type: ignore[no-any-return]


CASES = _faults.matrix(write_moments=range(_faults.ENTRIES), fs_moments=(0, 3))


@pytest.mark.parametrize(("fault", "moment", "at"), CASES)
def test_fault_matrix(tmp_path: Path, fault: str, moment: str, at: int) -> None:
    outcome = _faults.run_case(tmp_path, fault, moment, at)
    assert _faults.check(outcome) == []


def test_the_matrix_covers_every_fault_and_moment() -> None:
    faults = {fault for fault, _, _ in CASES}
    assert faults == {
        "full disk", "I/O error", "permission denied", "parent is a file",
        "directory deleted", "file deleted", "file moved away", "file replaced",
    }  # fmt: skip
    assert len(CASES) == 2 * _faults.ENTRIES + 4 * 3 + 2 * 2 + 1


def test_a_full_disk_keeps_whole_lines_only(tmp_path: Path) -> None:
    outcome = _faults.run_case(tmp_path, "full disk", "line", 5)
    assert outcome.kept is not None
    data = outcome.kept.read_bytes()
    assert data.endswith(b"\n")  # the half-written line was cut back
    assert len(data.splitlines()) == 5
    (message,) = outcome.warnings
    assert message == (
        f"sessiontape: recording to {str(outcome.kept)!r} stopped: writing seq 5 failed (No "
        "space left on device). The application goes on unrecorded; the cassette keeps the "
        "5 line(s) written before."
    )


def test_a_deleted_directory_is_noticed(tmp_path: Path) -> None:
    outcome = _faults.run_case(tmp_path, "directory deleted", "mid-run", 3)
    (message,) = outcome.warnings
    # Noticed at the end (writes check once a second): the lines went with the file.
    assert message.endswith(
        "stopped: the cassette was deleted during the run (the file, or its directory). The "
        "application goes on unrecorded; the 13 line(s) written before went with it."
    )
    assert outcome.kept is None
    assert not (tmp_path / "directory_deleted-mid-run-3").exists()  # nothing recreated


def test_a_replaced_file_is_left_alone(tmp_path: Path) -> None:
    outcome = _faults.run_case(tmp_path, "file replaced", "mid-run", 3)
    (message,) = outcome.warnings
    assert "another file replaced the cassette at its path during the run" in message
    assert outcome.kept is not None
    moved = sessiontape.load(outcome.kept)
    assert moved.crashed
    assert len(moved.entries) == _faults.ENTRIES - 1  # all but the session_end


def test_a_removal_is_noticed_by_the_next_write_once_a_second_has_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every write checks when the clock says a second has passed; here it always does.
    ticks = iter(range(0, 10**15, 10**9))
    monkeypatch.setattr("sessiontape.cassette._writer._mono_ns", lambda: next(ticks))
    path = tmp_path / "run.jsonl"
    with warnings.catch_warnings(record=True) as caught, sessiontape.record(path) as tape:
        warnings.simplefilter("always")
        runner = tape.process_runner(_faults.Runner())
        assert runner.run(["echo", "1"]).stdout == b"1\n"
        path.rename(tmp_path / "moved.jsonl")
        assert runner.run(["echo", "2"]).stdout == b"2\n"
        assert not tape.active  # type: ignore[attr-defined]
        assert runner.run(["echo", "3"]).stdout == b"3\n"
    assert [w.category for w in caught] == [RecordingWarning]
    assert "the cassette was moved away during the run" in str(caught[0].message)
    kept = sessiontape.load(tmp_path / "moved.jsonl")
    assert [e.seq for e in kept.entries] == [0, 1]


def test_a_real_full_disk(tmp_path: Path) -> None:
    fd = os.open("/dev/full", os.O_WRONLY)
    writer = CassetteWriter(tmp_path / "unused.jsonl", fd=fd)
    entry = SessionEnd(seq=1, ts_ns=1, mono_ns=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer.write(entry)
        writer.write(entry)  # off: no second warning
    assert [w.category for w in caught] == [RecordingWarning]
    assert "writing seq 1 failed (No space left on device)" in str(caught[0].message)
    assert not writer.active
    writer.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes whatever the mode says")
def test_a_real_unreadable_cassette_to_append_to(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(_faults.sessiontape_tape())
    path.chmod(0o200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert record_one_call(path) == b"x\n"
    assert [w.category for w in caught] == [RecordingWarning]
    assert "cannot open the cassette to append to it" in str(caught[0].message)
    path.chmod(0o600)
    assert path.read_bytes() == _faults.sessiontape_tape()


def test_an_unreadable_cassette_to_append_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(_faults.sessiontape_tape())

    def denied(*args: object) -> int:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr("sessiontape.cassette._writer._open", denied)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert record_one_call(path) == b"x\n"
    assert [str(w.message) for w in caught] == [
        f"sessiontape: not recording to {str(path)!r}: cannot open the cassette to append to "
        "it (Permission denied). The application goes on unrecorded."
    ]
    assert path.read_bytes() == _faults.sessiontape_tape()


def test_changing_directory_during_the_run_is_not_a_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = iter(range(0, 10**15, 10**9))  # every write checks the path
    monkeypatch.setattr("sessiontape.cassette._writer._mono_ns", lambda: next(ticks))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    with sessiontape.record("run.jsonl") as tape:  # a relative path
        runner = tape.process_runner(_faults.Runner())
        runner.run(["echo", "1"])
        os.chdir(tmp_path / "elsewhere")
        runner.run(["echo", "2"])
    assert not sessiontape.load(tmp_path / "run.jsonl").crashed
