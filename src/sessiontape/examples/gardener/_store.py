"""The gardener's backlog: a SQLite file of tasks that worker threads claim and update.

Every mutation is a method that returns plain JSON data (a task dict, or ``None``), never a
row id or a timestamp, so the store can sit behind sessiontape's *verify* boundary: a
replay seeds a fresh store from the recorded :meth:`BacklogStore.snapshot`, runs the same
mutations for real and compares their results with the recorded ones.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol

__all__ = [
    "MUTATIONS",
    "STATUSES",
    "Backlog",
    "BacklogError",
    "BacklogStore",
]

#: The task lifecycle: ``pending -> claimed -> in_progress -> complete | failed``;
#: ``release`` sends a claimed or in-progress task back to ``pending``.
STATUSES: Final = ("pending", "claimed", "in_progress", "complete", "failed")

#: The methods that change the store: what ``tape.store(..., mutations=...)`` records.
MUTATIONS: Final = (
    "claim_next",
    "mark_in_progress",
    "record_attempt",
    "mark_complete",
    "mark_failed",
    "release",
)

_COLUMNS: Final = (
    "id",
    "title",
    "priority",
    "affinity",
    "status",
    "worker",
    "claims",
    "attempt",
    "commit_sha",
    "reason",
    "payload",
)

_SCHEMA: Final = """
CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    title       TEXT NOT NULL,
    priority    INTEGER NOT NULL DEFAULT 0,
    affinity    TEXT,
    status      TEXT NOT NULL DEFAULT 'pending',
    worker      TEXT,
    claims      INTEGER NOT NULL DEFAULT 0,
    attempt     INTEGER NOT NULL DEFAULT 0,
    commit_sha  TEXT,
    reason      TEXT,
    payload     TEXT NOT NULL DEFAULT '{}'
)
"""

_SELECT: Final = f"SELECT {', '.join(_COLUMNS)} FROM tasks"


class BacklogError(ValueError):
    """A mutation that the task's current state does not allow (or an unknown task)."""

    def __init__(self, message: str, *, task_id: str) -> None:
        super().__init__(message)
        self.task_id = task_id


class Backlog(Protocol):
    """What the orchestrator needs from a backlog: the live store or sessiontape's wrapper."""

    def claim_next(self, worker: str) -> dict[str, Any] | None:
        """Claim the next pending task ``worker`` may take, or return ``None``."""
        ...

    def mark_in_progress(self, task_id: str, worker: str) -> dict[str, Any]:
        """Move a task ``worker`` claimed to ``in_progress``."""
        ...

    def record_attempt(self, task_id: str, attempt: int) -> dict[str, Any]:
        """Record the edit/review round a task is in."""
        ...

    def mark_complete(self, task_id: str, commit: str) -> dict[str, Any]:
        """Mark a task merged at ``commit``."""
        ...

    def mark_failed(self, task_id: str, reason: str) -> dict[str, Any]:
        """Mark a task failed for good."""
        ...

    def release(self, task_id: str) -> dict[str, Any]:
        """Send a task back to ``pending`` so it can be claimed again."""
        ...


def _row_to_task(row: tuple[Any, ...]) -> dict[str, Any]:
    task = dict(zip(_COLUMNS, row, strict=True))
    task["commit"] = task.pop("commit_sha")
    task["payload"] = json.loads(task["payload"])
    return task


def _task_to_row(task: Mapping[str, Any]) -> tuple[Any, ...]:
    """A full task dict (as :meth:`BacklogStore.snapshot` gives it) as a row, validated."""
    task_id = task.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise BacklogError(f"a task needs a non-empty str 'id', got {task!r}", task_id=str(task_id))
    status = task.get("status", "pending")
    if status not in STATUSES:
        raise BacklogError(
            f"task {task_id!r} has unknown status {status!r}; use one of {', '.join(STATUSES)}",
            task_id=task_id,
        )
    payload = task.get("payload", {})
    if not isinstance(payload, Mapping):
        raise BacklogError(
            f"task {task_id!r}: 'payload' must be a mapping, got {type(payload).__name__}",
            task_id=task_id,
        )
    return (
        task_id,
        str(task.get("title", task_id)),
        int(task.get("priority", 0)),
        task.get("affinity"),
        status,
        task.get("worker"),
        int(task.get("claims", 0)),
        int(task.get("attempt", 0)),
        task.get("commit"),
        task.get("reason"),
        # sort_keys: the stored text, and so the snapshot, must not depend on dict order.
        json.dumps(dict(payload), sort_keys=True),
    )


