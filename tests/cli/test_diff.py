"""``sessiontape diff``: where two runs part, stream by stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import sessiontape

if TYPE_CHECKING:
    from .conftest import Cli, Recorder


def _heads(a: Path, b: Path) -> list[str]:
    ra, rb = sessiontape.load(a), sessiontape.load(b)
    return [
        f"A: {a} (run {ra.header.run_id}, {len(ra)} entries), the expected side",
        f"B: {b} (run {rb.header.run_id}, {len(rb)} entries)",
    ]


def test_identical_runs_agree(cli: Cli, record_session: Recorder) -> None:
    a, b = record_session("a.jsonl"), record_session("b.jsonl")
    result = cli("diff", a, b)
    assert result.code == 0
    assert result.lines == [
        *_heads(a, b),
        "",
        "the runs agree: 12 calls in 6 worker/boundary stream(s).",
    ]


def test_first_request_divergence_and_earlier_outcome_difference(
    cli: Cli, record_session: Recorder
) -> None:
    a = record_session("a.jsonl")
    b = record_session(
        "b.jsonl",
        plan=[("worker-1", "t1"), ("worker-2", "t3")],
        table={"git -C /srv/repo checkout -b task/t1": (128, "fatal: exists\n", 2)},
        store=None,
    )
    result = cli("diff", a, b)
    assert result.code == 1
    assert result.lines == [
        *_heads(a, b),
        "",
        "worker-1 process: the same request got a different outcome at call 1",
        "  A: seq 3 worker-1 process: git -C /srv/repo checkout -b task/t1 -> exit 0 (2.0ms)",
        "  B: seq 3 worker-1 process: git -C /srv/repo checkout -b task/t1 -> exit 128 (2.0ms)",
        "  returncode: A 0  B 128",
        "  stdout: A 'ok\\n'  B 'fatal: exists\\n'",
        "    first difference at line 1: expected 'ok\\n' got 'fatal: exists\\n'",
        "",
        "worker-2 store: the requests differ at call 1",
        "  A: seq 8 worker-2 store.claim('t2', 'worker-2') -> {'id': 't2', 'state': 'worker-2'}",
        "  B: seq 8 worker-2 store.claim('t3', 'worker-2') -> {'id': 't3', 'state': 'worker-2'}",
        "  args[0]: A 't2'  B 't3'",
        "",
        "worker-2 process: the requests differ at call 1",
        "  A: seq 9 worker-2 process: git -C /srv/repo checkout -b task/t2 -> exit 0 (2.0ms)",
        "  B: seq 9 worker-2 process: git -C /srv/repo checkout -b task/t3 -> exit 0 (2.0ms)",
        "  argv[5]: A 'task/t2'  B 'task/t3'",
        "",
        "worker-2 agent: the requests differ at call 1",
        "  A: seq 10 worker-2 agent.execute({'task': 't2'}) -> {'state': 'done', 'usage': "
        "{'...ens': 20, 'cost_usd': 0.01}} (10.0ms)",
        "  B: seq 10 worker-2 agent.execute({'task': 't3'}) -> {'state': 'done', 'usage': "
        "{'...ens': 20, 'cost_usd': 0.01}} (10.0ms)",
        "  args[0].task: A 't2'  B 't3'",
        "",
        "the runs part in 4 place(s).",
    ]


def test_extra_calls_crash_and_json(cli: Cli, record_session: Recorder) -> None:
    a = record_session("a.jsonl")
    b = record_session("b.jsonl", crash_after=1)
    result = cli("diff", a, b, "--json")
    assert result.code == 1
    document = json.loads(result.out)
    assert document["differ"] is True
    assert document["b"]["entries"] == 9
    kinds = [(d["kind"], d["worker"], d["boundary"]) for d in document["differences"]]
    assert kinds == [
        ("extra_calls", "worker-2", "store"),
        ("extra_calls", "worker-2", "process"),
        ("extra_calls", "worker-2", "agent"),
        ("crash", None, None),
    ]
    first = document["differences"][0]
    assert first["message"] == "A made 2 more call(s) where B made none"
    assert (first["a_seq"], first["b_seq"], first["b"]) == (8, None, None)
    crash = document["differences"][3]
    assert crash["a"] == "ended normally"
    assert crash["b"] == "crashed with RuntimeError: worker worker-2 lost its worktree"
    assert crash["diffs"] == [
        {
            "path": "error",
            "a": None,
            "b": {"type": "RuntimeError", "message": "worker worker-2 lost its worktree"},
            "detail": None,
        }
    ]


def test_different_session_outcomes(cli: Cli, record_session: Recorder, tmp_path: Path) -> None:
    a = record_session("a.jsonl")
    b = tmp_path / "b.jsonl"
    b.write_text(a.read_text().replace('"outcome":{"done":2}', '"outcome":{"done":1}'))
    result = cli("diff", a, b)
    assert result.code == 1
    assert result.lines[2:] == [
        "",
        "session: the sessions ended with different outcomes",
        "  A: seq 14 main session end: {'done': 2} after 33.0ms",
        "  B: seq 14 main session end: {'done': 1} after 33.0ms",
        "  outcome.done: A 2  B 1",
        "",
        "the runs part in 1 place(s).",
    ]


def test_diff_of_an_unreadable_tape(cli: Cli, cassette: Path, tmp_path: Path) -> None:
    other = tmp_path / "empty.jsonl"
    other.write_text("")
    result = cli("diff", cassette, other)
    assert result.code == 2
    assert result.err == (
        f"sessiontape: error: {other}: the cassette is empty (or starts with a blank line); "
        "a cassette starts with a session_start entry.\n"
    )


def test_json_of_runs_that_agree_exits_0(cli: Cli, record_session: Recorder) -> None:
    a = record_session("a.jsonl")
    b = record_session("b.jsonl")
    result = cli("diff", a, b, "--json")
    assert (result.code, result.err) == (0, "")
    document = json.loads(result.out)
    assert (document["differ"], document["differences"]) == (False, [])
    assert document["a"] == {
        "cassette": str(a),
        "run_id": sessiontape.load(a).header.run_id,
        "entries": 15,
    }
