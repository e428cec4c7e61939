"""The gardener orchestrator: worker threads that turn backlog tasks into merged commits.

Each worker claims a task, checks out a git worktree for it, loops ``edit -> review``
with the agent until the review approves, merges the branch into ``main`` under a merge
lock (recovering from a conflict with the agent's help) and records the outcome in the
backlog. Everything that touches the outside world goes through an injected object: the
process runner (every ``git`` call), the agent adapter, the backlog store and the clock.
That is what lets sessiontape record a run and replay it without git, agent or time.

Two consequences shape the code below. First, the worktree's files are *read* only
through ``git`` (via the runner) and only *written* by us, so a replay, where ``git`` is
served from the tape and no worktree exists, sees exactly what the recording saw.
Second, a worker's sequence of boundary calls must not depend on thread timing: waits
(merge lock busy, back-off after a failed step) only call ``clock.sleep``, and the
summary holds counts and sorted ids, never durations or commit SHAs.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final, Protocol

from sessiontape import ProcessResult, ProcessRunner
from sessiontape import worker as ambient_worker

from ._agent import AgentAdapter, StepResult
from ._store import Backlog

__all__ = [
    "BASE_REF",
    "GIT_CONFIG",
    "Clock",
    "Gardener",
    "GardenerCrash",
    "GitError",
    "RunSummary",
    "init_repository",
]

#: The repository's own git config, set right after ``git init``: a fixed identity and
#: settings that make the run independent of the host's git config (signing, hooks,
#: rerere, auto-gc). Repository config rather than ``env`` (nothing host-specific enters
#: a request) and rather than ``-c`` options on every call (the timeline stays readable:
#: each call shows its subcommand first).
GIT_CONFIG: Final = (
    ("user.name", "gardener"),
    ("user.email", "gardener@example.invalid"),
    ("commit.gpgsign", "false"),
    ("core.hooksPath", "/dev/null"),
    ("rerere.enabled", "false"),
    ("gc.auto", "0"),
)

#: The commit every task branches from: the state of ``main`` the backlog was planned
#: against. Branching from it (not from the moving ``main``) makes the conflict between
#: two tasks that edit the same lines certain, whichever of them merges first.
BASE_REF: Final = "base"

MAIN: Final = "main"


class Clock(Protocol):
    """The clock the orchestrator waits on (sessiontape's ``tape.clock`` is one)."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class GardenerCrash(RuntimeError):
    """A bug in the orchestrator: the agent or a task led it somewhere it cannot go.

    It escapes :meth:`Gardener.run` (after the other workers have drained their tasks),
    which is what a recorded crash looks like.
    """

    def __init__(self, message: str, *, task_id: str, worker: str) -> None:
        super().__init__(f"{worker}: task {task_id!r}: {message}")
        self.task_id = task_id
        self.worker = worker


class GitError(RuntimeError):
    """A ``git`` call that had to succeed failed."""

    def __init__(self, result: ProcessResult, cwd: str) -> None:
        command = " ".join(result.argv[1:])
        super().__init__(
            f"git {command} failed in {cwd} with exit code {result.returncode}: "
            f"{str(result.stderr).strip() or str(result.stdout).strip()}"
        )
        self.result = result
        self.cwd = cwd


@dataclass(frozen=True)
class RunSummary:
    """The outcome of a run, independent of thread timing so two runs can be compared.

    Lists are sorted and ``per_worker`` is keyed in worker order; nothing here depends on
    the clock or on commit SHAs.
    """

    completed: list[str]
    failed: list[str]
    merged_commits: int
    conflicts_recovered: int
    changes_requested: int
    retries: int
    per_worker: dict[str, list[str]]


def _git(runner: ProcessRunner, cwd: Path, *args: str, check: bool = True) -> ProcessResult:
    result = runner.run(["git", *args], cwd=str(cwd), text=True)
    if check and result.returncode != 0:
        raise GitError(result, str(cwd))
    return result


def _write_files(root: Path, files: Mapping[str, str]) -> None:
    for rel, content in sorted(files.items()):
        target = root / rel
        # In a replay the worktree was never checked out (git is served from the tape),
        # so its directories may not exist yet.
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


def init_repository(runner: ProcessRunner, repo: Path, files: Mapping[str, str]) -> None:
    """Create the git repository at ``repo``: ``files`` committed on ``main``, tagged ``base``."""
    repo.mkdir(parents=True, exist_ok=True)
    _git(runner, repo, "init", "-q", "-b", MAIN)
    for key, value in GIT_CONFIG:
        _git(runner, repo, "config", key, value)
    _write_files(repo, files)
    _git(runner, repo, "add", "-A")
    _git(runner, repo, "commit", "-q", "-m", "Plant the garden")
    _git(runner, repo, "tag", BASE_REF)


def _checked_paths(task: Mapping[str, Any], worker: str) -> list[str]:
    """The files a task edits, refusing anything that could leave its worktree."""
    paths = task["payload"].get("files", [])
    for path in paths:
        pure = PurePosixPath(path)
        if not path or pure.is_absolute() or ".." in pure.parts:
            raise GardenerCrash(
                f"refusing to edit {path!r}: task paths must be relative and stay inside "
                "the worktree",
                task_id=task["id"],
                worker=worker,
            )
    return sorted(paths)


@dataclass
class _Tally:
    """Run counters shared by the workers (under ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    merged: int = 0
    conflicts: int = 0
    changes_requested: int = 0
    retries: int = 0
    completed: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, list[str]] = field(default_factory=dict)

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def outcome(self, kind: str, worker: str, task_id: str) -> None:
        with self.lock:
            getattr(self, kind).setdefault(worker, []).append(task_id)


class Gardener:
    """The orchestrator: ``workers`` threads working the backlog until it is empty.

    ``workdir`` holds the repository (``workdir/repo``, made by :func:`init_repository`)
    and the task worktrees (``workdir/worktrees/<task>``). ``lock_backoff`` is the wait
    between tries of a busy lock (merging, adding a worktree), ``failure_backoff`` the wait
    after a task failed or was released; ``max_rounds`` caps the edit/review loop.
    ``worker_scope`` sets the ambient worker id of each thread (sessiontape's
    :func:`~sessiontape.worker`).
    """

    def __init__(
        self,
        *,
        runner: ProcessRunner,
        agent: AgentAdapter,
        store: Backlog,
        clock: Clock,
        workdir: Path,
        workers: int = 3,
        lock_backoff: float = 0.05,
        failure_backoff: float = 0.2,
        max_rounds: int = 4,
        worker_scope: Callable[[str], AbstractContextManager[object]] = ambient_worker,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers!r}")
        self.runner = runner
        self.agent = agent
        self.store = store
        self.clock = clock
        self.repo = workdir / "repo"
        self.worktrees = workdir / "worktrees"
        self.workers = workers
        self.lock_backoff = lock_backoff
        self.failure_backoff = failure_backoff
        self.max_rounds = max_rounds
        self.worker_scope = worker_scope
        self._merge_lock = threading.Lock()
        # git is not safe against concurrent worktree adds and removes in one repository:
        # each lists the others' admin directories, which may be half-written
        # ("fatal: failed to read .git/worktrees/x/commondir"). So they take turns.
        self._worktree_lock = threading.Lock()
        self._tally = _Tally()

    @staticmethod
    def worker_names(workers: int) -> list[str]:
        """The worker ids a run with ``workers`` threads uses: ``worker-1``..."""
        return [f"worker-{i}" for i in range(1, workers + 1)]

    def run(self) -> RunSummary:
        """Work the backlog with all workers; return the summary or re-raise a crash.

        A worker that crashes stops; the others finish their tasks (stopping them midway
        would make what they had done depend on timing), then the first crash, in worker
        order, is raised.
        """
        names = self.worker_names(self.workers)
        errors: dict[str, BaseException] = {}
        threads = [
            threading.Thread(
                target=self._work, args=(name, errors), name=f"gardener-{name}", daemon=True
            )
            for name in names
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for name in names:
            if name in errors:
                raise errors[name]
        tally = self._tally
        return RunSummary(
            completed=sorted(t for ids in tally.completed.values() for t in ids),
            failed=sorted(t for ids in tally.failed.values() for t in ids),
            merged_commits=tally.merged,
            conflicts_recovered=tally.conflicts,
            changes_requested=tally.changes_requested,
            retries=tally.retries,
            per_worker={
                name: sorted(tally.completed.get(name, []) + tally.failed.get(name, []))
                for name in names
            },
        )

    # -- one worker -----------------------------------------------------------------------

    def _work(self, name: str, errors: dict[str, BaseException]) -> None:
        try:
            with self.worker_scope(name):
                while (task := self.store.claim_next(name)) is not None:
                    self._run_task(name, task)
        except BaseException as exc:  # handed to run(), which re-raises it
            errors[name] = exc

    def _run_task(self, name: str, task: dict[str, Any]) -> None:
        task_id: str = task["id"]
        paths = _checked_paths(task, name)
        self.store.mark_in_progress(task_id, name)
        worktree = self.worktrees / task_id
        # Relative to the repository, so no absolute path enters the recorded argv.
        rel_worktree = f"../worktrees/{task_id}"
        # -B: a task released and claimed again restarts its branch from base.
        self._worktree("add", "-q", "-B", f"task/{task_id}", rel_worktree, BASE_REF)
        verdict, reason = self._develop(name, task, paths, worktree)
        commit = self._merge(name, task_id, worktree) if verdict == "approved" else ""
        self._worktree("remove", "--force", rel_worktree)
        if verdict == "approved":
            self.store.mark_complete(task_id, commit)
            self._tally.outcome("completed", name, task_id)
            return
        if verdict == "retry":
            self.store.release(task_id)
            self._tally.add(retries=1)
        else:
            self.store.mark_failed(task_id, reason)
            self._tally.outcome("failed", name, task_id)
        # Give the backend (or whatever made the step fail) a moment before the next claim.
        self.clock.sleep(self.failure_backoff)

    def _worktree(self, *args: str) -> None:
        """``git worktree ARGS`` in the repository, one worker at a time."""
        with self._holding(self._worktree_lock):
            _git(self.runner, self.repo, "worktree", *args)

    def _describe(self, worktree: Path, path: str) -> dict[str, Any]:
        # Through git, not open(): a replay has no worktree to read, only the tape.
        shown = _git(self.runner, worktree, "show", f"HEAD:{path}", check=False)
        if shown.returncode != 0:
            return {"exists": False}
        content = str(shown.stdout)
        return {
            "exists": True,
            "lines": len(content.splitlines()),
            "sha256": hashlib.sha256(content.encode()).hexdigest()[:16],
        }

    def _develop(
        self, name: str, task: dict[str, Any], paths: Sequence[str], worktree: Path
    ) -> tuple[str, str]:
        """The edit/review loop: ``("approved" | "retry" | "failed", reason)``."""
        task_id: str = task["id"]
        feedback: str | None = None
        for attempt in range(1, self.max_rounds + 1):
            self.store.record_attempt(task_id, attempt)
            edit = self.agent.execute(
                {
                    "step": "edit",
                    "task": task_id,
                    "title": task["title"],
                    "attempt": attempt,
                    "claim": task["claims"],
                    "files": {path: self._describe(worktree, path) for path in paths},
                    "feedback": feedback,
                }
            )
            if edit.state == "error" and not edit.terminal:
                return "retry", str(edit.payload.get("reason", "agent error"))
            if edit.state == "failed":
                return "failed", str(edit.payload.get("reason", "the agent gave up"))
            if edit.state != "edited":
                raise self._no_transition("editing", edit, task_id, name)
            _write_files(worktree, edit.payload["files"])
            _git(self.runner, worktree, "add", "-A")
            message = str(edit.payload.get("message", task_id))
            subject = f"{message} (round {attempt})"
            _git(self.runner, worktree, "commit", "-q", "--allow-empty", "-m", subject)
            numstat = _git(self.runner, worktree, "diff", "--numstat", BASE_REF, "HEAD")
            review = self.agent.execute(
                {
                    "step": "review",
                    "task": task_id,
                    "attempt": attempt,
                    "diff": str(numstat.stdout).splitlines(),
                }
            )
            if review.state == "approve":
                return "approved", ""
            if review.state != "needs_changes":
                raise self._no_transition("reviewing", review, task_id, name)
            self._tally.add(changes_requested=1)
            feedback = str(review.payload.get("feedback", ""))
        return "failed", f"not approved after {self.max_rounds} rounds"

    @staticmethod
    def _no_transition(phase: str, step: StepResult, task_id: str, name: str) -> GardenerCrash:
        return GardenerCrash(
            f"the state machine has no transition from {phase!r} on agent state "
            f"{step.state!r} (payload {step.payload!r})",
            task_id=task_id,
            worker=name,
        )

    # -- merging --------------------------------------------------------------------------

    @contextmanager
    def _holding(self, lock: threading.Lock) -> Iterator[None]:
        # Poll rather than block: a real gardener's locks are files other processes hold
        # too, and the wait goes through the clock so a replay does not wait at all.
        while not lock.acquire(blocking=False):
            self.clock.sleep(self.lock_backoff)
        try:
            yield
        finally:
            lock.release()

    def _merge(self, name: str, task_id: str, worktree: Path) -> str:
        """Merge the task's branch into main; return main's new commit."""
        branch = f"task/{task_id}"
        message = f"Merge {branch}"
        with self._holding(self._merge_lock):
            merged = _git(
                self.runner, self.repo, "merge", "--no-ff", "-m", message, branch, check=False
            )
            if merged.returncode != 0:
                conflicted = _git(
                    self.runner, self.repo, "diff", "--name-only", "--diff-filter=U"
                ).stdout
                _git(self.runner, self.repo, "merge", "--abort")
                if not str(conflicted).split():
                    raise GitError(merged, str(self.repo))
                self._resolve(name, task_id, worktree)
                _git(self.runner, self.repo, "merge", "--no-ff", "-m", message, branch)
                self._tally.add(conflicts=1)
            head = _git(self.runner, self.repo, "rev-parse", "HEAD")
            self._tally.add(merged=1)
        return str(head.stdout).strip()

    def _resolve(self, name: str, task_id: str, worktree: Path) -> None:
        """Merge main into the task's branch in its worktree, resolved by the agent.

        Main stays clean (its merge was aborted); the conflict is settled on the task
        branch, so the merge into main that follows is clean.
        """
        attempt = _git(self.runner, worktree, "merge", "--no-edit", MAIN, check=False)
        if attempt.returncode == 0:
            return
        listed = _git(self.runner, worktree, "diff", "--name-only", "--diff-filter=U")
        paths = sorted(str(listed.stdout).split())
        if not paths:
            raise GitError(attempt, str(worktree))
        sides: dict[str, dict[str, str]] = {}
        for path in paths:
            # Index stages of a conflicted path: 1 = common base, 2 = ours, 3 = theirs.
            sides[path] = {
                side: str(_git(self.runner, worktree, "show", f":{stage}:{path}").stdout)
                for side, stage in (("base", 1), ("ours", 2), ("theirs", 3))
            }
        step = self.agent.execute({"step": "resolve_conflict", "task": task_id, "files": sides})
        if step.state != "resolved":
            raise self._no_transition("resolving", step, task_id, name)
        _write_files(worktree, step.payload["files"])
        _git(self.runner, worktree, "add", "--", *paths)
        _git(self.runner, worktree, "commit", "-q", "--no-edit")