class BacklogStore:
    """A thread-safe task backlog in one SQLite file.

    One connection is shared by all threads (``check_same_thread=False``) and serialised
    by a lock: each mutation is a single short transaction, so a finer scheme would buy
    nothing and would make the order of concurrent claims harder to reason about.

    Build one with :meth:`create` (from task definitions) or :meth:`from_snapshot` (from
    the exact rows :meth:`snapshot` returned, which is how a replay seeds its store).
    """

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        """Open an existing backlog file; :meth:`create` and :meth:`from_snapshot` make one."""
        self.path = Path(db_path)
        if not self.path.exists():
            raise FileNotFoundError(
                f"no backlog at {str(self.path)!r}; build one with BacklogStore.create() "
                "or BacklogStore.from_snapshot()"
            )
        self._lock = threading.Lock()
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE below), so
        # a claim's read and write cannot interleave with another process's claim.
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def create(
        cls, db_path: str | os.PathLike[str], tasks: Iterable[Mapping[str, Any]]
    ) -> BacklogStore:
        """A new backlog holding ``tasks``, all pending.

        Each task needs an ``id``; ``title``, ``priority`` (lower runs first), ``affinity``
        (the only worker allowed to claim it) and ``payload`` (a JSON mapping) are optional.
        """
        rows = []
        for task in tasks:
            unknown = set(task) - {"id", "title", "priority", "affinity", "payload"}
            if unknown:
                raise BacklogError(
                    f"task {task.get('id')!r} has unknown fields {sorted(unknown)}; a new task "
                    "takes id, title, priority, affinity and payload",
                    task_id=str(task.get("id")),
                )
            rows.append({**task, "status": "pending"})
        return cls.from_snapshot(db_path, rows)

    @classmethod
    def from_snapshot(
        cls, db_path: str | os.PathLike[str], snapshot: Iterable[Mapping[str, Any]]
    ) -> BacklogStore:
        """A new backlog file at ``db_path`` holding exactly the rows of ``snapshot``.

        An existing file at ``db_path`` is replaced: a snapshot describes the whole store.
        """
        path = Path(db_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            stale.unlink(missing_ok=True)
        rows = [_task_to_row(task) for task in snapshot]
        ids = [row[0] for row in rows]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise BacklogError(
                f"task ids must be unique; repeated: {duplicates}", task_id=duplicates[0]
            )
        conn = sqlite3.connect(path)
        try:
            with conn:
                conn.execute(_SCHEMA)
                placeholders = ", ".join("?" for _ in _COLUMNS)
                conn.executemany(
                    f"INSERT INTO tasks ({', '.join(_COLUMNS)}) VALUES ({placeholders})", rows
                )
        finally:
            conn.close()
        return cls(path)

    # -- reads ----------------------------------------------------------------------------

    def get(self, task_id: str) -> dict[str, Any]:
        """One task by id; :class:`BacklogError` if there is none."""
        with self._lock:
            return self._get(task_id)

    def list_tasks(self) -> list[dict[str, Any]]:
        """All tasks in claim order (priority, then id)."""
        with self._lock:
            rows = self._conn.execute(f"{_SELECT} ORDER BY priority, id").fetchall()
        return [_row_to_task(row) for row in rows]

    def snapshot(self) -> list[dict[str, Any]]:
        """Every task, every field, sorted by id: JSON data :meth:`from_snapshot` rebuilds."""
        with self._lock:
            rows = self._conn.execute(f"{_SELECT} ORDER BY id").fetchall()
        return [_row_to_task(row) for row in rows]

    # -- mutations ------------------------------------------------------------------------

    def claim_next(self, worker: str) -> dict[str, Any] | None:
        """Claim the first pending task (by priority, then id) that ``worker`` may take.

        A task with an ``affinity`` is only claimed by that worker. Returns the claimed
        task, or ``None`` when nothing is left for ``worker``.
        """
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                row = self._conn.execute(
                    "SELECT id FROM tasks WHERE status = 'pending' "
                    "AND (affinity IS NULL OR affinity = ?) ORDER BY priority, id LIMIT 1",
                    (worker,),
                ).fetchone()
                if row is None:
                    self._conn.execute("COMMIT")
                    return None
                self._conn.execute(
                    "UPDATE tasks SET status = 'claimed', worker = ?, claims = claims + 1 "
                    "WHERE id = ?",
                    (worker, row[0]),
                )
                task = self._get(row[0])
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return task

    def mark_in_progress(self, task_id: str, worker: str) -> dict[str, Any]:
        """Start work on a task ``worker`` has claimed."""
        return self._transition(task_id, {"claimed"}, "in_progress", require_worker=worker)

    def record_attempt(self, task_id: str, attempt: int) -> dict[str, Any]:
        """Record that an in-progress task entered edit/review round ``attempt``."""
        return self._transition(task_id, {"in_progress"}, "in_progress", attempt=attempt)

    def mark_complete(self, task_id: str, commit: str) -> dict[str, Any]:
        """Mark an in-progress task done, merged into main at ``commit``."""
        return self._transition(task_id, {"in_progress"}, "complete", commit_sha=commit)

    def mark_failed(self, task_id: str, reason: str) -> dict[str, Any]:
        """Mark a claimed or in-progress task failed for good."""
        return self._transition(task_id, {"claimed", "in_progress"}, "failed", reason=reason)

    def release(self, task_id: str) -> dict[str, Any]:
        """Give a claimed or in-progress task back: ``pending`` again, no worker, round 0."""
        return self._transition(
            task_id, {"claimed", "in_progress"}, "pending", worker=None, attempt=0
        )

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> BacklogStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BacklogStore({str(self.path)!r})"

    # -- helpers --------------------------------------------------------------------------

    def _get(self, task_id: str) -> dict[str, Any]:
        row = self._conn.execute(f"{_SELECT} WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise BacklogError(f"no task {task_id!r} in the backlog", task_id=task_id)
        return _row_to_task(row)

    def _transition(
        self,
        task_id: str,
        allowed: set[str],
        status: str,
        *,
        require_worker: str | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                task = self._get(task_id)
                if task["status"] not in allowed:
                    raise BacklogError(
                        f"task {task_id!r} is {task['status']!r}; it must be one of "
                        f"{sorted(allowed)} to become {status!r}",
                        task_id=task_id,
                    )
                if require_worker is not None and task["worker"] != require_worker:
                    raise BacklogError(
                        f"task {task_id!r} is claimed by {task['worker']!r}, "
                        f"not {require_worker!r}",
                        task_id=task_id,
                    )
                assignments = {"status": status, **fields}
                columns = ", ".join(f"{name} = ?" for name in assignments)
                self._conn.execute(
                    f"UPDATE tasks SET {columns} WHERE id = ?", (*assignments.values(), task_id)
                )
                task = self._get(task_id)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return task
