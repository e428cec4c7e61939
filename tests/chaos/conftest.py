"""Chaos replay: helpers that replay the bundled gardener under a schedule.

The gardener's corpus (``cassettes/``) was recorded in one directory; each schedule
replays it in a fresh one, and counts the real processes started meanwhile (none may be).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape.examples.gardener import WORK_ROOT, run_session

from . import racy_jobs

CORPUS = Path(__file__).resolve().parents[2] / "cassettes"
CASSETTES = sorted(p.name for p in CORPUS.glob("gardener-*.jsonl"))


@contextmanager
def no_processes() -> Iterator[list[Any]]:
    """Fail if a real process starts in the block (chaos never spawns a recorded one)."""
    started: list[Any] = []
    real = subprocess._fork_exec  # type: ignore[attr-defined]

    def counted(*args: Any, **kwargs: Any) -> Any:
        started.append(args[:1])
        return real(*args, **kwargs)

    subprocess._fork_exec = counted  # type: ignore[attr-defined]
    try:
        yield started
    finally:
        subprocess._fork_exec = real  # type: ignore[attr-defined]
    assert started == [], f"a real process ran during a chaos replay: {started}"


def replay_gardener(
    cassette: Path,
    workdir: Path,
    schedule: sessiontape.Schedule,
    wire: Callable[[sessiontape.ReplayTape], None] | None = None,
) -> sessiontape.ChaosResult:
    """Replay a gardener cassette under ``schedule`` in ``workdir``; its chaos result."""
    workdir.mkdir(parents=True, exist_ok=True)
    with no_processes():
        tape = sessiontape.replay(
            cassette, roots={WORK_ROOT: os.fspath(workdir)}, schedule=schedule
        )
        with tape:
            if wire is not None:
                wire(tape)
            run_session(tape, workdir)
    assert tape.chaos is not None
    return tape.chaos


@pytest.fixture
def corpus() -> Path:
    return CORPUS


#: The project's conftest for the racy program: every race left open, to be found.
HOOK = """
import racy_jobs


def sessiontape_replay(tape, recording):
    if recording.header.entrypoint != "racy-jobs":
        return None
    # Every gap open: the races are there to be found.
    racy_jobs.run(tape, closed=(), reaper=recording.header.config["reaper"])
    return True
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    source = Path(racy_jobs.__file__).read_text(encoding="utf-8")
    pytester.makepyfile(racy_jobs=source)
    pytester.makeconftest(HOOK)
    tapes = pytester.path / "tapes"
    tapes.mkdir()
    racy_jobs.record(tapes / "jobs.jsonl", reaper=False)
    return pytester
