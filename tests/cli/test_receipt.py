"""Receipts: one report or pytest's list, and which of their reports belong to a cassette."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import sessiontape
from sessiontape.cli._common import CommandError
from sessiontape.cli._receipt import marks, read_receipt

if TYPE_CHECKING:
    from .conftest import App, Clock


def _report(path: Path, clock: Clock, app: App, **plan: Any) -> dict[str, Any]:
    with sessiontape.replay(path) as tape:
        app(tape, clock, **plan)
        report: dict[str, Any] = tape.finish().to_dict()
    return report


def test_one_report_or_the_pytest_list(
    cassette: Path, clock: Clock, app: App, tmp_path: Path
) -> None:
    bad = _report(cassette, clock, app, plan=[("worker-1", "t1"), ("worker-2", "t3")])
    single = tmp_path / "one.json"
    single.write_text(json.dumps(bad))
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([{"nodeid": "corpus/run.jsonl::run", **bad}]))
    run_id = sessiontape.load(cassette).header.run_id
    one, many = read_receipt(str(single)), read_receipt(str(listed))
    assert [r.nodeid for r in one.reports] == [None]
    assert [r.nodeid for r in many.reports] == ["corpus/run.jsonl::run"]
    for receipt in (one, many):
        (found,) = receipt.require(run_id, str(cassette))
        assert found.report.run_id == run_id
        assert sorted(marks([found])) == [8, 9, 10, 12, 13]
        assert [m.kind.value for m in marks([found])[8]] == ["argument_mismatch", "store_mismatch"]


def test_copies_of_a_tape_share_a_run_id_and_the_same_file_wins(
    cassette: Path, clock: Clock, app: App, tmp_path: Path
) -> None:
    copy = tmp_path / "copy" / "run.jsonl"
    copy.parent.mkdir()
    shutil.copy(cassette, copy)
    other = tmp_path / "other.jsonl"
    shutil.copy(cassette, other)
    good = _report(cassette, clock, app)
    bad = _report(copy, clock, app, plan=[("worker-1", "t1"), ("worker-2", "t3")])
    receipt_path = tmp_path / "list.json"
    receipt_path.write_text(
        json.dumps([{"nodeid": "a", **good}, {"nodeid": "b", **bad}]), encoding="utf-8"
    )
    receipt = read_receipt(str(receipt_path))
    run_id = sessiontape.load(cassette).header.run_id
    # Both reports are of this run; each file gets its own.
    assert [r.nodeid for r in receipt.reports_for(run_id, str(cassette))] == ["a"]
    assert [r.nodeid for r in receipt.reports_for(run_id, str(copy))] == ["b"]
    # Another copy: neither names it, nor a file of its name, so both apply.
    assert [r.nodeid for r in receipt.reports_for(run_id, str(other))] == ["a", "b"]
    assert receipt.reports_for("another-run", str(cassette)) == []
    with pytest.raises(CommandError, match=r"holds 2 reports, none of run another-run"):
        receipt.require("another-run", str(cassette))


def test_a_chaos_explanation_is_read_back_typed(
    cassette: Path, clock: Clock, app: App, tmp_path: Path
) -> None:
    """The receipt's ``chaos.explain`` reaches the viewer as an Explanation's data: its
    verdict and row made again from its typed fields; one of another shape is left out."""
    from sessiontape.report import ChaosDecision, Estimate, Explanation

    deciding = ChaosDecision(index=2, chosen=1, others=(0,), worker="w2", call="take('t1')",
                             other=0, other_worker="w1", other_call="take('t1')")  # fmt: skip
    explained = Explanation(
        cassette="run.jsonl", schedule="seed 3, pct depth 3", failure="invariant: twice",
        decisions=4, point=2, deciding=deciding, schedules=12, samples=4, seed=0,
        threshold=0.95,
        estimates=[Estimate(kept=k, runs=4, failed=f, doomed=f == 4) for k, f in ((0, 1), (2, 4))],
    )  # fmt: skip
    report = _report(cassette, clock, app)
    chaos = {"seed": 3, "strategy": "pct", "depth": 3, "verdict": "failed"}
    text = {**explained.to_dict(), "verdict": "<b>made up</b>", "row": "made up"}
    bad = {**explained.to_dict(), "point": "two"}
    receipt = tmp_path / "receipt.json"
    receipt.write_text(json.dumps([
        {"nodeid": "t::a[chaos-3]", **report, "chaos": {**chaos, "explain": text}},
        {"nodeid": "t::a[chaos-4]", **report, "chaos": {**chaos, "seed": 4, "explain": bad}},
    ]))  # fmt: skip
    good, wrong = read_receipt(str(receipt)).reports
    assert good.chaos is not None
    assert wrong.chaos is not None
    assert good.chaos["explain"] == explained.to_dict()
    assert good.chaos["explain"]["verdict"] == (
        "The point of no return: decision 2 of 4: w2's `take('t1')` ran before w1's `take('t1')`."
    )
    assert good.chaos["explain"]["row"] == "▃█"
    assert "explain" not in wrong.chaos
