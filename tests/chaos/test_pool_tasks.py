"""``ThreadPoolExecutor`` tasks under chaos: each task is scheduled like a thread.

A small program submits one task per item to a pool; each task reads a counter and
writes it back (two store calls: a lost update when two tasks interleave). Recorded with
one task at a time, then replayed under schedules: a seed's schedule and verdict are the
same on every run, the pool's size bounds how many tasks interleave (a pool of one
never loses an update), and every way of waiting for the tasks lets them run.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any, Final

import pytest

import sessiontape
from sessiontape import Mode, Schedule

ITEMS: Final = ("a", "b", "c", "d")


class Counter:
    """The store: a count and how much was added to it."""

    def __init__(self, state: dict[str, int]) -> None:
        self._lock = threading.Lock()
        self.count = state["count"]
        self.added = state["added"]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {"count": self.count, "added": self.added}

    def read(self) -> int:
        with self._lock:
            return self.count

    def write(self, value: int) -> int:
        with self._lock:
            self.count = value
            self.added += 1
            return value


#: How the main thread waits for the tasks: each is a way the scheduler must see.
def _as_completed(fs: list[futures.Future[int]]) -> list[int]:
    return sorted(f.result() for f in futures.as_completed(fs))


def _wait(fs: list[futures.Future[int]]) -> list[int]:
    done, _ = futures.wait(fs)
    return sorted(f.result() for f in done)


def _results(fs: list[futures.Future[int]]) -> list[int]:
    return sorted(f.result() for f in fs)


def _exceptions(fs: list[futures.Future[int]]) -> list[int]:
    assert all(f.exception() is None for f in fs)
    return sorted(f.result() for f in fs)


def _with_block(fs: list[futures.Future[int]]) -> list[int]:
    return []  # the pool's `with` block waits for them (shutdown(wait=True))


WAYS: Final[dict[str, Callable[[list[futures.Future[int]]], list[int]]]] = {
    "as_completed": _as_completed,
    "wait": _wait,
    "result": _results,
    "exception": _exceptions,
    "with_block": _with_block,
}


def program(tape: sessiontape.Tape, *, pool: int, way: str = "as_completed") -> dict[str, Any]:
    fresh = {"count": 0, "added": 0}
    live = Counter(fresh) if tape.mode is not Mode.REPLAY else None
    counter = tape.store(
        live, mutations=("read", "write"), snapshot=Counter.snapshot, factory=Counter
    )

    def task(item: str) -> int:
        seen = counter.read()
        return int(counter.write(seen + 1))

    with futures.ThreadPoolExecutor(max_workers=pool) as executor:
        submitted = [executor.submit(task, item) for item in ITEMS]
        values = WAYS[way](submitted)
    state = counter.snapshot()
    outcome = {"count": state["count"], "added": state["added"], "values": values}
    tape.finish(outcome=outcome if way == "with_block" else {**outcome, "values": [1, 2, 3, 4]})
    return outcome


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The program recorded once per way of waiting, one task at a time (no race)."""
    folder = tmp_path_factory.mktemp("pool")
    recorded = {}
    for way in WAYS:
        path = folder / f"{way}.jsonl"
        with sessiontape.record(path) as tape:
            program(tape, pool=1, way=way)
        recorded[way] = path
    return recorded


def _chaos(cassette: Path, schedule: Schedule, *, pool: int, way: str) -> sessiontape.ChaosResult:
    with sessiontape.replay(cassette, schedule=schedule) as tape:
        program(tape, pool=pool, way=way)
    assert tape.chaos is not None
    return tape.chaos


