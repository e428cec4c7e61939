"""``sessiontape shrink`` pieces without replay workers: cuts, signatures, ``--until``.

The end-to-end shrinking of real programs through the project's replay hook is in
``tests/real/test_shrink.py``; here the candidates are judged by a shell command
(``--until``), and the cuts and signatures are checked directly.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import sessiontape
from sessiontape.cassette import AgentTurn, ProcessCall, ShrunkFrom
from sessiontape.reduce import Cuts, Signature, signature_of_mismatch
from sessiontape.report import call_shape

from .conftest import Cli


def _valid(cli: Cli, path: Path) -> None:
    result = cli("validate", path)
    assert result.code == 0, result.out


def test_a_cut_is_written_as_a_valid_renumbered_tape(
    cassette: Path, cli: Cli, tmp_path: Path
) -> None:
    recording = sessiontape.load(cassette)
    tape = Cuts(recording)
    (t1,) = [u for u in tape.tasks(tape.whole) if u.label == "task t1"]
    cut = tape.without(tape.whole, t1)
    assert cut is not None
    out = tmp_path / "cut.jsonl"
    origin = tape.write(cut, ShrunkFrom(recording.header.run_id, len(recording.entries)), str(out))
    written = sessiontape.load(out)
    _valid(cli, out)
    assert [e.seq for e in written.entries] == list(range(len(written.entries)))
    assert origin[0] == 0
    assert len(origin) == len(written.entries)
    # The task's calls went with its snapshot item, nested calls with their parent.
    assert [item["id"] for item in written.snapshot] == ["t2"]
    assert not any(
        "task/t1" in " ".join(e.argv) for e in written.calls if isinstance(e, ProcessCall)
    )
    seqs = {e.seq for e in written.entries}
    assert all(e.parent is None or e.parent in seqs for e in written.entries)
    header = written.header
    assert header.shrunk_from is not None
    assert header.shrunk_from.run_id == recording.header.run_id
    assert header.run_id == f"{recording.header.run_id}-shrunk"


def test_removing_a_call_removes_the_calls_nested_in_it(cassette: Path) -> None:
    tape = Cuts(sessiontape.load(cassette))
    turn = next(e for e in tape.entries if isinstance(e, AgentTurn))
    nested = [e.seq for e in tape.entries if e.parent == turn.seq]
    assert nested
    (unit,) = [u for u in tape.calls(tape.whole) if u.seqs == {turn.seq}]
    cut = tape.without(tape.whole, unit)
    assert cut is not None
    assert not {turn.seq, *nested} & cut.kept
    assert tape.without(cut, unit) is None  # nothing left to remove


def test_until_shrinks_by_the_users_command(cassette: Path, cli: Cli, tmp_path: Path) -> None:
    before = hashlib.sha256(cassette.read_bytes()).hexdigest()
    out = tmp_path / "small.jsonl"
    result = cli(
        "shrink", cassette, "-o", out, "--until", "grep -q task/t2 {}", "-j", "2", "--json"
    )
    assert result.code == 0, result.err
    figures = json.loads(result.out)
    written = sessiontape.load(out)
    assert figures["entries_after"] == len(written.entries) < figures["entries_before"]
    assert figures["failure"] == "until on command: exit 0"
    assert figures["candidates"] > 0
    # The header, the snapshot and one call naming task/t2.
    assert len(written.entries) == 3
    assert "task/t2" in out.read_text()
    _valid(cli, out)
    assert hashlib.sha256(cassette.read_bytes()).hexdigest() == before


def test_a_command_that_rejects_the_tape_itself_is_refused(
    cassette: Path, cli: Cli, tmp_path: Path
) -> None:
    out = tmp_path / "small.jsonl"
    result = cli("shrink", cassette, "-o", out, "--until", "false")
    assert result.code == 2
    assert "does not exit 0 for the tape itself" in result.err
    assert not out.exists()


def test_interrupting_leaves_the_best_tape_so_far(
    cassette: Path, cli: Cli, tmp_path: Path, interruptible: None
) -> None:
    # The command counts its runs and, at the fourth, interrupts shrink as Ctrl-C would.
    counter = tmp_path / "runs"
    script = tmp_path / "test.sh"
    script.write_text(
        f"echo x >> {counter}\n"
        f'if [ "$(wc -l < {counter})" -ge 4 ]; then kill -INT {os.getpid()}; fi\n'
        'grep -q task/t2 "$1"\n'
    )
    out = tmp_path / "small.jsonl"
    result = cli("shrink", cassette, "-o", out, "--until", f"sh {script} {{}}", "-j", "1")
    assert result.code == 130
    assert "interrupted: the best so far" in result.out
    _valid(cli, out)
    assert "task/t2" in out.read_text()


def test_an_existing_output_that_is_not_a_cassette_is_refused(
    cassette: Path, cli: Cli, tmp_path: Path
) -> None:
    out = tmp_path / "notes.txt"
    out.write_text("keep me\n")
    result = cli("shrink", cassette, "-o", out, "--until", "true")
    assert result.code == 2
    assert "not a sessiontape cassette" in result.err
    assert out.read_text() == "keep me\n"
    assert cli("shrink", cassette, "-o", cassette, "--until", "true").code == 2


def _mismatch(kind: str, message: str, argv: list[str], actual: list[str]) -> dict[str, object]:
    return {
        "kind": kind,
        "boundary": "process",
        "seq": 12,
        "message": message,
        "expected": {"argv": argv, "cwd": "{repo}"},
        "actual": {"argv": actual, "cwd": "{repo}"},
        "diffs": [{"path": "argv[3]", "expected": argv[3], "actual": actual[3]}],
    }


def test_a_signature_leaves_out_numbers_paths_and_ids() -> None:
    one = _mismatch(
        "argument_mismatch",
        "at seq 12 in /tmp/a",
        ["git", "merge", "-q", "t1"],
        ["git", "merge", "-q", "t9"],
    )
    two = _mismatch(
        "argument_mismatch",
        "at seq 99 in /srv/b",
        ["git", "merge", "-q", "t7"],
        ["git", "merge", "-q", "x"],
    )
    assert signature_of_mismatch(one) == signature_of_mismatch(two)
    assert signature_of_mismatch(one) == Signature(
        "argument_mismatch", "process", "git merge", ("argv[3]",)
    )
    other = _mismatch(
        "argument_mismatch", "", ["git", "commit", "-q", "a"], ["git", "commit", "-q", "b"]
    )
    assert signature_of_mismatch(other) != signature_of_mismatch(one)
    store = {
        "kind": "store_mismatch",
        "boundary": "store",
        "expected": {"operation": "claim", "args": ["t1"]},
    }
    assert signature_of_mismatch(store).call == "claim"
    agent = {
        "kind": "exhausted",
        "boundary": "agent",
        "actual": {"method": "execute", "args": [{"step": "review", "task": "t3"}]},
    }
    assert signature_of_mismatch(agent).call == "execute review"


def test_call_shapes_keep_the_program_subcommand_and_flag_names(cassette: Path) -> None:
    shapes = {call_shape(e) for e in sessiontape.load(cassette).entries} - {None}
    assert "process git checkout -C -b" in shapes
    assert "process git merge" in shapes
    assert "store store.claim" in shapes
    assert "agent agent.execute (task)" in shapes


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--move-to", "elsewhere"], "add --minimize"),
        (["--coverage", "src", "--dist", "bogus"], "invalid choice"),
    ],
)
def test_corpus_usage_errors(cli: Cli, tmp_path: Path, args: list[str], message: str) -> None:
    result = cli("corpus", tmp_path, *args)
    assert result.code == 2
    assert message in result.err


def test_corpus_of_a_file_is_refused(cassette: Path, cli: Cli) -> None:
    result = cli("corpus", cassette)
    assert result.code == 2
    assert "not a folder" in result.err
