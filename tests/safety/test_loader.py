"""A loader that cannot be broken: any bytes give a Recording or a CassetteError with path:line."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

import sessiontape
from sessiontape import CassetteError
from sessiontape.cassette import MAX_DEPTH, MAX_NS, MAX_SEQ, SeqGaps
from sessiontape.cli import main
from sessiontape.cli._validate import check
from sessiontape.report import describe

from ._tapes import TS, end, good_tape, header, process, tape


def load_error(data: bytes) -> CassetteError:
    with pytest.raises(CassetteError) as caught:
        sessiontape.loads(data, path="t.jsonl")
    return caught.value


def test_invalid_utf8_in_a_line_names_the_line() -> None:
    data = good_tape() + b'{"kind": "process", "seq": 9, "stdout": "\xff\xfe"}\n'
    error = load_error(data)
    assert (error.path, error.line) == ("t.jsonl", 6)
    assert error.reason.startswith("not valid UTF-8 text (byte ")
    assert error.reason.endswith("Fix or delete the line, or re-record the cassette.")


def test_invalid_utf8_in_the_header_is_not_a_cassette() -> None:
    error = load_error(b"\xff\xfe\x00garbage\n" + good_tape())
    assert error.line == 1
    assert "the first line is not a JSON object" in error.reason


def test_deep_nesting_is_a_bad_line_not_a_recursion_error() -> None:
    deep = b'{"kind": "call", "seq": 5, "ts_ns": 1, "mono_ns": 1, "boundary": "b", "method": "m",'
    deep += b' "result": '
    deep += b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    error = load_error(good_tape() + deep)
    assert error.line == 6
    assert error.reason.startswith("nested deeper than any recorded value can be")


def _nested(depth: int, as_dict: bool) -> bytes:
    """A JSON value nested ``depth`` levels deep (built as text: json.dumps would recurse)."""
    opener, closer = (b'{"a": ', b"}") if as_dict else (b"[", b"]")
    return opener * depth + b"1" + closer * depth


def _tape_with_result(result: bytes) -> bytes:
    call = {"kind": "call", "seq": 4, "ts_ns": TS + 4, "mono_ns": 1_004, "boundary": "b",
            "method": "m"}  # fmt: skip
    line = json.dumps(call)[:-1].encode() + b', "result": ' + result + b"}\n"
    return tape(header(level="full"), *(process(i) for i in (1, 2, 3))) + line + tape(end(5))


@pytest.mark.parametrize("as_dict", [False, True])
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 2_000, 8_000])
def test_nesting_past_the_limit_is_a_bad_line_on_every_python(depth: int, as_dict: bool) -> None:
    # CPython 3.13 decodes 2,000 or 8,000 levels where 3.11 refuses them while decoding:
    # the loader holds every Python to the same limit, so nothing deeper reaches validate
    # or replay (where a recursive walk would raise RecursionError).
    error = load_error(_tape_with_result(_nested(depth, as_dict)))
    assert error.line == 5
    assert "nested" in error.reason
    assert "deeper than any recorded value can be" in error.reason


@pytest.mark.parametrize("as_dict", [False, True])
def test_nesting_at_the_limit_loads_validates_and_replays(as_dict: bool) -> None:
    data = _tape_with_result(_nested(MAX_DEPTH - 1, as_dict))
    recording = sessiontape.loads(data, path="deep.jsonl")
    check(recording)  # what `sessiontape validate` runs: the scrubber walks every value
    for entry in recording.entries:
        describe(entry)
    with sessiontape.replay(recording, patch_time=False) as replaying:
        replaying.finish()


def test_deep_nesting_in_the_header() -> None:
    line = json.dumps(header())[:-1].encode() + b', "config": ' + b"[" * 50_000
    line += b"]" * 50_000 + b"}\n"
    error = load_error(line + tape(end(1)))
    assert error.line == 1


@pytest.mark.parametrize(
    ("field", "value", "msg"),
    [
        ("seq", 10**26, f"Expected `int` <= {MAX_SEQ} - at `$.seq`"),
        ("seq", MAX_SEQ + 1, f"Expected `int` <= {MAX_SEQ} - at `$.seq`"),
        ("seq", -1, "Expected `int` >= 0 - at `$.seq`"),
        ("ts_ns", -5, "Expected `int` >= 0 - at `$.ts_ns`"),
        ("ts_ns", MAX_NS + 1, f"Expected `int` <= {MAX_NS} - at `$.ts_ns`"),
        ("mono_ns", 10**30, f"Expected `int` <= {MAX_NS} - at `$.mono_ns`"),
        ("duration_ns", -1, "Expected `int` >= 0 - at `$.duration_ns`"),
        ("parent", -3, "Expected `int` >= 0 - at `$.parent`"),
        ("ts_ns", 1e300, "Expected `int`, got `float` - at `$.ts_ns`"),
    ],
)
def test_absurd_numbers_are_errors_with_their_line(field: str, value: object, msg: str) -> None:
    entries = [header(), process(1), process(2, **{field: value}), end(3)]
    error = load_error(tape(*entries))
    assert error.line == 3
    assert error.reason == (
        f"not a valid sessiontape entry: {msg}. Fix or delete the line, or re-record the cassette."
    )


def test_a_huge_gap_of_seqs_costs_nothing() -> None:
    rec = sessiontape.loads(tape(header(), process(1), process(MAX_SEQ)))
    assert rec.crashed
    assert len(rec.missing_seqs) == MAX_SEQ - 2
    assert rec.missing_seqs.ranges() == [(2, MAX_SEQ - 1)]
    assert 5 in rec.missing_seqs
    assert MAX_SEQ not in rec.missing_seqs
    assert rec.missing_seqs[0] == 2
    assert rec.missing_seqs[-1] == MAX_SEQ - 1
    assert rec.missing_seqs[:3] == [2, 3, 4]


def test_seq_gaps_read_like_a_list() -> None:
    gaps = SeqGaps([(2, 3), (7, 7)])
    assert gaps == [2, 3, 7]
    assert list(gaps) == [2, 3, 7]
    assert len(gaps) == 3
    assert gaps[2] == 7
    assert [s for s in range(10) if s in gaps] == [2, 3, 7]
    assert gaps != [2, 3]
    assert not SeqGaps()
    assert repr(gaps) == "SeqGaps([2-3, 7])"
    with pytest.raises(IndexError):
        gaps[3]


@pytest.mark.writes_invalid_tapes
def test_validate_and_show_a_tape_with_a_huge_gap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gap.jsonl"
    path.write_bytes(tape(header(), process(1), process(10**15), end(10**15 + 1)))
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"seqs 2-{10**15 - 1} are missing from a session that ended" in out
    assert main(["show", str(path)]) == 0


def test_duplicated_seqs_name_both_lines() -> None:
    data = tape(header(), process(1), process(2), process(1), end(3))
    error = load_error(data)
    assert error.line == 4
    assert error.reason == (
        "seq 1 appears twice; the file was edited or two sessions wrote to it at once. "
        "Delete the copy that does not belong, or re-record. It is on lines 2 and 4."
    )


def test_a_seq_below_the_header_is_an_error_with_its_line() -> None:
    error = load_error(tape(header(seq=5), process(6), process(2), end(7)))
    assert error.line == 3
    assert error.reason.startswith("seq 2 is lower than the session_start's seq 5;")


def test_a_second_session_start_is_two_joined_cassettes() -> None:
    error = load_error(tape(header(), process(1), header(seq=2), end(3)))
    assert error.line == 3
    assert error.reason.startswith("a second session_start (seq 2): two cassettes were joined")


def test_a_complete_last_line_without_newline_is_kept_not_torn() -> None:
    rec = sessiontape.loads(good_tape().rstrip(b"\n"))
    assert not rec.torn
    assert not rec.crashed


def test_a_wrong_last_line_without_newline_is_an_error_not_a_torn_line() -> None:
    data = tape(header(), process(1)) + json.dumps(process(2, seq=-1)).encode()
    error = load_error(data)
    assert error.line == 3


def test_a_torn_last_line_is_still_a_crash() -> None:
    data = good_tape()
    rec = sessiontape.loads(data[:-7])
    assert rec.torn
    assert rec.crashed
    assert [e.seq for e in rec.entries] == [0, 1, 2, 3]


def test_absurd_timestamps_never_reach_the_fake_clock() -> None:
    # The largest times a tape may hold still fit the clock: replay cannot overflow it.
    rec = sessiontape.loads(
        tape(header(ts_ns=MAX_NS), process(1, ts_ns=MAX_NS, duration_ns=MAX_NS), end(2))
    )
    with sessiontape.replay(rec) as replay_tape:
        result = replay_tape.process_runner().run(["echo", "1"])
        assert result.stdout == b"1\n"
        assert replay_tape.clock.time_ns() == 2 * MAX_NS


@pytest.mark.parametrize(
    "content",
    [b"", b"\xff\xfe\xfd\n", b"\x00" * 100, b"not json\n", b"[1, 2]\n", b'{"kind": "process"}\n'],
)
def test_is_cassette_says_no_to_files_that_are_not_cassettes(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    assert sessiontape.is_cassette(path) is False


def test_is_cassette_says_no_to_a_huge_first_line(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"{" + b" " * (2 << 20) + b"}\n")
    assert sessiontape.is_cassette(path) is False


def test_is_cassette_says_no_to_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)  # opening it for reading would wait forever for a writer
    assert sessiontape.is_cassette(fifo) is False
    assert sessiontape.is_cassette(tmp_path) is False
    assert sessiontape.is_cassette(tmp_path / "missing.jsonl") is False
    assert sessiontape.is_cassette("/dev/zero") is False


def test_is_cassette_says_yes_to_a_cassette(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(good_tape())
    assert sessiontape.is_cassette(path) is True


def test_load_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for path, what in [(fifo, "not a regular file"), (tmp_path, "a directory")]:
        with pytest.raises(CassetteError) as caught:
            sessiontape.load(path)
        assert caught.value.reason == (
            f"this is {what}, not a cassette. Name a cassette file (.jsonl)."
        )
    with pytest.raises(CassetteError, match="this is not a regular file"):
        sessiontape.load("/dev/zero")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_resumed_tape_ends_with_its_last_session(tmp_path: Path) -> None:
    resumed = {"kind": "session_resume", "seq": 3, "ts_ns": TS, "mono_ns": 9}
    ended_then_resumed = tape(header(), process(1), end(2), resumed, process(4))
    rec = sessiontape.loads(ended_then_resumed)
    assert rec.crashed  # the resumed run has no session_end yet
    assert [r.seq for r in rec.resumes] == [3]
    rec = sessiontape.loads(ended_then_resumed + tape(end(5, outcome="second")))
    assert not rec.crashed
    assert rec.end is not None
    assert rec.end.outcome == "second"
