"""``sessiontape validate``: seqs, parent links, clocks, secrets, replayability."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import sessiontape
import sessiontape.cassette
from sessiontape.cassette import FORMAT_VERSION

if TYPE_CHECKING:
    from .conftest import Cli, Editor, Recorder

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_a_clean_tape_is_valid(cli: Cli, cassette: Path) -> None:
    result = cli("validate", cassette)
    assert result.code == 0
    assert result.lines == [f"{cassette}: valid (15 entries)"]


@pytest.mark.writes_invalid_tapes
def test_secrets_left_in_a_tape_are_errors(
    cli: Cli, record_session: Recorder, edit: Editor
) -> None:
    path = record_session(
        redact=False, table={"git merge task/t1": (0, f"pushed with {TOKEN}\n", 2)}
    )
    edit.set(path, 9, env={"GITHUB_TOKEN": "s3cr3t-value", "HOME": "/home/x"})
    result = cli("validate", path)
    assert result.code == 1
    assert result.lines == [
        f"{path}: seq 6: error: stdout holds a secret (github). Run 'sessiontape scrub' on "
        "the cassette and rotate the secret.",
        f"{path}: seq 9: error: env.GITHUB_TOKEN holds a secret (secret name). Run "
        "'sessiontape scrub' on the cassette and rotate the secret.",
        f"{path}: invalid (2 errors, 15 entries)",
    ]
    assert TOKEN not in result.out  # never print a secret
    assert "s3cr3t" not in result.out
    quiet = cli("validate", "--no-secrets-check", path)
    assert quiet.code == 0
    assert quiet.lines == [f"{path}: valid (15 entries)"]


@pytest.mark.writes_invalid_tapes
def test_missing_seqs_in_a_finished_session_are_errors(
    cli: Cli, cassette: Path, edit: Editor
) -> None:
    edit.drop(cassette, 6)
    edit.drop(cassette, 7)
    result = cli("validate", cassette)
    assert result.code == 1
    assert result.lines == [
        f"{cassette}: error: seqs 6-7 are missing from a session that ended: lines were lost "
        "or deleted. Re-record the session, or restore the file.",
        f"{cassette}: invalid (1 error, 13 entries)",
    ]


def test_a_crashed_session_gives_warnings_only(
    cli: Cli, record_session: Recorder, edit: Editor
) -> None:
    path = record_session(crash_after=1)
    edit.drop(path, 4)  # the agent turn was still open at the crash; its child points to it
    result = cli("validate", path)
    assert result.code == 0
    assert result.lines == [
        f"{path}: warning: no session_end: the session crashed, or the tape was cut by "
        "'sessiontape slice'; it replays up to where it stops.",
        f"{path}: warning: seq 4 is missing: calls still open when the session stopped, or "
        "entries cut out of a slice.",
        f"{path}: valid (2 warnings, 8 entries)",
    ]


@pytest.mark.writes_invalid_tapes
def test_bad_parent_links_are_errors(cli: Cli, cassette: Path, edit: Editor) -> None:
    edit.set(cassette, 5, parent=6)
    edit.set(cassette, 12, parent=1)
    edit.drop(cassette, 10)  # seq 11 was made inside it
    result = cli("validate", "--no-secrets-check", cassette)
    assert result.code == 1
    assert result.lines == [
        f"{cassette}: error: seq 10 is missing from a session that ended: lines were lost "
        "or deleted. Re-record the session, or restore the file.",
        f"{cassette}: seq 5: error: parent 6 is not lower than the entry's own seq; a call's "
        "parent opens before it, so the file was edited or merged. Re-record the session.",
        f"{cassette}: seq 11: error: parent 10 is not in the cassette; replay cannot tell that "
        "this call was made inside it. Re-record the session, or restore the lost line.",
        f"{cassette}: seq 12: error: parent 1 is a store_snapshot entry, not a boundary call; "
        "the file was edited. Re-record the session.",
        f"{cassette}: invalid (4 errors, 14 entries)",
    ]


def test_clock_going_back_is_a_warning(cli: Cli, cassette: Path, edit: Editor) -> None:
    edit.set(cassette, 9, ts_ns=1_700_000_000_005_000_000)  # 11ms before seq 8 started
    result = cli("validate", cassette)
    assert result.code == 0
    assert result.lines == [
        f"{cassette}: seq 9: warning: wall-clock time goes back 11.0ms from seq 8 on thread "
        "'MainThread': the system clock was set back, or the file was edited.",
        f"{cassette}: valid (1 warning, 15 entries)",
    ]


def test_digest_only_payloads_and_levels_are_warnings(
    cli: Cli, record_session: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without a sidecar (unwritable, say), a large payload is kept as a digest only.
    monkeypatch.setattr(sessiontape.cassette.Sidecar, "put", _refuse_put)
    full = record_session("full.jsonl", max_inline_bytes=2)
    standard = record_session("standard.jsonl", level="standard")
    result = cli("validate", full, standard)
    assert result.code == 0
    assert result.lines == [
        f"{full}: warning: 6 payload(s) are kept only as digests (seq 3 stdout, seq 5 stdout, "
        "seq 6 stdout, seq 9 stdout, seq 11 stdout and 1 more): replaying those calls fails. "
        "Re-record with a larger max_inline_bytes to keep them.",
        f"{full}: valid (1 warning, 15 entries)",
        f"{standard}: warning: recorded at level 'standard', which keeps no payloads: the tape "
        "can be read but not replayed. Record with level='full' to replay it.",
        f"{standard}: valid (1 warning, 15 entries)",
    ]


def test_unreadable_files_exit_2_and_the_others_are_still_checked(
    cli: Cli, cassette: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "process", "seq": 0}\n')
    result = cli("validate", bad, cassette)
    assert result.code == 2
    assert result.err == (
        f"sessiontape: error: {bad}:1: the first line has kind 'process'; a sessiontape "
        "cassette starts with a session_start entry.\n"
    )
    assert result.lines == [f"{cassette}: valid (15 entries)"]


@pytest.mark.writes_invalid_tapes
def test_an_unknown_format_version_is_unreadable(cli: Cli, cassette: Path, edit: Editor) -> None:
    edit.set(cassette, 0, format_version=99)
    result = cli("validate", cassette)
    assert result.code == 2
    assert result.out == ""
    assert result.err == (
        f"sessiontape: error: {cassette}:1: format version 99 is not one this sessiontape reads "
        f"(1 to {FORMAT_VERSION}). Upgrade sessiontape to read it, or re-record the "
        "cassette.\n"
    )


def test_carriage_return_line_ends_are_named_with_the_fix(
    cli: Cli, cassette: Path, tmp_path: Path
) -> None:
    cr = tmp_path / "mac.jsonl"
    cr.write_bytes(cassette.read_bytes().replace(b"\n", b"\r"))
    result = cli("validate", cr)
    assert result.code == 2
    fixed = tmp_path / "mac.lf.jsonl"
    command = f"tr '\\r' '\\n' < {cr} > {fixed} && sessiontape validate {fixed}"
    assert result.err == (
        f"sessiontape: error: {cr}:1: its entries end with a carriage return alone ('\\r', as "
        "classic Mac OS ends lines) instead of a newline ('\\n'), so they run together on "
        "this line; a cassette is JSON lines, each ended by '\\n'. Convert the line ends and "
        f"check the copy: {command}\n"
    )
    # The next step works when pasted.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, f"{fixed}: valid (15 entries)\n")
    # Windows line ends are whitespace to JSON: such a tape is valid as it is.
    crlf = tmp_path / "windows.jsonl"
    crlf.write_bytes(cassette.read_bytes().replace(b"\n", b"\r\n"))
    assert cli("validate", crlf).lines == [f"{crlf}: valid (15 entries)"]


def test_a_torn_last_line_is_a_warning(cli: Cli, cassette: Path) -> None:
    with cassette.open("ab") as fh:
        fh.write(b'{"kind":"process","seq":15,')
    result = cli("validate", cassette)
    assert result.code == 0
    assert result.lines == [
        f"{cassette}: warning: the last line is torn (the recorder stopped mid-write); it was "
        "skipped.",
        f"{cassette}: valid (1 warning, 15 entries)",
    ]


def _refuse_put(self: object, raw: bytes) -> tuple[str, bool]:
    raise PermissionError(13, "Permission denied")


@pytest.mark.writes_invalid_tapes
def test_sidecar_payloads_are_valid_and_a_missing_one_is_an_error(
    cli: Cli, record_session: Recorder
) -> None:
    full = record_session("full.jsonl", max_inline_bytes=2)
    assert cli("validate", full).lines == [f"{full}: valid (15 entries)"]
    blobs = sorted((full.parent / "full.jsonl.blobs").iterdir())
    assert blobs
    blobs[0].unlink()
    result = cli("validate", full)
    assert result.code == 1
    missing = [line for line in result.lines if "is missing" in line]
    assert len(missing) >= 1
    assert str(blobs[0]) in missing[0]
    assert ": seq " in missing[0]
    assert result.lines[-1].startswith(f"{full}: invalid (")


@pytest.mark.writes_invalid_tapes
def test_json_gives_one_verdict_per_cassette(
    cli: Cli, cassette: Path, record_session: Recorder, edit: Editor, tmp_path: Path
) -> None:
    broken = record_session("broken.jsonl")
    edit.drop(broken, 6)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "process", "seq": 0}\n')
    result = cli("validate", cassette, broken, bad, "--json")
    assert result.code == 2  # an unreadable file outranks an invalid one
    assert result.err == (
        f"sessiontape: error: {bad}:1: the first line has kind 'process'; a sessiontape "
        "cassette starts with a session_start entry.\n"
    )
    assert json.loads(result.out) == [
        {
            "cassette": str(cassette),
            "readable": True,
            "valid": True,
            "entries": 15,
            "errors": 0,
            "warnings": 0,
            "findings": [],
        },
        {
            "cassette": str(broken),
            "readable": True,
            "valid": False,
            "entries": 14,
            "errors": 1,
            "warnings": 0,
            "findings": [
                {
                    "severity": "error",
                    "message": "seq 6 is missing from a session that ended: lines were lost or "
                    "deleted. Re-record the session, or restore the file.",
                    "seq": None,
                }
            ],
        },
        {
            "cassette": str(bad),
            "readable": False,
            "valid": False,
            "error": f"{bad}:1: the first line has kind 'process'; a sessiontape cassette "
            "starts with a session_start entry.",
        },
    ]


@pytest.mark.writes_invalid_tapes
def test_json_exit_codes(cli: Cli, cassette: Path, record_session: Recorder, edit: Editor) -> None:
    assert cli("validate", cassette, "--json").code == 0
    broken = record_session("broken.jsonl")
    edit.drop(broken, 6)
    result = cli("validate", cassette, broken, "--json")
    assert result.code == 1
    assert [r["valid"] for r in json.loads(result.out)] == [True, False]
