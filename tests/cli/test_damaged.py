"""A damaged cassette is named by every command as ``load()`` names it: the file and the
line, not "a binary file". A tail of NUL bytes, what a crash can leave after the last
write, is a torn tail: every command reads the prefix, as ``load()`` does."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import sessiontape
from sessiontape import CassetteError

if TYPE_CHECKING:
    from .conftest import Cli

#: Each command reading one cassette (``bad``), with the rest it needs; ``tmp`` is free.
COMMANDS: dict[str, Callable[[Path, Path], list[str | Path]]] = {
    "validate": lambda bad, tmp: ["validate", bad],
    "validate --json": lambda bad, tmp: ["validate", bad, "--json"],
    "show": lambda bad, tmp: ["show", bad],
    "list": lambda bad, tmp: ["list", bad],
    "stats": lambda bad, tmp: ["stats", bad],
    "report": lambda bad, tmp: ["report", bad, "-o", tmp / "page.html"],
    "slice": lambda bad, tmp: ["slice", bad, "-o", tmp / "cut.jsonl", "--worker", "worker-1"],
    "diff": lambda bad, tmp: ["diff", bad, bad],
    "export": lambda bad, tmp: ["export", bad, "-o", tmp / "out.json"],
    "scrub": lambda bad, tmp: ["scrub", bad, "-o", tmp / "clean.jsonl"],
    "scrub --check": lambda bad, tmp: ["scrub", bad, "--check"],
}


@pytest.fixture
def nul_line(cassette: Path) -> Path:
    """The standard session with its eleventh line overwritten by NUL bytes (its length
    kept, as a disk that lost a block leaves it)."""
    lines = cassette.read_bytes().split(b"\n")
    assert len(lines) > 12
    lines[10] = b"\0" * len(lines[10])
    cassette.write_bytes(b"\n".join(lines))
    return cassette


@pytest.mark.writes_invalid_tapes
def test_load_names_the_line(nul_line: Path) -> None:
    with pytest.raises(CassetteError) as caught:
        sessiontape.load(nul_line)
    assert caught.value.line == 11
    assert f"{nul_line}:11: not valid JSON" in str(caught.value)


@pytest.mark.writes_invalid_tapes
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_names_the_damaged_line(
    cli: Cli, nul_line: Path, tmp_path: Path, command: str
) -> None:
    result = cli(*COMMANDS[command](nul_line, tmp_path))
    assert result.code == 2
    assert "binary" not in result.err
    (line,) = result.err.splitlines()
    assert line.startswith(f"sessiontape: error: {nul_line}:11: not valid JSON"), line
    if command == "validate --json":
        assert [r["readable"] for r in json.loads(result.out)] == [False]


@pytest.fixture
def nul_tail(cassette: Path) -> Path:
    """A session cut short after its tenth line (no session_end), with 4 KiB of NUL bytes
    after it: the file's size was written, the last block's data was not."""
    lines = cassette.read_bytes().split(b"\n")
    cassette.write_bytes(b"\n".join(lines[:10]) + b"\n" + b"\0" * 4096)
    return cassette


def test_a_nul_tail_loads_as_a_torn_tail(nul_tail: Path) -> None:
    recording = sessiontape.load(nul_tail)
    assert recording.torn
    assert recording.crashed
    assert len(recording.entries) == 10


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_reads_past_a_nul_tail(
    cli: Cli, nul_tail: Path, tmp_path: Path, command: str
) -> None:
    result = cli(*COMMANDS[command](nul_tail, tmp_path))
    assert "error" not in result.err, result.err
    assert result.code in (0, 1)  # validate and diff may have findings: a crashed session
    if command == "validate --json":
        (verdict,) = json.loads(result.out)
        assert verdict["readable"] is not False
    if command == "show":
        assert result.out


def test_a_binary_file_is_still_called_binary(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "tape.jsonl"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" * 20)
    result = cli("validate", path)
    assert result.code == 2
    assert "a binary file, not a sessiontape cassette" in result.err
