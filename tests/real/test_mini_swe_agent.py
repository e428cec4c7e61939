"""mini-swe-agent, as shipped: its agent, its deterministic test model, its local environment.

The environment runs each command with ``Popen(shell=True)`` (recorded under
``patch_subprocess()``); the model is a boundary (its ``query``). Each observation the
agent sends to the model carries ``time.time()``, read between the command and the next
query: on replay it is the virtual clock's reading, matched within the recorded gap, with
no mask.
"""

from __future__ import annotations

import copy
import platform
from pathlib import Path
from typing import Any

import pytest

import sessiontape

from .conftest import Spawns

pytest.importorskip("minisweagent")
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.test_models import DeterministicModel, make_output


def run_agent(tape: Any, work: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The agent's task, start to end: its exit status and its messages."""
    model = DeterministicModel(
        outputs=[
            make_output("Write it.", [{"command": "echo hello > greeting.txt && ls"}]),
            make_output("Read it.", [{"command": "cat greeting.txt"}]),
            make_output(
                "Submit.",
                [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat greeting.txt"}],
            ),
        ]
    )
    model.query = tape.agent(model, method="query").query  # type: ignore[method-assign]
    agent = DefaultAgent(
        model,
        LocalEnvironment(cwd=str(work)),
        system_template="You write files.",
        instance_template="Task: {{task}}",
        step_limit=10,
    )
    status = agent.run("greet")
    return status, copy.deepcopy(agent.messages)


def without_times(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    stripped = copy.deepcopy(messages)
    for message in stripped:
        message.get("extra", {}).pop("timestamp", None)
    return stripped


def test_the_agent_replays_with_no_process_and_no_mask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The environment's template variables hold platform.uname(), whose processor runs
    # ``uname -p`` once per interpreter: once before, so neither run below has it.
    platform.processor()
    then, now = tmp_path / "then", tmp_path / "now"
    then.mkdir()
    now.mkdir()
    cassette = tmp_path / "agent.jsonl"
    with sessiontape.record(cassette, roots={"work": str(then)}) as tape, tape.patch_subprocess():
        recorded = run_agent(tape, then)
    monkeypatch.setenv("PATH", "")
    with (
        Spawns().counting() as spawned,
        sessiontape.replay(cassette, roots={"work": str(now)}) as tape,
    ):
        with tape.patch_subprocess():
            replayed = run_agent(tape, now)
        report = tape.finish()
    status, messages = replayed
    assert status == recorded[0] == {"exit_status": "Submitted", "submission": "hello\n"}
    assert spawned.started == []
    assert not (now / "greeting.txt").exists()  # nothing ran
    assert report.ok, report.render()
    assert without_times(messages) == without_times(recorded[1])
    # The model's answers are the recorded ones, to the timestamp; each observation
    # carries today's reading of the clock, matched with the recorded one in its gap.
    observations = [
        m for m in recorded[1] if "timestamp" in m.get("extra", {}) and m["role"] == "user"
    ]
    assert len(observations) == 2
    clock = {(c.recorded, c.today) for c in report.correlations if c.how == "clock"}
    assert {recorded for recorded, _ in clock} == {m["extra"]["timestamp"] for m in observations}
    for old, new in zip(recorded[1], messages, strict=True):
        if old["role"] == "assistant":
            assert new == old
        elif "timestamp" in old.get("extra", {}):
            assert (old["extra"]["timestamp"], new["extra"]["timestamp"]) in clock
