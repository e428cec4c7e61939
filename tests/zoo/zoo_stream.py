"""Zoo program 5: a stream-json conversation with a model CLI, request ids and all.

The style: a program that keeps one long conversation with ``claude``, as the Claude Agent
SDK does: it starts ``claude --output-format stream-json --input-format stream-json``
with ``subprocess.Popen`` (intercepted by ``tape.patch_subprocess()``), writes JSON lines
to its stdin and reads JSON lines from its stdout. First a control request
(``{"type": "control_request", "request_id": ..., "request": {"subtype": "initialize"}}``)
whose ``control_response`` carries the same id; then, for each task of a backlog
(``tape.store``), a ``{"type": "user", ...}`` line, answered by ``assistant`` lines and a
``result`` line. A ``result`` that says the model is rate limited makes the program back
off (``time.sleep``) and send the turn again. Each draft is written to a file.

Request ids are a counter (``req_1``, ``req_2``...); ``--ids urandom`` makes them as the
SDK does (``req_1_`` and four random bytes), the shape issue 30 is about.

The credentials: ``ANTHROPIC_API_KEY`` in the child's environment, a tracker token in an
MCP server's ``Authorization`` header in argv (``--mcp-config``), and the child's
``system``/``init`` line echoes the MCP configuration (output).

``install_world(workdir)`` makes the world: a fake ``claude`` on a temporary PATH.

Variants (``--variant``): ``default``; ``changed`` (the prompts reworded: an update);
``new_call`` (``claude --version`` first: a live re-record); ``patched`` (that call behind
``sessiontape.patched``); ``broken`` (task ``d3`` asks in another language: a failure to
shrink). One thread: no race to plant.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import sessiontape

ENTRYPOINT = "zoo-stream"
TASKS = {"d1": "the pump", "d2": "the valve", "d3": "the tank"}
BACKOFF = 0.05
API_KEY = "sk-ant-api03-" + "Zoo0Key1" * 11 + "AA"


class Conversation:
    """One ``claude`` process spoken to over stream-json."""

    def __init__(self, ids: str, token: str) -> None:
        tracker: dict[str, Any] = {"type": "http", "url": "https://tracker.example/mcp"}
        if token:
            tracker["headers"] = {"Authorization": f"Bearer {token}"}
        mcp = {"mcpServers": {"tracker": tracker}}
        argv = ["claude", "-p", "--output-format", "stream-json", "--input-format"]
        argv += ["stream-json", "--verbose", "--mcp-config", json.dumps(mcp)]
        env = {**os.environ, "ANTHROPIC_API_KEY": API_KEY}
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.ids = ids
        self.counter = 0

    @property
    def stdin(self) -> IO[str]:
        assert self.proc.stdin is not None
        return self.proc.stdin

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(message) + "\n")
        self.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("claude closed its output in the middle of a turn")
        message: dict[str, Any] = json.loads(line)
        return message

    def request_id(self) -> str:
        self.counter += 1
        if self.ids == "urandom":
            return f"req_{self.counter}_{os.urandom(4).hex()}"
        return f"req_{self.counter}"

    def control(self, subtype: str) -> dict[str, Any]:
        """Send a control request; the response that carries its id."""
        rid = self.request_id()
        self.send({"type": "control_request", "request_id": rid, "request": {"subtype": subtype}})
        while True:
            message = self.receive()
            response = message.get("response", {})
            if message["type"] == "control_response" and response.get("request_id") == rid:
                return dict(response)

    def turn(self, prompt: str) -> tuple[str, dict[str, Any]]:
        """One user turn: the assistant's text and the result line."""
        self.send({"type": "user", "message": {"role": "user", "content": prompt}})
        texts: list[str] = []
        while True:
            message = self.receive()
            if message["type"] == "assistant":
                texts += [c["text"] for c in message["message"]["content"] if c["type"] == "text"]
            elif message["type"] == "result":
                return "".join(texts), message

    def close(self) -> int:
        self.stdin.close()
        return self.proc.wait(timeout=30)


