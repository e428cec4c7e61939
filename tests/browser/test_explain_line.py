"""The probability line in real Chromium: a failing chaos schedule explained
(``--sessiontape-chaos-explain``) shows, above the lanes, the share of schedules that
failed the same way by decisions kept, the point of no return marked on it, and the
decision named by the two calls it ordered. As ``sessiontape report --receipt`` writes it
and as ``sessiontape serve --receipt`` serves it.

The program is the racy jobs program (``tests/chaos/racy_jobs.py``) with its double claim
open: two workers may take the same job.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import sessiontape
from sessiontape.cli import main
from sessiontape.cli._catalog import Catalog
from sessiontape.cli._receipt import read_receipt

from .conftest import serving

if TYPE_CHECKING:
    from playwright.sync_api import Page


class Explained:
    """The tape, the receipt of its first failing schedule explained, and the page."""

    def __init__(self, folder: Path) -> None:
        from chaos import racy_jobs  # tests/ is on the path
        from chaos.races import found

        self.tape = folder / "jobs.jsonl"
        racy_jobs.record(self.tape, reaper=False)

        def run(schedule: sessiontape.Schedule) -> sessiontape.ChaosResult:
            result = racy_jobs.replay(self.tape, schedule, open_race="double_claim").chaos
            assert result is not None
            return result

        seed = next(
            s for s in range(100) if found("double_claim", run(sessiontape.Schedule(seed=s)))
        )
        player = racy_jobs.replay(
            self.tape, sessiontape.Schedule(seed=seed), open_race="double_claim"
        )
        assert player.chaos is not None
        assert player.report is not None
        self.explanation = sessiontape.explain(run, sessiontape.Schedule(seed=seed), samples=8)
        # The receipt item `pytest --sessiontape-chaos-explain --sessiontape-report` writes.
        item: dict[str, Any] = {
            "nodeid": f"jobs.jsonl::jobs[chaos-{seed}]",
            **player.report.to_dict(),
        }
        item["chaos"] = {**player.chaos.to_dict(), "explain": self.explanation.to_dict()}
        self.receipt = folder / "receipt.json"
        self.receipt.write_text(json.dumps([item]), encoding="utf-8")
        self.report = folder / "explained.html"
        args = ["report", str(self.tape), "--receipt", str(self.receipt), "-o", str(self.report)]
        assert main(args) == 0


@pytest.fixture(scope="module")
def explained(tmp_path_factory: pytest.TempPathFactory) -> Explained:
    return Explained(tmp_path_factory.mktemp("explained"))


@pytest.fixture(scope="module")
def explained_served(explained: Explained) -> Iterator[str]:
    catalog = Catalog([str(explained.tape)], receipt=read_receipt(str(explained.receipt)))
    yield from serving(catalog)


@pytest.mark.parametrize("how", ["report", "serve"])
def test_the_probability_line_above_the_lanes(
    page: Page, explained: Explained, how: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if how == "serve":
        page.goto(f"{request.getfixturevalue('explained_served')}#c=jobs.jsonl")
    else:
        page.goto(explained.report.as_uri())
    page.wait_for_selector("#lanes:not([hidden]) #lane-canvas[data-drawn]")
    ex = explained.explanation
    assert ex.deciding is not None
    chart = page.locator("#explain-chart")
    assert chart.get_attribute("data-points") == str(len(ex.estimates))
    # One point per estimate, in order of decisions kept, at its probability.
    dots = chart.locator("circle.dot")
    kept = sorted(ex.estimates, key=lambda e: e.kept)
    assert dots.count() == len(kept)
    assert [(d.get_attribute("data-k"), d.get_attribute("data-p")) for d in dots.all()] == [
        (str(e.kept), f"{e.probability:.3f}") for e in kept
    ]
    # Left to right by k, higher up the likelier; the doomed ones filled.
    xs = [float(d.get_attribute("cx") or "nan") for d in dots.all()]
    assert xs == sorted(xs)
    assert len(set(xs)) == len(xs)
    doomed = chart.locator("circle.doomed")
    assert doomed.count() == sum(e.doomed for e in kept)
    # The point of no return: its line at the x of the estimate that kept `point` decisions.
    mark = chart.locator("#explain-point")
    assert mark.get_attribute("data-k") == str(ex.point)
    at = next(i for i, e in enumerate(kept) if e.kept == ex.point)
    assert float(mark.get_attribute("x1") or "nan") == pytest.approx(xs[at])
    assert kept[at].probability >= ex.threshold
    assert chart.locator("text.point").text_content() == (
        f"point of no return: decision {ex.point} of {ex.decisions}"
    )
    # The decision named by the pair of calls it ordered, and what ran.
    verdict = page.locator("#explain-verdict").text_content() or ""
    assert verdict == ex.verdict()
    assert ex.deciding.named() in verdict
    assert "`next_pending()` ran before" in verdict
    ran = page.locator("#explain-ran").text_content() or ""
    assert ran.startswith(f"{ex.schedules} schedules ran: up to 8 per estimate (seed 0)")
    # Above the lanes, below the failure it explains.
    tops = [
        page.locator(selector).bounding_box()["y"]  # type: ignore[index]
        for selector in ("#chaos-box", "#explain-box", "#lanes")
    ]
    assert tops == sorted(tops)
    page.screenshot(path=str(tmp_path / f"explained-{how}.png"), full_page=True)


def test_a_schedule_not_explained_draws_no_line(
    page: Page, explained: Explained, tmp_path: Path
) -> None:
    plain = tmp_path / "plain.html"
    assert main(["report", str(explained.tape), "-o", str(plain)]) == 0
    page.goto(plain.as_uri())
    page.wait_for_selector("#layer .row[data-seq]")
    assert page.locator("#explain-box").is_hidden()
    assert page.locator("#explain-chart circle").count() == 0
