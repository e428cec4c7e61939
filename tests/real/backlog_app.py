"""A second user's program, written from scratch (nothing of the gardener in it).

Three worker threads claim tasks from a SQLite backlog (wrapped with ``tape.store``), run
real ``git`` through the standard library's ``subprocess.run(check=True,
capture_output=True)`` under ``tape.patch_subprocess()`` (each worker in a repository of
its own), ask an agent that returns a dataclass, and back off with sleeps when a ``git``
call fails.

The backlog's claim reads and writes under one lock. Written check-then-set (two lock
sections), one recording in about twenty claimed a task twice: that race happens inside one
store call, below the boundaries, where no replay can order it (a replay runs the store's
calls one at a time, so the second claim gets another task and the replay reports a
``store_mismatch`` there); it only made this program's tapes differ from run to run. The
check-then-set race that chaos finds, two store calls apart, is in ``tests/chaos/backlog_app.py``.

Today's code may differ from the code that recorded a tape, chosen by the ``BACKLOG_CHANGES``
environment variable (comma-separated) or the ``changes`` argument:

- ``status``: every worker runs ``git status --short`` before it commits (a new process call);
- ``status2``: only ``worker-2`` does;
- ``rename``: the backlog's ``claim`` mutation is renamed ``claim_next``;
- ``note``: a new mutation, ``note(task, text)``, after each completion;
- ``message``: the commit message is reworded (a changed request, the same call);
- ``branch``: every worker runs ``git branch --show-current`` after its commit (a new
  process call whose output nothing else depends on).

Its source is also copied into ``pytester`` projects, which replay it through a
``sessiontape_replay`` hook (:data:`HOOK`), so it imports nothing from the test suite.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sessiontape

WORKERS = ("worker-1", "worker-2", "worker-3")
TASKS = ("t1", "t2", "t3", "t4", "t5", "t6")
ENTRYPOINT = "backlog-app"
#: The path root of the work directory.
ROOT = "work"
MUTATIONS = ("claim", "complete")


@dataclass(frozen=True)
class Step:
    """What the agent says to do with a task."""

    action: str
    message: str


class Agent:
    """The agent: decides a commit message for each task (scripted, answers at once)."""

    def decide(self, request: dict[str, Any]) -> Step:
        return Step("commit", f"{request['task']}: {request['title']}")


class Backlog:
    """Tasks in an in-memory SQLite database, shared by the worker threads."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute(
            "create table task (id text primary key, title text, status text, "
            "worker text, sha text, notes integer)"
        )
        with self._lock, self._db:
            for row in rows:
                self._db.execute(
                    "insert into task values (?, ?, ?, ?, ?, ?)",
                    (row["id"], row["title"], row["status"], row["worker"], row["sha"], 0),
                )

    @classmethod
    def fresh(cls) -> Backlog:
        return cls(
            [
                {"id": t, "title": f"tidy {t}", "status": "open", "worker": None, "sha": None}
                for t in TASKS
            ]
        )

    def dump(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "select id, title, status, worker, sha from task order by id"
            ).fetchall()
        keys = ("id", "title", "status", "worker", "sha")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def claim(self, worker: str) -> dict[str, str] | None:
        """The first open task, claimed for ``worker``: read and written under one lock."""
        with self._lock, self._db:
            found: tuple[str, str] | None = self._db.execute(
                "select id, title from task where status = 'open' order by id limit 1"
            ).fetchone()
            if found is None:
                return None
            self._db.execute(
                "update task set status = 'claimed', worker = ? where id = ?", (worker, found[0])
            )
        return {"id": found[0], "title": found[1]}

    def claim_next(self, worker: str) -> dict[str, str] | None:
        """``claim`` under its new name."""
        return self.claim(worker)

    def complete(self, task: str, sha: str) -> dict[str, Any]:
        with self._lock, self._db:
            self._db.execute("update task set status = 'done', sha = ? where id = ?", (sha, task))
            done = self._db.execute("select count(*) from task where status = 'done'").fetchone()
        return {"task": task, "done": done[0]}

    def note(self, task: str, text: str) -> int:
        with self._lock, self._db:
            self._db.execute("update task set notes = notes + 1 where id = ?", (task,))
            (count,) = self._db.execute("select notes from task where id = ?", (task,)).fetchone()
        return int(count)


