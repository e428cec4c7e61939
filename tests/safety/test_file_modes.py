"""Files are private: everything sessiontape writes is 0600, whatever the umask."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape.cassette import write_private_file
from sessiontape.cli import main

from ._tapes import good_tape

PY = sys.executable


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """The most permissive umask: a file gets whatever mode its writer asks for."""
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def record(path: Path, **options: object) -> sessiontape.Tape:
    with sessiontape.record(path, **options) as tape:  # type: ignore[arg-type]
        tape.process_runner().run([PY, "-c", "print('x')"])
    return tape


def test_a_new_cassette_is_private(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "run.jsonl"
    record(path)
    assert mode(path) == 0o600


def test_a_cassette_moved_aside_is_private(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(good_tape())
    path.chmod(0o644)  # written by someone else, or an older sessiontape
    tape = record(path)
    moved = tape.moved_to  # type: ignore[attr-defined]
    assert (mode(moved), mode(path)) == (0o600, 0o600)


def test_an_appended_cassette_and_its_torn_tail_are_private(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(good_tape() + b'{"kind": "proc')
    path.chmod(0o666)
    tape = record(path, if_exists="append")
    torn = tape._recorder.torn_to  # type: ignore[attr-defined]
    assert (mode(path), mode(torn)) == (0o600, 0o600)


def test_sidecars_and_other_files_beside_a_cassette_are_private(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl.payloads" / "sha256-ab"
    path.parent.mkdir()
    write_private_file(path, b"payload")
    assert mode(path) == 0o600
    with pytest.raises(FileExistsError):
        write_private_file(path, b"other")  # never overwritten
    assert path.read_bytes() == b"payload"


def test_everything_the_commands_write_is_private(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl"
    record(path)
    outputs = {
        "export": tmp_path / "otlp.json",
        "report": tmp_path / "report.html",
        "scrub": tmp_path / "scrubbed.jsonl",
        "slice": tmp_path / "slice.jsonl",
    }
    assert main(["export", str(path), "-o", str(outputs["export"])]) == 0
    assert main(["report", str(path), "-o", str(outputs["report"])]) == 0
    assert main(["scrub", str(path), "-o", str(outputs["scrub"])]) == 0
    assert main(["slice", str(path), "--worker", "main", "-o", str(outputs["slice"])]) == 0
    path.chmod(0o644)
    assert main(["scrub", str(path), "--in-place", "--roots", f"t={tmp_path}"]) == 0
    capsys.readouterr()
    assert {name: mode(out) for name, out in outputs.items()} == dict.fromkeys(outputs, 0o600)
    assert mode(path) == 0o600


def test_the_demo_copy_of_a_tape_is_private(tmp_path: Path) -> None:
    import importlib

    import sessiontape.cli

    had = "sessiontape.cli._demo" in sys.modules
    try:
        _alter = importlib.import_module("sessiontape.cli._demo")._alter
        check_demo_copy(_alter, tmp_path)
    finally:
        if not had:  # the CLI imports the demo only when asked: leave it as it was
            sys.modules.pop("sessiontape.cli._demo", None)
            if hasattr(sessiontape.cli, "_demo"):
                delattr(sessiontape.cli, "_demo")


def check_demo_copy(_alter: Any, tmp_path: Path) -> None:
    """The demo's altered copy of a recorded tape is 0600."""

    class Echo:
        def run(self, argv: list[str], **kwargs: object) -> sessiontape.ProcessResult:
            return sessiontape.ProcessResult(argv, 0, b"", b"")

    source = tmp_path / "run.jsonl"
    with sessiontape.record(source) as tape:
        tape.process_runner(Echo()).run(["git", "commit", "-m", "msg"])  # type: ignore[arg-type]
    _alter(source, tmp_path / "altered.jsonl")
    assert mode(tmp_path / "altered.jsonl") == 0o600
