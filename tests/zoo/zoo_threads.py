"""Zoo program 1: worker threads over a SQLite backlog, git through stdlib ``subprocess``.

The style: the first orchestrator most teams write. ``threading.Thread`` per worker, a
SQLite table as the backlog (its class wrapped with ``tape.store``), git run with
``subprocess.run(check=True, capture_output=True)`` and intercepted by
``tape.patch_subprocess()`` (the program takes no runner), an agent object that returns a
dataclass, a staggered start kept up as polling slots, and back-off sleeps with
``time.sleep``.

Each task gets its own small git repository under the work directory: the worker writes
the task's file, stages it, asks the agent for a commit message, commits and reads the sha.
A push token comes from ``ZOO_TOKEN``: the worker sets it as git's ``http.extraHeader``
(argv), reads the setting back (output), and commits with ``GH_TOKEN`` set (environment).

The planted race: claiming is check-then-set over two store calls (``next_ready``, then
``claim``). The deployed backlog's ``claim`` only takes a task that is still ready (a
worker that loses the race backs off and looks again), so no run claims a task twice. The
``racy`` variant is the refactor under review: its ``claim`` takes the task whatever its
state. Production's staggered start hides that (the recorded run is made with the deployed
backlog and would not hit it anyway); another interleaving (chaos) claims a task twice.
Each worker looks at the backlog only in its own slot of each period (worker ``i`` at
``(i - 1) * SLOT`` seconds into every ``WORKERS * SLOT``), so in production two workers
never claim at the same moment.

Variants (``--variant``): ``default``; ``racy`` (no claim lock); ``changed`` (a reworded
agent request and another ``git add`` flag: an update); ``new_call`` (a ``git status``
before each commit: a live re-record); ``patched`` (the same call behind
``sessiontape.patched``); ``broken`` (task ``t3`` stages with ``--force``: a failure to
shrink).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import sessiontape

ENTRYPOINT = "zoo-threads"
TASKS: tuple[tuple[str, str], ...] = (
    ("t1", "wire the pump"),
    ("t2", "oil the gears"),
    ("t3", "fit the valve"),
    ("t4", "seal the tank"),
    ("t5", "paint the frame"),
)
WORKERS = 3
SLOT = 0.1
BACKOFF = 0.01
MUTATIONS = ("next_ready", "claim", "finish")
#: Fixed identity and dates: a commit's sha depends only on what it commits.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "zoo",
    "GIT_AUTHOR_EMAIL": "zoo@example.com",
    "GIT_COMMITTER_NAME": "zoo",
    "GIT_COMMITTER_EMAIL": "zoo@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
}


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the agent decided for a task."""

    task: str
    action: str
    message: str


class Reviewer:
    """The agent: a deterministic stand-in for a model, asked once per task."""

    def execute(self, request: dict[str, Any]) -> Verdict:
        summary = str(request["staged"]).strip().splitlines()[-1].strip()
        return Verdict(request["task"], "commit", f"{request['title']}: {summary}")


class Backlog:
    """The task table. Every public method is one store call."""

    def __init__(
        self, rows: list[dict[str, Any]], path: str = ":memory:", *, checked: bool = True
    ) -> None:
        self.checked = checked
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, title TEXT, state TEXT,"
            " claims INTEGER, owner TEXT, sha TEXT)"
        )
        for row in rows:
            self._db.execute(
                "INSERT INTO tasks VALUES (:id, :title, :state, :claims, :owner, :sha)", row
            )
        self._db.commit()

    @classmethod
    def fresh(cls, path: Path, *, checked: bool) -> Backlog:
        rows = [
            {"id": i, "title": t, "state": "ready", "claims": 0, "owner": None, "sha": None}
            for i, t in TASKS
        ]
        return cls(rows, str(path), checked=checked)

    def rows(self) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self._db.execute("SELECT * FROM tasks ORDER BY id")
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def next_ready(self) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id FROM tasks WHERE state = 'ready' ORDER BY id LIMIT 1"
            ).fetchone()
            return None if row is None else str(row[0])

    def claim(self, task: str, owner: str) -> bool:
        """Take the task if it is still ready (or, unchecked, whatever its state)."""
        guard = " AND state = 'ready'" if self.checked else ""
        with self._lock:
            taken = self._db.execute(
                "UPDATE tasks SET state = 'claimed', owner = ?, claims = claims + 1"
                f" WHERE id = ?{guard}",
                (owner, task),
            ).rowcount
            self._db.commit()
            return taken == 1

    def finish(self, task: str, sha: str) -> str:
        with self._lock:
            self._db.execute("UPDATE tasks SET state = 'done', sha = ? WHERE id = ?", (sha, task))
            self._db.commit()
            return task


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env
    )
    return done.stdout


