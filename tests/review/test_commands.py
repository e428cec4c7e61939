"""``sessiontape pending --json``, ``accept`` and ``reject``: the decisions for scripts.

Every id ``pending --json`` prints is one ``accept`` takes; an unknown id or a tape
changed since stops the command before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontape.cassette import pending_path
from sessiontape.cli import main

from ._programs import record, replay, validate


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tapes(tmp_path: Path) -> list[Path]:
    """Two tapes, each with two pending changes: a request rewritten, a call dropped."""
    out = []
    for name in ("one", "two"):
        path = tmp_path / "tapes" / f"{name}.jsonl"
        path.parent.mkdir(exist_ok=True)
        record(path)
        report = replay(path, update="pending", word="bonjour", drop_last=True)
        assert report.pending_to == str(pending_path(path))
        out.append(path)
    return out


def test_every_id_pending_prints_is_accepted(
    tapes: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(capsys, "pending", "--json", tapes[0].parent)
    assert code == 0
    listed = json.loads(out)
    assert [(c["tape"], c["category"], c["seq"]) for c in listed] == [
        (str(tapes[0]), "fix", 1),
        (str(tapes[0]), "trim", 3),
        (str(tapes[1]), "fix", 1),
        (str(tapes[1]), "trim", 3),
    ]
    first = listed[0]
    assert first["fields"] == [
        {"field": "argv[2]", "old": "print('hello')", "new": "print('bonjour')"}
    ]
    assert first["decision"] is None
    ids = [c["id"] for c in listed]
    code, out, err = _cli(capsys, "accept", *ids, "--path", tapes[0].parent)
    assert (code, err) == (0, "")
    assert sorted(out.splitlines()) == sorted(
        f"{t}: 2 changes accepted; wrote {t}; nothing pending" for t in tapes
    )
    for tape in tapes:
        assert not pending_path(tape).exists()
        assert validate(tape) == 0
        assert replay(tape, word="bonjour", drop_last=True).ok
    capsys.readouterr()
    code, out, _ = _cli(capsys, "pending", "--json", tapes[0].parent)
    assert (code, json.loads(out)) == (0, [])


def test_reject_keeps_the_recording_and_the_test_keeps_failing(
    tapes: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    tape = tapes[0]
    before = tape.read_bytes()
    listed = json.loads(_cli(capsys, "pending", "--json", tape)[1])
    fix, trim = (c["id"] for c in listed)
    code, out, _ = _cli(capsys, "reject", fix, "--path", tape)
    assert code == 0
    assert out == f"{tape}: 1 change rejected; 1 change still pending\n"
    assert tape.read_bytes() == before
    code, out, _ = _cli(capsys, "accept", "--all", "--path", tape)
    assert out == f"{tape}: 1 change accepted; wrote {tape}; nothing pending\n"
    assert validate(tape) == 0
    assert replay(tape, word="hello", drop_last=True).ok
    assert not replay(tape, word="bonjour", drop_last=True).ok  # the rejected change
    assert trim not in tape.read_text()


def test_an_unknown_id_writes_nothing(
    tapes: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    tape = tapes[0]
    listed = json.loads(_cli(capsys, "pending", "--json", tape)[1])
    before = tape.read_bytes(), pending_path(tape).read_bytes()
    code, _, err = _cli(capsys, "accept", listed[0]["id"], "fix-0000000000", "--path", tape)
    assert code == 2
    assert "no pending change fix-0000000000" in err
    assert "sessiontape pending --json" in err
    assert (tape.read_bytes(), pending_path(tape).read_bytes()) == before


def test_a_tape_changed_since_is_refused(
    tapes: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    tape = tapes[0]
    tape.write_bytes(tape.read_bytes().replace(b"middle", b"muddle"))
    changed, waiting = tape.read_bytes(), pending_path(tape).read_bytes()
    code, _, err = _cli(capsys, "accept", "--all", "--path", tape)
    assert code == 2
    assert "changed since these changes were proposed" in err
    assert "--sessiontape-update=pending" in err
    assert (tape.read_bytes(), pending_path(tape).read_bytes()) == (changed, waiting)
    code, _, err = _cli(capsys, "pending", "--json", tape)
    assert code == 2
    assert "changed since" in err
