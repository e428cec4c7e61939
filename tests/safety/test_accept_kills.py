"""kill -9 during an accept leaves the old tape or the new one, whole, and accepting
again completes (a slice of the reliability matrix's kill points)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._accept_kills import kill_trials, prepare


def test_a_killed_accept_leaves_the_old_or_the_new_tape(tmp_path: Path) -> None:
    found = kill_trials(tmp_path, points=6)
    assert found["failures"] == []
    assert found["old"] + found["new"] == 6
    assert found["new"] >= 1  # the last kill point comes after the rename


def test_an_accept_stopped_after_the_tape_before_the_pending_file_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The kill point CI met once (2026-11-28): the new tape written, every change decided
    # in the pending file, the pending file not yet removed. Accepting again must remove
    # it (it did nothing: no change left undecided, the tape not behind).
    from sessiontape.cassette import pending_path
    from sessiontape.review import _pending, decide

    original, _, new, _ = prepare(tmp_path)
    tape = tmp_path / "tape.jsonl"
    tape.write_bytes(original.read_bytes())
    pending_path(tape).write_bytes(pending_path(original).read_bytes())

    def killed(path: object) -> None:
        raise KeyboardInterrupt("killed before the pending file went")

    with monkeypatch.context() as patch:
        patch.setattr(_pending, "remove_pending", killed)
        with pytest.raises(KeyboardInterrupt):
            decide("accept", [], [tape], every=True)
    assert tape.read_bytes() == new
    assert pending_path(tape).exists()
    decide("accept", [], [tape], every=True)
    assert tape.read_bytes() == new
    assert not pending_path(tape).exists()
