"""A plain ``threading`` program that shells out through ``subprocess``, with races in it.

It knows nothing of sessiontape beyond its wiring: the processes go through
``tape.patch_subprocess()`` (zero refactor), the job board through ``tape.store``, and
waits through ``time.sleep`` (virtual on replay). Worker threads take jobs from the board,
run ``sh -c 'echo ...'`` for each, and record the result; the same three gaps as in the
racy gardener can be left open (see ``racy_gardener.py``): a double claim, a lost update
of the done-counter, and a reaper's timeout racing a job's completion.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Final

import sessiontape
from sessiontape import Mode, Tape

RACES: Final = ("double_claim", "lost_update", "timeout")
JOBS: Final = ("alpha", "beta", "gamma", "delta")
WORKERS: Final = 2
MUTATIONS: Final = (
    "next_pending",
    "take",
    "finish",
    "status",
    "time_out",
    "read_count",
    "write_count",
)
#: Virtual seconds the reaper waits on replay. When recording it waits for the workers to
#: end instead: production ran it once every job was done (a time that a loaded machine's
#: workers could outlast would let it time a job out, and the recording would not be the
#: race-free run it stands for).
REAP_AFTER: Final = 1.0


class Board:
    """The job board: plain dicts under a lock."""

    def __init__(self, jobs: dict[str, dict[str, Any]], count: int = 0) -> None:
        self._lock = threading.Lock()
        self._jobs = jobs
        self._count = count

    @classmethod
    def fresh(cls, names: Iterable[str]) -> Board:
        return cls({n: {"status": "pending", "claims": 0, "output": None} for n in names})

    @classmethod
    def from_snapshot(cls, snapshot: Any) -> Board:
        return cls({j["name"]: dict(j["job"]) for j in snapshot["jobs"]}, snapshot["count"])

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            jobs = [{"name": n, "job": dict(j)} for n, j in sorted(self._jobs.items())]
            return {"jobs": jobs, "count": self._count}

    def jobs(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {n: dict(j) for n, j in self._jobs.items()}

    def next_pending(self) -> str | None:
        with self._lock:
            return next(
                (n for n, j in sorted(self._jobs.items()) if j["status"] == "pending"), None
            )

    def take(self, name: str, worker: str) -> str:
        with self._lock:
            job = self._jobs[name]
            job.update(status="running", worker=worker, claims=job["claims"] + 1)
            return name

    def finish(self, name: str, output: str) -> str:
        with self._lock:
            job = self._jobs[name]
            if job["status"] != "running":
                raise RuntimeError(f"job {name!r} is {job['status']}, not running")
            job.update(status="done", output=output)
            return name

    def status(self, name: str) -> str:
        with self._lock:
            return str(self._jobs[name]["status"])

    def time_out(self, name: str) -> str:
        with self._lock:
            self._jobs[name]["status"] = "timed out"
            return name

    def read_count(self) -> int:
        with self._lock:
            return self._count

    def write_count(self, value: int) -> int:
        with self._lock:
            self._count = value
            return value


class Jobs:
    """The program: ``WORKERS`` threads working the board, and maybe a reaper."""

    def __init__(self, board: Any, *, closed: Iterable[str], reaper: bool, recording: bool) -> None:
        self.board = board
        self.closed = frozenset(closed)
        self.reaper = reaper
        self.recording = recording
        self._gaps = {race: threading.Lock() for race in RACES}
        self._workers_done = threading.Event()

    def gap(self, race: str) -> AbstractContextManager[object]:
        return self._holding(self._gaps[race]) if race in self.closed else nullcontext()

    @staticmethod
    @contextmanager
    def _holding(lock: threading.Lock) -> Any:
        while not lock.acquire(blocking=False):
            time.sleep(0.01)
        try:
            yield
        finally:
            lock.release()

    def work(self, index: int) -> None:
        board = self.board
        with sessiontape.worker(f"w{index}"):
            while True:
                with self.gap("double_claim"):
                    name = board.next_pending()
                    if name is None:
                        return
                    board.take(name, f"w{index}")
                echoed = subprocess.run(
                    ["sh", "-c", f"echo job {name}"], capture_output=True, text=True, check=True
                ).stdout
                with self.gap("timeout"):
                    board.finish(name, echoed.strip())
                with self.gap("lost_update"):
                    done = board.read_count()
                    board.write_count(done + 1)

    def reap(self) -> None:
        with sessiontape.worker("reaper"):
            if self.recording:
                self._workers_done.wait(300)  # set once they end: a hang's timeout
            else:
                time.sleep(REAP_AFTER)
            for name in JOBS:
                with self.gap("timeout"):
                    if self.board.status(name) == "running":
                        self.board.time_out(name)

    def run(self) -> dict[str, Any]:
        workers = [threading.Thread(target=self.work, args=(i,)) for i in (1, 2)]
        reapers = [threading.Thread(target=self.reap)] if self.reaper else []
        for thread in workers + reapers:
            thread.start()
        for thread in workers:
            thread.join()
        self._workers_done.set()
        for thread in reapers:
            thread.join()
        jobs = self.board.jobs()
        return {
            "done": sorted(n for n, j in jobs.items() if j["status"] == "done"),
            "count": self.board.read_count(),
        }


def run(tape: Tape, *, closed: Iterable[str], reaper: bool) -> dict[str, Any]:
    live = Board.fresh(JOBS) if tape.mode is not Mode.REPLAY else None
    board = tape.store(
        live, mutations=MUTATIONS, snapshot=Board.snapshot, factory=Board.from_snapshot
    )

    def claimed_once() -> str | None:
        twice = sorted(n for n, j in board.jobs().items() if j["claims"] > 1)
        return f"jobs claimed twice: {twice}" if twice else None

    tape.invariant(claimed_once)
    with tape.patch_subprocess():
        recording = tape.mode is Mode.RECORD
        outcome = Jobs(board, closed=closed, reaper=reaper, recording=recording).run()
    tape.finish(outcome=outcome)
    return outcome


def record(cassette: Path, *, reaper: bool) -> dict[str, Any]:
    with sessiontape.record(cassette, entrypoint="racy-jobs", config={"reaper": reaper}) as tape:
        return run(tape, closed=RACES, reaper=reaper)


def replay(
    cassette: Path, schedule: sessiontape.Schedule | None, *, open_race: str | None
) -> sessiontape.ReplayTape:
    tape = sessiontape.replay(cassette, schedule=schedule)
    reaper = bool(tape.recording.header.config["reaper"])
    with tape:
        run(tape, closed=() if open_race == "all" else set(RACES) - {open_race}, reaper=reaper)
    return tape
