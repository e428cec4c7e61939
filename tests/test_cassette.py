"""The cassette format: entry round trips, the writer's guarantees, the loader's errors."""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from pathlib import Path

import msgspec
import pytest

import sessiontape
from sessiontape import (
    AgentTurn,
    Blob,
    Call,
    CassetteError,
    Error,
    ErrorInfo,
    ProcessCall,
    SessionEnd,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
    Usage,
)
from sessiontape.cassette import (
    CassetteWriter,
    decode_header,
    encode_entry,
    read_header,
    set_aside_tail,
)

COMMON = {"ts_ns": 1_700_000_000_000_000_000, "mono_ns": 5_000, "worker": "w-1", "thread": "T"}

EVERY_KIND = [
    SessionStart(
        seq=0, **COMMON, run_id="r1", recorded_at="2026-11-21T00:00:00+00:00",
        sessiontape_version="0.1.0", app_version="1.2", entrypoint="app --x",
        config={"workers": 3, "nested": {"a": [1, 2]}}, level="full", host="h",
        platform="linux", python="3.11.7", roots={"repo": "/srv/app"},
    ),
    StoreSnapshot(seq=1, **COMMON, store="backlog", data=[{"id": "t1", "state": "ready"}]),
    ProcessCall(
        seq=2, **COMMON, parent=9, argv=["git", "status"], cwd="{repo}", env={"A": "b"},
        input="in", text=True, timeout=3.5, returncode=0, stdout="ok\n", stderr="",
        duration_ns=12,
    ),
    ProcessCall(
        seq=3, **COMMON, argv=["cat"], stdout=Blob(size=3, sha256="sha256:ab", b64="AAEC"),
        stderr=Blob(size=100_000, sha256="sha256:cd", truncated=True), timed_out=True,
    ),
    ProcessCall(
        seq=4, **COMMON, argv=["nope"],
        spawn_error=ErrorInfo(type="FileNotFoundError", message="[Errno 2] x: 'nope'"),
    ),
    AgentTurn(
        seq=5, **COMMON, agent="claude", method="execute", args=[{"task": "t1"}],
        kwargs={"mode": "edit"}, result={"state": "done", "payload": {"x": 1}},
        result_type="app.StepResult", usage=Usage(input_tokens=10, output_tokens=20,
        cost_usd=0.5), duration_ns=99,
    ),
    StoreMutation(
        seq=6, **COMMON, store="backlog", operation="claim_next", args=["w-1"],
        result={"id": "t1"}, duration_ns=7,
    ),
    StoreMutation(
        seq=7, **COMMON, operation="release", args=["t9"],
        error=ErrorInfo(type="KeyError", message="'t9'", traceback="Traceback..."),
    ),
    Call(seq=8, **COMMON, boundary="http", method="get", mode="verify", args=["/x"],
         result=[1, 2.5, None, True]),
    Error(seq=9, **COMMON, type="ValueError", message="boom", traceback="Traceback..."),
    SessionEnd(seq=10, **COMMON, outcome={"completed": 3}, counts={"process": 3},
               duration_ns=1234),
]  # fmt: skip


@pytest.mark.parametrize("entry", EVERY_KIND, ids=lambda e: f"{type(e).__name__}-{e.seq}")
def test_every_entry_kind_round_trips_exactly(entry: sessiontape.Entry) -> None:
    line = encode_entry(entry)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    decoded = msgspec.json.decode(line, type=sessiontape.Entry)
    assert decoded == entry
    assert type(decoded) is type(entry)


def test_kind_tags_are_the_documented_names() -> None:
    tags = [json.loads(encode_entry(e))["kind"] for e in EVERY_KIND]
    assert tags == [
        "session_start", "store_snapshot", "process", "process", "process", "agent_turn",
        "store_mutation", "store_mutation", "call", "error", "session_end",
    ]  # fmt: skip


def _write_cassette(path: Path, entries: list[sessiontape.Entry]) -> None:
    path.write_bytes(b"".join(encode_entry(e) for e in entries))


