"""A recorded call, and a replayed one, makes no call the interpreter audits.

A recording adds an audit hook, to see processes started outside the interception
(``boundaries/_unseen.py``), and so does a replay; an audit hook cannot be removed: from
then on every audited call (``id()`` among them) runs Python code. The recorder's and the
replayer's per-call paths must therefore make none; this hook counts what it would have
seen.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape import ProcessResult

_seen: Counter[str] = Counter()
_watching: list[bool] = [False]


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _watching[0]:
        _seen[event] += 1


sys.addaudithook(_hook)

LONG = "a line of a long output\n" * 40  # past the scrubber's memo of short texts


class Runner:
    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Any = None,
        input: Any = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        return ProcessResult(list(argv), 0, LONG if argv[-1] == "long" else "ok\n", "")

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class Agent:
    def execute(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"done": request["task"], "notes": [LONG]}


class Store:
    def put(self, key: str, value: dict[str, Any]) -> dict[str, Any]:
        return {"key": key, "value": value}


def test_recorded_calls_make_no_audited_call(tmp_path: Path) -> None:
    with sessiontape.record(tmp_path / "t.jsonl", roots={"work": str(tmp_path)}) as tape:
        run = tape.process_runner(Runner()).run
        agent = tape.agent(Agent())
        store = tape.store(Store(), mutations=["put"])
        env = {"PATH": "/usr/bin", "LANG": "C.UTF-8"}

        def calls() -> None:
            for last in ("short", "long"):
                run(["git", "log", last], cwd=str(tmp_path / "repo"), text=True)
                run(["git", "log", last], cwd=str(tmp_path), env=env, text=True)
            agent.execute({"task": "t1", "context": LONG})
            store.put("k", {"path": str(tmp_path / "x"), "body": LONG})

        calls()  # the first time: memos filled, first writes
        _seen.clear()
        _watching[0] = True
        try:
            calls()  # the same calls again: each memo's hit path
            calls_seen = dict(_seen)
        finally:
            _watching[0] = False
    assert calls_seen == {}
    recorded = sessiontape.load(tmp_path / "t.jsonl")
    assert len(recorded.calls) == 12


class Api:
    """A user's own client, recorded through ``tape.boundary``."""

    def request(self, query: dict[str, Any]) -> dict[str, Any]:
        return {"status": 200, "items": [query["page"], LONG]}


def test_replayed_calls_make_no_audited_call(tmp_path: Path) -> None:
    # A replay adds the same audit hook (it reports processes started unseen): every
    # boundary's replayed call, matched and served, makes no audited call either.
    path = tmp_path / "t.jsonl"
    child = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"]

    def wire(tape: Any, live: bool) -> Any:
        if live:
            return (
                tape.process_runner(Runner()).run,
                tape.agent(Agent()),
                tape.store(Store(), mutations=["put"]),
                tape.boundary("api", Api(), methods=["request"]),
            )
        return (
            tape.process_runner().run,
            tape.agent(),
            tape.store(Store(), mutations=["put"]),
            tape.boundary("api", methods=["request"]),
        )

    def calls(wired: Any, round_: int) -> None:
        run, agent, store, api = wired
        for last in ("short", "long"):
            run(["git", "log", last], cwd=str(tmp_path / "repo"), text=True)
        agent.execute({"task": f"t{round_}", "context": LONG})
        store.put(f"k{round_}", {"path": str(tmp_path / "x"), "body": LONG})
        api.request({"page": round_, "path": str(tmp_path / "y")})
        done = subprocess.run(child, input=f"line {round_}\n", capture_output=True, text=True)
        assert done.stdout == f"line {round_}\n"

    roots = {"work": str(tmp_path)}
    with sessiontape.record(path, roots=roots) as tape, tape.patch_subprocess():
        wired = wire(tape, live=True)
        calls(wired, 1)
        calls(wired, 2)
    with sessiontape.replay(path, roots=roots) as tape:
        with tape.patch_subprocess():
            wired = wire(tape, live=False)
            calls(wired, 1)  # the first time: memos filled
            _seen.clear()
            _watching[0] = True
            try:
                calls(wired, 2)  # each boundary's served call again
                calls_seen = dict(_seen)
            finally:
                _watching[0] = False
        report = tape.finish()
    assert calls_seen == {}
    assert report.ok, report.render()
    assert report.consumed == 12
