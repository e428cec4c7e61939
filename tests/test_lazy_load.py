"""Loading for replay: outputs and results kept as their JSON, long tapes mapped.

``load_for_replay`` must read every cassette ``load`` reads, to the same entries once its
lazy fields are decoded, with the same errors; the mapped path must let the file's pages
go; a replay served from a lazily loaded (and a mapped) tape must behave as before.
``load_for_view`` (the report's) keeps arguments, environments and stdin as JSON too,
with the same errors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

import sessiontape
from sessiontape import CassetteError, ProcessCall, ProcessResult, StoreMutation
from sessiontape.cassette import (
    LazyAgentTurn,
    LazyCall,
    LazyProcessCall,
    LazyStoreMutation,
    Recording,
    ViewAgentTurn,
    ViewCall,
    ViewProcessCall,
    ViewStoreMutation,
    eager,
    encode_entry,
    load_for_replay,
    load_for_view,
    process_payloads,
    stored,
    stored_result,
)
from test_cassette import EVERY_KIND

#: The module writes damaged tapes, read lazily.
pytestmark = pytest.mark.writes_invalid_tapes


@pytest.fixture(params=["read", "mapped"])
def how(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs on a tape read into memory, and on one mapped in small windows."""
    from sessiontape.cassette import _loader, _mapped

    if request.param == "mapped":
        monkeypatch.setattr(_loader, "MAP_AT", 0)
        monkeypatch.setattr(_mapped, "WINDOW", 256)  # several windows per small tape
        monkeypatch.setattr(_mapped, "SERVED_WINDOW", 256)
    return str(request.param)


@pytest.fixture(params=["replay", "view"])
def loader(request: pytest.FixtureRequest) -> Callable[[Path], Recording]:
    """Each error test runs through both loaders that keep fields as JSON."""
    return load_for_replay if request.param == "replay" else load_for_view


def _write(path: Path, entries: list[sessiontape.Entry]) -> Path:
    path.write_bytes(b"".join(encode_entry(e) for e in entries))
    return path


def test_lazy_entries_decode_to_what_load_gives(tmp_path: Path, how: str) -> None:
    path = _write(tmp_path / "every.jsonl", EVERY_KIND)
    lazy = load_for_replay(path)
    assert (lazy.mapped is not None) == (how == "mapped")
    kinds = {type(e) for e in lazy.entries}
    assert {LazyProcessCall, LazyAgentTurn, LazyStoreMutation, LazyCall} <= kinds
    # Still the public kinds for isinstance, with every other field as load() has it.
    assert all(isinstance(e, ProcessCall) for e in lazy.entries if type(e) is LazyProcessCall)
    assert [eager(e) for e in lazy.entries] == sessiontape.load(path).entries
    assert [type(eager(e)) for e in lazy.entries] == [type(e) for e in EVERY_KIND]


def test_view_entries_keep_their_values_as_stored(tmp_path: Path, how: str) -> None:
    path = _write(tmp_path / "every.jsonl", EVERY_KIND)
    view = load_for_view(path)
    assert (view.mapped is not None) == (how == "mapped")
    kinds = {type(e) for e in view.entries}
    assert {ViewProcessCall, ViewAgentTurn, ViewStoreMutation, ViewCall} <= kinds
    for entry, same in zip(view.entries, sessiontape.load(path).entries, strict=True):
        assert isinstance(entry, type(same))  # the public kinds, for isinstance
        # Every value as the line holds it: encoded again, the entry is its line.
        assert msgspec.json.encode(entry) + b"\n" == encode_entry(same)
        if isinstance(entry, ViewProcessCall):
            assert all(type(v) is msgspec.Raw for v in (entry.env, entry.input, entry.stdout))
        elif isinstance(entry, (ViewAgentTurn, ViewStoreMutation, ViewCall)):
            assert all(type(v) is msgspec.Raw for v in (entry.args, entry.kwargs, entry.result))


def test_stored_reads_either_form() -> None:
    call = EVERY_KIND[2]
    assert isinstance(call, ProcessCall)
    lazy = msgspec.json.decode(encode_entry(call), type=LazyProcessCall)
    assert isinstance(lazy.stdout, msgspec.Raw)
    assert stored(lazy.stdout) == stored(call.stdout) == "ok\n"
    assert stored(msgspec.Raw(b"null")) is None
    assert dict(process_payloads(lazy)) == dict(process_payloads(call))
    mutation = EVERY_KIND[6]
    assert isinstance(mutation, StoreMutation)
    lazy_mutation = msgspec.json.decode(encode_entry(mutation), type=LazyStoreMutation)
    assert stored_result(lazy_mutation.result) == mutation.result == {"id": "t1"}


def test_a_torn_tail_keeps_the_prefix(
    tmp_path: Path, how: str, loader: Callable[[Path], Recording]
) -> None:
    path = tmp_path / "torn.jsonl"
    path.write_bytes(b"".join(encode_entry(e) for e in EVERY_KIND[:6]) + b'{"kind": "proc')
    recording = loader(path)
    assert recording.torn
    assert recording.crashed
    assert [e.seq for e in recording.entries] == [0, 1, 2, 3, 4, 5]


def test_a_bad_line_is_named(tmp_path: Path, how: str, loader: Callable[[Path], Recording]) -> None:
    path = tmp_path / "bad.jsonl"
    good = b"".join(encode_entry(e) for e in EVERY_KIND[:3])
    path.write_bytes(good + b"{not json}\n" + encode_entry(EVERY_KIND[3]))
    with pytest.raises(CassetteError, match="not valid JSON") as info:
        loader(path)
    assert (info.value.path, info.value.line) == (str(path), 4)


