"""A recorded call makes no call the interpreter audits.

A recording adds an audit hook, to see processes started outside the interception
(``boundaries/_unseen.py``), and an audit hook cannot be removed: from then on every
audited call (``id()`` among them) runs Python code. The recorder's per-call path must
therefore make none; this hook counts what it would have seen.
"""

from __future__ import annotations

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