def test_a_seed_gives_the_same_schedule_and_verdict_every_run(
    cassettes: dict[str, Path],
) -> None:
    receipts: dict[int, str] = {}
    verdicts = {}
    for run in range(3):
        for seed in range(12):
            result = _chaos(cassettes["as_completed"], Schedule(seed), pool=3, way="as_completed")
            receipt = json.dumps(result.to_dict(), sort_keys=True)
            assert receipts.setdefault(seed, receipt) == receipt, (run, seed)
            verdicts[seed] = result.verdict.value
            # Four tasks and the thread that submitted them.
            assert result.threads == 5
    assert set(verdicts.values()) == {"passed", "failed"}, verdicts


def test_the_lost_update_is_found_and_named_by_its_tasks(cassettes: dict[str, Path]) -> None:
    failed = [
        result
        for seed in range(20)
        if (
            result := _chaos(cassettes["as_completed"], Schedule(seed), pool=2, way="as_completed")
        ).failed
    ]
    assert failed
    for result in failed:
        assert result.failure is not None
        assert result.failure.kind.value == "outcome", result.render()
        assert "count recorded 4" in result.failure.message, result.render()
        # The calls ran in the tasks' own names (submission order under the main thread).
        assert {c.worker for c in result.calls} <= {"main", "main/1", "main/2", "main/3", "main/4"}


def test_a_pool_of_one_runs_its_tasks_one_after_another(cassettes: dict[str, Path]) -> None:
    for seed in range(10):
        result = _chaos(cassettes["as_completed"], Schedule(seed), pool=1, way="as_completed")
        assert result.verdict.value == "passed", result.render()
        tasks = [c.worker for c in result.calls if c.worker != "main"]
        assert tasks == [name for n in range(1, 5) for name in [f"main/{n}"] * 2]


@pytest.mark.parametrize("way", sorted(WAYS))
def test_every_way_of_waiting_lets_the_tasks_run(cassettes: dict[str, Path], way: str) -> None:
    verdicts = set()
    for seed in range(8):
        result = _chaos(cassettes[way], Schedule(seed, stall_limit=30.0), pool=4, way=way)
        assert result.verdict.value in ("passed", "failed"), result.render()
        if result.failed:
            assert result.failure is not None
            assert result.failure.kind.value == "outcome", result.render()
        verdicts.add(result.verdict.value)
    assert "failed" in verdicts


def _waiting_on_a_later_task(tape: sessiontape.Tape, *, pool: int) -> None:
    """Two tasks, the first waiting for the second's result."""
    live = Counter({"count": 0, "added": 0}) if tape.mode is not Mode.REPLAY else None
    counter = tape.store(
        live, mutations=("read", "write"), snapshot=Counter.snapshot, factory=Counter
    )
    submitted: list[futures.Future[int]] = []
    both = threading.Event()

    def first() -> int:
        both.wait(timeout=60)
        return submitted[1].result() + int(counter.read())

    def second() -> int:
        return int(counter.write(1))

    with futures.ThreadPoolExecutor(max_workers=pool) as executor:
        submitted.append(executor.submit(first))
        submitted.append(executor.submit(second))
        both.set()
        value = submitted[0].result()
    tape.finish(outcome={"value": value})


def test_a_task_waiting_for_one_its_pool_has_no_room_for_is_a_deadlock(tmp_path: Path) -> None:
    cassette = tmp_path / "nested.jsonl"
    with sessiontape.record(cassette) as tape:
        _waiting_on_a_later_task(tape, pool=2)
    with sessiontape.replay(cassette, schedule=Schedule(0)) as tape:
        _waiting_on_a_later_task(tape, pool=2)
    assert tape.chaos is not None
    assert tape.chaos.verdict.value == "passed", tape.chaos.render()
    # A pool of one runs the first task, which waits for the second: nothing can run.
    with sessiontape.replay(cassette, schedule=Schedule(0, stall_limit=0.5)) as tape:
        _waiting_on_a_later_task(tape, pool=1)
    result = tape.chaos
    assert result is not None
    assert result.failure is not None, result.render()
    assert result.failure.kind.value == "deadlock", result.render()
    assert "or for a pool task, that does not end" in result.failure.message
