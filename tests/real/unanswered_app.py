"""Small programs that make a call the tape has no answer for, on every path one can take.

``UNANSWERED_MODE`` picks the program; ``UNANSWERED_CHANGES=new`` (or ``changes``) makes
today's code add its new call:

- ``thread``: two worker threads run ``echo`` through stdlib ``subprocess.run(check=True,
  capture_output=True)`` under ``patch_subprocess()``; today ``worker-2`` runs one more;
- ``async``: two asyncio tasks run ``echo`` through ``asyncio.create_subprocess_exec``;
  today ``worker-1`` runs one more;
- ``boundary``: two worker threads ask a user-defined substitute boundary (``weather``);
  today each asks once more;
- ``agent``: the main thread asks an agent; today it asks once more;
- ``main``: one thread, no worker: the new call's error leaves the program.

Its source is copied into ``pytester`` projects, so it imports nothing from the suite.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from collections.abc import Collection
from typing import Any

import sessiontape

ENTRYPOINT = "unanswered-app"


class Weather:
    """A user boundary: the outside world, answered from the tape on replay."""

    def today(self, city: str) -> str:
        return f"sunny in {city}"


class Agent:
    def ask(self, question: str) -> str:
        return f"answer to {question}"


def _echo(*words: str) -> str:
    return subprocess.run(["echo", *words], check=True, capture_output=True, text=True).stdout


def _threads(work: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def run(name: str) -> None:
        with sessiontape.worker(name):
            out[name] = work(name)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("worker-1", "worker-2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return dict(sorted(out.items()))


async def _async_echo(*words: str) -> bytes:
    child = await asyncio.create_subprocess_exec("echo", *words, stdout=asyncio.subprocess.PIPE)
    return (await child.communicate())[0]


async def _tasks(new: bool) -> dict[str, Any]:
    async def one(name: str) -> list[bytes]:
        with sessiontape.worker(name):
            got = [await _async_echo(name)]
            if new and name == "worker-1":
                got.append(await _async_echo("more", name))
            return got

    first, second = await asyncio.gather(one("worker-1"), one("worker-2"))
    return {"worker-1": len(first), "worker-2": len(second)}


def run(tape: Any, changes: Collection[str] | None = None) -> Any:
    """Run the program ``UNANSWERED_MODE`` names on ``tape``; its outcome."""
    if changes is None:
        changes = [c for c in os.environ.get("UNANSWERED_CHANGES", "").split(",") if c]
    new = "new" in changes
    mode = os.environ["UNANSWERED_MODE"]
    if mode == "boundary":
        weather = tape.boundary("weather", Weather(), methods=["today"])

        def ask(name: str) -> list[str]:
            cities = ["Paris", "Oslo"] if new else ["Paris"]
            return [weather.today(f"{city} for {name}") for city in cities]

        return _threads(ask)
    if mode == "agent":
        agent = tape.agent(Agent(), method="ask")
        questions = ["why", "how"] if new else ["why"]
        return [agent.ask(q) for q in questions]
    with tape.patch_subprocess():
        if mode == "thread":
            return _threads(
                lambda name: [
                    _echo(name),
                    *([_echo("more", name)] if new and name == "worker-2" else []),
                ]
            )
        if mode == "async":
            return asyncio.run(_tasks(new))
        assert mode == "main", mode
        return [_echo("one"), *([_echo("two")] if new else [])]


def record(path: Any) -> Any:
    with sessiontape.record(path, entrypoint=ENTRYPOINT) as tape:
        outcome = run(tape, ())
        tape.finish(outcome)
    return outcome


def replay_hook(tape: Any, recording: Any) -> Any:
    if recording.header.entrypoint != ENTRYPOINT:
        return None
    return run(tape)


HOOK = """
from unanswered_app import replay_hook as sessiontape_replay
"""
