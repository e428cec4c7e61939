"""Started threads wait for the baton in the order they were started, however late they arrive.

A started thread is put among the waiting threads by its starter (which holds the baton),
so a pick never waits for it to wake, and the order the strategy chooses from is the start
order, not the order in which the OS happened to run the new threads up to their first
scheduling point. Here the workers are made to arrive in reverse order (a real delay in
each new thread before it runs, through ``threading.settrace``): the schedules must not
change.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from sessiontape import Schedule

from .conftest import replay_gardener

#: Real seconds the first started thread waits before it runs (the next ones less).
DELAY = 0.06


def _late_first() -> None:
    """Make each thread started from now on wait before it runs: the first the longest."""
    started = [0]
    lock = threading.Lock()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        sys.settrace(None)  # once, before the thread's run(): no tracing after that
        with lock:
            index = started[0]
            started[0] += 1
        # A real wait (the replay's clock is virtual; threading's timeouts stay real).
        threading.Event().wait(max(0.0, DELAY - index * DELAY / 3))

    threading.settrace(hook)


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_late_arrivals_do_not_change_the_schedule(
    corpus: Path, tmp_path: Path, strategy: str
) -> None:
    cassette = corpus / "gardener-full.jsonl"
    for seed in range(4):
        schedule = Schedule(seed=seed, strategy=strategy)
        prompt = replay_gardener(cassette, tmp_path / f"prompt-{seed}", schedule)
        _late_first()
        try:
            late = replay_gardener(cassette, tmp_path / f"late-{seed}", schedule)
        finally:
            threading.settrace(None)  # type: ignore[arg-type]
        assert prompt.verdict.value == late.verdict.value == "passed", late.render()
        assert [(c.worker, c.seq) for c in late.calls] == [(c.worker, c.seq) for c in prompt.calls]
        assert late.render() == prompt.render()
