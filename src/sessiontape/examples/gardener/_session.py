"""Wiring the gardener to a tape: one function that runs in record and in replay mode.

:func:`run_session` is the only place that knows about sessiontape. It takes every
boundary from the tape (``process_runner()``, ``agent()``, ``store()``, ``clock``), so the
same code records a live run and replays it: on replay git is served from the cassette,
the agent is never asked, the store is rebuilt from the recorded snapshot and sleeps
return at once.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from sessiontape import Mode, ProcessRunner, ReplayTape, Tape, __version__, record, replay

from ._agent import ScriptedAgent, StepResult
from ._orchestrator import Gardener, RunSummary, init_repository
from ._scenarios import Scenario, get_scenario
from ._store import MUTATIONS, BacklogStore

if TYPE_CHECKING:
    from sessiontape import Recording, ReplayReport

__all__ = [
    "DEFAULT_SCENARIO",
    "DEFAULT_WORKERS",
    "ENTRYPOINT",
    "WORK_ROOT",
    "SessionResult",
    "record_scenario",
    "replay_hook",
    "replay_scenario",
    "run_gardener",
    "run_session",
    "session_config",
]

#: The ``entrypoint`` recorded in a gardener cassette's header.
ENTRYPOINT: Final = "gardener"
DEFAULT_SCENARIO: Final = "full"
DEFAULT_WORKERS: Final = 3
#: The placeholder root the work directory is recorded under (``{work}/repo``).
WORK_ROOT: Final = "work"


@dataclass(frozen=True)
class SessionResult:
    """What :func:`run_session` returns: the run's summary, and on replay the report."""

    summary: RunSummary
    report: ReplayReport | None = None


def session_config(
    scenario: str = DEFAULT_SCENARIO, workers: int = DEFAULT_WORKERS
) -> dict[str, Any]:
    """The ``config`` a gardener recording stores, from which a replay reads its settings."""
    get_scenario(scenario)  # refuse an unknown name before anything is recorded
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers!r}")
    return {"scenario": scenario, "workers": workers}


def _recorded_config(tape: Tape) -> Mapping[str, Any]:
    config = tape.recording.header.config if isinstance(tape, ReplayTape) else None
    if not isinstance(config, Mapping) or "scenario" not in config or "workers" not in config:
        raise ValueError(
            f"the cassette's config is {config!r}, not a gardener config; record it with "
            "sessiontape.examples.gardener.record_scenario(), or pass scenario= and workers= "
            "to run_session()"
        )
    return config


def run_session(
    tape: Tape,
    workdir: str | os.PathLike[str],
    *,
    scenario: str | None = None,
    workers: int | None = None,
) -> SessionResult:
    """Run a gardener scenario with every boundary taken from ``tape``; finish the tape.

    ``workdir`` gets the repository (``repo/``), the worktrees (``worktrees/``) and the
    backlog (``backlog.db``); it should be empty. ``scenario`` and ``workers`` default to
    the recording's config on replay, and to ``"full"`` on 3 workers otherwise.

    A crash (:class:`GardenerCrash`, or any other error) propagates without finishing the
    tape, so leaving the tape's ``with`` block records it (or, on replay, compares it with
    the recorded one).
    """
    defaults: Mapping[str, Any] = session_config()
    if tape.mode is Mode.REPLAY and (scenario is None or workers is None):
        defaults = _recorded_config(tape)
    spec = get_scenario(scenario if scenario is not None else str(defaults["scenario"]))
    count = workers if workers is not None else int(defaults["workers"])
    summary = run_gardener(tape, workdir, spec, count)
    report = tape.finish(outcome=dataclasses.asdict(summary))
    return SessionResult(summary, report)


