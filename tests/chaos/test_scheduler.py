"""The scheduler over the shipped corpus: seeded, deterministic, admissible, race-free."""

from __future__ import annotations

from pathlib import Path

import pytest

import sessiontape
from sessiontape import Schedule, UsageError

from .conftest import CASSETTES, replay_gardener


def test_a_schedule_checks_its_settings() -> None:
    with pytest.raises(UsageError, match="unknown chaos strategy 'fifo'"):
        Schedule(seed=1, strategy="fifo")
    with pytest.raises(UsageError, match="seed must be an int >= 0"):
        Schedule(seed=-1)
    with pytest.raises(UsageError, match="depth must be an int >= 1"):
        Schedule(seed=1, depth=0)
    with pytest.raises(UsageError, match="stall_limit"):
        Schedule(seed=1, stall_limit=0)
    assert Schedule(seed=3, strategy="random").strategy is sessiontape.replayer.Strategy.RANDOM


@pytest.mark.parametrize("strategy", ["pct", "random"])
def test_the_same_seed_gives_the_same_schedule_and_report(
    corpus: Path, tmp_path: Path, strategy: str
) -> None:
    schedule = Schedule(seed=7, strategy=strategy)
    first = replay_gardener(corpus / "gardener-full.jsonl", tmp_path / "a", schedule)
    second = replay_gardener(corpus / "gardener-full.jsonl", tmp_path / "b", schedule)
    assert first.calls == second.calls
    assert first.render() == second.render()
    assert first.to_dict() == second.to_dict()


def test_seeds_interleave_the_workers_differently(corpus: Path, tmp_path: Path) -> None:
    orders = set()
    for seed in range(6):
        result = replay_gardener(
            corpus / "gardener-full.jsonl", tmp_path / str(seed), Schedule(seed, "random")
        )
        assert result.verdict.value == "passed", result.render()
        orders.add(tuple(c.worker for c in result.calls))
    assert len(orders) == 6


@pytest.mark.parametrize("cassette", CASSETTES)
@pytest.mark.parametrize("strategy", ["pct", "random"])
def test_the_corpus_has_no_race_in_a_few_schedules(
    corpus: Path, tmp_path: Path, cassette: str, strategy: str
) -> None:
    for seed in range(5):
        result = replay_gardener(corpus / cassette, tmp_path / str(seed), Schedule(seed, strategy))
        assert result.verdict.value == "passed", result.render()
        assert result.threads == 4  # the test's thread and three workers
        assert result.steps >= len(result.calls)
