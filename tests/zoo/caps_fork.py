"""Fork: what if the agent had answered otherwise at one step?

Each program that has a fork cell names the step to fork at (its first agent answer: an
agent turn, a user boundary's verdict, the model process of the command-line tool, or one
turn of the stream program's conversation with its model) and two answers
(:data:`ANSWERS`): one that changes the answer but not what the program asks next (every
call after the fork is answered by the tape: the replay starts no process at all), and one
that changes what it asks next (the first call after the fork the tape cannot answer:
with live calls forbidden, the fork stops there and names it).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape import AgentTurn, ProcessCall
from sessiontape.cassette import Call, CallEntry

from . import zoo_asyncio
from .harness import Cell
from .matrix import TOKEN


@dataclass(frozen=True)
class ForkPlan:
    """Where a program is forked, and with which answers."""

    #: The recorded call to fork at.
    step: Callable[[CallEntry], bool]
    #: The recorded call's answer made into one the program takes the same path with.
    same_path: Callable[[CallEntry], Any]
    #: The recorded call's answer made into one that changes what the program asks next.
    other_path: Callable[[CallEntry], Any]
    #: The argv (or its start) of the first call the tape cannot answer after it.
    stops_at: Callable[[CallEntry], list[str]]


def _model_stdout(entry: CallEntry) -> dict[str, Any]:
    assert isinstance(entry, ProcessCall)
    stdout = entry.stdout
    assert isinstance(stdout, str), stdout
    return dict(json.loads(stdout))


def _result(entry: CallEntry) -> dict[str, Any]:
    """The recorded result of an agent turn or of a user boundary's call."""
    assert isinstance(entry, (AgentTurn, Call)), entry
    return dict(entry.result)


#: What the model says when it is rate limited (a stream-json ``result`` line).
_RATE_LIMITED = (
    json.dumps({"type": "result", "subtype": "error_during_execution", "is_error": True}) + "\n"
)


def _conversation(entry: CallEntry) -> ProcessCall:
    assert isinstance(entry, ProcessCall)
    assert entry.chunks is not None
    return entry


def _said(entry: CallEntry, turn: int) -> str:
    """What a conversation's process said on stdout in ``turn`` (after the program's
    ``turn``-th write; writes with no output between them count as one)."""
    said, writes, wrote = [], 0, False
    for chunk in _conversation(entry).chunks or ():
        if chunk.stream == "stdin":
            writes += 0 if wrote else 1
        elif writes == turn and chunk.stream == "stdout":
            assert isinstance(chunk.data, str), chunk
            said.append(chunk.data)
        wrote = chunk.stream == "stdin"
    return "".join(said)


def _labelled(entry: CallEntry) -> list[str]:
    # The first issue is labelled with the label the fork gave.
    return ["gh", "issue", "edit"]


