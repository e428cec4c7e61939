"""The Claude Agent SDK, as shipped, recorded under ``patch_subprocess()`` and replayed.

The SDK starts the ``claude`` CLI with ``anyio.open_process`` and speaks stream-json over
its stdin and stdout, beginning with a control handshake whose ``request_id`` it makes up
(``"req_1_" + os.urandom(4).hex()``). ``claude_standin.py`` plays the CLI, with messages
built from the SDK's own types. Each test records in one directory and replays in another
where no ``claude`` exists and ``PATH`` is empty, with no noise configured.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import MismatchKind

from .conftest import Spawns

sdk = pytest.importorskip("claude_agent_sdk")
anyio = pytest.importorskip("anyio")

STANDIN = Path(__file__).with_name("claude_standin.py")

Program = Callable[[Path], Awaitable[Any]]


def install_claude(work: Path) -> Path:
    """The stand-in, as an executable ``claude`` in ``work/bin``."""
    bin_dir = work / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(f"#!{sys.executable}\n{STANDIN.read_text()}")
    claude.chmod(0o755)
    return claude


def options(work: Path) -> Any:
    return sdk.ClaudeAgentOptions(cli_path=work / "bin" / "claude")


async def one_query(work: Path, prompt: str = "count the letters of sessiontape") -> list[Any]:
    return [message async for message in sdk.query(prompt=prompt, options=options(work))]


async def two_turns(work: Path, second: str = "and of replay") -> list[Any]:
    got: list[Any] = []
    async with sdk.ClaudeSDKClient(options(work)) as client:
        for prompt in ("count the letters of sessiontape", second):
            await client.query(prompt)
            got.extend([message async for message in client.receive_response()])
    return got


@dataclass
class Trip:
    recorded: Any
    replayed: Any
    report: sessiontape.ReplayReport
    spawned_on_replay: int
    exit_codes: tuple[list[int | None], list[int | None]]
    claude_on_replay: str | None


def trip(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    program: Program,
    replay_program: Program | None = None,
) -> Trip:
    """Record ``program`` in one directory, replay it (or ``replay_program``) in another
    with no ``claude`` and ``PATH`` emptied; note the exit status the SDK's process had."""
    then, now = tmp_path / "then", tmp_path / "now"
    then.mkdir()
    now.mkdir()
    install_claude(then)
    cassette = tmp_path / "tape" / "sdk.jsonl"
    processes: list[Any] = []
    real_open = anyio.open_process

    async def open_process(*args: Any, **kwargs: Any) -> Any:
        process = await real_open(*args, **kwargs)
        processes.append(process)
        return process

    monkeypatch.setattr(anyio, "open_process", open_process)
    with sessiontape.record(cassette, roots={"work": str(then)}) as tape, tape.patch_subprocess():
        recorded = asyncio.run(program(then))
    recorded_codes = [p.returncode for p in processes]
    processes.clear()
    monkeypatch.setenv("PATH", "")
    with (
        Spawns().counting() as spawned,
        sessiontape.replay(cassette, roots={"work": str(now)}) as tape,
    ):
        with tape.patch_subprocess():
            replayed = asyncio.run((replay_program or program)(now))
        report = tape.finish()
    return Trip(
        recorded,
        replayed,
        report,
        len(spawned.started),
        (recorded_codes, [p.returncode for p in processes]),
        shutil.which("claude"),
    )


def kinds(messages: list[Any]) -> list[str]:
    return [type(m).__name__ for m in messages]


TURN = ["AssistantMessage", "UserMessage", "AssistantMessage", "ResultMessage"]


def check_replayed_as_recorded(done: Trip) -> None:
    assert done.replayed == done.recorded
    assert done.spawned_on_replay == 0
    assert done.claude_on_replay is None
    # Its exit status as recorded: 0, or -15 when it took the SDK's 5 s grace to end on a
    # loaded machine and the SDK terminated it (replayed as recorded either way).
    recorded_code, replayed_code = done.exit_codes
    assert replayed_code == recorded_code
    assert recorded_code in ([0], [-15])
    assert done.report.ok, done.report.render()
    # The handshake's request id was made up today: the answer carried today's.
    (handshake,) = [c for c in done.report.correlations if c.path == "chunks[0].data"]
    assert handshake.how == "detected"
    assert handshake.served == [f"seq {handshake.seq} chunks[1]"]


def test_query_replays_as_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    done = trip(tmp_path, monkeypatch, one_query)
    assert kinds(done.recorded) == ["SystemMessage", *TURN]
    init, asked, result, _answer, end = done.recorded
    assert init.subtype == "init"
    assert isinstance(asked.content[1], sdk.ToolUseBlock)
    assert asked.content[1].input == {"command": "echo 32"}
    assert isinstance(result.content[0], sdk.ToolResultBlock)
    assert result.content[0].content == "32\n"
    assert end.result == "'count the letters of sessiontape' has 32 letters."
    check_replayed_as_recorded(done)


def test_a_conversation_of_two_turns_replays_as_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = trip(tmp_path, monkeypatch, two_turns)
    assert kinds(done.recorded) == ["SystemMessage", *TURN, *TURN]
    assert done.recorded[-1].result == "'and of replay' has 13 letters."
    check_replayed_as_recorded(done)


def test_a_changed_prompt_is_a_mismatch_on_the_user_message_not_a_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def changed(work: Path) -> list[Any]:
        return await two_turns(work, second="and of record")

    done = trip(tmp_path, monkeypatch, two_turns, changed)
    assert done.replayed == done.recorded  # the recorded answers, as for any mismatch
    assert done.spawned_on_replay == 0
    (mismatch,) = done.report.mismatches
    assert mismatch.kind is MismatchKind.ARGUMENT_MISMATCH
    assert "stdin chunk 4" in mismatch.message
    assert mismatch.mask_paths == ["process.chunks[4].data"]
    (diff,) = mismatch.diffs
    assert '"content": "and of replay"' in diff.expected
    assert '"content": "and of record"' in diff.actual
