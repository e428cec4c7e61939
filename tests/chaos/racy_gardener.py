"""A copy of the bundled gardener with races planted in it (subclasses, here in the tests).

Workers share one pool of tasks (no affinity), and three pieces of code leave a gap
between a read and the write that depends on it:

* ``double_claim``: a worker reads the next pending task and takes it in two store calls;
* ``lost_update``: after a merge, a worker reads the merge counter and writes it plus one;
* ``timeout``: a reaper reads a task's status and, if it is in progress, times it out,
  while the worker may complete it in between.

Each gap can be *closed* (a lock held from the read to the write, polled through the clock
as the gardener's own locks are). The recording closes them all: production happened to
run the workers so that no race fired. Chaos replay then runs with one of them open.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Final

import sessiontape
from sessiontape import Mode, Tape
from sessiontape.examples.gardener import (
    MUTATIONS,
    WORK_ROOT,
    BacklogStore,
    Gardener,
    ScriptedAgent,
    StepResult,
    get_scenario,
    init_repository,
)

RACES: Final = ("double_claim", "lost_update", "timeout")
RACY_MUTATIONS: Final = (
    *MUTATIONS,
    "next_pending",
    "take",
    "read_merged",
    "write_merged",
    "status",
    "time_out",
)
SCENARIO: Final = "happy"
WORKERS: Final = 2
#: Seconds the reaper waits on replay (virtual). When recording it waits for the workers
#: to end instead: production ran it once every task was done (a time that a loaded
#: machine's workers could outlast would let it time a task out, and the recording would
#: not be the race-free run it stands for).
REAP_AFTER: Final = 1.5


class RacyBacklog(BacklogStore):
    """The gardener's backlog with the racy operations the planted code uses."""

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        super().__init__(db_path)
        self._merged = 0

    def _one(self, sql: str, args: Iterable[Any] = ()) -> Any:
        with self._lock:
            return self._conn.execute(sql, tuple(args)).fetchone()

    def _set(self, sql: str, args: Iterable[Any]) -> None:
        with self._lock:
            self._conn.execute(sql, tuple(args))

    def next_pending(self) -> str | None:
        """The first pending task's id (a read: nothing is claimed)."""
        row = self._one("SELECT id FROM tasks WHERE status = 'pending' ORDER BY priority, id")
        return None if row is None else str(row[0])

    def take(self, task_id: str, worker: str) -> dict[str, Any]:
        """Claim ``task_id`` for ``worker``, whatever its state (the caller checked)."""
        self._set(
            "UPDATE tasks SET status = 'claimed', worker = ?, claims = claims + 1 WHERE id = ?",
            (worker, task_id),
        )
        return self.get(task_id)

    def read_merged(self) -> int:
        return self._merged

    def write_merged(self, value: int) -> int:
        self._merged = value
        return value

    def status(self, task_id: str) -> str:
        return str(self.get(task_id)["status"])

    def time_out(self, task_id: str) -> dict[str, Any]:
        """Fail ``task_id`` as timed out, whatever its state (the caller checked)."""
        self._set(
            "UPDATE tasks SET status = 'failed', reason = 'timed out' WHERE id = ?", (task_id,)
        )
        return self.get(task_id)

    @classmethod
    def fresh(cls, db_path: Path, snapshot: Any) -> RacyBacklog:
        store = cls.from_snapshot(db_path, snapshot)
        assert isinstance(store, RacyBacklog)
        return store


