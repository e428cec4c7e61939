"""Never destroy: nothing at the path is moved, cut or written before it is proven a cassette."""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

import pytest

import sessiontape
from sessiontape import CassetteError, RecordingWarning, UsageError
from sessiontape.cli import main

from ._tapes import good_tape

PY = sys.executable


def record_one(path: Path, **options: object) -> sessiontape.Tape:
    """Record one process call to ``path``; return the (closed) tape."""
    with sessiontape.record(path, **options) as tape:  # type: ignore[arg-type]
        assert tape.process_runner().run([PY, "-c", "print('hi')"], text=True).stdout == "hi\n"
    return tape


def snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry under ``directory``: file bytes, or what a link or a directory is."""
    found: dict[str, bytes | str] = {}
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            full = Path(root, name)
            rel = str(full.relative_to(directory))
            if full.is_symlink():
                found[rel] = "link:" + os.readlink(full)
            elif full.is_dir():
                found[rel] = "dir"
            else:
                found[rel] = full.read_bytes()
    return found


@pytest.mark.parametrize("if_exists", ["force", "append"])
def test_a_directory_is_refused_and_untouched(tmp_path: Path, if_exists: str) -> None:
    target = tmp_path / "run.jsonl"
    target.mkdir()
    (target / "precious.txt").write_text("keep me")
    before = snapshot(tmp_path)
    with pytest.raises(UsageError) as caught:
        sessiontape.record(target, if_exists=if_exists)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"{target} is a directory; nothing was touched. Name a cassette file, such as "
        f"{target / 'session.jsonl'}."
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("if_exists", ["force", "append"])
def test_a_symlink_is_refused_and_untouched(tmp_path: Path, if_exists: str) -> None:
    real = tmp_path / "real.jsonl"
    real.write_bytes(good_tape())
    link = tmp_path / "run.jsonl"
    link.symlink_to(real)
    before = snapshot(tmp_path)
    with pytest.raises(UsageError) as caught:
        sessiontape.record(link, if_exists=if_exists)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"{link} is a symbolic link (to {str(real)!r}); sessiontape records only to a regular "
        "file it can check, so nothing was touched. Record to the link's target, or remove "
        "the link."
    )
    assert snapshot(tmp_path) == before


def test_a_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="is not a regular file"):
        sessiontape.record(fifo)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize(
    "content",
    [b"my notes\nline two", b"\x00\x01binary" * 500, b'{"kind": "process", "seq": 1}\n'],
)
def test_force_refuses_a_file_that_is_not_a_cassette(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(content)
    with pytest.raises(UsageError) as caught:
        sessiontape.record(path)
    assert str(caught.value) == (
        f"{path} exists and is not a sessiontape cassette (its first line is not a "
        "session_start entry), so if_exists='force' leaves it untouched. Record to another "
        "path, or move the file away yourself."
    )
    assert snapshot(tmp_path) == {"run.jsonl": content}


@pytest.mark.parametrize(
    "content", [b"my notes\nline two", b"\x00\x01binary" * 1500, b"\xff\xfe\n", b"[1]\n"]
)
def test_append_refuses_a_file_that_is_not_a_cassette_and_cuts_nothing(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(content)
    with pytest.raises(CassetteError) as caught:
        sessiontape.record(path, if_exists="append")
    assert caught.value.reason.startswith("cannot append to it: ")
    assert caught.value.reason.endswith(
        "Nothing was changed; record with if_exists='force' to move it aside and start a "
        "new cassette."
    )
    assert snapshot(tmp_path) == {"run.jsonl": content}


def test_force_moves_a_cassette_aside_with_a_rename(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_one(path)
    old = path.read_bytes()
    inode = path.stat().st_ino
    tape = record_one(path)
    moved = tape.moved_to  # type: ignore[attr-defined]
    assert moved.parent == tmp_path
    assert moved.name.startswith("run.jsonl.old.")
    assert moved.read_bytes() == old
    assert moved.stat().st_ino == inode  # renamed, not copied
    assert sessiontape.load(path).header.run_id != sessiontape.load(moved).header.run_id


def test_force_reuses_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.touch()
    tape = record_one(path)
    assert tape.moved_to is None  # type: ignore[attr-defined]
    assert not sessiontape.load(path).crashed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]


def test_a_failed_rename_is_one_warning_and_the_application_runs_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.jsonl"
    record_one(path)
    old = path.read_bytes()

    def refuse(src: object, dst: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr("sessiontape.recorder._target._rename", refuse)
    with pytest.warns(RecordingWarning) as caught:
        tape = record_one(path)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith(f"sessiontape: not recording to {str(path)!r}: the existing ")
    assert "could not be moved aside to run.jsonl.old." in message
    assert message.endswith(
        "(Permission denied); it was left as it was. The application goes on unrecorded."
    )
    assert not tape.active  # type: ignore[attr-defined]
    assert path.read_bytes() == old


def test_append_sets_a_torn_tail_aside_and_drops_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    data = good_tape()
    torn = b'{"kind": "process", "seq": 5, "argv": ["half'
    path.write_bytes(data + torn)
    tape = record_one(path, if_exists="append")
    aside = tape._recorder.torn_to  # type: ignore[attr-defined]
    assert aside.parent == tmp_path
    assert aside.name.startswith("run.jsonl.torn.")
    assert aside.read_bytes() == torn
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(data)
    rec = sessiontape.load(path)
    assert [type(e).__name__ for e in rec.entries[-3:]] == [
        "SessionResume", "ProcessCall", "SessionEnd",
    ]  # fmt: skip
    assert rec.resumes[0].seq == 5


def test_append_ends_a_whole_last_line_that_lost_only_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    data = good_tape()
    path.write_bytes(data[:-1])
    record_one(path, if_exists="append")
    assert path.read_bytes().startswith(data)
    assert list(tmp_path.iterdir()) == [path]
    assert len(sessiontape.load(path).resumes) == 1


def test_appending_to_a_finished_tape_writes_a_resume_marker(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_one(path)
    record_one(path, if_exists="append")
    rec = sessiontape.load(path)
    kinds = [type(e).__name__ for e in rec.entries]
    assert kinds == [
        "SessionStart", "ProcessCall", "SessionEnd",
        "SessionResume", "ProcessCall", "SessionEnd",
    ]  # fmt: skip
    assert not rec.crashed
    assert rec.end is rec.entries[-1]
    assert [e.seq for e in rec.entries] == list(range(6))


def test_a_tape_appended_to_replays_and_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl"
    record_one(path)
    record_one(path, if_exists="append")
    with sessiontape.replay(path) as tape:
        runner = tape.process_runner()
        for _ in range(2):
            assert runner.run([PY, "-c", "print('hi')"], text=True).stdout == "hi\n"
        report = tape.finish()
    assert report.ok
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out.endswith("valid (6 entries)\n")
    assert main(["show", str(path)]) == 0
    assert "session resumed: by " in capsys.readouterr().out


def test_append_to_an_empty_file_starts_a_session(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.touch()
    record_one(path, if_exists="append")
    rec = sessiontape.load(path)
    assert not rec.resumes
    assert not rec.crashed