def run_gardener(
    tape: Tape,
    workdir: str | os.PathLike[str],
    spec: Scenario,
    workers: int,
    *,
    runner: ProcessRunner | None = None,
) -> RunSummary:
    """Run ``spec`` on ``workers`` workers with every boundary taken from ``tape``, and
    return the summary; the tape is not finished (the caller says what the outcome is).

    The part of :func:`run_session` a variant of the gardener reuses: ``spec`` may be a
    :class:`Scenario` of its own, and ``runner`` (default: ``tape.process_runner()``) a
    wrapper around the tape's runner that changes what the gardener runs.
    """
    # Absolute (not resolved: the tape's roots name the directory as the caller does).
    work = Path(os.path.abspath(workdir))
    work.mkdir(parents=True, exist_ok=True)
    db_path = work / "backlog.db"

    if runner is None:
        runner = tape.process_runner()
    # Repository set-up goes through the runner too: on replay it is served from the tape
    # like every other git call, and the worktree paths the workers use line up.
    init_repository(runner, work / "repo", spec.files)
    live = (
        BacklogStore.create(db_path, spec.backlog(workers))
        if tape.mode is not Mode.REPLAY
        else None
    )
    store = tape.store(
        live,
        mutations=MUTATIONS,
        snapshot=BacklogStore.snapshot,
        factory=lambda snapshot: BacklogStore.from_snapshot(db_path, snapshot),
    )
    gardener = Gardener(
        runner=runner,
        # The agent runs its model process through the tape's runner, as a real adapter
        # would: recorded inside the agent turn, not expected on replay.
        agent=tape.agent(ScriptedAgent(spec.script, runner), result_type=StepResult),
        store=store,
        clock=tape.clock,
        workdir=work,
        workers=workers,
    )
    try:
        return gardener.run()
    finally:
        store.close()


def record_scenario(
    cassette: str | os.PathLike[str],
    workdir: str | os.PathLike[str],
    scenario: str = DEFAULT_SCENARIO,
    workers: int = DEFAULT_WORKERS,
) -> RunSummary:
    """Run ``scenario`` live in ``workdir`` (real git, scripted agent) and record it.

    The cassette's header config holds ``scenario`` and ``workers``, and ``workdir`` is
    recorded as the ``{work}`` placeholder, so :func:`replay_scenario` can replay it in
    any other directory. A crashing scenario raises after the crash is recorded.
    """
    with record(
        cassette,
        config=session_config(scenario, workers),
        app_version=__version__,
        entrypoint=ENTRYPOINT,
        roots={WORK_ROOT: os.path.abspath(workdir)},
    ) as tape:
        return run_session(tape, workdir, scenario=scenario, workers=workers).summary


def replay_scenario(
    cassette: str | os.PathLike[str],
    workdir: str | os.PathLike[str],
    *,
    strict: bool = False,
) -> ReplayReport:
    """Replay a gardener cassette in ``workdir`` and return the replay report.

    The scenario and worker count come from the cassette's config. No git, agent or real
    sleep is involved; the backlog is rebuilt from the recorded snapshot and its
    mutations are checked against the tape.
    """
    with replay(cassette, roots={WORK_ROOT: os.path.abspath(workdir)}, strict=strict) as tape:
        # A crash that reproduces the recorded one is swallowed by the tape (and the
        # report says so); anything else propagates.
        run_session(tape, workdir)
    if tape.report is None:  # pragma: no cover - close() always builds the report
        raise RuntimeError(f"replaying {os.fspath(cassette)!r} produced no report")
    return tape.report


def replay_hook(tape: ReplayTape, recording: Recording) -> bool | None:
    """A ``sessiontape_replay`` hook for gardener cassettes; ``None`` for any other.

    Replays the cassette in a fresh temporary work directory (named as the ``{work}``
    root, removed afterwards), so ``pytest cassettes/`` needs nothing but this in
    ``conftest.py``::

        from sessiontape.examples.gardener import replay_hook as sessiontape_replay

    A project with cassettes of its own calls it first and handles what it declines::

        def sessiontape_replay(tape, recording):
            handled = replay_hook(tape, recording)
            return my_app(tape) if handled is None else handled
    """
    if recording.header.entrypoint != ENTRYPOINT:
        return None
    workdir = Path(tempfile.mkdtemp(prefix="gardener-replay-"))
    try:
        tape.set_roots({WORK_ROOT: str(workdir)})
        run_session(tape, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return True
