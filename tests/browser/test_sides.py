"""Two runs side by side in real Chromium: ``sessiontape serve A --against B`` and the page
``sessiontape report A --against B`` writes, and the list page's "side by side".

The runs are ``tests/two_runs.py``'s: three lanes each (the session's own and two
workers), six calls both made (joined), one only A made and two only B made, and the
runs part at seq 6 (w2's merge, 60 ms into each run), where the fork mark must be drawn.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import two_runs
from sessiontape.cli import main
from sessiontape.cli._catalog import Catalog

from .conftest import serving

if TYPE_CHECKING:
    from playwright.sync_api import Page


class Runs:
    def __init__(self, folder: Path) -> None:
        self.a = two_runs.write_run(folder / "a.jsonl", "a")
        self.b = two_runs.write_run(folder / "b.jsonl", "b")
        self.report = folder.parent / "sides.html"
        assert main(["report", str(self.a), "--against", str(self.b), "-o", str(self.report)]) == 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory.mktemp("two-runs"))


@pytest.fixture(scope="module")
def against(runs: Runs) -> Iterator[str]:
    """``sessiontape serve a.jsonl --against b.jsonl``."""
    catalog = Catalog([str(runs.a), str(runs.b)])
    catalog.against = ("a.jsonl", "b.jsonl")
    yield from serving(catalog)


@pytest.fixture(scope="module")
def folder(runs: Runs) -> Iterator[str]:
    """``sessiontape serve`` over the folder of both runs."""
    yield from serving(Catalog([str(runs.a.parent)]))


def _facts(page: Page) -> dict[str, str]:
    facts: dict[str, str] = page.evaluate(
        "Object.assign({}, document.getElementById('sides-canvas').dataset)"
    )
    return facts


def _x(facts: dict[str, str], ns: float, width: float) -> float:
    """Where time ``ns`` is drawn on the canvas, from the view's span."""
    left, t0, t1 = float(facts["plotLeft"]), float(facts["t0"]), float(facts["t1"])
    return left + (ns - t0) * (width - left) / (t1 - t0)


@pytest.mark.parametrize("how", ["serve", "report"])
def test_two_runs_side_by_side(
    page: Page, runs: Runs, how: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if how == "serve":
        page.goto(request.getfixturevalue("against"))  # the page opens on the two runs
    else:
        page.goto(runs.report.as_uri())
    page.wait_for_selector("#sides-view:not([hidden]) #sides-canvas[data-joined]")
    facts = _facts(page)
    assert (facts["lanes"], facts["lanesA"], facts["lanesB"]) == ("6", "3", "3")
    assert (facts["pairs"], facts["joined"]) == (str(two_runs.PAIRS), str(two_runs.PAIRS))
    assert (facts["onlyA"], facts["onlyB"]) == (str(two_runs.ONLY_A), str(two_runs.ONLY_B))
    assert (facts["forkSeq"], facts["forkSource"]) == (str(two_runs.PARTING_SEQ), "diverged")
    # The fork is marked where w2's merge starts, in A's lanes and in B's (60 ms into each).
    width = page.locator("#sides-canvas").bounding_box()["width"]  # type: ignore[index]
    at = _x(facts, two_runs.PARTING_NS, width)
    assert abs(float(facts["forkXA"]) - at) < 0.5
    assert abs(float(facts["forkXB"]) - at) < 0.5
    # B's lanes come after A's three and the band that names B.
    tops = [int(t) for t in facts["laneTops"].split(",")]
    assert tops[3] == int(facts["sideTop"]) > tops[2] + 26
    assert page.locator("#crumb").text_content() == "a.jsonl ⟷ b.jsonl"
    assert page.locator("#sides-a").text_content() == "A: a.jsonl (run run-a, 7 calls, 80.0ms)"
    assert page.locator("#sides-b").text_content() == "B: b.jsonl (run run-b, 8 calls, 90.0ms)"
    assert page.locator("#sides-legend .legend").all_text_contents() == [
        "6 calls both made, joined",
        "1 call only A made",
        "2 calls only B made",
    ]
    assert page.locator("#sides-fork").text_content() == (
        "the runs part at seq 6 (w2 process, call 3): the requests differ"
    )
    page.screenshot(path=str(tmp_path / f"sides-{how}.png"))
    # B's push (seq 7 of B, 70 ms in, w2's lane: the last) is a call only B made.
    box = page.locator("#sides-canvas").bounding_box()
    assert box is not None
    y = int(facts["axisHeight"]) + tops[5] + int(facts["lanePad"]) / 2 + 6
    page.mouse.click(box["x"] + _x(facts, 72 * two_runs.MS, width), box["y"] + y)
    detail = page.locator("#sides-detail")
    detail.wait_for(state="visible")
    assert detail.locator("h3").text_content() == "B · seq 7 · w2"
    assert detail.locator("p.mono").text_content() == "git push origin task/c -> exit 0"
    assert "only B made this call" in (detail.text_content() or "")
    links = detail.locator("a")
    assert links.count() == (1 if how == "serve" else 0)
    if how == "serve":
        assert links.get_attribute("href") == "#c=b.jsonl&seq=7"
    # The panel took part of the canvas's width: the view is drawn again, narrower.
    page.wait_for_function(
        f"document.getElementById('sides-canvas').getBoundingClientRect().width < {width}"
    )
    facts = _facts(page)
    width = page.locator("#sides-canvas").bounding_box()["width"]  # type: ignore[index]
    # And A's w1 merge (seq 5, 50 ms in) is joined to B's.
    y = int(facts["axisHeight"]) + tops[1] + int(facts["lanePad"]) / 2 + 6
    page.mouse.click(box["x"] + _x(facts, 52 * two_runs.MS, width), box["y"] + y)
    page.wait_for_function(
        "document.querySelector('#sides-detail h3').textContent === 'A · seq 5 · w1'"
    )
    assert "the same call in B: seq 5, +0.050s" in (detail.text_content() or "")
    page.keyboard.press("Escape")
    detail.wait_for(state="hidden")


def test_the_list_page_opens_any_two_side_by_side(page: Page, folder: str) -> None:
    page.goto(folder)
    page.wait_for_selector("#pair-form:not([hidden])")
    assert page.locator("#pair-a option").all_text_contents() == ["a.jsonl", "b.jsonl"]
    page.select_option("#pair-a", "b.jsonl")
    page.select_option("#pair-b", "a.jsonl")
    page.click("#pair-open")
    page.wait_for_selector("#sides-view:not([hidden]) #sides-canvas[data-joined]")
    assert page.url.endswith("#a=b.jsonl&b=a.jsonl")
    facts = _facts(page)
    # B against A: the calls only one run made change sides.
    assert (facts["onlyA"], facts["onlyB"]) == (str(two_runs.ONLY_B), str(two_runs.ONLY_A))
    page.click("#home")
    page.wait_for_selector("#list-view:not([hidden])")
    assert page.locator("#sides-view").is_hidden()
