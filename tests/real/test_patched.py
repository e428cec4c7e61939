"""Change markers on the gardener: ``sessiontape.patched()`` keeps old tapes on the old path.

Each of three deliberate changes (``_changes.py``) is guarded by ``patched()``: every tape
of the shipped corpus replays green with the changed code, a tape recorded with the change
replays green too, and without the guard the same old tapes fail (so the guard is what
keeps them green).
"""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path

import pytest

import sessiontape
from sessiontape.examples.gardener import record_scenario, replay_scenario

from ._changes import ALL, FETCH, REWORD, STORE, changed_gardener

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CORPUS = Path(__file__).resolve().parents[2] / "cassettes"
TAPES = sorted(CORPUS.glob("*.jsonl"))


@pytest.mark.parametrize("tape", TAPES, ids=lambda p: p.stem)
def test_every_old_tape_replays_green_with_the_guarded_changes(
    tape: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetched = changed_gardener(monkeypatch, ALL, guarded=True)
    report = replay_scenario(tape, tmp_path / "work")
    assert report.ok, report.render()
    assert report.consumed > 0
    assert fetched == []  # the old path: no tape of the corpus knew the change


@pytest.mark.parametrize("change", ALL)
def test_without_the_guard_an_old_tape_fails(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed_gardener(monkeypatch, (change,), guarded=False)
    happy = CORPUS / "gardener-happy.jsonl"
    if change == FETCH:  # the new git call: nothing on the tape answers it
        with pytest.raises(sessiontape.UnrecordedCallError, match="'fetch'"):
            replay_scenario(happy, tmp_path / "work")
    else:
        assert not replay_scenario(happy, tmp_path / "work").ok


def test_a_tape_recorded_with_the_changes_replays_the_new_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetched = changed_gardener(monkeypatch, ALL, guarded=True)
    cassette = tmp_path / "new.jsonl"
    record_scenario(cassette, tmp_path / "a", scenario="happy")
    recording = sessiontape.load(cassette)
    assert list(recording.patches) == sorted(recording.patches, key=list(recording.patches).index)
    assert set(recording.patches) == set(ALL)
    fetches = [c for c in recording.calls if getattr(c, "argv", [])[:2] == ["git", "fetch"]]
    assert len(fetches) == 3 == len(fetched)
    fetched.clear()
    report = replay_scenario(cassette, tmp_path / "b")
    assert report.ok, report.render()
    assert len(fetched) == 3  # the new path, served from the tape
    assert report.unconsumed == 0


def test_patched_is_true_outside_any_tape_and_checks_its_id() -> None:
    assert sessiontape.patched(FETCH) is True
    with pytest.raises(sessiontape.UsageError, match="non-empty str"):
        sessiontape.patched("")


def test_the_marker_is_written_once_and_found_from_threads_and_tasks(tmp_path: Path) -> None:
    cassette = tmp_path / "t.jsonl"

    def ask_everywhere() -> list[bool]:
        answers: list[bool] = []
        # A thread started without the tape's context: found through the open tapes.
        thread = threading.Thread(target=lambda: answers.append(sessiontape.patched(FETCH)))
        thread.start()
        thread.join()

        async def task() -> bool:
            return sessiontape.patched(REWORD)

        answers.append(asyncio.run(task()))
        answers.append(sessiontape.patched(STORE))
        answers.append(sessiontape.patched(FETCH))
        return answers

    with sessiontape.record(cassette) as tape:
        assert ask_everywhere() == [True, True, True, True]
        tape.finish()
    recording = sessiontape.load(cassette)
    assert [e.id for e in recording.entries if isinstance(e, sessiontape.Patched)] == [
        FETCH,
        REWORD,
        STORE,
    ]
    with sessiontape.replay(cassette) as replayed:
        assert ask_everywhere() == [True, True, True, True]
        assert sessiontape.patched("something-newer") is False
        replayed.finish()
    # The tape is closed: outside any tape again.
    assert sessiontape.patched("something-newer") is True


def test_an_old_tape_answers_false_from_every_thread(tmp_path: Path) -> None:
    cassette = tmp_path / "old.jsonl"
    with sessiontape.record(cassette) as tape:
        tape.finish()
    with sessiontape.replay(cassette):
        answers: list[bool] = []
        thread = threading.Thread(target=lambda: answers.append(sessiontape.patched(FETCH)))
        thread.start()
        thread.join()
        assert answers == [False]
        assert asyncio.run(asyncio.to_thread(sessiontape.patched, FETCH)) is False


def test_a_slice_keeps_the_markers_of_the_whole_tape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessiontape.cli import main

    changed_gardener(monkeypatch, ALL, guarded=True)
    cassette = tmp_path / "new.jsonl"
    record_scenario(cassette, tmp_path / "a", scenario="happy")
    out = tmp_path / "w2.jsonl"
    assert main(["slice", "--worker", "worker-2", "-o", str(out), str(cassette)]) == 0
    assert set(sessiontape.load(out).patches) == set(ALL)
