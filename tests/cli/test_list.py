"""``sessiontape list``: one row per cassette of a folder, as a table or as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import sessiontape
from sessiontape import FORMAT_VERSION
from sessiontape.cli import _list

from .conftest import Terminal

if TYPE_CHECKING:
    from .conftest import Cli, Recorder


@pytest.fixture
def folder(record_session: Recorder, tmp_path: Path) -> Path:
    """Two cassettes (one of a crashed session, in a subfolder) and two other files."""
    record_session("b.jsonl")
    record_session("sub/a.jsonl", crash_after=1)
    (tmp_path / "notes.jsonl").write_text('{"kind": "note"}\n', encoding="utf-8")
    (tmp_path / "README.md").write_text("# tapes\n", encoding="utf-8")
    return tmp_path


def test_a_row_per_cassette_sorted_by_name(cli: Cli, folder: Path) -> None:
    result = cli("list", folder)
    assert (result.code, result.err) == (0, "")
    assert result.lines == [
        "NAME         WORKERS  ENTRIES  DURATION  OUTCOME                FORMAT",
        f"b.jsonl            2       15    33.0ms  ended                       {FORMAT_VERSION}",
        f"sub/a.jsonl        1        9    16.0ms  crashed: RuntimeError       {FORMAT_VERSION}",
    ]


def test_json_is_a_list_of_objects(cli: Cli, folder: Path) -> None:
    result = cli("list", folder, "--json")
    assert (result.code, result.err) == (0, "")
    rows = json.loads(result.out)
    header = sessiontape.load(folder / "b.jsonl").header
    assert rows[0] == {
        "name": "b.jsonl",
        "path": str(folder / "b.jsonl"),
        "run_id": header.run_id,
        "recorded_at": header.recorded_at,
        "entrypoint": "app run",
        "format_version": sessiontape.FORMAT_VERSION,
        "level": "full",
        "size_bytes": (folder / "b.jsonl").stat().st_size,
        "workers": ["worker-1", "worker-2"],
        "entries": 15,
        "calls": 12,
        "duration_ns": 33_000_000,
        "crashed": False,
        "outcome": {"done": 2},
        "error": None,
        "patches": [],
    }
    assert [(r["name"], r["crashed"], r["error"], r["outcome"]) for r in rows[1:]] == [
        (
            "sub/a.jsonl",
            True,
            {"type": "RuntimeError", "message": "worker worker-2 lost its worktree"},
            None,
        )
    ]


def test_a_cassette_file_lists_itself(cli: Cli, folder: Path) -> None:
    result = cli("list", folder / "b.jsonl", "--json")
    assert result.code == 0
    assert [r["name"] for r in json.loads(result.out)] == [str(folder / "b.jsonl")]


def test_an_empty_folder(cli: Cli, tmp_path: Path) -> None:
    assert cli("list", tmp_path, "--json").out == "[]\n"
    result = cli("list", tmp_path)
    assert (result.code, result.out) == (0, "")
    assert result.err == f"no cassettes in {tmp_path}.\n"


@pytest.mark.writes_invalid_tapes
def test_a_broken_cassette_is_named_and_the_others_still_listed(cli: Cli, folder: Path) -> None:
    broken = folder / "c.jsonl"
    lines = (folder / "b.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    broken.write_text(lines[0] + "{not json\n" + "".join(lines[2:]), encoding="utf-8")
    result = cli("list", folder)
    assert result.code == 2
    assert [line.split()[0] for line in result.lines] == ["NAME", "b.jsonl", "sub/a.jsonl"]
    assert result.err.startswith(f"sessiontape: error: {broken}:2: ")
    assert result.err.count("\n") == 1


def test_a_missing_path(cli: Cli, tmp_path: Path) -> None:
    result = cli("list", tmp_path / "nowhere")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        f"sessiontape: error: {tmp_path / 'nowhere'}: no such file or folder; check the path.\n"
    )


def test_a_file_that_is_not_a_cassette(cli: Cli, folder: Path) -> None:
    result = cli("list", folder / "README.md")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        f"sessiontape: error: {folder / 'README.md'}:1: the first line is not a JSON object, "
        "so this is not a sessiontape cassette (it must start with a session_start entry).\n"
    )


def test_progress_over_many_cassettes_on_a_terminal(
    cli: Cli, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_list, "_PROGRESS_FILES", 1)
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert cli("list", folder).code == 0
    assert terminal.getvalue() == "\rlist: 0/2 cassettes (0%)\rlist: 1/2 cassettes (50%)\r\x1b[K"


def _record_patched(path: Path, ids: list[str]) -> None:
    with sessiontape.record(path, entrypoint="app run") as tape:
        for change in ids:
            assert sessiontape.patched(change) is True
        tape.finish(outcome="done")


def test_json_shows_each_tapes_change_markers(cli: Cli, tmp_path: Path) -> None:
    _record_patched(tmp_path / "new.jsonl", ["fetch-before-merge", "reworded-prompt"])
    _record_patched(tmp_path / "old.jsonl", [])
    rows = json.loads(cli("list", tmp_path, "--json").out)
    assert [(r["name"], r["patches"]) for r in rows] == [
        ("new.jsonl", ["fetch-before-merge", "reworded-prompt"]),
        ("old.jsonl", []),
    ]


def test_missing_patch_lists_the_tapes_that_still_need_the_old_path(
    cli: Cli, tmp_path: Path
) -> None:
    _record_patched(tmp_path / "a-new.jsonl", ["fetch-before-merge"])
    _record_patched(tmp_path / "b-old.jsonl", [])
    _record_patched(tmp_path / "c-other.jsonl", ["reworded-prompt"])
    result = cli("list", "--missing-patch", "fetch-before-merge", tmp_path, "--json")
    assert result.code == 0
    assert [r["name"] for r in json.loads(result.out)] == ["b-old.jsonl", "c-other.jsonl"]
    table = cli("list", "--missing-patch", "fetch-before-merge", tmp_path)
    assert [line.split()[0] for line in table.lines] == ["NAME", "b-old.jsonl", "c-other.jsonl"]
    done = cli("list", "--missing-patch", "reworded-prompt", tmp_path / "c-other.jsonl")
    assert (done.code, done.out) == (
        0,
        "every cassette was recorded by code that knew 'reworded-prompt'.\n",
    )
