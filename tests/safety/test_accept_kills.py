"""kill -9 during an accept leaves the old tape or the new one, whole, and accepting
again completes (a slice of the reliability matrix's kill points)."""

from __future__ import annotations

from pathlib import Path

from ._accept_kills import kill_trials


def test_a_killed_accept_leaves_the_old_or_the_new_tape(tmp_path: Path) -> None:
    found = kill_trials(tmp_path, points=6)
    assert found["failures"] == []
    assert found["old"] + found["new"] == 6
    assert found["new"] >= 1  # the last kill point comes after the rename
