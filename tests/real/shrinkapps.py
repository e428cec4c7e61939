"""Two long-running programs for the ``shrink`` and ``corpus`` tests, with a plantable bug.

This file is copied into a test's project folder beside a ``conftest.py`` (see
``test_shrink.py``), so that the replay workers of ``sessiontape shrink`` load it as
``pytest --replay`` would. Both programs take every boundary from the tape:

* ``run_garden``: the bundled gardener orchestrator with a long backlog (real git, the
  scripted agent, the SQLite backlog) on three workers;
* ``run_batch``: a stdlib ``subprocess`` program: worker threads claim jobs from a small
  queue store and run each job's steps as ``sh -c`` processes (``patch_subprocess``);
* ``run_ledger``: a program written as a user would write one, nothing like the gardener:
  worker threads claim tasks from a SQLite backlog (``tape.store``), commit each task's
  file with ``git`` through stdlib ``subprocess.run(check=True, capture_output=True)``
  (``patch_subprocess``), ask an agent for a dataclass verdict, and back off with
  ``time.sleep`` when it says to wait.

``PLANT`` (an environment variable the test sets) is the deliberate code change: the
program then behaves differently for that one task, and only there.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape.examples.gardener import Scenario, TaskScript, run_gardener
from sessiontape.examples.gardener._scenarios import GARDEN

PLANT = "SHRINK_TEST_PLANT"
SPAWN_LOG = "SHRINK_TEST_SPAWN_LOG"
GARDEN_ENTRY = "long-garden"
BATCH_ENTRY = "long-batch"
SHAPES_ENTRY = "shapes"
LEDGER_ENTRY = "ledger"


# -- the gardener with a long backlog ---------------------------------------------------


@dataclass(frozen=True)
class Job:
    """A gardener task definition (the shape ``Scenario`` reads)."""

    id: str
    title: str
    script: TaskScript


def garden_scenario(tasks: int) -> Scenario:
    jobs = tuple(
        Job(
            f"bed-{i:02d}",
            f"Plant bed {i}",
            TaskScript(
                {f"beds/bed-{i:02d}.txt": f"bed {i}\n"}, review_rounds=1 if i % 4 == 0 else 0
            ),
        )
        for i in range(tasks)
    )
    return Scenario("long", "a long backlog", jobs, GARDEN)


class _PlantedRunner:
    """The planted change: the task named by ``PLANT`` commits with ``--signoff``."""

    def __init__(self, runner: Any, task: str) -> None:
        self.runner = runner
        self.task = task

    def run(self, argv: list[str], **kwargs: Any) -> Any:
        cwd = str(kwargs.get("cwd") or "")
        if argv[:2] == ["git", "commit"] and cwd.endswith(f"/{self.task}"):
            argv = [*argv, "--signoff"]
        return self.runner.run(argv, **kwargs)


def run_garden(tape: sessiontape.Tape, workdir: Path, tasks: int = 24, workers: int = 3) -> Any:
    """The gardener itself (its own wiring, ``run_gardener``), with the planted change."""
    runner: Any = tape.process_runner()
    planted = os.environ.get(PLANT)
    if planted:
        runner = _PlantedRunner(runner, planted)
    summary = run_gardener(tape, workdir, garden_scenario(tasks), workers, runner=runner)
    return tape.finish(outcome={"completed": sorted(summary.completed)})


# -- a stdlib subprocess program ---------------------------------------------------------


class JobQueue:
    """The batch program's store: jobs dealt to workers, claimed and completed."""

    MUTATIONS = ("claim", "complete")

    def __init__(self, jobs: list[dict[str, Any]]) -> None:
        self.jobs = {job["id"]: dict(job) for job in jobs}
        self.lock = threading.Lock()

    def snapshot(self) -> list[dict[str, Any]]:
        return [dict(self.jobs[key]) for key in sorted(self.jobs)]

    @classmethod
    def from_snapshot(cls, data: list[dict[str, Any]]) -> JobQueue:
        return cls(data)

    def claim(self, worker: str) -> dict[str, Any] | None:
        with self.lock:
            for key in sorted(self.jobs):
                job = self.jobs[key]
                if job["worker"] == worker and job["status"] == "pending":
                    job["status"] = "claimed"
                    return dict(job)
        return None

    def complete(self, job_id: str, lines: int) -> None:
        with self.lock:
            self.jobs[job_id].update(status="done", lines=lines)


def batch_jobs(jobs: int, workers: int, steps: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"job-{i:02d}",
            "worker": f"worker-{i % workers}",
            "steps": steps,
            "status": "pending",
        }
        for i in range(jobs)
    ]


