"""A failing chaos schedule's page in real Chromium leads with what failed (issue 29,
defect 10): the failure, the seed and strategy, the command that runs it again, then the
lanes; no call the schedule never reached is listed as unconsumed. As ``sessiontape
report --receipt`` writes it and as ``sessiontape serve --receipt`` serves it.

The program is the second user's (``tests/chaos/backlog_app.py``): three workers, a claim
race that production's staggered start hid.
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import sessiontape
from sessiontape.cli import main
from sessiontape.cli._catalog import Catalog
from sessiontape.cli._receipt import read_receipt
from sessiontape.cli._server import ViewerServer

if TYPE_CHECKING:
    from playwright.sync_api import Page


class Chaos:
    """A tape, its receipt of eight schedules (at least one failing), and the failure."""

    def __init__(self, folder: Path) -> None:
        from chaos import backlog_app  # tests/ is on the path

        self.tape = folder / "backlog.jsonl"
        with tempfile.TemporaryDirectory() as repo:
            backlog_app.record(self.tape, Path(repo) / "repo")
        items: list[dict[str, Any]] = []
        self.failing: dict[str, Any] | None = None
        for seed in range(100):
            with tempfile.TemporaryDirectory() as repo:
                player = backlog_app.replay(self.tape, Path(repo), sessiontape.Schedule(seed=seed))
            assert player.chaos is not None
            assert player.report is not None
            result = player.chaos
            result.command = (
                f"pytest --replay backlog.jsonl --sessiontape-chaos-seed {seed} "
                "--sessiontape-chaos-strategy pct --sessiontape-chaos-depth 3"
            )
            # The receipt item `pytest --sessiontape-report` writes (plugin/_run.attach_report).
            item = {"nodeid": f"backlog.jsonl::backlog[chaos-{seed}]", **player.report.to_dict()}
            item["chaos"] = result.to_dict()
            items.append(item)
            if result.failed and self.failing is None:
                self.failing = item["chaos"]
            if self.failing is not None and len(items) >= 8:
                break
        assert self.failing is not None, "100 schedules found no race"
        self.receipt = folder / "receipt.json"
        # Reported in another order than the seeds (as pytest's report may be).
        self.receipt.write_text(json.dumps(items[::-1]), encoding="utf-8")
        self.report = folder / "chaos.html"
        args = ["report", str(self.tape), "--receipt", str(self.receipt), "-o", str(self.report)]
        assert main(args) == 0


@pytest.fixture(scope="module")
def chaos(tmp_path_factory: pytest.TempPathFactory) -> Chaos:
    return Chaos(tmp_path_factory.mktemp("chaos-page"))


@pytest.fixture(scope="module")
def chaos_served(chaos: Chaos) -> Iterator[str]:
    catalog = Catalog([str(chaos.tape)], receipt=read_receipt(str(chaos.receipt)))
    server = ViewerServer(catalog, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.url
    server.shutdown()
    server.server_close()
    thread.join(10)


@pytest.mark.parametrize("how", ["report", "serve"])
def test_a_failing_schedules_page_leads_with_what_failed(
    page: Page, chaos: Chaos, how: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if how == "serve":
        page.goto(f"{request.getfixturevalue('chaos_served')}#c=backlog.jsonl")
    else:
        page.goto(chaos.report.as_uri())
    # It opens on the lanes, where the schedule is drawn in the order it ran.
    page.wait_for_selector("#lanes:not([hidden]) #lane-canvas[data-drawn]")
    assert page.locator("#v-lanes").get_attribute("aria-pressed") == "true"
    failing = chaos.failing
    assert failing is not None
    failure = failing["failure"]
    head = page.locator("#chaos-head").text_content()
    assert head == (
        f"chaos schedule failed: invariant in worker '{failure['worker']}': {failure['message']}"
    )
    assert failure["message"].startswith("claimed twice: ['t")
    what = page.locator("#chaos-what").text_content() or ""
    assert what.startswith(f"seed {failing['seed']} · strategy pct · depth 3 · ")
    assert f"; it failed after call #{failure['after']}" in what
    assert page.locator("#chaos-command").text_content() == failing["command"]
    # First on the page: the failure, then the run's line and the mismatches, then the lanes.
    tops = [
        page.locator(selector).bounding_box()["y"]  # type: ignore[index]
        for selector in ("#chaos-box", "#info", "#mismatch-box", "#lanes")
    ]
    assert tops == sorted(tops)
    assert tops[0] < 60
    # The mismatches: the failure first, and nothing the schedule never reached.
    items = page.locator("#mismatch-list li").all_text_contents()
    assert items[0].startswith("invariant_violated at ")
    assert items[0].endswith(failure["message"])
    assert not [i for i in items if i.startswith("unconsumed")]
    page.screenshot(path=str(tmp_path / f"chaos-{how}.png"))


def test_a_receipt_without_chaos_shows_no_chaos_box(
    page: Page, chaos: Chaos, tmp_path: Path
) -> None:
    plain = tmp_path / "plain.html"
    assert main(["report", str(chaos.tape), "-o", str(plain)]) == 0
    page.goto(plain.as_uri())
    page.wait_for_selector("#layer .row[data-seq]")  # the table, as ever
    assert page.locator("#chaos-box").is_hidden()
