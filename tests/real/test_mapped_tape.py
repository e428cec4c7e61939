"""A real program replayed from a tape loaded for replay: read, and mapped in windows.

The program runs real ``git`` through ``subprocess`` (recorded under
``patch_subprocess()``), asks an agent and mutates a backlog; it is recorded in one
directory and replayed in another, with no real process started on replay. Each test
runs on the tape read into memory and on the tape mapped in windows far smaller than it,
so outputs and results are read back from pages already let go.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import sessiontape

from .conftest import Spawns


@pytest.fixture(params=["read", "mapped"])
def how(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    from sessiontape.cassette import _loader, _mapped

    if request.param == "mapped":
        monkeypatch.setattr(_loader, "MAP_AT", 0)
        monkeypatch.setattr(_mapped, "WINDOW", 512)
        monkeypatch.setattr(_mapped, "SERVED_WINDOW", 512)
    return str(request.param)


@dataclasses.dataclass(frozen=True)
class Step:
    state: str
    files: dict[str, str]


class Agent:
    def execute(self, request: dict[str, Any]) -> Step:
        return Step("edited", {f"{request['task']}.py": "x = 1\n" * 50})


class Backlog:
    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.tasks = {t["id"]: dict(t) for t in tasks}

    def snapshot(self) -> list[dict[str, Any]]:
        return [dict(t) for t in self.tasks.values()]

    def complete(self, task_id: str) -> dict[str, Any]:
        self.tasks[task_id]["state"] = "done"
        return dict(self.tasks[task_id])


def program(tape: sessiontape.Tape, repo: Path) -> list[Any]:
    """git through subprocess, the agent, the backlog; returns everything it saw."""
    agent = tape.agent(Agent(), result_type=Step)
    backlog = tape.store(
        Backlog([{"id": f"t{i}", "state": "ready"} for i in range(6)]),
        mutations=["complete"],
        snapshot=Backlog.snapshot,
        factory=Backlog,
    )
    seen: list[Any] = []
    with tape.patch_subprocess():
        for i in range(6):
            (repo / f"t{i}.txt").write_text(f"task {i}\n" * 40)
            subprocess.run(["git", "add", f"t{i}.txt"], cwd=repo, check=True)
            listed = subprocess.run(
                ["git", "ls-files", "--stage"], cwd=repo, capture_output=True, text=True
            )
            seen.append(len(listed.stdout.splitlines()))
            seen.append(subprocess.check_output(["git", "status", "--short"], cwd=repo))
            seen.append(agent.execute({"task": f"t{i}", "worktree": os.fspath(repo)}))
            seen.append(backlog.complete(f"t{i}"))
    tape.finish({"seen": len(seen)})
    return seen


def _repo(where: Path) -> Path:
    repo = where / "repo"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", os.fspath(repo)], check=True)
    return repo


def test_a_recorded_run_replays_elsewhere(tmp_path: Path, how: str, spawns: Spawns) -> None:
    then = _repo(tmp_path / "then")
    path = tmp_path / "tape" / "run.jsonl"
    with sessiontape.record(path, roots={"repo": os.fspath(then)}) as tape:
        recorded = program(tape, then)
    now = tmp_path / "now" / "repo"
    now.mkdir(parents=True)
    with spawns.counting(), sessiontape.replay(path, roots={"repo": os.fspath(now)}) as tape:
        replayed = program(tape, now)
        mapped = tape.recording.mapped
    assert spawns.started == []
    assert tape.report.ok, tape.report.render()
    assert replayed == recorded
    assert isinstance(replayed[2], Step)
    assert (mapped is not None) == (how == "mapped")
    if mapped is not None:
        assert mapped.size == path.stat().st_size
