"""Every command's errors: one line ``sessiontape: error: <path>: what, what to do``, exit
code 2, never a traceback; and the exit codes said in every ``--help``."""

from __future__ import annotations

import builtins
import json
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sessiontape.cli import _main

if TYPE_CHECKING:
    from .conftest import Cli

#: How each command takes one cassette to read (``{}``), with the rest it needs.
COMMANDS: dict[str, Callable[[Path, Path], list[str | Path]]] = {
    "show": lambda bad, tmp: ["show", bad],
    "show --json": lambda bad, tmp: ["show", bad, "--json"],
    "stats": lambda bad, tmp: ["stats", bad],
    "stats --json": lambda bad, tmp: ["stats", bad, "--json"],
    "validate": lambda bad, tmp: ["validate", bad],
    "validate --json": lambda bad, tmp: ["validate", bad, "--json"],
    "diff": lambda bad, tmp: ["diff", bad, bad],
    "diff --json": lambda bad, tmp: ["diff", bad, bad, "--json"],
    "export": lambda bad, tmp: ["export", bad, "-o", tmp / "out.json"],
    "slice": lambda bad, tmp: ["slice", bad, "-o", tmp / "out.jsonl", "--worker", "w1"],
}


def _directory(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "tapes"
    path.mkdir()
    quoted = shlex.quote(str(path))
    return path, (
        f"is a directory, not a cassette; name a cassette file in it ('sessiontape list "
        f"{quoted}' shows them)."
    )


def _binary(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "tape.jsonl"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" * 20)
    return path, (
        "a binary file, not a sessiontape cassette (a text file of JSON lines whose first "
        "line is a session_start entry); check the path."
    )


def _missing(tmp_path: Path) -> tuple[Path, str]:
    return tmp_path / "nowhere.jsonl", (
        "no such cassette. Record one first (pytest --record-session, or "
        "sessiontape.record(...)), or check the path."
    )


def _unreadable(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "secret.jsonl"
    path.write_text('{"kind": "session_start"}\n', encoding="utf-8")
    path.chmod(0)
    return path, (
        f"permission denied; make the file readable (chmod u+r {shlex.quote(str(path))}), or "
        "run as a user who can read it."
    )


BAD_INPUTS = {
    "directory": _directory,
    "binary": _binary,
    "missing": _missing,
    "unreadable": _unreadable,
}


@pytest.fixture
def deny_reads(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """Make reading ``path`` fail as an unreadable file does, even for root."""

    def deny(path: Path) -> None:
        if not os.access(path, os.R_OK):
            return  # the file mode is enough
        real_open = builtins.open

        def guarded_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            if os.fspath(file) == str(path):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", guarded_open)

    return deny


@pytest.mark.writes_invalid_tapes
@pytest.mark.parametrize("bad", sorted(BAD_INPUTS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_bad_input_is_one_line_and_exit_code_2(
    cli: Cli,
    tmp_path: Path,
    deny_reads: Callable[[Path], None],
    command: str,
    bad: str,
) -> None:
    path, what = BAD_INPUTS[bad](tmp_path)
    if bad == "unreadable":
        deny_reads(path)
    result = cli(*COMMANDS[command](path, tmp_path))
    assert result.code == 2
    assert result.err == f"sessiontape: error: {path}: {what}\n"
    if command == "validate --json":
        assert [r["readable"] for r in json.loads(result.out)] == [False]
    elif command != "validate":
        assert result.out == ""


@pytest.mark.writes_invalid_tapes
@pytest.mark.parametrize("bad", ["binary", "missing", "unreadable"])
def test_list_names_a_bad_file_in_one_line(
    cli: Cli, tmp_path: Path, deny_reads: Callable[[Path], None], bad: str
) -> None:
    path, what = BAD_INPUTS[bad](tmp_path)
    if bad == "unreadable":
        deny_reads(path)
    result = cli("list", path)
    assert result.code == 2
    if bad == "missing":
        what = "no such file or folder; check the path."
    assert result.err == f"sessiontape: error: {path}: {what}\n"


def test_an_os_error_is_one_line(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    def run(args: object) -> int:
        raise PermissionError(13, "Permission denied", "/srv/tapes/out.json")

    monkeypatch.setattr(_main._stats, "run", run)
    result = cli("stats", "x.jsonl")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "sessiontape: error: /srv/tapes/out.json: Permission denied; check the path, its "
        "permissions and the disk.\n"
    )


def test_an_unexpected_error_is_one_line_that_asks_for_a_report(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(args: object) -> int:
        raise TypeError("unsupported operand\ntype(s)")

    monkeypatch.setattr(_main._stats, "run", run)
    monkeypatch.delenv(_main.DEBUG_VAR, raising=False)
    result = cli("stats", "x.jsonl")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "sessiontape: error: unexpected TypeError: unsupported operand type(s). This is a bug "
        "in sessiontape; please report it with the command you ran (set SESSIONTAPE_DEBUG=1 "
        "to see the traceback).\n"
    )
    monkeypatch.setenv(_main.DEBUG_VAR, "1")
    with pytest.raises(TypeError, match="unsupported operand"):
        cli("stats", "x.jsonl")


@pytest.mark.parametrize(
    "command", ["list", "show", "stats", "diff", "validate", "slice", "export", "demo"]
)
def test_every_help_states_the_exit_codes(cli: Cli, command: str) -> None:
    result = cli(command, "--help")
    assert result.code == 0
    text = " ".join(result.out.split())
    assert (
        "exit codes: 0 all is well; 1 a finding (validate found an error, diff found a "
        "divergence); 2 a usage error, or an input that cannot be read or written." in text
    )


def test_the_main_help_states_the_exit_codes_and_the_json_commands(cli: Cli) -> None:
    text = " ".join(cli("--help").out.split())
    assert "list, show, stats, validate and diff take --json for scripts." in text
    assert "exit codes: 0 all is well; 1 a finding" in text