def changes_from_env() -> frozenset[str]:
    return frozenset(c for c in os.environ.get("BACKLOG_CHANGES", "").split(",") if c)


def _git(repo: Path, *args: str) -> str:
    """One git call; a failure is retried after a back-off sleep, then raised."""
    for attempt in range(3):
        try:
            done = subprocess.run(
                ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
            )
            return done.stdout
        except subprocess.CalledProcessError:
            if attempt == 2:
                raise
            time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")


def _work(
    name: str, work: Path, backlog: Any, agent: Any, changes: Collection[str], out: dict[str, Any]
) -> None:
    with sessiontape.worker(name):
        repo = work / name
        repo.mkdir()
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "config", "user.name", name)
        _git(repo, "config", "user.email", f"{name}@example.invalid")
        claim = backlog.claim_next if "rename" in changes else backlog.claim
        done = []
        while True:
            task = claim(name)
            if task is None:
                break
            (repo / f"{task['id']}.txt").write_text(task["title"], encoding="utf-8")
            step = agent.decide({"task": task["id"], "title": task["title"]})
            _git(repo, "add", "-A")
            if "status" in changes or ("status2" in changes and name == "worker-2"):
                _git(repo, "status", "--short")
            message = f"Tidy: {step.message}" if "message" in changes else step.message
            _git(repo, "commit", "-q", "-m", message)
            if "branch" in changes:
                _git(repo, "branch", "--show-current")
            sha = _git(repo, "rev-parse", "HEAD").strip()
            backlog.complete(task["id"], sha)
            if "note" in changes:
                backlog.note(task["id"], f"done by {name}")
            done.append(task["id"])
        out[name] = done


def run(tape: Any, work: Path, changes: Collection[str] | None = None) -> dict[str, Any]:
    """One session: the workers until the backlog is empty; the outcome."""
    changes = changes_from_env() if changes is None else changes
    mutations = ["claim_next" if (m == "claim" and "rename" in changes) else m for m in MUTATIONS]
    if "note" in changes:
        mutations.append("note")
    if tape.mode.value == "replay":
        backlog = tape.store(mutations=mutations, factory=Backlog, name="backlog")
    else:
        backlog = tape.store(
            Backlog.fresh(), mutations=mutations, snapshot=Backlog.dump, name="backlog"
        )
    agent = tape.agent(Agent(), method="decide", result_type=Step)
    out: dict[str, Any] = {}
    with tape.patch_subprocess():
        threads = [
            threading.Thread(target=_work, args=(n, work, backlog, agent, changes, out), name=n)
            for n in WORKERS
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return {"done": sorted(t for tasks in out.values() for t in tasks)}


def record(path: Path, work: Path, changes: Collection[str] = ()) -> dict[str, Any]:
    """Record one session into ``path``, working in ``work``."""
    with sessiontape.record(path, entrypoint=ENTRYPOINT, roots={ROOT: str(work)}) as tape:
        outcome = run(tape, work, changes)
        tape.finish(outcome)
    return outcome


def replay_hook(tape: Any, recording: Any) -> Any:
    """The ``sessiontape_replay`` hook: replays a tape of this program in a fresh directory."""
    if recording.header.entrypoint != ENTRYPOINT:
        return None
    with tempfile.TemporaryDirectory(prefix="backlog-replay-") as work:
        tape.set_roots({ROOT: work})
        return run(tape, Path(work))


#: The conftest of a pytester project that replays this program's tapes.
HOOK = """
from backlog_app import replay_hook as sessiontape_replay
"""