def in_threads(work: Callable[[str], None], workers: int) -> list[BaseException]:
    """Run ``work(name)`` on a thread per worker (``worker-0``...) and wait for them all;
    the errors they raised, for the main thread to raise."""
    errors: list[BaseException] = []

    def guarded(name: str) -> None:
        try:
            work(name)
        except BaseException as exc:  # handed to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(f"worker-{w}",)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def _jobs(queue: Any, name: str, planted: str | None, done: list[str]) -> None:
    with sessiontape.worker(name):
        while (job := queue.claim(name)) is not None:
            lines = 0
            for step in range(job["steps"]):
                argv = ["sh", "-c", f"echo {job['id']} step {step}"]
                if planted == job["id"] and step == 5:
                    argv.append("planted")  # the deliberate change: $0 of the shell
                out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
                lines += out.count("\n")
            queue.complete(job["id"], lines)
            done.append(job["id"])


def run_batch(tape: sessiontape.Tape, jobs: int = 36, workers: int = 3, steps: int = 57) -> Any:
    replaying = tape.mode is sessiontape.Mode.REPLAY
    live = None if replaying else JobQueue(batch_jobs(jobs, workers, steps))
    queue = tape.store(
        live,
        mutations=JobQueue.MUTATIONS,
        snapshot=JobQueue.snapshot,
        factory=JobQueue.from_snapshot,
    )
    planted = os.environ.get(PLANT)
    done: list[str] = []
    with tape.patch_subprocess():
        errors = in_threads(lambda name: _jobs(queue, name, planted, done), workers)
    if errors:
        raise errors[0]
    return tape.finish(outcome={"done": len(done)})


# -- threads, a SQLite backlog, git through stdlib subprocess, an agent ----------------


class Backlog:
    """The ledger program's store: a SQLite file; each call opens its own connection."""

    MUTATIONS = ("claim", "finish")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()

    @classmethod
    def create(cls, path: Path, rows: list[dict[str, Any]]) -> Backlog:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        with sqlite3.connect(path) as db:
            db.execute(
                "create table task (id text primary key, worker text, status text, sha text)"
            )
            db.executemany(
                "insert into task values (:id, :worker, :status, :sha)",
                [{"sha": None, **row} for row in rows],
            )
        return cls(path)

    def snapshot(self) -> list[dict[str, Any]]:
        with sqlite3.connect(self.path) as db:
            rows = db.execute("select id, worker, status, sha from task order by id").fetchall()
        return [{"id": i, "worker": w, "status": s, "sha": h} for i, w, s, h in rows]

    def claim(self, worker: str) -> str | None:
        # Each task is dealt to one worker: what a claim returns does not depend on the
        # order in which the workers' claims reach the lock.
        with self.lock, sqlite3.connect(self.path) as db:
            row = db.execute(
                "select id from task where worker = ? and status = 'todo' order by id limit 1",
                (worker,),
            ).fetchone()
            if row is None:
                return None
            db.execute("update task set status = 'claimed' where id = ?", (row[0],))
            return str(row[0])

    def finish(self, task: str, sha: str) -> None:
        with self.lock, sqlite3.connect(self.path) as db:
            db.execute("update task set status = 'done', sha = ? where id = ?", (sha, task))


@dataclass(frozen=True)
class Advice:
    """What the ledger's agent answers: go on, or wait and ask again."""

    action: str
    note: str = ""


class Reviewer:
    """The ledger's agent: asks every third task to wait once."""

    def __init__(self) -> None:
        self.asked: set[str] = set()

    def advise(self, task: str, sha: str) -> Advice:
        if int(task.rsplit("-", 1)[1]) % 3 == 0 and task not in self.asked:
            self.asked.add(task)
            return Advice("wait", f"{task}: the build of {sha[:7]} is still running")
        return Advice("merge", f"{task} looks fine")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def _ledger_worker(
    name: str, repo: Path, backlog: Any, agent: Any, planted: str | None, done: list[str]
) -> None:
    with sessiontape.worker(name):
        while (task := backlog.claim(name)) is not None:
            message = f"{task}: the entry" + (" (amended)" if task == planted else "")
            with _REPO_LOCK:
                (repo / f"{task}.txt").write_text(f"{task}\n")
                _git(repo, "add", f"{task}.txt")
                _git(repo, "commit", "-q", "-m", message)
                sha = _git(repo, "rev-parse", "HEAD")
            delay = 0.01
            while agent.advise(task, sha).action == "wait":
                time.sleep(delay)  # a back-off: real when recording, instant on replay
                delay *= 2
            backlog.finish(task, sha)
            done.append(task)


#: The workers commit to one repository: one at a time (git's index lock).
_REPO_LOCK = threading.Lock()


