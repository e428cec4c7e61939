"""``sessiontape slice``: a worker, task or window cut out into a fixture that replays."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import sessiontape

if TYPE_CHECKING:
    from .conftest import App, Cli, Clock, Recorder


def _seqs(path: Path) -> list[int]:
    return [entry.seq for entry in sessiontape.load(path)]


def test_slice_one_worker_replays_clean(
    cli: Cli, cassette: Path, tmp_path: Path, clock: Clock, app: App
) -> None:
    out = tmp_path / "worker-2.jsonl"
    result = cli("slice", cassette, "-o", out, "--worker", "worker-2")
    assert result.code == 0
    assert result.lines == [
        f"{cassette}: kept 8 of 15 entries (6 calls of worker-2, seqs 8-13); the session_end "
        f"was left out (a partial slice); wrote {out}."
    ]
    sliced = sessiontape.load(out)
    assert [e.seq for e in sliced] == [0, 1, 8, 9, 10, 11, 12, 13]
    assert sliced.header == sessiontape.load(cassette).header
    assert sliced.crashed
    # The fixture replays worker-2's part of the session on its own, outcome and all.
    with sessiontape.replay(out, strict=True) as tape:
        outcome = app(tape, clock, plan=[("worker-2", "t2")])
        report = tape.finish(outcome=outcome)
    assert report.ok, report.render()
    assert report.consumed == 5  # the claude call inside the agent turn is not served
    validated = cli("validate", out)
    assert validated.code == 0
    assert validated.lines[-1] == f"{out}: valid (2 warnings, 8 entries)"


def test_slice_task_keeps_what_its_worker_did_while_holding_it(
    cli: Cli, record_session: Recorder, tmp_path: Path
) -> None:
    path = record_session(plan=[("worker-1", "t1"), ("worker-2", "t10"), ("worker-1", "t2")])
    out = tmp_path / "t1.jsonl"
    result = cli("slice", path, "-o", out, "--task", "t1")
    assert result.code == 0
    # From the claim returning t1 to the completion naming it; t10 is another task.
    assert _seqs(out) == [0, 1, 2, 3, 4, 5, 6, 7]


def test_slice_by_seq_takes_whole_top_level_calls(cli: Cli, cassette: Path, tmp_path: Path) -> None:
    out = tmp_path / "nested.jsonl"
    result = cli("slice", cassette, "-o", out, "--from-seq", "5", "--to-seq", "5")
    assert result.code == 0
    # seq 5 ran inside the agent turn seq 4, which comes with it.
    assert _seqs(out) == [0, 1, 4, 5]


def test_slice_by_time_window(cli: Cli, cassette: Path, tmp_path: Path) -> None:
    out = tmp_path / "window.jsonl"
    result = cli("slice", cassette, "-o", out, "--since", "0.016", "--until", "0.020")
    assert result.code == 0
    assert _seqs(out) == [0, 1, 8, 9, 10, 11]


def test_slice_keeping_everything_keeps_the_session_end(
    cli: Cli, cassette: Path, tmp_path: Path
) -> None:
    out = tmp_path / "all.jsonl"
    result = cli("slice", cassette, "-o", out, "--worker", "worker-1", "--worker", "worker-2")
    assert result.code == 0
    assert result.lines == [
        f"{cassette}: kept 15 of 15 entries (12 calls of worker-1, worker-2, seqs 2-13); "
        f"wrote {out}."
    ]
    assert _seqs(out) == list(range(15))
    assert not sessiontape.load(out).crashed


def test_slice_keeps_the_crash_in_range(cli: Cli, record_session: Recorder, tmp_path: Path) -> None:
    path = record_session(crash_after=1)
    out = tmp_path / "crash.jsonl"
    assert cli("slice", path, "-o", out, "--from-seq", "6").code == 0
    sliced = sessiontape.load(out)
    assert [e.seq for e in sliced] == [0, 1, 6, 7, 8]
    assert sliced.error is not None
    assert sliced.error.message == "worker worker-2 lost its worktree"


def test_slice_usage_errors(cli: Cli, cassette: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    nothing = cli("slice", cassette, "-o", out)
    assert nothing.code == 2
    assert nothing.err == (
        "sessiontape: error: say what to cut out: --worker, --task, --from-seq/--to-seq or "
        "--since/--until.\n"
    )
    empty = cli("slice", cassette, "-o", out, "--worker", "worker-9")
    assert empty.code == 2
    assert empty.err == (
        f"sessiontape: error: the selection holds no call of {cassette} (workers with calls: "
        "worker-1, worker-2); widen the worker, task, seq or time options.\n"
    )
    task = cli("slice", cassette, "-o", out, "--task", "t")
    assert task.code == 2
    assert task.err == (
        f"sessiontape: error: no call in {cassette} mentions task 't' in its argv, arguments "
        "or result; check the id (it is matched as a whole word).\n"
    )
    negative = cli("slice", cassette, "-o", out, "--since", "-1")
    assert negative.code == 2
    assert "argument --since: '-1' is not 0 seconds or more" in negative.err
    assert not out.exists()
