"""Zoo defect E, the pool: chaos schedules a ``ThreadPoolExecutor``'s tasks.

The pool program submits one task per package and waits with ``as_completed``; its
``racy`` ledger loses an update when two tasks interleave their read and write of the
total. Before the tasks were scheduled, they ran as in a plain replay, so whether a seed
found the lost update depended on real timing. Now a seed's schedule and verdict are
the same on every run: through the API (the result's ``to_dict()``) and through pytest
(the receipt's ``chaos`` object).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sessiontape

from .harness import Cell, Shelf
from .matrix import PROGRAMS

POOL = next(p for p in PROGRAMS if p.name == "pool")
SEEDS = range(12)
RUNS = 3


def test_a_pool_schedule_reproduces_its_verdict_and_its_calls(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    shelf: Shelf,
) -> None:
    cell = Cell(POOL, tmp_path, monkeypatch, request, shelf)
    tape = shelf.tape(POOL)
    first: dict[int, dict[str, object]] = {}
    for run in range(RUNS):
        for seed in SEEDS:
            schedule = sessiontape.Schedule(seed=seed)
            result = cell.replay_api(tape, variant="racy", schedule=schedule).tape.chaos
            assert result is not None
            # The thread that submitted and the four tasks, each a scheduled thread.
            assert result.threads == 5, result.render()
            receipt = result.to_dict()
            assert first.setdefault(seed, receipt) == receipt, (run, seed)
    verdicts = {seed: str(receipt["verdict"]) for seed, receipt in first.items()}
    failing = [seed for seed, verdict in verdicts.items() if verdict == "failed"]
    assert failing, verdicts
    assert set(verdicts.values()) == {"passed", "failed"}, verdicts
    for seed in failing:
        assert "lost update" in json.dumps(first[seed]["failure"]), first[seed]

    # Through pytest, in fresh interpreters: the receipts of a failing seed's runs agree.
    recorded = cell.recorded(into=cell.project.path / "tapes")
    receipts = []
    for run in range(RUNS):
        receipt = cell.fresh(f"receipt-{run}") / "receipt.json"
        ran, _ = cell.pytest(
            "--replay",
            str(recorded),
            "--sessiontape-chaos-seed",
            str(failing[0]),
            f"--sessiontape-report={receipt}",
            variant="racy",
        )
        ran.assert_outcomes(failed=1)
        (item,) = json.loads(receipt.read_text(encoding="utf-8"))
        receipts.append(item["chaos"])
    assert receipts[0]["verdict"] == "failed"
    assert "lost update" in json.dumps(receipts[0]["failure"])
    assert receipts[1] == receipts[0]
    assert receipts[2] == receipts[0]