@pytest.mark.writes_invalid_tapes
def test_loaded_recording_exposes_header_entries_and_indexes(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    _write_cassette(path, EVERY_KIND)
    rec = sessiontape.load(path)
    assert rec.header == EVERY_KIND[0]
    assert rec.entries == EVERY_KIND
    assert rec.end == EVERY_KIND[-1]
    assert not rec.crashed
    assert rec.error == EVERY_KIND[9]
    assert rec.snapshot == [{"id": "t1", "state": "ready"}]
    assert rec.worker_ids() == ["w-1"]
    assert [e.seq for e in rec.entries_for("process", "w-1")] == [2, 3, 4]
    assert [e.seq for e in rec.entries_for("store")] == [6, 7]
    assert [e.seq for e in rec.entries_for("http")] == [8]
    assert rec.entries_for("process", "nobody") == []


@pytest.mark.writes_invalid_tapes
def test_entries_written_out_of_seq_order_are_ordered_on_load(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    # An outer call's line follows its children's lines: seq 2 is written after 3.
    _write_cassette(path, [EVERY_KIND[0], EVERY_KIND[1], EVERY_KIND[3], EVERY_KIND[2]])
    assert [e.seq for e in sessiontape.load(path).entries] == [0, 1, 2, 3]


@pytest.mark.writes_invalid_tapes
def test_duplicate_seq_is_a_cassette_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    _write_cassette(path, [EVERY_KIND[0], EVERY_KIND[2], EVERY_KIND[3], EVERY_KIND[2]])
    with pytest.raises(CassetteError, match="seq 2 appears twice"):
        sessiontape.load(path)


@pytest.mark.writes_invalid_tapes
def test_torn_last_line_loads_the_valid_prefix_as_crashed(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    data = b"".join(encode_entry(e) for e in EVERY_KIND[:6])
    torn = encode_entry(EVERY_KIND[6])[:25]
    path.write_bytes(data + torn)
    rec = sessiontape.load(path)
    assert rec.torn
    assert rec.crashed
    assert rec.entries == EVERY_KIND[:6]


@pytest.mark.writes_invalid_tapes
def test_session_without_end_is_crashed_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    _write_cassette(path, EVERY_KIND[:5])
    rec = sessiontape.load(path)
    assert rec.crashed
    assert not rec.torn
    assert rec.end is None


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (b"{not json}\n", "not valid JSON"),
        (b'{"kind": "process", "seq": "x"}\n', "not a valid sessiontape entry"),
        (b'{"kind": "teleport", "seq": 3, "ts_ns": 0, "mono_ns": 0}\n', "not a valid"),
    ],
)
@pytest.mark.writes_invalid_tapes
def test_corrupt_line_names_file_and_line(tmp_path: Path, bad: bytes, message: str) -> None:
    path = tmp_path / "c.jsonl"
    good = b"".join(encode_entry(e) for e in EVERY_KIND[:3])
    path.write_bytes(good + bad + encode_entry(EVERY_KIND[3]))
    with pytest.raises(CassetteError, match=message) as info:
        sessiontape.load(path)
    assert info.value.line == 4
    assert info.value.path == str(path)
    assert str(info.value).startswith(f"{path}:4: ")


@pytest.mark.writes_invalid_tapes
def test_corrupt_last_line_with_newline_is_not_mistaken_for_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    good = b"".join(encode_entry(e) for e in EVERY_KIND[:3])
    path.write_bytes(good + b"{garbage\n")
    with pytest.raises(CassetteError) as info:
        sessiontape.load(path)
    assert info.value.line == 4


@pytest.mark.writes_invalid_tapes
def test_unknown_format_version_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    header = json.loads(encode_entry(EVERY_KIND[0]))
    header["format_version"] = 99
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(CassetteError, match=r"format version 99 is not one this sessiontape"):
        sessiontape.load(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b'{"kind": "process"}\n', "starts with a session_start"),
        (b"[1, 2]\n", "not a JSON object"),
    ],
)
def test_not_a_cassette(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(content)
    with pytest.raises(CassetteError, match=message):
        sessiontape.load(path)
    assert not sessiontape.is_cassette(path)


def test_read_header_reads_the_first_line_only_and_never_raises(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with sessiontape.record(path, entrypoint="header-test") as tape:
        tape.finish({"ok": True})
    header = read_header(path)
    assert header is not None
    assert header.entrypoint == "header-test"
    assert header == sessiontape.load(path).header
    first = path.read_bytes().split(b"\n", 1)[0]
    assert decode_header(first + b"\n") == header
    # A torn rest of the file does not matter: only the first line is read.
    with path.open("ab") as fh:
        fh.write(b"\xff{torn")
    assert read_header(path) == header
    for content in (b"", b"\xff\xfe", b'{"kind": "process"}\n', b"[" * 100_000, b"not json\n"):
        junk = tmp_path / "junk.jsonl"
        junk.write_bytes(content)
        assert read_header(junk) is None, content[:20]
        assert decode_header(content) is None
    assert read_header(tmp_path / "absent.jsonl") is None
    assert read_header(tmp_path) is None  # a folder


def test_missing_file_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match=r"no such cassette\. Record one first"):
        sessiontape.load(tmp_path / "absent.jsonl")


def test_writer_creates_file_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "c.jsonl"
    old = os.umask(0)
    try:
        writer = CassetteWriter(path)
    finally:
        os.umask(old)
    writer.write(EVERY_KIND[0])
    writer.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sessiontape.is_cassette(path)


def test_sixteen_threads_give_gapless_unique_seqs_and_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "threads.jsonl"
    calls_per_thread = 2000

    class Echo:
        def run(self, argv, **kwargs):  # type: ignore[no-untyped-def]
            return sessiontape.ProcessResult(argv, 0, b"out " + argv[-1].encode(), b"")

        def stream(self, argv, **kwargs):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    with sessiontape.record(path) as tape:
        runner = tape.process_runner(Echo())

        def work(i: int) -> None:
            with sessiontape.worker(f"w{i}"):
                for n in range(calls_per_thread):
                    runner.run(["echo", f"{i}-{n}"])

        threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    for line in lines[:-1]:
        json.loads(line)  # every line whole: no interleaving
    rec = sessiontape.load(path)
    seqs = [e.seq for e in rec.entries]
    assert seqs == list(range(16 * calls_per_thread + 2))
    for i in range(16):
        mine = rec.entries_for("process", f"w{i}")
        assert [e.argv[-1] for e in mine] == [f"{i}-{n}" for n in range(calls_per_thread)]
        assert all(e.stdout == f"out {i}-{n}" for n, e in enumerate(mine))
    # The session's counts are exact however the threads interleaved.
    end = rec.entries[-1]
    assert isinstance(end, sessiontape.SessionEnd)
    assert end.counts == {"session_start": 1, "process": 16 * calls_per_thread, "session_end": 1}


def _line(seq: int) -> sessiontape.Entry:
    return Error(seq=seq, ts_ns=1, mono_ns=1, type="ValueError", message=f"line {seq}")


def _three_lines_waiting(path: Path, monkeypatch: pytest.MonkeyPatch) -> CassetteWriter:
    """A writer holding seqs 1 to 3 unwritten: as if another thread had been writing
    while they were added, and then, its rounds done, gone back to its own work."""
    from sessiontape.cassette import _writer

    writer = CassetteWriter(path)
    monkeypatch.setattr(_writer, "_DRAIN_ROUNDS", 0)
    with writer._lock:  # the other thread, writing
        for seq in (1, 2, 3):
            writer.write(_line(seq))
    return writer


def test_a_line_is_written_before_write_returns(tmp_path: Path) -> None:
    path = tmp_path / "now.jsonl"
    writer = CassetteWriter(path)
    writer.write(_line(1))
    # No other thread was writing: the line is in the file already, not in memory.
    assert [json.loads(x)["seq"] for x in path.read_bytes().splitlines()] == [1]
    writer.close()


def test_a_line_added_while_one_is_written_is_written_before_write_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Thread A writes its line at once; thread B, finding A writing, leaves its line
    # waiting; A writes it too before its write() returns.
    from sessiontape.cassette import _writer

    path = tmp_path / "meanwhile.jsonl"
    writer = CassetteWriter(path)
    real_write = _writer._write
    calls: list[bytes] = []

    def write_while_another_thread_adds(fd: int, data: bytes) -> int:
        calls.append(data)
        if len(calls) == 1:
            other = threading.Thread(target=writer.write, args=(_line(2),))
            other.start()
            other.join()
            assert path.read_bytes() == b""  # B's write() returned; its line waits
        return real_write(fd, data)

    monkeypatch.setattr(_writer, "_write", write_while_another_thread_adds)
    writer.write(_line(1))
    assert [json.loads(x)["seq"] for x in path.read_bytes().splitlines()] == [1, 2]
    assert len(calls) == 2
    writer.close()


def test_lines_left_waiting_are_written_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A writing thread that has done its rounds leaves what others added for the next
    # writer; at the end of the session close() writes whatever is still waiting.
    path = tmp_path / "later.jsonl"
    writer = _three_lines_waiting(path, monkeypatch)
    assert path.read_bytes() == b""
    writer.close()
    assert [json.loads(x)["seq"] for x in path.read_bytes().splitlines()] == [1, 2, 3]
    assert writer.lines == 3


def test_a_batch_torn_by_a_full_disk_keeps_its_whole_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three lines written in one system call; the disk fills in the middle of the second.
    from sessiontape.cassette import _writer

    path = tmp_path / "torn.jsonl"
    writer = _three_lines_waiting(path, monkeypatch)
    first = len(path.read_bytes())  # nothing yet: all three wait
    real_write = _writer._write

    def fill_up(fd: int, data: bytes) -> int:
        monkeypatch.setattr(_writer, "_write", fail)
        cut = data.index(b"\n") + 1 + 10  # line 1 and ten bytes of line 2
        return real_write(fd, data[:cut])

    def fail(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_writer, "_write", fill_up)
    with pytest.warns(sessiontape.RecordingWarning, match="writing seq 2 failed"):
        writer.close()
    assert first == 0
    assert [json.loads(x)["seq"] for x in path.read_bytes().splitlines()] == [1]
    assert path.read_bytes().endswith(b"\n")
    assert writer.lines == 1


def test_set_aside_tail_keeps_the_tail_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"line1\nline2\npartial")
    fd = os.open(path, os.O_RDWR)
    try:
        aside = set_aside_tail(fd, path, 12, b"partial")
    finally:
        os.close(fd)
    assert path.read_bytes() == b"line1\nline2\n"
    assert aside.parent == tmp_path
    assert aside.name.startswith("c.jsonl.torn.")
    assert aside.read_bytes() == b"partial"
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600
