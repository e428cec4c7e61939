"""The viewer's rows and details: the report's fast path gives what the server gives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import pytest

import sessiontape
from sessiontape import Blob, ErrorInfo, ProcessCall
from sessiontape.cassette import (
    LazyProcessCall,
    Recording,
    ViewProcessCall,
    encode_entry,
    load_for_replay,
    load_for_view,
)
from sessiontape.cli._common import KIND_OF_TYPE
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


def _clipped_json(stored: object, whole: bytes, limit: int) -> bool:
    """Whether ``stored`` is the JSON ``whole`` clipped: its first bytes (``limit`` at
    most), and how many more."""
    if not (isinstance(stored, dict) and set(stored) == {CLIPPED, MORE}):
        return False
    head = stored[CLIPPED].encode()
    return len(head) <= limit and whole.startswith(head) and stored[MORE] == len(whole) - len(head)


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
@pytest.mark.parametrize("limit", [40, 400])
@pytest.mark.parametrize("loader", [load_for_replay, load_for_view])
def test_a_tape_loaded_as_json_packs_what_it_shows_loaded(
    path: Path, limit: int, loader: Callable[[Path], Recording]
) -> None:
    # The report loads a tape with outputs, results and arguments kept as their JSON:
    # each value is what the eager entry gives, or a text the eager entry clips by
    # characters (or holds whole) is clipped as the JSON it is stored as.
    eager = sessiontape.load(path).entries
    kept = loader(path).entries
    assert any(type(a) is not type(b) for a, b in zip(eager, kept, strict=True))
    for entry, same in zip(eager, kept, strict=True):
        assert pack(same, limit)[0] == pack(entry, limit)[0], entry.seq
        fields = SCHEMA[KIND_OF_TYPE[type(entry)]]
        pairs = zip(fields, pack(same, limit)[1], pack(entry, limit)[1], strict=True)
        for field, stored, value in pairs:
            whole = msgspec.json.encode(getattr(entry, field))
            assert _same(stored, value) or _clipped_json(stored, whole, limit), (entry.seq, field)
    assert _same(
        build_rows(loader(path), set()).columns(),
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
    # The same call loaded as JSON (a replay's outputs; the report's payloads and env
    # too): the same values, but a long output is clipped as the JSON it is stored as.
    stdout = msgspec.json.encode(long)  # '"' and 50 two-byte characters
    for kind in (LazyProcessCall, ViewProcessCall):
        kept = msgspec.json.decode(encode_entry(entry), type=kind)
        # At 30 the cut would split the 15th character: it moves back to 29.
        clipped = {CLIPPED: stdout[:29].decode(), MORE: len(stdout) - 29}
        assert _values(kept, 30) == {**values, "stdout": clipped}
        clipped = {CLIPPED: stdout[:31].decode(), MORE: len(stdout) - 31}
        assert _values(kept, 31) == {**_values(entry, 31), "stdout": clipped}


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
        "error_class": None,
        "text": "claude -p work on t1 -> exit 0",
    }
    assert rows.row(2)["text"] == 'store.claim("t1","worker-1") -> {"id":"t1","state":"worker-1"}'
    assert rows.row(0)["text"].startswith("session start: run ")