class RacyGardener(Gardener):
    """The gardener with the gaps of :data:`RACES`; those named in ``closed`` are locked."""

    def __init__(
        self, *, closed: Iterable[str], reap_after: float | None, recording: bool, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.closed = frozenset(closed)
        self.reap_after = reap_after
        self.recording = recording
        self._gaps = {race: threading.Lock() for race in RACES}
        self._workers_done = threading.Event()

    def _gap(self, race: str) -> AbstractContextManager[object]:
        if race in self.closed:
            return self._holding(self._gaps[race])
        return nullcontext()

    def run(self) -> Any:
        if self.reap_after is None:
            return super().run()
        reaper = threading.Thread(target=self._reap, name="gardener-reaper", daemon=True)
        reaper.start()
        try:
            return super().run()
        finally:
            self._workers_done.set()
            reaper.join()

    def _reap(self) -> None:
        assert self.reap_after is not None
        with self.worker_scope("reaper"):
            if self.recording:
                self._workers_done.wait(300)  # set once they end: a hang's timeout
            else:
                self.clock.sleep(self.reap_after)
            for task in sorted(t["id"] for t in self.store.list_tasks()):  # type: ignore[attr-defined]
                with self._gap("timeout"):
                    if self.store.status(task) == "in_progress":  # type: ignore[attr-defined]
                        self.store.time_out(task)  # type: ignore[attr-defined]

    def _work(self, name: str, errors: dict[str, BaseException]) -> None:
        # No try/except: an exception ends the worker's thread, as it would in a worker
        # pool that does not guard its workers.
        store: Any = self.store
        with self.worker_scope(name):
            while True:
                with self._gap("double_claim"):
                    task_id = store.next_pending()
                    if task_id is None:
                        return
                    task = store.take(task_id, name)
                self._run_task(name, task)

    def _merge(self, name: str, task_id: str, worktree: Path) -> str:
        commit = super()._merge(name, task_id, worktree)
        store: Any = self.store
        with self._gap("lost_update"):
            merged = store.read_merged()
            store.write_merged(merged + 1)
        return commit


class _Completing:
    """The store as the workers see it: a completion holds the timeout gap (closed, the
    reaper cannot come between its read and its write)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.gardener: RacyGardener | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def mark_complete(self, task_id: str, commit: str) -> Any:
        assert self.gardener is not None
        with self.gardener._gap("timeout"):
            return self._store.mark_complete(task_id, commit)


def invariants(tape: Tape) -> list[Callable[[], str | None]]:
    """What must hold of the backlog at every step (and the counter at the end)."""

    def backlog() -> Any:
        return tape.stores["store"] if isinstance(tape, sessiontape.ReplayTape) else None

    def claimed_once() -> str | None:
        store = backlog()
        if store is None:
            return None
        twice = [t["id"] for t in store.list_tasks() if t["claims"] > 1]
        return f"tasks claimed twice: {twice}" if twice else None

    def completed_stays_completed() -> str | None:
        store = backlog()
        if store is None:
            return None
        lost = [
            t["id"]
            for t in store.list_tasks()
            if t["commit"] is not None and t["status"] != "complete"
        ]
        return f"completed tasks no longer complete: {lost}" if lost else None

    return [claimed_once, completed_stays_completed]


def run(
    tape: Tape, workdir: Path, *, closed: Iterable[str], reap_after: float | None
) -> dict[str, Any]:
    """The racy gardener wired to ``tape`` (record or replay); its summary as data."""
    spec = get_scenario(SCENARIO)
    work = Path(os.path.abspath(workdir))
    work.mkdir(parents=True, exist_ok=True)
    db_path = work / "backlog.db"
    runner = tape.process_runner()
    init_repository(runner, work / "repo", spec.files)
    tasks = [{k: v for k, v in t.items() if k != "affinity"} for t in spec.backlog(WORKERS)]
    live = RacyBacklog.create(db_path, tasks) if tape.mode is not Mode.REPLAY else None
    store = tape.store(
        live,
        mutations=RACY_MUTATIONS,
        snapshot=BacklogStore.snapshot,
        factory=lambda snapshot: RacyBacklog.fresh(db_path, snapshot),
    )
    for check in invariants(tape):
        tape.invariant(check)
    completing = _Completing(store)
    gardener = RacyGardener(
        runner=runner,
        agent=tape.agent(ScriptedAgent(spec.script, runner), result_type=StepResult),
        store=completing,
        clock=tape.clock,
        workdir=work,
        workers=WORKERS,
        closed=closed,
        reap_after=reap_after,
        recording=tape.mode is Mode.RECORD,
    )
    completing.gardener = gardener
    try:
        summary = dataclasses.asdict(gardener.run())
        # Which worker took which task depends on the schedule (tasks have no affinity):
        # not part of the outcome.
        del summary["per_worker"]
        summary["merged_counter"] = store.read_merged()
        # Finished before the store closes: the invariants read it one last time.
        tape.finish(outcome=summary)
    finally:
        store.close()
    return summary


def record(cassette: Path, workdir: Path, *, reaper: bool) -> dict[str, Any]:
    """Record the racy gardener with every gap closed (no race fires); with ``reaper``,
    a reaper thread looks for tasks still in progress once all are done."""
    with sessiontape.record(
        cassette,
        entrypoint="racy-gardener",
        config={"reaper": reaper},
        roots={WORK_ROOT: os.fspath(workdir)},
    ) as tape:
        return run(tape, workdir, closed=RACES, reap_after=REAP_AFTER if reaper else None)


def replay(
    cassette: Path, workdir: Path, schedule: sessiontape.Schedule | None, *, open_race: str
) -> sessiontape.ReplayTape:
    """Replay under ``schedule`` (or plainly) with the gap ``open_race`` left open."""
    workdir.mkdir(parents=True, exist_ok=True)
    tape = sessiontape.replay(cassette, roots={WORK_ROOT: os.fspath(workdir)}, schedule=schedule)
    reaper = bool(tape.recording.header.config["reaper"])
    with tape:
        run(
            tape,
            workdir,
            closed=() if open_race == "all" else set(RACES) - {open_race},
            reap_after=REAP_AFTER if reaper else None,
        )
    return tape
