"""The viewer's rows and details: the report's fast path gives what the server gives."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import pytest

import sessiontape
from sessiontape import Blob, ErrorInfo, ProcessCall
from sessiontape.cassette import LazyProcessCall, encode_entry, load_for_replay
from sessiontape.cli._viewdata import (
    CLIPPED,
    MORE,
    SCHEMA,
    build_rows,
    detail_values,
    entry_object,
    pack,
    row_text,
)

if TYPE_CHECKING:
    from .conftest import Recorder

CORPUS = sorted((Path(__file__).resolve().parents[2] / "cassettes").glob("*.jsonl"))


def _same(a: object, b: object) -> bool:
    return msgspec.json.encode(a) == msgspec.json.encode(b)


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
@pytest.mark.parametrize("limit", [40, 400])
def test_pack_gives_the_text_and_details_of_every_corpus_entry(path: Path, limit: int) -> None:
    recording = sessiontape.load(path)
    assert recording.entries, path
    for entry in recording.entries:
        text, values = pack(entry, limit)
        assert text == row_text(entry)
        assert _same(values, detail_values(entry, limit)), entry.seq


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
@pytest.mark.parametrize("limit", [40, 400])
def test_a_tape_loaded_as_replay_loads_it_packs_the_same(path: Path, limit: int) -> None:
    # The report loads lazily (outputs and results kept as their JSON): same page data.
    eager = sessiontape.load(path).entries
    lazy = load_for_replay(path).entries
    assert any(type(a) is not type(b) for a, b in zip(eager, lazy, strict=True))
    for entry, same in zip(eager, lazy, strict=True):
        assert pack(same, limit)[0] == pack(entry, limit)[0], entry.seq
        assert _same(pack(same, limit)[1], pack(entry, limit)[1]), entry.seq
    assert _same(
        build_rows(load_for_replay(path), set()).columns(),
        build_rows(sessiontape.load(path), set()).columns(),
    )


def _values(entry: ProcessCall, limit: int) -> dict[str, object]:
    values = msgspec.json.decode(msgspec.json.encode(pack(entry, limit)[1]))
    return dict(zip(SCHEMA["process"], values, strict=True))


def test_process_calls_are_clipped_field_by_field() -> None:
    long = "é" * 50  # two bytes each in UTF-8
    entry = ProcessCall(
        seq=3,
        ts_ns=1,
        mono_ns=2,
        argv=["git", "commit", "-m", long],
        env={"K": "v"},
        stdout=long,
        stderr=Blob(size=9, sha256="sha256:ab", truncated=True),
        spawn_error=ErrorInfo(type="E", message="m"),
    )
    values = _values(entry, 30)
    argv = msgspec.json.encode(entry.argv)  # the first é starts at byte 22
    assert values["argv"] == {CLIPPED: argv[:30].decode(), MORE: len(argv) - 30}
    # JSON is never cut inside a character: at 31, the cut moves back to 30.
    assert _values(entry, 31)["argv"] == values["argv"]
    assert values["stdout"] == "é" * 30 + "… (20 more characters in the cassette)"
    assert values["env"] == {"K": "v"}
    # A digest is a value like any other: its JSON (48 bytes) is clipped at 30.
    assert values["stderr"] == {CLIPPED: '{"size":9,"sha256":"sha256:ab"', MORE: 18}
    assert values["spawn_error"] == {"type": "E", "message": "m"}
    api = msgspec.json.decode(msgspec.json.encode(entry_object(entry, 30)))
    assert api == {"kind": "process", **values}
    # The same call loaded lazily (its outputs still JSON) gives the same values.
    lazy = msgspec.json.decode(encode_entry(entry), type=LazyProcessCall)
    assert _values(lazy, 30) == values
    assert _values(lazy, 31) == _values(entry, 31)


def test_rows_are_columns_with_status_depth_and_text(record_session: Recorder) -> None:
    path = record_session(table={"git merge task/t2": (1, "CONFLICT\n", 3)})
    recording = sessiontape.load(path)
    rows = build_rows(recording, {9})
    assert len(rows) == 15
    assert rows.workers == ["main", "worker-1", "worker-2"]
    assert rows.boundaries == ["store", "process", "agent"]
    assert [rows.row(i)["status"] for i in (8, 9, 12)] == ["ok", "mismatch", "error"]
    assert rows.row(5) == {
        "index": 5,
        "seq": 5,
        "worker": "worker-1",
        "kind": "process",
        "boundary": "process",
        "parent": 4,
        "depth": 1,
        "start_ns": 6_000_000,
        "duration_ns": 2_000_000,
        "status": "ok",
        "text": "claude -p work on t1 -> exit 0",
    }
    assert rows.row(2)["text"] == 'store.claim("t1","worker-1") -> {"id":"t1","state":"worker-1"}'
    assert rows.row(0)["text"].startswith("session start: run ")
