"""The gardener: a small multi-worker orchestrator to record and replay.

Worker threads claim tasks from a SQLite backlog, run real ``git`` in a temporary
repository (worktrees, commits, merges, a conflict and its recovery), ask a scripted agent
for :class:`StepResult`\\ s (a review loop: needs-changes, then approve) and back off with
sleeps. Every one of those goes through an injected boundary, so a run records to a
cassette and replays from it::

    from sessiontape.examples import gardener

    summary = gardener.record_scenario("run.jsonl", "/tmp/work-a", scenario="full")
    report = gardener.replay_scenario("run.jsonl", "/tmp/work-b")
    assert report.ok

:func:`replay_hook` is the ``sessiontape_replay`` hook that ``pytest cassettes/`` (and
``pytest --replay URL``) hands each gardener cassette to; a ``conftest.py`` needs only::

    from sessiontape.examples.gardener import replay_hook as sessiontape_replay
"""

from __future__ import annotations

from ._agent import (
    MODEL,
    MODEL_ARGV,
    PROVIDER,
    AgentAdapter,
    ScriptedAgent,
    StepResult,
    TaskScript,
    merge_versions,
)
from ._orchestrator import (
    BASE_REF,
    GIT_CONFIG,
    Clock,
    Gardener,
    GardenerCrash,
    GitError,
    RunSummary,
    init_repository,
)
from ._scenarios import SCENARIOS, Scenario, get_scenario
from ._session import (
    DEFAULT_SCENARIO,
    DEFAULT_WORKERS,
    ENTRYPOINT,
    WORK_ROOT,
    SessionResult,
    record_scenario,
    replay_hook,
    replay_scenario,
    run_gardener,
    run_session,
    session_config,
)
from ._store import MUTATIONS, STATUSES, Backlog, BacklogError, BacklogStore

__all__ = [
    "BASE_REF",
    "DEFAULT_SCENARIO",
    "DEFAULT_WORKERS",
    "ENTRYPOINT",
    "GIT_CONFIG",
    "MODEL",
    "MODEL_ARGV",
    "MUTATIONS",
    "PROVIDER",
    "SCENARIOS",
    "STATUSES",
    "WORK_ROOT",
    "AgentAdapter",
    "Backlog",
    "BacklogError",
    "BacklogStore",
    "Clock",
    "Gardener",
    "GardenerCrash",
    "GitError",
    "RunSummary",
    "Scenario",
    "ScriptedAgent",
    "SessionResult",
    "StepResult",
    "TaskScript",
    "get_scenario",
    "init_repository",
    "merge_versions",
    "record_scenario",
    "replay_hook",
    "replay_scenario",
    "run_gardener",
    "run_session",
    "session_config",
]
