"""``sessiontape show``: the timeline, its filters, crashed tapes, receipts, unreadable input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import sessiontape
from sessiontape import ReplayReport
from sessiontape.cli import _common

from .conftest import Terminal

if TYPE_CHECKING:
    from .conftest import App, Cli, Clock, Recorder


def _start_line(path: Path, time: str = "+0.000s", seq_width: int = 2) -> str:
    header = sessiontape.load(path).header
    return (
        f"{time}  {0:>{seq_width}}  main      MainThread  session start: run {header.run_id} of "
        f"app run (level full, recorded {header.recorded_at})"
    )


TIMELINE = [
    "+0.000s   1  main      MainThread  snapshot of store (2 item(s))",
    "+0.000s   2  worker-1  MainThread  store.claim('t1', 'worker-1') -> "
    "{'id': 't1', 'state': 'worker-1'}",
    "+0.001s   3  worker-1  MainThread  process: git -C /srv/repo checkout -b task/t1 -> "
    "exit 0 (2.0ms)",
    "+0.003s   4  worker-1  MainThread  agent.execute({'task': 't1'}) -> {'state': 'done', "
    "'usage': {'...ens': 20, 'cost_usd': 0.01}} (10.0ms)",
    "+0.006s   5  worker-1  MainThread    ↳4 process: claude -p 'work on t1' -> exit 0 (2.0ms)",
    "+0.013s   6  worker-1  MainThread  process: git merge task/t1 -> exit 0 (2.0ms)",
    "+0.015s   7  worker-1  MainThread  store.complete('t1', 'abc123') -> "
    "{'id': 't1', 'state': 'done', 'commit': 'abc123'}",
    "+0.016s   8  worker-2  MainThread  store.claim('t2', 'worker-2') -> "
    "{'id': 't2', 'state': 'worker-2'}",
    "+0.017s   9  worker-2  MainThread  process: git -C /srv/repo checkout -b task/t2 -> "
    "exit 0 (2.0ms)",
    "+0.019s  10  worker-2  MainThread  agent.execute({'task': 't2'}) -> {'state': 'done', "
    "'usage': {'...ens': 20, 'cost_usd': 0.01}} (10.0ms)",
    "+0.022s  11  worker-2  MainThread    ↳10 process: claude -p 'work on t2' -> exit 0 (2.0ms)",
    "+0.029s  12  worker-2  MainThread  process: git merge task/t2 -> exit 0 (2.0ms)",
    "+0.031s  13  worker-2  MainThread  store.complete('t2', 'abc123') -> "
    "{'id': 't2', 'state': 'done', 'commit': 'abc123'}",
    "+0.033s  14  main      MainThread  session end: {'done': 2} after 33.0ms",
]


def test_show_prints_one_line_per_entry_with_the_five_ws(cli: Cli, cassette: Path) -> None:
    result = cli("show", cassette)
    assert result.code == 0
    assert result.err == ""
    assert result.lines == [_start_line(cassette), *TIMELINE]


def test_show_filters_by_worker_and_kind(cli: Cli, cassette: Path) -> None:
    result = cli("show", cassette, "--worker", "worker-2", "--kind", "process")
    assert result.code == 0
    assert result.lines == [
        "+0.017s   9  worker-2  MainThread  process: git -C /srv/repo checkout -b task/t2 -> "
        "exit 0 (2.0ms)",
        "+0.022s  11  worker-2  MainThread    ↳10 process: claude -p 'work on t2' -> "
        "exit 0 (2.0ms)",
        "+0.029s  12  worker-2  MainThread  process: git merge task/t2 -> exit 0 (2.0ms)",
    ]


def test_show_filters_by_boundary_and_seq_range(cli: Cli, cassette: Path) -> None:
    result = cli("show", cassette, "--boundary", "agent", "--boundary", "store",
                 "--from-seq", "3", "--to-seq", "8")  # fmt: skip
    assert result.code == 0
    assert [line.split()[1] for line in result.lines] == ["4", "7", "8"]


def test_show_limit_says_how_many_entries_are_left(cli: Cli, cassette: Path) -> None:
    result = cli("show", cassette, "--from-seq", "1", "--limit", "2")
    assert result.code == 0
    # Columns are as wide as the lines shown need.
    assert result.lines == [
        "+0.000s  1  main      MainThread  snapshot of store (2 item(s))",
        "+0.000s  2  worker-1  MainThread  store.claim('t1', 'worker-1') -> "
        "{'id': 't1', 'state': 'worker-1'}",
        "... 12 more entries; raise --limit to see them.",
    ]


def test_show_says_when_no_entry_matches(cli: Cli, cassette: Path) -> None:
    result = cli("show", cassette, "--worker", "worker-9")
    assert result.code == 0
    assert result.lines == [
        "no entry matches the filters (workers with calls in this tape: worker-1, worker-2)."
    ]


def test_show_marks_a_crashed_tape_and_its_open_calls(cli: Cli, record_session: Recorder) -> None:
    path = record_session(crash_after=1)
    # Simulate a call still open at the crash: drop the agent turn's line (written last).
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(line for line in lines if '"seq":4,' not in line))
    result = cli("show", path, "--from-seq", "5")
    assert result.code == 0
    assert result.lines == [
        "+0.006s  5  worker-1  MainThread  ↳4 process: claude -p 'work on t1' -> exit 0 (2.0ms)",
        "+0.013s  6  worker-1  MainThread  process: git merge task/t1 -> exit 0 (2.0ms)",
        "+0.015s  7  worker-1  MainThread  store.complete('t1', 'abc123') -> "
        "{'id': 't1', 'state': 'done', 'commit': 'abc123'}",
        "+0.016s  8  main      MainThread  error: RuntimeError: worker worker-2 lost its worktree",
        "-- no session_end: the session crashed, or the tape was cut by 'sessiontape slice'; "
        "1 seq(s) missing: 4.",
    ]


def test_show_marks_a_torn_last_line(cli: Cli, cassette: Path) -> None:
    data = cassette.read_bytes()
    cassette.write_bytes(data[: data.rindex(b"\n", 0, -1) + 1] + b'{"kind":"sess')
    result = cli("show", cassette, "--from-seq", "13")
    assert result.code == 0
    assert result.lines == [
        "+0.031s  13  worker-2  MainThread  store.complete('t2', 'abc123') -> "
        "{'id': 't2', 'state': 'done', 'commit': 'abc123'}",
        "-- the last line was torn (the recorder stopped mid-write) and was skipped.",
        "-- no session_end: the session crashed, or the tape was cut by 'sessiontape slice'.",
    ]


def test_show_missing_file_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    result = cli("show", missing)
    assert result.code == 2
    assert result.out == ""
    assert result.err == (
        f"sessiontape: error: {missing}: no such cassette. Record one first (pytest "
        "--record-session, or sessiontape.record(...)), or check the path.\n"
    )


@pytest.mark.writes_invalid_tapes
def test_show_corrupt_line_names_the_line(cli: Cli, cassette: Path) -> None:
    lines = cassette.read_text().splitlines(keepends=True)
    lines[3] = "{not json\n"
    cassette.write_text("".join(lines))
    result = cli("show", cassette)
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith(f"sessiontape: error: {cassette}:4: not valid JSON (")
    assert result.err.endswith("Fix or delete the line, or re-record the cassette.\n")


def test_show_rejects_a_bad_option_value(cli: Cli, cassette: Path) -> None:
    result = cli("show", cassette, "--limit", "0")
    assert result.code == 2
    assert "argument --limit: give 1 or more" in result.err


def test_show_json_gives_the_five_ws_of_each_entry(cli: Cli, cassette: Path) -> None:
    result = cli("show", cassette, "--worker", "worker-1", "--limit", "2", "--json")
    assert (result.code, result.err) == (0, "")
    document = json.loads(result.out)
    header = sessiontape.load(cassette).header
    assert document == {
        "cassette": str(cassette),
        "run_id": header.run_id,
        "crashed": False,
        "torn": False,
        "missing_seqs": [],
        "matched": 6,
        "shown": 2,
        "notes": [],
        "entries": [
            {
                "seq": 2,
                "kind": "store_mutation",
                "boundary": "store",
                "worker": "worker-1",
                "thread": "MainThread",
                "parent": None,
                "depth": 0,
                "start_ns": 0,
                "duration_ns": 1_000_000,
                "what": "store.claim('t1', 'worker-1') -> {'id': 't1', 'state': 'worker-1'}",
                "error_class": None,
                "mismatches": [],
            },
            {
                "seq": 3,
                "kind": "process",
                "boundary": "process",
                "worker": "worker-1",
                "thread": "MainThread",
                "parent": None,
                "depth": 0,
                "start_ns": 1_000_000,
                "duration_ns": 2_000_000,
                "what": "process: git -C /srv/repo checkout -b task/t1 -> exit 0 (2.0ms)",
                "error_class": None,
                "mismatches": [],
            },
        ],
    }


def test_show_json_nests_a_call_under_its_parent(cli: Cli, cassette: Path) -> None:
    result = cli("show", cassette, "--from-seq", "5", "--to-seq", "5", "--json")
    [entry] = json.loads(result.out)["entries"]
    assert (entry["seq"], entry["parent"], entry["depth"]) == (5, 4, 1)


def test_show_json_of_a_crashed_tape(cli: Cli, record_session: Recorder) -> None:
    path = record_session(crash_after=1)
    document = json.loads(cli("show", path, "--json", "--kind", "error").out)
    assert (document["crashed"], document["matched"]) == (True, 1)
    assert document["notes"] == [
        "no session_end: the session crashed, or the tape was cut by 'sessiontape slice'."
    ]


def test_show_progress_on_a_terminal_leaves_stdout_alone(
    cli: Cli, cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_common, "PROGRESS_THRESHOLD", 10)
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    result = cli("show", cassette)
    assert result.lines == [_start_line(cassette), *TIMELINE]
    assert terminal.getvalue().startswith("\rshow: 0/15 entries (0%)\rshow: 1/15 entries (6%)")
    assert terminal.getvalue().endswith("\r\x1b[K")


def _diverged_receipt(cassette: Path, clock: Clock, app: App, receipt: Path) -> ReplayReport:
    """Replay ``cassette`` with worker-2 on another task; write the report to ``receipt``."""
    with sessiontape.replay(cassette) as tape:
        app(tape, clock, plan=[("worker-1", "t1"), ("worker-2", "t3")])
        report = tape.finish()
    receipt.write_bytes(report.to_json())
    return report


def test_show_marks_the_mismatches_of_a_receipt(
    cli: Cli, cassette: Path, clock: Clock, app: App, tmp_path: Path
) -> None:
    receipt = tmp_path / "replay.json"
    report = _diverged_receipt(cassette, clock, app, receipt)
    result = cli("show", cassette, "--receipt", receipt, "--from-seq", "7", "--to-seq", "10")
    assert result.code == 0
    assert result.lines[:4] == [
        "+0.015s   7  worker-1  MainThread  store.complete('t1', 'abc123') -> "
        "{'id': 't1', 'state': 'done', 'commit': 'abc123'}",
        "+0.016s   8  worker-2  MainThread  store.claim('t2', 'worker-2') -> "
        "{'id': 't2', 'state': 'worker-2'}  ✗ argument_mismatch, store_mismatch",
        "+0.017s   9  worker-2  MainThread  process: git -C /srv/repo checkout -b task/t2 -> "
        "exit 0 (2.0ms)  ✗ argument_mismatch",
        "+0.019s  10  worker-2  MainThread  agent.execute({'task': 't2'}) -> {'state': 'done', "
        "'usage': {'...ens': 20, 'cost_usd': 0.01}} (10.0ms)  ✗ argument_mismatch",
    ]
    assert result.lines[4] == f"-- replay ({receipt}): {len(report.mismatches)} mismatches."
    assert result.lines[5:] == [
        f"--   {m.kind.value} at seq {m.seq} ({m.worker}, {m.boundary}): {m.message}"
        for m in report.mismatches
    ]


def test_show_json_carries_the_mismatches_of_a_receipt(
    cli: Cli, cassette: Path, clock: Clock, app: App, tmp_path: Path
) -> None:
    receipt = tmp_path / "replay.json"
    _diverged_receipt(cassette, clock, app, receipt)
    args = ("show", cassette, "--receipt", receipt, "--from-seq", "7", "--to-seq", "9", "--json")
    result = cli(*args)
    assert (result.code, result.err) == (0, "")
    entries = json.loads(result.out)["entries"]
    assert [(e["seq"], e["mismatches"]) for e in entries] == [
        (7, []),
        (8, ["argument_mismatch", "store_mismatch"]),
        (9, ["argument_mismatch"]),
    ]


def test_show_with_a_receipt_of_a_clean_replay(
    cli: Cli, cassette: Path, clock: Clock, app: App, tmp_path: Path
) -> None:
    with sessiontape.replay(cassette) as tape:
        report = tape.finish(outcome=app(tape, clock))
    receipt = tmp_path / "replay.json"
    receipt.write_text(json.dumps([{"nodeid": "t.py::test", **report.to_dict()}]))
    result = cli("show", cassette, "--receipt", receipt, "--from-seq", "14")
    assert result.code == 0
    assert result.lines == [
        "+0.033s  14  main  MainThread  session end: {'done': 2} after 33.0ms",
        f"-- replay ({receipt}): no mismatch.",
    ]