ANSWERS: dict[str, ForkPlan] = {
    # The agent's verdict: `action` is not read by the program, `message` is committed.
    "threads": ForkPlan(
        step=lambda e: isinstance(e, AgentTurn),
        same_path=lambda e: {**e.result, "action": "hold"},  # type: ignore[union-attr]
        other_path=lambda e: {**e.result, "message": "what if: another message"},  # type: ignore[union-attr]
        stops_at=lambda e: ["git", "commit", "-q", "-m", "what if: another message"],
    ),
    # The model process's answer: the same label written otherwise, or another label.
    "cli": ForkPlan(
        step=lambda e: isinstance(e, ProcessCall) and e.argv[1:2] == ["-c"],
        same_path=lambda e: {"stdout": json.dumps(_model_stdout(e), indent=2)},
        other_path=lambda e: {"stdout": json.dumps({"label": "what-if"})},
        stops_at=_labelled,
    ),
    # The planner's plan for the first job: its `timeout` bounds a child that ends well
    # within either, its `size` is the child's argument.
    "asyncio": ForkPlan(
        step=lambda e: isinstance(e, AgentTurn),
        same_path=lambda e: {**_result(e), "timeout": 30.0},
        other_path=lambda e: {**_result(e), "size": 7},
        stops_at=lambda e: [sys.executable, "-c", zoo_asyncio.CHILD, _result(e)["job"], "7"],
    ),
    # The reviewer's verdict on the first package reviewed (a user boundary's call):
    # `approved` goes into the outcome only, `summary` is committed.
    "pool": ForkPlan(
        step=lambda e: isinstance(e, Call) and e.boundary == "reviewer",
        same_path=lambda e: {**_result(e), "approved": False},
        other_path=lambda e: {**_result(e), "summary": "what if: another summary"},
        stops_at=lambda e: ["git", "commit", "-q", "-m", "what if: another summary"],
    ),
    # One turn of the conversation with the model (turn 2: the first task's prompt; turn
    # 1 is the control handshake): the draft written otherwise, or the model rate
    # limited, which makes the program send the same prompt again.
    "stream": ForkPlan(
        step=lambda e: isinstance(e, ProcessCall) and e.chunks is not None,
        same_path=lambda e: {"turn": 2, "stdout": _said(e, 2).replace("the pump", "a pump")},
        other_path=lambda e: {"turn": 2, "stdout": _RATE_LIMITED},
        stops_at=lambda e: list(_conversation(e).argv),
    ),
}


def _at(tape: Path, plan: ForkPlan) -> CallEntry:
    return next(e for e in sessiontape.load(tape).calls if plan.step(e))


def _before(tape: Path, seq: int) -> list[bytes]:
    return [
        line
        for line in tape.read_bytes().splitlines()[1:]
        if json.loads(line)["seq"] < seq and json.loads(line)["kind"] != "session_end"
    ]


def fork(cell: Cell) -> None:
    """A changed answer the program takes the same path with: a branch beside the tape,
    every later call answered by the tape (the count of them; no process started), its
    lines before the fork the original's, replaying green; an answer that changes the
    path, with live calls forbidden: a stop naming the first call the tape cannot
    answer, and nothing written."""
    plan = ANSWERS[cell.program.name]
    tape = cell.recorded()
    at = _at(tape, plan)
    recording = sessiontape.load(tape)
    hidden = {e.seq for e in recording.calls if e.parent is not None}
    substituted_after = [
        e
        for e in recording.calls
        if e.seq > at.seq and e.seq not in hidden and not isinstance(e, sessiontape.StoreMutation)
    ]
    answer = plan.same_path(at)
    forked = cell.replay_api(tape, fork=sessiontape.Fork(seq=at.seq, answer=answer))
    result = forked.tape.fork
    assert forked.report.ok, forked.report.render()
    assert result is not None
    branch = tape.with_name(f"{tape.stem}.fork-{at.seq}.jsonl")
    assert result.written == str(branch)
    # No process started (replay_api checks it): every call after the fork was the tape's.
    assert (result.from_tape, result.live, result.ran_live) == (len(substituted_after), 0, [])
    assert _before(branch, at.seq) == _before(tape, at.seq)
    header = sessiontape.load(branch).header
    assert header.forked_from is not None
    assert (header.forked_from.tape, header.forked_from.seq) == (tape.name, at.seq)
    replayed = cell.replay_api(branch)
    assert replayed.report.ok, replayed.report.render()
    assert replayed.report.consumed == replayed.report.loaded
    branch.unlink()

    stopped = cell.replay_api(
        tape, fork=sessiontape.Fork(seq=at.seq, answer=plan.other_path(at), live=False)
    )
    result = stopped.tape.fork
    assert result is not None
    assert not stopped.report.ok
    assert result.written is None
    assert not branch.exists()
    assert result.stopped is not None
    argv = plan.stops_at(at)
    assert f"process: the process call {argv!r}"[:-1] in result.stopped, result.stopped
    assert TOKEN not in result.stopped  # today's request, redacted as any report's