class Backlog:
    """The drafts to write. Each public method is one store call."""

    def __init__(self, tasks: dict[str, str]) -> None:
        self.tasks = dict(tasks)
        self.drafts: dict[str, str] = {}

    def snapshot(self) -> dict[str, str]:
        return dict(self.tasks)

    def next_task(self) -> str | None:
        return next((t for t in sorted(self.tasks) if t not in self.drafts), None)

    def complete(self, task: str, draft: str) -> int:
        self.drafts[task] = draft
        return len(self.drafts)


def drafts(backlog: Any, workdir: Path, variant: str, ids: str) -> dict[str, Any]:
    if variant == "new_call" or (variant == "patched" and sessiontape.patched("zoo-stream-ver")):
        subprocess.run(["claude", "--version"], capture_output=True, check=True)
    chat = Conversation(ids, os.environ.get("ZOO_TOKEN", ""))
    init = chat.control("initialize")
    retries = 0
    while (task := backlog.next_task()) is not None:
        verb = "Draft a short note about" if variant == "changed" else "Write one line about"
        if variant == "broken" and task == "d3":
            verb = "Écris une ligne sur"
        text, result = chat.turn(f"{verb} {backlog.tasks[task]}.")
        if result.get("is_error"):
            retries += 1
            time.sleep(BACKOFF * retries)  # rate limited: back off, ask again
            continue
        (workdir / f"{task}.md").write_text(text + "\n", encoding="utf-8")
        backlog.complete(task, text)
    code = chat.close()
    return {"commands": init.get("commands", []), "retries": retries, "exit": code}


def run(
    tape: sessiontape.Tape, workdir: Path, variant: str = "default", ids: str = "counter"
) -> dict[str, Any]:
    """The whole program, wired through ``tape`` (the same in every mode)."""
    live = Backlog(TASKS) if tape.mode is not sessiontape.Mode.REPLAY else None
    backlog = tape.store(
        live, mutations=["next_task", "complete"], snapshot=Backlog.snapshot, factory=Backlog
    )
    with tape.patch_subprocess():
        outcome = drafts(backlog, workdir, variant, ids)
    outcome["drafts"] = dict(backlog.drafts)
    tape.finish(outcome=outcome)
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zoo-stream", description=__doc__)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--variant", default="default")
    parser.add_argument("--ids", choices=["counter", "urandom"], default="counter")
    sessiontape.add_record_argument(parser)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = sessiontape.record_path(args)
    roots = {"work": str(args.workdir)}
    config = {"ids": args.ids}
    with sessiontape.record(path, entrypoint=ENTRYPOINT, roots=roots, config=config) as tape:
        print(run(tape, args.workdir, args.variant, args.ids))
    return 0


# -- the world the program runs in (not part of the program) ------------------------------

FAKE_CLAUDE = """
import json, os, sys
if sys.argv[1:] == ["--version"]:
    print("2.0.0 (Claude Code)")
    sys.exit(0)
if not os.environ.get("ANTHROPIC_API_KEY", "").startswith("sk-ant-"):
    sys.exit("Invalid API key")
mcp = json.loads(sys.argv[sys.argv.index("--mcp-config") + 1])
def say(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()
turns = 0
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "control_request":
        response = {"subtype": "success", "request_id": message["request_id"]}
        response["commands"] = ["/compact", "/review"]
        say({"type": "control_response", "response": response})
        continue
    turns += 1
    if turns == 1:
        say({"type": "system", "subtype": "init", "session_id": "s-1", "mcp_servers": mcp})
    prompt = message["message"]["content"]
    if turns == 2:
        say({"type": "result", "subtype": "error_during_execution", "is_error": True,
             "result": "API Error: 429 rate_limit_error", "session_id": "s-1"})
        continue
    words = prompt.rstrip(".").split()
    say({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Note: "}, {"type": "text", "text": " ".join(words[-2:])}]}})
    say({"type": "result", "subtype": "success", "is_error": False, "num_turns": turns,
         "result": " ".join(words[-2:]), "session_id": "s-1",
         "usage": {"input_tokens": len(words), "output_tokens": 2}})
"""


def install_world(workdir: Path, token: str) -> dict[str, str]:
    """A fake ``claude`` on a PATH of its own; the environment variables that find it."""
    del token  # the fake takes any tracker token
    bin_dir = workdir / "world" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "claude"
    script.write_text(f"#!{sys.executable}\n{FAKE_CLAUDE}", encoding="utf-8")
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


if __name__ == "__main__":
    sys.exit(main())
