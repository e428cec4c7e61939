"""Plant a secret in every place a recording writes, through the real API.

:func:`record_planted` records one session in which a fresh instance of one secret shape
sits in each place: a real subprocess (argv, env, stdin, its stdout and stderr, its cwd),
a path root of the session (a directory name the header names),
a program that cannot be started (the spawn error), an agent (request, result, error), a
store (arguments, result, error, snapshot), a user boundary (arguments, result), the
config, the outcome, the entrypoint, and an exception escaping the session. It returns
which cores were planted where, so a leak can be told by place and kind.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
from pathlib import Path
from typing import Any

import sessiontape

from ._secrets import Maker

PLACES = (
    "argv", "env", "stdin", "stdout", "stderr", "cwd", "spawn error", "agent request",
    "agent result", "agent error", "store arguments", "store result", "store error",
    "store snapshot", "boundary arguments", "boundary result", "config", "outcome",
    "entrypoint", "session error", "root",
)  # fmt: skip

# The child prints two secrets it is given hex-encoded (so argv holds no secret of theirs).
CHILD = (
    "import sys; sys.stdin.read(); "
    "sys.stdout.write(bytes.fromhex(sys.argv[1]).decode()); "
    "sys.stderr.write(bytes.fromhex(sys.argv[2]).decode())"
)


class Agent:
    """An agent whose result and error hold secrets."""

    def __init__(self, result: str, error: str) -> None:
        self.result, self.error = result, error

    def execute(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("fail"):
            raise RuntimeError(f"the model refused: {self.error}")
        return {"answer": self.result, "usage": {"input_tokens": 3}}


class Store:
    """A store whose snapshot, result and error hold secrets."""

    def __init__(self, snapshot: str, result: str) -> None:
        self.items = [{"id": "t1", "note": snapshot}]
        self.result = result

    def snapshot(self) -> list[dict[str, str]]:
        return list(self.items)

    def update(self, task: str, note: str) -> dict[str, str]:
        return {"id": task, "stored": self.result}

    def fail(self, why: str) -> None:
        raise ValueError(f"cannot update: {why}")


class Http:
    """A user boundary whose answers hold secrets."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def get(self, url: str, body: str) -> str:
        return self.answer


def record_planted(directory: Path, make: Maker, seed: int) -> tuple[Path, dict[str, list[str]]]:
    """Record a session with a fresh secret of ``make`` in every place; see the module."""
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    planted: dict[str, list[str]] = {}
    for place in PLACES:
        texts[place], planted[place] = make(rng)
    path = directory / "planted.jsonl"
    # Joined as text, not by pathlib, which would fold the // of a URL into one slash; a
    # PEM key is longer than a file name may be, so each of its lines is a directory.
    name = texts["cwd"].lstrip("/")
    cwd = os.path.join(directory, "cwd", name.replace("\n", "\n/") if len(name) > 200 else name)
    os.makedirs(cwd)
    # A path root of the session (the header keeps them): a directory name holding it.
    # A root is kept normalised, which folds the // of a URL into one slash: a URL's
    # password is then no URL's any more, so a text with // is not planted there.
    root_name = texts["root"].lstrip("/")
    if "//" in root_name:
        root_name, planted["root"] = "plain", []
    root = os.path.join(
        directory, "root", root_name.replace("\n", "\n/") if len(root_name) > 200 else root_name
    )
    os.makedirs(root)
    agent = Agent(texts["agent result"], texts["agent error"])
    store = Store(texts["store snapshot"], texts["store result"])
    tape = sessiontape.record(
        path,
        config={"note": texts["config"]},
        entrypoint=f"app --note {texts['entrypoint']}",
        roots={"work": root},
    )
    try:
        if True:
            runner = tape.process_runner()
            result = runner.run(
                [sys.executable, "-c", CHILD, texts["stdout"].encode().hex(),
                 texts["stderr"].encode().hex(), texts["argv"]],
                cwd=cwd,
                env={"NOTE": texts["env"]},
                input=texts["stdin"],
                text=True,
            )  # fmt: skip
            assert result.stdout == texts["stdout"]
            with contextlib.suppress(OSError):
                runner.run([f"/nonexistent/{texts['spawn error']}"])
            wrapped = tape.agent(agent)
            wrapped.execute({"prompt": texts["agent request"]})
            with contextlib.suppress(RuntimeError):
                wrapped.execute({"fail": True})
            wrapped_store = tape.store(store, mutations=["update", "fail"], snapshot=store.snapshot)
            wrapped_store.update("t1", texts["store arguments"])
            with contextlib.suppress(ValueError):
                wrapped_store.fail(texts["store error"])
            http = tape.boundary("http", Http(texts["boundary result"]), methods=["get"])
            http.get("/v1/items", texts["boundary arguments"])
            try:
                raise RuntimeError(f"the session failed: {texts['session error']}")
            except RuntimeError as exc:
                tape.record_error(exc)  # type: ignore[attr-defined]
            tape.finish(outcome={"summary": texts["outcome"]})
    finally:
        tape.close()
    return path, planted
