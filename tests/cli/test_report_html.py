"""``sessiontape report``: the self-contained HTML page with swimlanes and mismatches."""

from __future__ import annotations

import html
import json
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import sessiontape
from sessiontape.cli import _report_html

if TYPE_CHECKING:
    from .conftest import App, Cli, Clock, Recorder

XSS = "<script>alert(1)</script>"


@pytest.fixture
def hostile(record_session: Recorder) -> Path:
    """A tape whose recorded output is markup."""
    return record_session(table={"git merge task/t1": (0, f"{XSS}\n", 2)})


def _page_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script id="st-data" type="application/json">(.*?)</script>', page)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_report_draws_one_swimlane_per_worker_and_escapes_user_data(
    cli: Cli, hostile: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run.html"
    result = cli("report", hostile, "-o", out)
    assert result.code == 0
    assert result.lines == [f"wrote {out}: 15 entries in 3 swimlanes."]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    page = out.read_text()
    lanes = re.findall(r'<div class="lane" data-worker="([^"]*)">', page)
    assert lanes == ["main", "worker-1", "worker-2"]
    # The markup in the payload never reaches the page as markup.
    assert "<script>alert" not in page
    assert page.count("<script") == 2  # the data block and the page's own script
    data = _page_data(page)
    merge = next(e for e in data["entries"] if e["seq"] == 6)
    assert merge["data"]["stdout"] == f"{XSS}\n"
    assert (merge["worker"], merge["depth"], merge["color"]) == ("worker-1", 0, "process")
    assert (merge["start"], merge["dur"]) == (13_000_000, 2_000_000)
    nested = next(e for e in data["entries"] if e["seq"] == 5)
    assert (nested["parent"], nested["depth"]) == (4, 1)
    assert next(e for e in data["entries"] if e["seq"] == 4)["children"] == [5]
    assert data["duration"] == 33_000_000
    assert not re.search(r"https?://", page)  # nothing to fetch


def test_report_marks_the_mismatches_of_a_replay(
    cli: Cli, cassette: Path, tmp_path: Path, clock: Clock, app: App
) -> None:
    with sessiontape.replay(cassette) as tape:
        app(tape, clock, plan=[("worker-1", "t1"), ("worker-2", "t3")])
        report = tape.finish()
    assert report.mismatches, "the replay was meant to diverge"
    receipt = tmp_path / "replay.json"
    receipt.write_bytes(report.to_json())
    out = tmp_path / "run.html"
    result = cli("report", cassette, "--replay-report", receipt, "-o", out)
    assert result.code == 0
    marked = [m for m in report.mismatches if m.seq is not None]
    assert result.lines == [
        f"wrote {out}: 15 entries in 3 swimlanes, {len(marked)} mismatches marked."
    ]
    page = out.read_text()
    first = report.mismatches[0]
    assert f"<b>{first.kind.value}</b> at seq {first.seq}" in page
    assert html.escape(first.message) in page
    data = _page_data(page)
    flagged = {e["seq"]: e["mismatch"] for e in data["entries"] if e["mismatch"]}
    assert set(flagged) == {m.seq for m in marked}
    assert flagged[first.seq][0] == f"{first.kind.value}: {first.message}"


def test_report_refuses_a_replay_report_of_another_run(
    cli: Cli, record_session: Recorder, tmp_path: Path, clock: Clock, app: App
) -> None:
    a, b = record_session("a.jsonl"), record_session("b.jsonl")
    with sessiontape.replay(a) as tape:
        report = tape.finish(outcome=app(tape, clock))
    receipt = tmp_path / "replay.json"
    receipt.write_bytes(report.to_json())
    result = cli("report", b, "--replay-report", receipt, "-o", tmp_path / "x.html")
    assert result.code == 2
    run_a, run_b = sessiontape.load(a).header.run_id, sessiontape.load(b).header.run_id
    assert result.err == (
        f"sessiontape: error: the replay report {receipt} is of run {run_a}, the cassette {b} "
        f"of run {run_b}; pass the report of a replay of this cassette.\n"
    )
    receipt.write_text("[1, 2]")
    garbage = cli("report", b, "--replay-report", receipt, "-o", tmp_path / "x.html")
    assert garbage.code == 2
    assert garbage.err.startswith(
        f"sessiontape: error: {receipt} is not a replay report written by ReplayReport.to_json() ("
    )
    assert not (tmp_path / "x.html").exists()


def test_report_suggests_a_slice_for_a_big_tape(
    cli: Cli, cassette: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_report_html, "BIG_PAGE", 10)
    result = cli("report", cassette, "-o", tmp_path / "run.html")
    assert result.code == 0
    assert result.lines[1] == (
        "note: browsers draw more than 10 boxes slowly; cut a worker or a time window out "
        "with 'sessiontape slice' for a quicker page."
    )
