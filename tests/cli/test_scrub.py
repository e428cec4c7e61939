"""``sessiontape scrub``: secrets redacted after the fact, paths optionally, atomically."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import sessiontape

if TYPE_CHECKING:
    from .conftest import Cli, Editor, Recorder

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture
def leaky(record_session: Recorder, edit: Editor) -> Path:
    """A tape recorded without redaction: a token in stdout, a secret env var and kwarg."""
    path = record_session(
        redact=False, table={"git merge task/t1": (0, f"pushed with {TOKEN}\n", 2)}
    )
    edit.set(path, 9, env={"GITHUB_TOKEN": "s3cr3t-value", "HOME": "/home/x"})
    edit.set(path, 10, kwargs={"api_key": "k-123", "retries": 2})
    return path


@pytest.mark.writes_invalid_tapes
def test_scrub_to_a_new_file(cli: Cli, leaky: Path, tmp_path: Path) -> None:
    before = leaky.read_bytes()
    out = tmp_path / "clean.jsonl"
    result = cli("scrub", leaky, "-o", out)
    assert result.code == 0
    assert result.lines == [f"{leaky}: scrubbed 3 values in 3 entries; wrote {out}."]
    assert leaky.read_bytes() == before
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    clean = sessiontape.load(out)
    merge, checkout, turn = clean.by_seq(6), clean.by_seq(9), clean.by_seq(10)
    assert isinstance(merge, sessiontape.ProcessCall)
    assert merge.stdout == "pushed with [REDACTED:github]\n"
    assert isinstance(checkout, sessiontape.ProcessCall)
    assert checkout.env == {"GITHUB_TOKEN": "[REDACTED]", "HOME": "/home/x"}
    assert isinstance(turn, sessiontape.AgentTurn)
    assert turn.kwargs == {"api_key": "[REDACTED]", "retries": 2}
    # Everything else is as recorded.
    original = sessiontape.load(leaky)
    assert [e.seq for e in clean] == [e.seq for e in original]
    assert clean.by_seq(5) == original.by_seq(5)
    assert clean.header == original.header
    assert cli("validate", out).code == 0


def test_scrub_in_place_then_nothing_is_left(cli: Cli, leaky: Path) -> None:
    result = cli("scrub", leaky, "--in-place")
    assert result.code == 0
    assert result.lines == [f"{leaky}: scrubbed 3 values in 3 entries; wrote {leaky}."]
    assert TOKEN not in leaky.read_text()
    assert stat.S_IMODE(leaky.stat().st_mode) == 0o600
    again = cli("scrub", leaky, "--in-place")
    assert again.lines == [f"{leaky}: nothing to scrub; the file was left as it was."]


def test_scrub_roots_makes_paths_placeholders(cli: Cli, cassette: Path, tmp_path: Path) -> None:
    out = tmp_path / "portable.jsonl"
    result = cli("scrub", cassette, "-o", out, "--roots", "srv=/srv/repo")
    assert result.code == 0
    assert result.lines == [f"{cassette}: scrubbed 2 values in 2 entries; wrote {out}."]
    clean = sessiontape.load(out)
    checkout = clean.by_seq(3)
    assert isinstance(checkout, sessiontape.ProcessCall)
    assert checkout.argv == ["git", "-C", "{srv}", "checkout", "-b", "task/t1"]
    assert clean.header.roots == {"srv": "/srv/repo"}


def test_scrub_refuses_to_redefine_a_placeholder(
    cli: Cli, cassette: Path, tmp_path: Path, edit: Editor
) -> None:
    edit.set(cassette, 0, roots={"repo": "/home/ci/app"})
    result = cli("scrub", cassette, "-o", tmp_path / "x.jsonl", "--roots", "repo=/srv/repo")
    assert result.code == 2
    assert result.err == (
        "sessiontape: error: --roots repo=/srv/repo: the cassette's placeholder {repo} already "
        "stands for /home/ci/app; pick another name for this root.\n"
    )
    assert not (tmp_path / "x.jsonl").exists()


def test_scrub_usage_errors(cli: Cli, cassette: Path, tmp_path: Path) -> None:
    neither = cli("scrub", cassette)
    assert neither.code == 2
    assert "one of the arguments -o/--output --in-place --check is required" in neither.err
    relative = cli("scrub", cassette, "-o", tmp_path / "x.jsonl", "--roots", "repo=src")
    assert relative.code == 2
    assert relative.err.startswith(
        "sessiontape: error: path root 'repo' is 'src', a relative path; give an absolute path"
    )
    nowhere = tmp_path / "no" / "such" / "dir" / "x.jsonl"
    unwritable = cli("scrub", cassette, "-o", nowhere)
    assert unwritable.code == 2
    assert unwritable.err == (
        f"sessiontape: error: cannot write {nowhere}: No such file or directory. Check that "
        "the directory exists and is writable.\n"
    )
