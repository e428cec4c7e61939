"""A stand-in for the ``claude`` CLI in stream-json mode, for the Claude Agent SDK's tests.

Its messages are built from the SDK's own types (``SystemMessage``, ``AssistantMessage``
with a ``TextBlock`` and a ``ToolUseBlock``, ``UserMessage`` with a ``ToolResultBlock``,
``ResultMessage``) and written in the CLI's wire form, one JSON object a line, which the
SDK's ``message_parser`` reads back into the same types. It answers the SDK's control
handshake as the CLI does: a ``control_request`` (``initialize``) gets a
``control_response`` carrying the same ``request_id``. Each user message is a turn: the
session's ``system``/``init`` (first turn only), an assistant message that runs the Bash
tool, the tool's result, a closing assistant message and the ``result``. It ends when its
stdin does, with status 0.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

from claude_agent_sdk.types import (
    AssistantMessage,
    ContentBlock,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

MODEL = "claude-standin-1"
VERSION = "2.1.0"


def _block(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultBlock):
        return {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": block.content,
            "is_error": block.is_error,
        }
    raise TypeError(f"the stand-in does not write {type(block).__name__}")


def wire(message: Any, session: str) -> dict[str, Any]:
    """``message`` (one of the SDK's message types) as the CLI writes it."""
    if isinstance(message, SystemMessage):
        return {"type": "system", "subtype": message.subtype, **message.data}
    common = {"parent_tool_use_id": None, "session_id": session, "uuid": str(uuid.uuid4())}
    if isinstance(message, AssistantMessage):
        content = [_block(b) for b in message.content]
        body = {"role": "assistant", "model": message.model, "content": content}
        return {"type": "assistant", "message": body, **common}
    if isinstance(message, UserMessage):
        assert isinstance(message.content, list)
        body = {"role": "user", "content": [_block(b) for b in message.content]}
        return {"type": "user", "message": body, **common}
    if isinstance(message, ResultMessage):
        return {
            "type": "result",
            "subtype": message.subtype,
            "duration_ms": message.duration_ms,
            "duration_api_ms": message.duration_api_ms,
            "is_error": message.is_error,
            "num_turns": message.num_turns,
            "session_id": message.session_id,
            "total_cost_usd": message.total_cost_usd,
            "usage": message.usage,
            "result": message.result,
        }
    raise TypeError(f"the stand-in does not write {type(message).__name__}")


def turn(prompt: str, session: str, first: bool) -> list[Any]:
    """The messages of one turn answering ``prompt``."""
    tool = f"toolu_{uuid.uuid4().hex[:20]}"
    messages: list[Any] = []
    if first:
        data = {"session_id": session, "model": MODEL, "tools": ["Bash"]}
        messages.append(SystemMessage("init", {**data, "claude_code_version": VERSION}))
    command = f"echo {len(prompt)}"
    messages += [
        AssistantMessage(
            [TextBlock(f"Counting the letters of {prompt!r}."),
             ToolUseBlock(tool, "Bash", {"command": command})],
            MODEL,
        ),
        UserMessage([ToolResultBlock(tool, f"{len(prompt)}\n", False)]),
        AssistantMessage([TextBlock(f"{prompt!r} has {len(prompt)} letters.")], MODEL),
        ResultMessage(
            subtype="success",
            duration_ms=12,
            duration_api_ms=10,
            is_error=False,
            num_turns=2,
            session_id=session,
            total_cost_usd=0.0,
            usage={"input_tokens": len(prompt), "output_tokens": 7},
            result=f"{prompt!r} has {len(prompt)} letters.",
        ),
    ]  # fmt: skip
    return messages


def _write(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def main() -> int:
    assert sys.argv[1:3] == ["--output-format", "stream-json"], sys.argv
    session = str(uuid.uuid4())
    first = True
    for line in sys.stdin:
        message = json.loads(line)
        if message["type"] == "control_request":
            request = message["request"]
            answer = {"commands": []} if request["subtype"] == "initialize" else {}
            _write({
                "type": "control_response",
                "response": {
                    "subtype": "success",
                    "request_id": message["request_id"],
                    "response": answer,
                },
            })  # fmt: skip
        elif message["type"] == "user":
            content = message["message"]["content"]
            prompt = content if isinstance(content, str) else content[0]["text"]
            for reply in turn(prompt, session, first):
                _write(wire(reply, session))
            first = False
    return 0


if __name__ == "__main__":
    sys.exit(main())
