"""Live re-record of the async forms and of user boundaries: an ``async def`` agent, the
async process runner (real ``asyncio`` subprocesses) and a substitute boundary of the
application's own, each run for real when a selector picks it and served from the tape
otherwise; the new tape replays green with nothing real at all."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import Change

from .conftest import Spawns


class AsyncAgent:
    """An agent adapter whose turn is a coroutine; notes every request it is asked."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.asked: list[dict[str, Any]] = []

    async def execute(self, request: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(request)
        await asyncio.sleep(0)
        return {"answer": self.prefix + str(request["q"]).upper()}


async def app(tape: Any, agent_impl: AsyncAgent, word: str, *, extra: bool = False) -> Any:
    """Two asyncio tasks as named workers: each runs a real ``echo`` through the async runner
    and asks the agent about its output. With ``extra``, worker-1 runs one more process."""
    runner = tape.async_process_runner()
    agent = tape.agent(agent_impl)

    async def work(name: str) -> tuple[str, ...]:
        with sessiontape.worker(name):
            out = (await runner.run(["echo", name, word], text=True)).stdout
            more = ""
            if extra and name == "worker-1":  # a new call; the agent's request is as it was
                more = (await runner.run(["echo", "extra"], text=True)).stdout
            answer = await agent.execute({"q": out.strip()})
            return out + more, answer["answer"]

    return await asyncio.gather(work("worker-1"), work("worker-2"))


def _record(path: Path) -> Any:
    with sessiontape.record(path) as tape:
        out = asyncio.run(app(tape, AsyncAgent(), "a"))
        tape.finish()
    return out


def test_a_live_async_agent_runs_for_its_worker_only(tmp_path: Path, spawns: Spawns) -> None:
    cassette = tmp_path / "t.jsonl"
    recorded = _record(cassette)
    today = AsyncAgent(prefix="v2:")  # a changed agent: its answers tell where it ran
    with spawns.counting(), sessiontape.replay(cassette, live=["agent@worker-2"]) as tape:
        assert inspect.iscoroutinefunction(tape.agent(today).execute)
        out = asyncio.run(app(tape, today, "a"))
        report = tape.finish()
    assert report.ok, report.render()
    assert spawns.started == []  # every process came from the tape
    assert [r["q"] for r in today.asked] == ["worker-2 a"]  # only worker-2's turn ran
    assert out[0] == recorded[0]
    assert out[1] == (recorded[1][0], "v2:WORKER-2 A")
    # The turn re-recorded in its place: its answer changed, nothing added or dropped.
    assert {(r.change, r.worker) for r in report.rewrites} == {(Change.ANSWER, "worker-2")}

    new = tmp_path / "t.rerecorded.jsonl"
    later = AsyncAgent(prefix="never:")
    with Spawns().counting() as replayed, sessiontape.replay(new, strict=True) as tape:
        assert asyncio.run(app(tape, later, "a")) == out
        assert tape.finish().ok
    assert replayed.started == []
    assert later.asked == []


def test_the_live_async_runner_records_a_new_call_and_serves_the_rest(
    tmp_path: Path, spawns: Spawns
) -> None:
    cassette = tmp_path / "t.jsonl"
    _record(cassette)
    agent = AsyncAgent()
    with spawns.counting(), sessiontape.replay(cassette, live=["process@worker-1"]) as tape:
        out = asyncio.run(app(tape, agent, "a", extra=True))
        report = tape.finish()
    assert report.ok, report.render()
    assert out[0][0] == "worker-1 a\nextra\n"
    assert len(spawns.started) == 2  # worker-1's two processes, the new one included
    assert agent.asked == []  # every agent turn came from the tape
    # The new call added; the other live call asked and got what was recorded: kept.
    [added] = report.rewrites
    assert (added.change, added.worker, added.new["argv"]) == (
        Change.ADDED,
        "worker-1",
        ["echo", "extra"],
    )

    new = tmp_path / "t.rerecorded.jsonl"
    with Spawns().counting() as replayed, sessiontape.replay(new) as tape:
        assert asyncio.run(app(tape, AsyncAgent(), "a", extra=True)) == out
        assert tape.finish().ok
    assert replayed.started == []


class Forecast:
    """A boundary of the application's own: reads today's forecast from a file."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.asked = 0

    def today(self, city: str) -> str:
        self.asked += 1
        return f"{city}: {self.source.read_text(encoding='utf-8').strip()}"


def forecasts(tape: Any, forecast: Forecast) -> dict[str, str]:
    """Two workers, each asking the forecast boundary once."""
    wrapped = tape.boundary("forecast", forecast, methods=["today"])
    out = {}
    for name, city in (("worker-1", "Oslo"), ("worker-2", "Lima")):
        with sessiontape.worker(name):
            out[name] = wrapped.today(city)
    return out


@pytest.mark.parametrize(
    ("selector", "live_workers"),
    [
        ("forecast", {"worker-1", "worker-2"}),
        ("forecast@worker-2", {"worker-2"}),
        ("worker-1", {"worker-1"}),
    ],
)
def test_a_user_boundary_runs_live_when_picked(
    selector: str, live_workers: set[str], tmp_path: Path
) -> None:
    source = tmp_path / "forecast.txt"
    source.write_text("sunny\n", encoding="utf-8")
    cassette = tmp_path / "t.jsonl"
    with sessiontape.record(cassette) as tape:
        forecasts(tape, Forecast(source))
        tape.finish()
    source.write_text("rain\n", encoding="utf-8")  # the world changed since
    real = Forecast(source)
    with sessiontape.replay(cassette, live=[selector]) as tape:
        out = forecasts(tape, real)
        report = tape.finish()
    assert report.ok, report.render()
    assert real.asked == len(live_workers)
    for name, city in (("worker-1", "Oslo"), ("worker-2", "Lima")):
        assert out[name] == f"{city}: {'rain' if name in live_workers else 'sunny'}"
    new = tmp_path / "t.rerecorded.jsonl"
    gone = Forecast(tmp_path / "missing.txt")  # would raise if it were asked
    with sessiontape.replay(new, strict=True) as tape:
        assert forecasts(tape, gone) == out
        assert tape.finish().ok
    assert gone.asked == 0


def test_a_live_user_boundary_needs_the_real_object(tmp_path: Path) -> None:
    cassette = tmp_path / "t.jsonl"
    source = tmp_path / "forecast.txt"
    source.write_text("sunny\n", encoding="utf-8")
    with sessiontape.record(cassette) as tape:
        forecasts(tape, Forecast(source))
        tape.finish()
    with sessiontape.replay(cassette, live=["forecast"]) as tape:
        with pytest.raises(sessiontape.UsageError, match=r"tape.boundary\('forecast', obj"):
            tape.boundary("forecast", None, methods=["today"])
        assert not tape.finish().ok
