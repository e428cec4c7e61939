"""Explain's budget: the point of no return of a failing schedule of a 1,000-entry,
4-worker tape (DESIGN.md: at most 60 s on 2 cores).

The program is ``bench/cases/chaos.py``'s four workers (each makes ``calls`` process
calls through an injected runner and a store call every ``every`` of them) with one race
planted: a worker that is done adds itself to a shared done-counter in two store calls,
``read_done()`` and then ``write_done(n + 1)``. Recording holds a lock across the two (the
deployed code); today's code does not, so two workers that finish together lose one's
count, and the session ends with another outcome than recorded.

In a fresh interpreter the program is recorded once; chaos (PCT, as ``--sessiontape-chaos``
runs it) tries seeds from 0 until one fails; ``sessiontape.explain`` explains that
schedule and is timed. Its baseline is one plain chaos schedule of the same tape: the
median of ``rounds`` PCT schedules before explain and ``rounds`` after (a schedule and
an explain cannot take turns one for one: explain runs about a hundred schedules).
Figures: explain's seconds against the budget, the schedules it ran, and its seconds over
one schedule's, in all and per schedule it ran.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape import Schedule

from .chaos import Echo
from .common import in_subprocess, median, now_ns

__all__ = ["child_explain", "run"]

ENTRY = "bench explain"


class _Board:
    """The store: a counter per worker (``bump``) and the shared done-counter."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        state = state or {"counts": {}, "done": 0}
        self.counts: dict[str, int] = dict(state["counts"])
        self.done: int = state["done"]

    def snapshot(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "done": self.done}

    def bump(self, worker: str) -> int:
        self.counts[worker] = self.counts.get(worker, 0) + 1
        return self.counts[worker]

    def read_done(self) -> int:
        return self.done

    def write_done(self, value: int) -> int:
        self.done = value
        return value


def _program(tape: sessiontape.Tape, workers: int, calls: int, every: int) -> dict[str, int]:
    """The workers, wired through ``tape``; recording, the done-counter's gap is closed."""
    runner = tape.process_runner(Echo())  # type: ignore[arg-type]
    live = _Board() if tape.mode is not sessiontape.Mode.REPLAY else None
    store = tape.store(
        live,
        mutations=["bump", "read_done", "write_done"],
        snapshot=_Board.snapshot,
        factory=_Board,
    )
    closed = tape.mode is sessiontape.Mode.RECORD
    gap = threading.Lock()

    def work(index: int) -> None:
        name = f"w{index}"
        with sessiontape.worker(name):
            for i in range(calls):
                runner.run(["echo", name, str(i)], text=True)
                if i % every == 0:
                    store.bump(name)
            if closed:
                gap.acquire()
            try:
                store.write_done(store.read_done() + 1)  # the planted race, open today
            finally:
                if closed:
                    gap.release()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcome = {"done": store.read_done()}
    tape.finish(outcome=outcome)
    return outcome


def child_explain(
    path: str, workers: int, calls: int, every: int, search: int, rounds: int
) -> dict[str, Any]:
    """Record the program at ``path``, find a failing PCT schedule among seeds
    ``0..search-1``, time ``rounds`` plain schedules, explain, ``rounds`` more."""
    cassette = Path(path)
    with sessiontape.record(cassette, entrypoint=ENTRY) as recording:
        _program(recording, workers, calls, every)
    entries = len(sessiontape.load(cassette).calls)

    def run(schedule: Schedule) -> sessiontape.ChaosResult:
        tape = sessiontape.replay(cassette, schedule=schedule)
        with tape:
            _program(tape, workers, calls, every)
        assert tape.chaos is not None
        return tape.chaos

    failing = next((s for s in range(search) if run(Schedule(seed=s)).failed), None)
    if failing is None:
        raise SystemExit(f"none of {search} PCT schedules of {cassette} failed: no race to explain")

    def plain(seeds: range) -> list[int]:
        spent = []
        for seed in seeds:
            started = now_ns()
            run(Schedule(seed=seed))
            spent.append(now_ns() - started)
        return spent

    schedules_ns = plain(range(failing + 1, failing + 1 + rounds))
    started, cpu_started = now_ns(), time.process_time_ns()
    explained = sessiontape.explain(run, Schedule(seed=failing))
    explain_ns, explain_cpu_ns = now_ns() - started, time.process_time_ns() - cpu_started
    schedules_ns += plain(range(failing + 1 + rounds, failing + 1 + 2 * rounds))
    schedule_ns = median(schedules_ns)
    return {
        "entries": entries,
        "workers": workers,
        "failing_seed": failing,
        "failure": explained.failure,
        "decisions": explained.decisions,
        "point": explained.point,
        "deciding": explained.deciding.named() if explained.deciding else None,
        "estimates": len(explained.estimates),
        "schedules": explained.schedules,
        "explain_ns": explain_ns,
        "explain_cpu_ns": explain_cpu_ns,
        "schedule_ns": schedule_ns,
        "schedule_min_ns": min(schedules_ns),
        "schedule_max_ns": max(schedules_ns),
        "rounds": rounds,
        "ratio": explain_ns / schedule_ns,
        "per_schedule_ratio": explain_ns / explained.schedules / schedule_ns,
    }


def run(
    *, workdir: Path, workers: int, calls: int, every: int, search: int, rounds: int
) -> dict[str, Any]:
    """The measurement, in a fresh interpreter (its threads and heap stay out of the suite's)."""
    where = Path(tempfile.mkdtemp(prefix="bench-explain-", dir=workdir))
    result: dict[str, Any] = in_subprocess(
        "cases.explain:child_explain",
        path=str(where / "four-workers.jsonl"),
        workers=workers,
        calls=calls,
        every=every,
        search=search,
        rounds=rounds,
    )
    return result