def run_ledger(tape: sessiontape.Tape, workdir: Path, tasks: int = 9, workers: int = 3) -> Any:
    """The ledger program; ``PLANT`` names the task whose commit message today's code
    changes."""
    repo = workdir / "repo"
    db = workdir / "backlog.db"
    rows = [
        {"id": f"task-{i:02d}", "worker": f"worker-{i % workers}", "status": "todo"}
        for i in range(tasks)
    ]
    live = None if tape.mode is sessiontape.Mode.REPLAY else Backlog.create(db, rows)
    backlog = tape.store(
        live,
        mutations=Backlog.MUTATIONS,
        snapshot=Backlog.snapshot,
        factory=lambda snapshot: Backlog.create(db, snapshot),
    )
    agent = tape.agent(Reviewer(), method="advise", result_type=Advice)
    planted = os.environ.get(PLANT)
    done: list[str] = []
    with tape.patch_subprocess():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "config", "user.email", "ledger@example.com")
        _git(repo, "config", "user.name", "ledger")
        errors = in_threads(
            lambda name: _ledger_worker(name, repo, backlog, agent, planted, done), workers
        )
    if errors:
        raise errors[0]
    return tape.finish(outcome={"done": sorted(done)})


def record_ledger(path: Path, workdir: Path, tasks: int = 9, workers: int = 3) -> None:
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)  # a fresh repository and backlog
    with sessiontape.record(
        path,
        config={"tasks": tasks, "workers": workers},
        entrypoint=LEDGER_ENTRY,
        roots={"work": str(workdir)},
    ) as tape:
        run_ledger(tape, workdir, tasks, workers)


# -- a program of a few commands, for corpora -------------------------------------------


def run_shapes(tape: sessiontape.Tape, commands: list[list[str]]) -> Any:
    """Run ``commands`` one after the other (``corpus`` tests: each tape a behaviour)."""
    outputs = []
    with tape.patch_subprocess():
        for argv in commands:
            outputs.append(subprocess.run(argv, capture_output=True, check=False).returncode)
    return tape.finish(outcome={"codes": outputs})


def record_shapes(path: Path, commands: list[list[str]]) -> None:
    with sessiontape.record(path, config={"commands": commands}, entrypoint=SHAPES_ENTRY) as tape:
        run_shapes(tape, commands)


# -- replay: the hook the project conftest forwards to ----------------------------------


@contextmanager
def counting_spawns() -> Iterator[list[str]]:
    """Every real process started while open (the ways Python starts one)."""
    import _posixsubprocess

    started: list[str] = []
    saved = []
    for owner, name in ((_posixsubprocess, "fork_exec"), (os, "posix_spawn"), (os, "fork")):
        real = getattr(owner, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            started.append(_name)
            return _real(*args, **kwargs)

        saved.append((owner, name, real))
        setattr(owner, name, counted)
    try:
        yield started
    finally:
        for owner, name, real in saved:
            setattr(owner, name, real)


def replay_hook(tape: sessiontape.ReplayTape, recording: sessiontape.Recording) -> Any:
    """``sessiontape_replay`` for both programs; logs the spawns of each replay."""
    entry = recording.header.entrypoint
    if entry not in (GARDEN_ENTRY, BATCH_ENTRY, SHAPES_ENTRY, LEDGER_ENTRY):
        return None
    config = recording.header.config or {}
    log = os.environ.get(SPAWN_LOG)
    import shutil
    import tempfile

    workdir = Path(tempfile.mkdtemp(prefix="shrink-replay-"))
    try:
        with counting_spawns() as started:
            tape.set_roots({"work": str(workdir)})
            if entry == GARDEN_ENTRY:
                run_garden(tape, workdir, config["tasks"], config["workers"])
            elif entry == SHAPES_ENTRY:
                run_shapes(tape, config["commands"])
            elif entry == LEDGER_ENTRY:
                run_ledger(tape, workdir, config["tasks"], config["workers"])
            else:
                run_batch(tape, config["jobs"], config["workers"], config["steps"])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if log:
            with open(log, "a") as fh:
                fh.write(f"{len(started)}\n")
    return True


def make_project(root: Path) -> None:
    """Make ``root`` a project whose conftest replays these programs."""
    import shutil

    shutil.copy(__file__, root / "shrinkapp.py")
    (root / "conftest.py").write_text(
        "from shrinkapp import replay_hook\n\n\n"
        "def sessiontape_replay(tape, recording):\n"
        "    return replay_hook(tape, recording)\n"
    )


def record_garden(path: Path, workdir: Path, tasks: int = 24, workers: int = 3) -> None:
    with sessiontape.record(
        path,
        config={"tasks": tasks, "workers": workers},
        entrypoint=GARDEN_ENTRY,
        roots={"work": str(workdir)},
    ) as tape:
        run_garden(tape, workdir, tasks, workers)


def record_batch(path: Path, jobs: int = 36, workers: int = 3, steps: int = 57) -> None:
    with sessiontape.record(
        path,
        config={"jobs": jobs, "workers": workers, "steps": steps},
        entrypoint=BATCH_ENTRY,
    ) as tape:
        run_batch(tape, jobs, workers, steps)
