"""What a crash leaves loads, and threads never interleave lines (fast slice of the trials)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from . import _trials

TRIALS = int(os.environ.get("SESSIONTAPE_KILL_TRIALS", "3"))


@pytest.mark.parametrize("trial", range(TRIALS))
def test_kill_9_at_a_random_moment(tmp_path: Path, trial: int) -> None:
    outcome = _trials.kill_trial(tmp_path, random.Random(trial))
    assert outcome["problems"] == []
    assert outcome["size"] > 0


def test_sixteen_threads(tmp_path: Path) -> None:
    assert _trials.thread_stress(tmp_path / "stress.jsonl", threads=16, calls=40, seed=1) == []
