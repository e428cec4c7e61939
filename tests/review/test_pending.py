"""Pending changes: ``update="pending"`` leaves the tape as it is and writes its changes
beside it; any subset of them, accepted, makes a valid tape that replays as decided."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import sessiontape
from sessiontape import CassetteError
from sessiontape.cassette import load_pending, pending_path
from sessiontape.review import PendingTape, StalePending, decide
from sessiontape.review import _pending as review_pending

from ._programs import copy, record, replay, validate


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    record(path)
    return path


def test_pending_leaves_the_tape_and_fails_with_one_line(tape: Path) -> None:
    before = tape.read_bytes()
    report = replay(tape, update="pending", word="bonjour", drop_last=True)
    assert tape.read_bytes() == before
    assert not report.ok
    assert report.pending_to == str(pending_path(tape))
    assert report.pending == ["fix", "trim"]
    head = report.render().splitlines()[0]
    assert head == (
        f"{tape}: 2 change(s) pending (1 fix, 1 trim), the tape is unchanged; "
        f"review them: sessiontape review {tape}"
    )
    pending = load_pending(pending_path(tape))
    assert [(c.category, c.change, c.seq) for c in pending.changes] == [
        ("fix", "request", 1),
        ("trim", "dropped", 3),
    ]
    # The same update of the same tape proposes the same ids.
    ids = [c.id for c in pending.changes]
    replay(tape, update="pending", word="bonjour", drop_last=True)
    assert [c.id for c in load_pending(pending_path(tape)).changes] == ids
    assert [i.split("-")[0] for i in ids] == ["fix", "trim"]
    assert all(len(i.split("-")[1]) == 10 for i in ids)


def test_accepting_all_writes_what_an_update_in_place_writes(tape: Path) -> None:
    in_place = copy(tape, "u.jsonl")
    assert replay(in_place, update=True, word="bonjour", drop_last=True).ok
    replay(tape, update="pending", word="bonjour", drop_last=True)
    [(_, ids, saved)] = decide("accept", [], [tape], every=True)
    assert len(ids) == 2
    assert saved.done
    assert saved.tape == tape
    assert tape.read_bytes() == in_place.read_bytes()
    assert not pending_path(tape).exists()
    assert replay(tape, word="bonjour", drop_last=True).ok


@pytest.mark.parametrize(
    "accepted",
    [set(s) for n in range(3) for s in itertools.combinations(("fix", "trim"), n)],
    ids=lambda s: "+".join(sorted(s)) or "none",
)
def test_any_subset_makes_a_valid_tape_that_replays_as_decided(
    tape: Path, accepted: set[str]
) -> None:
    replay(tape, update="pending", word="bonjour", drop_last=True)
    pending = PendingTape(pending_path(tape))
    for change in pending.changes:
        pending.decide(change.id, "accept" if change.category in accepted else "reject")
    saved = pending.save()
    assert saved.done
    assert not pending_path(tape).exists()
    assert validate(tape) == 0
    # The tape replays as decided: green for the decisions taken, failing at a rejected
    # change.
    word = "bonjour" if "fix" in accepted else "hello"
    assert replay(tape, word=word, drop_last="trim" in accepted).ok
    if "fix" not in accepted:
        assert not replay(tape, word="bonjour", drop_last="trim" in accepted).ok
    if "trim" not in accepted:
        assert not replay(tape, word=word, drop_last=True).ok


def test_a_tape_changed_since_is_refused_and_nothing_is_written(tape: Path) -> None:
    replay(tape, update="pending", word="bonjour")
    pending = pending_path(tape)
    file_before = pending.read_bytes()
    tape.write_bytes(tape.read_bytes().replace(b"middle", b"muddle"))
    changed = tape.read_bytes()
    with pytest.raises(StalePending, match="changed since these changes were proposed"):
        decide("accept", [], [tape], every=True)
    assert tape.read_bytes() == changed
    assert pending.read_bytes() == file_before


def test_a_path_that_is_not_a_pending_file_is_never_replaced(tape: Path) -> None:
    mine = pending_path(tape)
    mine.write_text("my notes\n")
    with pytest.raises(CassetteError, match="exists and is not a sessiontape pending file"):
        sessiontape.replay(tape, update="pending")
    assert mine.read_text() == "my notes\n"


def test_partial_accepts_then_more(tape: Path) -> None:
    replay(tape, update="pending", word="bonjour", drop_last=True)
    first, second = [c.id for c in load_pending(pending_path(tape)).changes]
    [(_, _, saved)] = decide("accept", [second], [tape])
    assert saved.tape == tape
    assert not saved.done
    assert validate(tape) == 0
    assert replay(tape, word="hello", drop_last=True).ok
    data = json.loads(pending_path(tape).read_text())
    assert [c.get("decision") for c in data["changes"]] == [None, "accept"]
    [(_, _, saved)] = decide("accept", [first], [tape])
    assert saved.done
    assert replay(tape, word="bonjour", drop_last=True).ok


def test_an_accept_cut_between_its_two_writes_completes_when_run_again(
    tape: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pending file is written (with the decisions and the new tape's SHA-256)
    before the tape: a crash between the two leaves the old tape, which the next accept
    recognises and writes."""
    in_place = copy(tape, "u.jsonl")
    assert replay(in_place, update=True, word="bonjour", drop_last=True).ok
    replay(tape, update="pending", word="bonjour", drop_last=True)
    before = tape.read_bytes()

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError("killed")

    monkeypatch.setattr(review_pending, "replace_cassette", crash)
    with pytest.raises(OSError, match="killed"):
        decide("accept", [], [tape], every=True)
    assert tape.read_bytes() == before
    monkeypatch.undo()
    assert PendingTape(pending_path(tape)).behind
    [(_, ids, saved)] = decide("accept", [], [tape], every=True)
    assert ids == []  # nothing left to decide: the decided tape is written again
    assert saved.tape == tape
    assert saved.done
    assert tape.read_bytes() == in_place.read_bytes()
    assert not pending_path(tape).exists()


def test_a_pending_update_with_nothing_to_change_removes_the_moot_proposal(tape: Path) -> None:
    replay(tape, update="pending", word="bonjour")
    assert pending_path(tape).exists()
    report = replay(tape, update="pending", word="hello")  # the code went back
    assert report.ok
    assert report.pending_to is None
    assert not pending_path(tape).exists()


def test_update_takes_true_false_or_pending(tape: Path) -> None:
    with pytest.raises(sessiontape.UsageError, match="update='later': pass True"):
        sessiontape.replay(tape, update="later")  # type: ignore[arg-type]