class Shop:
    """The orchestrator: ``WORKERS`` threads claiming and committing tasks."""

    def __init__(self, backlog: Any, agent: Any, workdir: Path, variant: str) -> None:
        self.backlog = backlog
        self.agent = agent
        self.workdir = workdir
        self.variant = variant
        self.token = os.environ.get("ZOO_TOKEN", "")
        self.started = time.monotonic()

    def claim(self, owner: str) -> str | None:
        """The next ready task, claimed for ``owner``; ``None`` when none is left."""
        while True:
            task: str | None = self.backlog.next_ready()
            if task is None or self.backlog.claim(task, owner):
                return task
            time.sleep(BACKOFF)  # another worker took it: back off, look again

    def build(self, task: str) -> str:
        title = dict(TASKS)[task]
        repo = self.workdir / "tasks" / task
        repo.mkdir(parents=True, exist_ok=True)
        git("init", "-q", "-b", "main", ".", cwd=repo)
        if self.token:  # the push credentials, as the deploy configures them
            git("config", "http.extraHeader", f"AUTHORIZATION: bearer {self.token}", cwd=repo)
            git("config", "--get", "http.extraHeader", cwd=repo)
        (repo / f"{task}.txt").write_text(f"{title}\n", encoding="utf-8")
        add = ["add", "--force"] if self.variant == "broken" and task == "t3" else ["add"]
        if self.variant == "changed":
            add.append("--verbose")
        git(*add, f"{task}.txt", cwd=repo)
        staged = git("diff", "--cached", "--stat", cwd=repo)
        request = {"task": task, "title": title, "staged": staged}
        if self.variant == "changed":
            request["title"] = f"Task: {title}"
        verdict = self.agent.execute(request)
        new_call = self.variant == "new_call" or (
            self.variant == "patched" and sessiontape.patched("zoo-threads-status")
        )
        if new_call:
            git("status", "--short", cwd=repo)
        env = {**os.environ, **GIT_ENV, "GH_TOKEN": self.token}
        git("commit", "-q", "-m", verdict.message, cwd=repo, env=env)
        return git("rev-parse", "HEAD", cwd=repo).strip()

    def wait_for_slot(self, index: int) -> None:
        """Sleep until worker ``index``'s next polling slot (the staggered start)."""
        period = SLOT * WORKERS
        phase = (index - 1) * SLOT
        now = time.monotonic() - self.started
        time.sleep(max(0.0, phase + period * math.ceil((now - phase) / period) - now))

    def work(self, index: int) -> None:
        owner = f"worker-{index}"
        with sessiontape.worker(owner):
            while True:
                self.wait_for_slot(index)
                task = self.claim(owner)
                if task is None:
                    return
                self.backlog.finish(task, self.build(task))

    def run(self) -> dict[str, Any]:
        self.started = time.monotonic()
        threads = [threading.Thread(target=self.work, args=(i,)) for i in range(1, WORKERS + 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        rows = self.backlog.rows()
        return {"done": {r["id"]: r["sha"] for r in rows if r["state"] == "done"}}


def run(tape: sessiontape.Tape, workdir: Path, variant: str = "default") -> dict[str, Any]:
    """The whole program, wired through ``tape`` (the same in every mode)."""
    checked = variant != "racy"
    live = None
    if tape.mode is not sessiontape.Mode.REPLAY:
        live = Backlog.fresh(workdir / "backlog.db", checked=checked)

    def seeded(rows: list[dict[str, Any]]) -> Backlog:
        return Backlog(rows, checked=checked)

    backlog = tape.store(live, mutations=MUTATIONS, snapshot=Backlog.rows, factory=seeded)
    agent = tape.agent(Reviewer(), result_type=Verdict)

    def claimed_once() -> str | None:
        twice = [r["id"] for r in backlog.rows() if r["claims"] > 1]
        return f"claimed twice: {twice}" if twice else None

    tape.invariant(claimed_once)
    with tape.patch_subprocess():
        outcome = Shop(backlog, agent, workdir, variant).run()
    tape.finish(outcome=outcome)
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zoo-threads", description=__doc__)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--variant", default="default")
    sessiontape.add_record_argument(parser)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = sessiontape.record_path(args)
    roots = {"work": str(args.workdir)}
    with sessiontape.record(path, entrypoint=ENTRYPOINT, roots=roots) as tape:
        print(run(tape, args.workdir, args.variant))
    return 0


if __name__ == "__main__":
    sys.exit(main())
