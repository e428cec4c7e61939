"""The small application the benchmark tapes belong to, and its replay loop.

``BenchStore`` is the backlog the generated sessions mutate (``bench/gen.py`` runs it for
real while writing a tape, so every recorded result is what the store really returns);
``StepResult`` is the agent's typed result; :func:`replay_session` is the "small app
loop": it reads each recorded request back from the tape and makes that call through the
tape's boundaries, worker by worker in recorded order, then finishes the report.
"""

from __future__ import annotations

import contextvars
import functools
import os
from collections import deque
from collections.abc import Iterable
from typing import Any, Final

import msgspec

import sessiontape
from sessiontape import AgentTurn, ProcessCall, StoreMutation, TruncatedPayloadError
from sessiontape.cassette import load_for_replay

from .common import now_ns

__all__ = [
    "FAKE_GH_TOKEN",
    "STORE_NAME",
    "BenchStore",
    "StepResult",
    "app_env",
    "replay_session",
]

STORE_NAME: Final = "backlog"
#: The secret the application really passes in ``GH_TOKEN``; the tape holds it redacted.
FAKE_GH_TOKEN: Final = "ghp_" + "Zq7RkP2mW9xT4vB8nC3dF6gH1jK5lM0sAe12"


class StepResult(msgspec.Struct, frozen=True):
    """What the agent adapter returns to the state machine."""

    state: str
    terminal: bool = False
    payload: dict[str, Any] = msgspec.field(default_factory=dict)
    usage: dict[str, Any] | None = None


class BenchStore:
    """An in-memory backlog: tasks dealt to workers (``affinity``), claimed in order.

    Each worker's tasks form their own queue, so what a call returns depends only on that
    worker's earlier calls: the store gives the same results in any interleaving of the
    workers, as the gardener's backlog does.
    """

    MUTATIONS: Final = (
        "claim_next",
        "mark_in_progress",
        "record_attempt",
        "mark_complete",
        "mark_failed",
        "release",
    )

    def __init__(self, tasks: Iterable[dict[str, Any]]) -> None:
        self._tasks: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, deque[str]] = {}
        for task in tasks:
            copy = dict(task)
            self._tasks[copy["id"]] = copy
            if copy["status"] == "pending":
                self._pending.setdefault(copy["affinity"], deque()).append(copy["id"])

    def snapshot(self) -> list[dict[str, Any]]:
        return [dict(t) for t in self._tasks.values()]

    def _view(self, task: dict[str, Any]) -> dict[str, Any]:
        return {k: task[k] for k in ("id", "status", "worker", "claims", "attempt", "commit")}

    def claim_next(self, worker: str) -> dict[str, Any] | None:
        queue = self._pending.get(worker)
        if not queue:
            return None
        task = self._tasks[queue.popleft()]
        task["status"] = "claimed"
        task["worker"] = worker
        task["claims"] += 1
        return self._view(task) | {"title": task["title"]}

    def mark_in_progress(self, task_id: str, worker: str) -> dict[str, Any]:
        task = self._tasks[task_id]
        task["status"] = "in_progress"
        return self._view(task)

    def record_attempt(self, task_id: str, attempt: int) -> dict[str, Any]:
        task = self._tasks[task_id]
        task["attempt"] = attempt
        return self._view(task)

    def mark_complete(self, task_id: str, commit: str) -> dict[str, Any]:
        task = self._tasks[task_id]
        task["status"] = "complete"
        task["commit"] = commit
        return self._view(task)

    def mark_failed(self, task_id: str, reason: str) -> dict[str, Any]:
        task = self._tasks[task_id]
        task["status"] = "failed"
        return self._view(task)

    def release(self, task_id: str) -> dict[str, Any]:
        task = self._tasks[task_id]
        task["status"] = "pending"
        task["worker"] = None
        self._pending.setdefault(task["affinity"], deque()).appendleft(task_id)
        return self._view(task)


def app_env(recorded: dict[str, str | None] | None, expand: Any) -> dict[str, str] | None:
    """The environment the application passes for a call recorded with ``recorded``
    (an environment of its own: the delta lists every variable, and ``"*"``)."""
    if recorded is None:
        return None
    return {
        k: FAKE_GH_TOKEN if v == "[REDACTED]" else expand(v)
        for k, v in recorded.items()
        if v is not None
    }


def _today(request: Any, expand: Any) -> Any:
    """The agent request as the application builds it: with today's worktree path."""
    if isinstance(request, dict) and "worktree" in request:
        return {**request, "worktree": expand(request["worktree"])}
    return request


