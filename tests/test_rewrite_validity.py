"""Every tape sessiontape writes whole passes ``sessiontape validate``: the shared rewrite
path (``cassette/_rewrite.py``) checks a new tape against the same rules before it puts
it in place, and refuses an invalid one with an error naming what is wrong; the old tape
(or no tape) stays, and nothing is left beside it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import sessiontape
from sessiontape.cassette import replace_cassette, write_new_cassette


def _tape(path: Path) -> list[bytes]:
    with sessiontape.record(path) as tape:
        runner = tape.process_runner(_Echo())
        runner.run(["echo", "a"])
        runner.run(["echo", "b"])
        tape.finish({"done": True})
    return path.read_bytes().splitlines()


class _Echo:
    def run(self, argv: list[str], **kwargs: object) -> sessiontape.ProcessResult:
        return sessiontape.ProcessResult(argv, 0, " ".join(argv[1:]) + "\n")

    def stream(self, argv: list[str], **kwargs: object) -> object:
        raise NotImplementedError


def _drop_seq(lines: list[bytes], seq: int) -> list[bytes]:
    return [line for line in lines if f'"seq":{seq},'.encode() not in line]


def _orphan(lines: list[bytes], seq: int) -> list[bytes]:
    """The call at ``seq`` made a child of the header, which is no call."""
    marker = f'"seq":{seq},'.encode()
    return [
        line.replace(b'"parent":null', b'"parent":0') if marker in line else line for line in lines
    ]


BROKEN: list[tuple[str, Callable[[list[bytes]], list[bytes]], str]] = [
    ("a seq gap", lambda lines: _drop_seq(lines, 1), "seq 1 is missing from a session that ended"),
    ("a bad parent", lambda lines: _orphan(lines, 2), "parent 0 is a session_start entry"),
    ("a damaged line", lambda lines: [*lines[:2], b"{not json", *lines[2:]], "line 3"),
]


@pytest.mark.parametrize(("what", "break_it", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_replacing_a_tape_with_an_invalid_one_is_refused_and_the_tape_stays(
    what: str, break_it: Callable[[list[bytes]], list[bytes]], message: str, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    lines = _tape(path)
    before = path.read_bytes()
    with pytest.raises(sessiontape.CassetteError, match="'sessiontape validate' rejects") as err:
        replace_cassette(path, break_it(lines))
    assert message in str(err.value)
    assert "This is a bug in sessiontape" in str(err.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


@pytest.mark.parametrize(("what", "break_it", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_writing_an_invalid_new_tape_is_refused_and_nothing_is_written(
    what: str, break_it: Callable[[list[bytes]], list[bytes]], message: str, tmp_path: Path
) -> None:
    lines = _tape(tmp_path / "t.jsonl")
    target = tmp_path / "new.jsonl"
    with pytest.raises(sessiontape.CassetteError, match=message):
        write_new_cassette(target, break_it(lines))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_a_payload_kept_in_a_missing_sidecar_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with sessiontape.record(path) as tape:
        tape.process_runner(_Big()).run(["big"])
        tape.finish()
    lines = path.read_bytes().splitlines()
    assert b'"sidecar":true' in lines[1]
    # Written beside a name whose sidecar does not hold the payload.
    with pytest.raises(sessiontape.CassetteError, match=r"sidecar file .* which is missing"):
        write_new_cassette(tmp_path / "elsewhere.jsonl", lines)
    assert not (tmp_path / "elsewhere.jsonl").exists()
    # Beside its own sidecar, the same lines are a valid tape.
    assert write_new_cassette(path, lines) == path


class _Big:
    def run(self, argv: list[str], **kwargs: object) -> sessiontape.ProcessResult:
        return sessiontape.ProcessResult(argv, 0, b"x" * 100_000)

    def stream(self, argv: list[str], **kwargs: object) -> object:
        raise NotImplementedError
