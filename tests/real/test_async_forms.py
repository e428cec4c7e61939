"""The async forms of the runner and agent boundaries."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import sessiontape

from .conftest import PY


class AsyncAgent:
    def __init__(self) -> None:
        self.calls = 0

    async def execute(self, prompt: str) -> dict[str, Any]:
        self.calls += 1
        await asyncio.sleep(0)
        return {"answer": prompt.upper(), "usage": {"input_tokens": 3}}


async def app(tape: sessiontape.Tape, agent: AsyncAgent) -> list[Any]:
    runner = tape.async_process_runner()
    wrapped = tape.agent(agent)
    out = await runner.run([PY, "-c", "print('async')"], text=True)
    answer = await wrapped.execute("hi")
    return [out.stdout, out.returncode, answer]


def test_async_runner_and_agent_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    recorded_agent = AsyncAgent()
    with sessiontape.record(path) as tape:
        recorded = asyncio.run(app(tape, recorded_agent))
    assert recorded == ["async\n", 0, {"answer": "HI", "usage": {"input_tokens": 3}}]
    assert recorded_agent.calls == 1
    replay_agent = AsyncAgent()
    with sessiontape.replay(path) as tape:
        replayed = asyncio.run(app(tape, replay_agent))
        report = tape.finish()
    assert replayed == recorded
    assert replay_agent.calls == 0
    assert report.ok, report.render()
    assert report.consumed == 2