def _serve(
    entry: Any, runner: Any, agent: Any, store: Any, expand: Any, made: dict[str, int]
) -> str:
    """Make the call the application made for ``entry``; return its kind."""
    if isinstance(entry, ProcessCall):
        made["process"] += 1
        try:
            result = runner.run(
                entry.argv,
                cwd=expand(entry.cwd) if entry.cwd is not None else None,
                env=app_env(entry.env, expand),
                text=entry.text,
            )
            len(result.stdout)  # the application reads its output: a digest fails here
        except TruncatedPayloadError:
            # Over the inline limit with no sidecar: only a digest was kept. The call was
            # still aligned and served; the application cannot read its output.
            made["truncated"] += 1
        else:
            if result.returncode and not result.stderr:
                raise AssertionError(f"seq {entry.seq}: failed without stderr")
        return "process"
    if isinstance(entry, AgentTurn):
        made["agent"] += 1
        agent.execute(*[_today(a, expand) for a in entry.args], **entry.kwargs)
        return "agent"
    if isinstance(entry, StoreMutation):
        made["store"] += 1
        getattr(store, entry.operation)(*entry.args, **entry.kwargs)
        return "store"
    raise TypeError(f"seq {entry.seq}: the bench application makes no {type(entry).__name__}")


def replay_session(
    source: str | os.PathLike[str] | sessiontape.Recording,
    *,
    roots: dict[str, str],
    patch_time: bool = True,
    phases: dict[str, int] | None = None,
    kinds_ns: dict[str, int] | None = None,
    update: bool = False,
    today: sessiontape.Recording | None = None,
) -> tuple[sessiontape.ReplayReport, dict[str, int]]:
    """Replay a generated tape through the boundaries, as the application would.

    Walks the recorded calls in seq order (each worker's calls go through its own FIFO
    queue, and store calls must come in recorded global order), each inside its worker's
    own context (where ``sessiontape.worker(id)`` was entered, as a worker thread would at
    the start of its loop), and makes each call the application made: the process call
    with today's paths and real token, the agent turn with the same request, the store
    mutation on the seeded store.
    Calls recorded inside an agent turn (its ``claude`` process) are the agent's business
    and not made. Returns the report and how many calls of each kind were made; fills
    ``phases`` with the nanoseconds spent loading, indexing, serving and finishing, and
    ``kinds_ns`` (which times every call, so costs a little) with serving time per kind.
    ``today`` is the tape whose calls today's code makes (default: the one replayed), for
    a replay whose tape departs from today's code (update mode).
    """
    made = {"process": 0, "agent": 0, "store": 0, "truncated": 0}
    started = now_ns()
    if not isinstance(source, sessiontape.Recording):
        # What sessiontape.replay(path) does, called apart to time the load alone.
        source = load_for_replay(source)
    loaded = now_ns()
    with sessiontape.replay(source, roots=roots, patch_time=patch_time, update=update) as tape:
        indexed = now_ns()
        recording = tape.recording
        runner = tape.process_runner()
        agent = tape.agent(result_type=StepResult)
        store = tape.store(mutations=BenchStore.MUTATIONS, factory=BenchStore, name=STORE_NAME)
        # The application holds its paths (the repository, each task's worktree) rather
        # than rebuilding them per call: remember each one once expanded.
        expand = functools.lru_cache(maxsize=None)(tape.roots.expand)
        # One context per worker, as each worker thread has its own: it enters
        # sessiontape.worker(id) once, then every call of that worker runs inside it.
        contexts: dict[str, contextvars.Context] = {}
        scopes: list[tuple[contextvars.Context, Any]] = []
        try:
            for entry in (today if today is not None else recording).calls:
                if entry.parent is not None:
                    continue
                context = contexts.get(entry.worker)
                if context is None:
                    context = contexts[entry.worker] = contextvars.Context()
                    scope = sessiontape.worker(entry.worker)
                    context.run(scope.__enter__)
                    scopes.append((context, scope))
                if kinds_ns is None:
                    context.run(_serve, entry, runner, agent, store, expand, made)
                else:
                    began = now_ns()
                    kind = context.run(_serve, entry, runner, agent, store, expand, made)
                    kinds_ns[kind] = kinds_ns.get(kind, 0) + now_ns() - began
        finally:
            for context, scope in scopes:
                context.run(scope.__exit__, None, None, None)
        served = now_ns()
        end = recording.end
        report = tape.finish(outcome=end.outcome if end is not None else None)
    if phases is not None:
        phases.update(
            load_ns=loaded - started,
            index_ns=indexed - loaded,
            serve_ns=served - indexed,
            finish_ns=now_ns() - served,
        )
    return report, made
