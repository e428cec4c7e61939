"""The receipt a pytest run writes, read back by ``report``, ``show`` and ``serve``.

``pytest --sessiontape-report PATH`` writes a list of reports; the commands pick the one
of the cassette they show and mark the entry where the replay diverged.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

import sessiontape
from sessiontape.cli import main
from sessiontape.cli._catalog import Catalog, Query
from sessiontape.cli._receipt import read_receipt
from sessiontape.cli._viewer import embedded

if TYPE_CHECKING:
    from conftest import Project, Run


def test_the_pytest_receipt_marks_the_diverging_entry(
    project: Project,
    run: Run,
    xdist: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
) -> None:
    good = project.record("corpus/good.jsonl")
    bad = project.record("corpus/bad.jsonl")
    # The second call's argument, as recorded, is not what the app passes today.
    bad.write_text(bad.read_text(encoding="utf-8").replace('"done"', '"dome"'), encoding="utf-8")
    altered = next(e.seq for e in sessiontape.load(bad).calls if e.argv == ["echo", "dome"])
    result = run(*xdist, "corpus", "--sessiontape-report=out/replays.json")
    result.assert_outcomes(passed=1, failed=1)
    receipt = project.path / "out" / "replays.json"
    listed = json.loads(receipt.read_text(encoding="utf-8"))
    assert [r["nodeid"] for r in listed] == ["corpus/bad.jsonl::bad", "corpus/good.jsonl::good"]
    capsys.readouterr()

    # report: the page marks the altered entry, and only it.
    page = project.path / "bad.html"
    assert main(["report", str(bad), "--receipt", str(receipt), "-o", str(page)]) == 0
    count = len([m for m in listed[0]["mismatches"] if m["seq"] is not None])
    assert f"{count} mismatch" in capsys.readouterr().out
    columns = json.loads(embedded(page.read_text(encoding="utf-8"))["st-rows"])["columns"]
    marked = [s for s, st in zip(columns["seq"], columns["status"], strict=True) if st == 2]
    assert marked == [altered]

    # show: the same entry ends with its mismatch.
    assert main(["show", str(bad), "--receipt", str(receipt)]) == 0
    lines = capsys.readouterr().out.splitlines()
    flagged = [line.split()[1] for line in lines if "✗" in line]
    assert flagged == [str(altered)]

    # The good cassette's report is a clean one.
    assert main(["show", str(good), "--receipt", str(receipt)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"-- replay ({receipt}): no mismatch."

    # serve: each cassette gets its own report from the list.
    catalog = Catalog([str(project.path / "corpus")], receipt=read_receipt(str(receipt)))
    loaded = catalog.get("bad.jsonl")
    assert loaded is not None
    page_data = loaded.page(Query(statuses=frozenset({"mismatch"})), 0, 10)
    assert [row["seq"] for row in page_data["rows"]] == [altered]
    detail = loaded.entry(altered, Query())
    assert detail is not None
    assert {m["nodeid"] for m in detail["mismatches"]} == {"corpus/bad.jsonl::bad"}
    assert [(c["name"], c["mismatches"]) for c in catalog.listing()] == [
        ("bad.jsonl", len(listed[0]["mismatches"])),
        ("good.jsonl", 0),
    ]
