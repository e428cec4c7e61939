"""A second user's program, written from scratch the way a user writes one (issue 29).

Three worker threads take tasks from a SQLite backlog, ask git for the head, ask an agent
to review the task (the request names the worker that asks, as agent requests often do),
back off while the agent is busy, write the result into git, and mark the task done. It
knows nothing of sessiontape beyond its wiring: the backlog goes through ``tape.store``,
git through stdlib ``subprocess.run(check=True, capture_output=True)`` under
``tape.patch_subprocess()``, the agent through ``tape.agent`` (its result a dataclass),
and the back-off through ``time.sleep`` (virtual on replay).

The claim is check-then-set: ``next_ready`` reads, ``claim`` writes, and nothing stops two
workers from reading the same task in between. Production starts the workers a little
apart (``STAGGER``), which hides the race: each worker has claimed its task before the
next one starts looking. Chaos replay finds it.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Final

import sessiontape
from sessiontape import Mode, Tape

TASKS: Final = ("t1", "t2", "t3")
WORKERS: Final = 3
#: Seconds between the workers' starts in production: long enough that no two claim at once.
STAGGER: Final = 0.05
#: Seconds a worker waits before asking a busy agent again.
BACKOFF: Final = 0.1
MUTATIONS: Final = ("next_ready", "claim", "complete")
#: The root name the repository's path is recorded under.
REPO_ROOT: Final = "repo"
ENTRYPOINT: Final = "backlog-app"


@dataclasses.dataclass(frozen=True)
class Review:
    """What the agent says about a task."""

    verdict: str  # "approve", or "busy": ask again later
    note: str


class Reviewer:
    """The agent: busy the first time it is asked about a task, then approves it."""

    def __init__(self) -> None:
        self._asked: set[str] = set()
        self._lock = threading.Lock()

    def execute(self, request: dict[str, Any]) -> Review:
        with self._lock:
            first = request["task"] not in self._asked
            self._asked.add(request["task"])
        if first:
            return Review("busy", "try again shortly")
        return Review("approve", f"{request['task']} looks good at {request['head'][:7]}")


class Backlog:
    """The task backlog: one SQLite table, shared by the worker threads."""

    def __init__(self, rows: list[dict[str, Any]], path: str = ":memory:") -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, state TEXT, "
            "owner TEXT, claims INTEGER, sha TEXT)"
        )
        self._db.executemany(
            "INSERT OR REPLACE INTO tasks VALUES (:id, :state, :owner, :claims, :sha)", rows
        )
        self._db.commit()

    @classmethod
    def fresh(cls, path: str) -> Backlog:
        rows = [{"id": t, "state": "ready", "owner": None, "claims": 0, "sha": None} for t in TASKS]
        return cls(rows, path)

    def rows(self) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self._db.execute("SELECT id, state, owner, claims, sha FROM tasks ORDER BY id")
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def next_ready(self) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id FROM tasks WHERE state = 'ready' ORDER BY id LIMIT 1"
            ).fetchone()
        return None if row is None else str(row[0])

    def claim(self, task: str, worker: str) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE tasks SET state = 'claimed', owner = ?, claims = claims + 1 WHERE id = ?",
                (worker, task),
            )
            self._db.commit()

    def complete(self, task: str, sha: str) -> None:
        with self._lock:
            self._db.execute("UPDATE tasks SET state = 'done', sha = ? WHERE id = ?", (sha, task))
            self._db.commit()


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, input=stdin, text=True, check=True, capture_output=True
    )
    return done.stdout.strip()


class App:
    """The program: ``WORKERS`` threads working the backlog. With ``shout``, the agent
    request names the worker in capitals (``WORKER-2``): not the worker's own name, so
    chaos cannot read it as another worker's."""

    def __init__(self, backlog: Any, agent: Any, repo: Path, *, shout: bool = False) -> None:
        self.backlog = backlog
        self.agent = agent
        self.repo = repo
        self.shout = shout

    def work(self, index: int) -> None:
        me = f"worker-{index}"
        with sessiontape.worker(me):
            time.sleep(STAGGER * (index - 1))  # staggered start
            while True:
                task = self.backlog.next_ready()
                if task is None:
                    return
                self.backlog.claim(task, me)
                head = git(self.repo, "rev-parse", "HEAD")
                while True:
                    asker = me.upper() if self.shout else me
                    review = self.agent.execute({"worker": asker, "task": task, "head": head})
                    if review.verdict != "busy":
                        break
                    time.sleep(BACKOFF)
                sha = git(self.repo, "hash-object", "-w", "--stdin", stdin=review.note)
                self.backlog.complete(task, sha)

    def run(self) -> dict[str, Any]:
        threads = [threading.Thread(target=self.work, args=(i,)) for i in range(1, WORKERS + 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        rows = self.backlog.rows()
        return {"done": [r["id"] for r in rows if r["state"] == "done"]}


def claimed_once(backlog: Any) -> str | None:
    """The invariant: no task is claimed twice."""
    twice = [r["id"] for r in backlog.rows() if r["claims"] > 1]
    return f"claimed twice: {twice}" if twice else None


def run(tape: Tape, repo: Path, *, shout: bool = False) -> dict[str, Any]:
    """Wire the program through ``tape`` and run it (the same wiring in every mode)."""
    live = Backlog.fresh(os.fspath(repo / "backlog.db")) if tape.mode is not Mode.REPLAY else None
    backlog = tape.store(live, mutations=MUTATIONS, snapshot=Backlog.rows, factory=Backlog)
    agent = tape.agent(Reviewer(), result_type=Review)
    tape.invariant(lambda: claimed_once(backlog))
    with tape.patch_subprocess():
        outcome = App(backlog, agent, repo, shout=shout).run()
    tape.finish(outcome=outcome)
    return outcome


def init_repo(repo: Path) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z"}
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    for args in (
        ["init", "-q", "-b", "main"],
        ["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "0"],
    ):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def record(cassette: Path, repo: Path, *, shout: bool = False) -> dict[str, Any]:
    """Record one production run in ``repo`` (made here) to ``cassette``."""
    init_repo(repo)
    roots = {REPO_ROOT: os.fspath(repo)}
    config = {"shout": shout}
    with sessiontape.record(cassette, entrypoint=ENTRYPOINT, roots=roots, config=config) as tape:
        return run(tape, repo, shout=shout)


def replay(
    cassette: Path, repo: Path, schedule: sessiontape.Schedule | None = None
) -> sessiontape.ReplayTape:
    """Replay ``cassette`` with today's repository at ``repo`` (it need not exist)."""
    tape = sessiontape.replay(cassette, roots={REPO_ROOT: os.fspath(repo)}, schedule=schedule)
    with tape:
        run(tape, repo, shout=tape.recording.header.config["shout"])
    return tape


#: The project's ``conftest.py`` for the program, as a user writes it: a fresh directory
#: for the repository of each replay.
CONFTEST = """
import tempfile
from pathlib import Path

import backlog_app


def sessiontape_replay(tape, recording):
    if recording.header.entrypoint != backlog_app.ENTRYPOINT:
        return None
    with tempfile.TemporaryDirectory(prefix="backlog-chaos-") as repo:
        tape.set_roots({backlog_app.REPO_ROOT: repo})
        backlog_app.run(tape, Path(repo), shout=recording.header.config["shout"])
    return True
"""
