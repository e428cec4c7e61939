"""A chaos schedule's receipt, opened by ``sessiontape report`` and ``serve``.

The receipt is the one ``pytest --replay X --sessiontape-chaos N --sessiontape-report R``
writes, as users run it (pytester): each of its items carries the schedule's result as
``chaos``, whose ``schedule`` the viewer reads and the lane view draws (the drawing itself
is checked in Chromium by ``tests/browser/test_lanes.py``).
"""

from __future__ import annotations

import json
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape.cli import _viewer, main
from sessiontape.cli._catalog import Catalog
from sessiontape.cli._receipt import read_receipt
from sessiontape.cli._server import ViewerServer

from . import racy_jobs
from .test_plugin_chaos import run

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


def drawn(schedule: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the viewer draws of a schedule: the calls that a recorded call answered."""
    return [item for item in schedule if item["seq"] is not None]


def page_receipt(tape: Path, receipt: Path, out: Path) -> dict[str, Any]:
    """``sessiontape report TAPE --receipt RECEIPT``: the receipt data the page embeds."""
    assert main(["report", str(tape), "--receipt", str(receipt), "-o", str(out)]) == 0
    packed = json.loads(_viewer.embedded(out.read_text(encoding="utf-8"))["st-rows"])
    shown: dict[str, Any] = packed["cassette"]["receipt"]
    return shown


def served_receipt(tape: Path, receipt: Path) -> dict[str, Any]:
    """``sessiontape serve TAPE --receipt RECEIPT``: the receipt data of the cassette's API."""
    catalog = Catalog([str(tape)], receipt=read_receipt(str(receipt)))
    server = ViewerServer(catalog, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        url = server.url + f"api/cassettes/{tape.name}"
        with urllib.request.urlopen(url, timeout=30) as response:
            cassette: dict[str, Any] = json.loads(response.read())
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)
    shown: dict[str, Any] = cassette["receipt"]
    return shown


def test_a_failing_schedules_receipt_opens_with_the_schedule_drawn(
    project: pytest.Pytester, tmp_path: Path
) -> None:
    receipt = project.path / "receipt.json"
    args = ("--replay", "tapes/jobs.jsonl", "--sessiontape-chaos", "20")
    run(project, *args, "--sessiontape-report", str(receipt))
    items = json.loads(receipt.read_text(encoding="utf-8"))
    tape = project.path / "tapes" / "jobs.jsonl"
    seqs = {c.seq for c in sessiontape.load(tape).calls}
    assert sorted(i["chaos"]["seed"] for i in items) == list(range(20))
    for item in items:
        assert "schedule" not in item  # one place for it: the chaos object
        schedule = item["chaos"]["schedule"]
        assert [s["order"] for s in schedule] == list(range(1, len(schedule) + 1))
        assert {s["seq"] for s in drawn(schedule)} <= seqs
    failing = sorted(
        (i for i in items if i["chaos"]["verdict"] == "failed"), key=lambda i: i["chaos"]["seed"]
    )
    assert failing, "20 schedules of the racy program found no race"
    expected = drawn(failing[0]["chaos"]["schedule"])
    assert len(expected) >= 2

    shown = page_receipt(tape, receipt, tmp_path / "chaos.html")
    # The failing schedule of the lowest seed is drawn, whichever seeds before it passed
    # (and in whatever order pytest reported them).
    assert shown["schedule"] == expected
    rows = {r["chaos"]["seed"]: r["chaos"] for r in shown["reports"]}
    assert sorted(rows) == list(range(20))
    seed = failing[0]["chaos"]["seed"]
    assert rows[seed]["verdict"] == "failed"
    assert rows[seed]["command"] == (
        f"pytest --replay tapes/jobs.jsonl --sessiontape-chaos-seed {seed} "
        "--sessiontape-chaos-strategy pct --sessiontape-chaos-depth 3"
    )
    assert served_receipt(tape, receipt)["schedule"] == expected
    # The page leads with what failed: the failure, seed, strategy, the command.
    chaos = shown["chaos"]
    assert chaos["failure"] == {
        k: v for k, v in failing[0]["chaos"]["failure"].items() if v is not None
    }
    assert (chaos["seed"], chaos["strategy"], chaos["depth"]) == (seed, "pct", 3)
    assert chaos["command"] == rows[seed]["command"]
    assert (chaos["schedules"], chaos["failed"]) == (20, len(failing))
    assert chaos["calls"] == len(failing[0]["chaos"]["schedule"])
    assert served_receipt(tape, receipt)["chaos"] == chaos
    # Its mismatch first; no call a schedule never reached is reported unconsumed.
    kind = {"invariant": "invariant_violated", "outcome": "outcome_mismatch"}.get(
        chaos["failure"]["kind"], "application_error"
    )
    assert shown["mismatches"][0]["kind"] == kind
    assert shown["mismatches"][0]["nodeid"] == f"tapes/jobs.jsonl::jobs[chaos-{seed}]"
    assert all(m["kind"] != "unconsumed" for m in shown["mismatches"])


def test_without_a_failing_schedule_the_first_is_drawn(tmp_path: Path) -> None:
    tape = tmp_path / "jobs.jsonl"
    racy_jobs.record(tape, reaper=False)
    items = []
    for seed in (5, 2):  # every race closed: both schedules pass
        player = racy_jobs.replay(tape, sessiontape.Schedule(seed=seed), open_race=None)
        assert player.chaos is not None
        assert player.report is not None
        assert player.chaos.verdict.value == "passed"
        # As the plugin writes it (plugin/_run.attach_report).
        items.append({**player.report.to_dict(), "chaos": player.chaos.to_dict()})
    items[1]["chaos"]["strategy"] = 3  # the receipt is data: a field of the wrong type is left out
    items[1]["chaos"]["schedule"] = items[1]["chaos"]["schedule"][1:]  # told apart from the first
    receipt = tmp_path / "receipt.json"
    receipt.write_text(json.dumps(items), encoding="utf-8")
    read = read_receipt(str(receipt)).reports
    steps = [item["chaos"]["steps"] for item in items]
    calls = [len(item["chaos"]["schedule"]) for item in items]
    assert [r.chaos for r in read] == [
        {
            "seed": 5,
            "strategy": "pct",
            "depth": 3,
            "verdict": "passed",
            "command": "",
            "steps": steps[0],
            "calls": calls[0],
        },
        {
            "seed": 2,
            "depth": 3,
            "verdict": "passed",
            "command": "",
            "steps": steps[1],
            "calls": calls[1],
        },
    ]
    shown = page_receipt(tape, receipt, tmp_path / "chaos.html")
    assert shown["schedule"] == drawn(items[0]["chaos"]["schedule"])
    assert shown["schedule"] != drawn(items[1]["chaos"]["schedule"])
    # A report alone (ReplayReport.to_json(), no chaos object) draws no schedule.
    plain = tmp_path / "plain.json"
    plain.write_bytes(player.report.to_json())
    assert page_receipt(tape, plain, tmp_path / "plain.html")["schedule"] is None