def test_a_duplicate_seq_is_named_with_its_lines(
    tmp_path: Path, how: str, loader: Callable[[Path], Recording]
) -> None:
    path = _write(tmp_path / "twice.jsonl", [*EVERY_KIND[:3], EVERY_KIND[2]])
    with pytest.raises(CassetteError, match="seq 2 appears twice") as info:
        loader(path)
    assert info.value.line == 4


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b'{"kind": "process", "seq": 1}\n', "kind 'process'"),
        (b"[1, 2]", "not a JSON object"),
    ],
)
def test_not_a_cassette(
    tmp_path: Path, how: str, content: bytes, message: str, loader: Callable[[Path], Recording]
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    with pytest.raises(CassetteError, match=message):
        loader(path)


def test_a_directory_is_refused(
    tmp_path: Path, how: str, loader: Callable[[Path], Recording]
) -> None:
    with pytest.raises(CassetteError, match="this is a directory"):
        loader(tmp_path)


def test_an_output_that_is_not_a_payload_is_named_when_served(tmp_path: Path, how: str) -> None:
    # The loader takes any JSON for a lazy field; serving it names the seq and the line.
    header, call = EVERY_KIND[0], EVERY_KIND[2]
    line = json.loads(encode_entry(call))
    line.update(stdout=42, worker="main")
    path = tmp_path / "odd.jsonl"
    path.write_bytes(encode_entry(header) + json.dumps(line).encode() + b"\n")
    with sessiontape.replay(path, patch_time=False) as tape:
        runner = tape.process_runner()
        result = runner.run(["git", "status"], cwd="{repo}", env={"A": "b"}, input="in")
        with pytest.raises(CassetteError, match="seq 2: the recorded stdout is not an output"):
            result.stdout  # noqa: B018 - read on access
    assert isinstance(result, ProcessResult)


def test_a_mapped_file_is_decoded_in_whole_lines_and_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessiontape.cassette import MappedFile, _mapped

    monkeypatch.setattr(_mapped, "WINDOW", 100)
    monkeypatch.setattr(_mapped, "SERVED_WINDOW", 100)
    path = _write(tmp_path / "w.jsonl", EVERY_KIND)
    data = path.read_bytes()
    let_go: list[tuple[int, int]] = []
    monkeypatch.setattr(MappedFile, "_let_go", lambda self, a, b: let_go.append((a, b)))
    fd = os.open(path, os.O_RDONLY)
    try:
        mapped = MappedFile(fd, len(data))
    finally:
        os.close(fd)
    windows = [bytes(w) for w in mapped.windows()]
    assert b"".join(windows) == data
    assert all(w.endswith(b"\n") for w in windows)
    assert len(windows) == data.count(b"\n")  # each line is longer than a window
    # Each window's pages are let go once the next is asked for, the last one at the end.
    ends = [sum(map(len, windows[: i + 1])) for i in range(len(windows))]
    assert let_go == [(end - len(w), end) for end, w in zip(ends, windows, strict=True)]
    let_go.clear()
    mapped.served(60)
    assert let_go == []
    mapped.served(60)  # a window's worth of outputs served: every page let go again
    assert let_go == [(0, len(data))]


def _not_utf8(entry: sessiontape.Entry, text: str) -> bytes:
    """``entry``'s line with the bytes of ``text`` (in one of its strings) made invalid
    UTF-8: a lead byte followed by no continuation byte."""
    line = encode_entry(entry)
    assert line.count(text.encode()) == 1
    return line.replace(text.encode(), b"\xcf(")


def test_a_last_line_cut_inside_a_character_is_a_torn_tail(
    tmp_path: Path, how: str, loader: Callable[[Path], Recording]
) -> None:
    # A crash cut the last line inside a character of an output: load() sets it aside as
    # a torn tail, and so do the loaders that keep outputs as JSON without decoding them.
    call = ProcessCall(seq=3, ts_ns=3, mono_ns=3, argv=["cat"], stdout="café au lait")
    path = tmp_path / "torn.jsonl"
    torn = _not_utf8(call, "é").rstrip(b"\n")
    path.write_bytes(b"".join(encode_entry(e) for e in EVERY_KIND[:3]) + torn)
    eager_load = sessiontape.load(path)
    kept = loader(path)
    assert eager_load.torn
    assert kept.torn
    assert [e.seq for e in kept.entries] == [e.seq for e in eager_load.entries] == [0, 1, 2]


def test_a_result_that_is_not_text_is_named_when_served(tmp_path: Path, how: str) -> None:
    # Invalid UTF-8 inside a result the loader kept as JSON: serving it names the line.
    header, turn = EVERY_KIND[0], EVERY_KIND[5]
    assert isinstance(turn, sessiontape.AgentTurn)
    turn = msgspec.structs.replace(turn, worker="main", parent=None, result={"state": "donné"})
    path = tmp_path / "odd.jsonl"
    path.write_bytes(encode_entry(header) + _not_utf8(turn, "é"))
    with pytest.raises(CassetteError):
        sessiontape.load(path)  # the eager loader names it at once
    with sessiontape.replay(path, patch_time=False) as tape:
        agent = tape.agent()
        with pytest.raises(CassetteError, match="seq 5: the recorded result is not") as info:
            agent.execute({"task": "t1"}, mode="edit")
    assert (info.value.path, info.value.line) == (str(path), 2)
