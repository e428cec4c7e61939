"""A tape's pending changes in the viewer, served and as a report: each change in place
(category, old and new side by side, the command that accepts it), read-only."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import sessiontape
from sessiontape.cli import main
from sessiontape.cli._catalog import Catalog
from sessiontape.cli._server import ViewerServer

from .conftest import REQUIRED, app

if not REQUIRED:  # without Playwright the test is skipped (nox -s browser requires it)
    pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")

if TYPE_CHECKING:
    from playwright.sync_api import Page

#: Where the screenshots go when SESSIONTAPE_SCREENSHOTS names a folder (for a person to
#: look at); nothing is written otherwise.
SCREENSHOTS = "SESSIONTAPE_SCREENSHOTS"


@pytest.fixture
def pending_tape(tmp_path: Path) -> Path:
    """A tape whose worker w2 merges another branch today: one change, pending."""
    path = tmp_path / "tapes" / "merge.jsonl"
    path.parent.mkdir()
    with sessiontape.record(path, entrypoint="app run") as tape:
        app(tape, "b")
    with sessiontape.replay(path, update="pending") as tape:
        app(tape, "c")
    assert tape.report is not None
    assert tape.report.pending == ["fix"]
    return path


@pytest.fixture(params=["serve", "report"])
def opened(
    request: pytest.FixtureRequest, pending_tape: Path, page: Page, tmp_path: Path
) -> Iterator[str]:
    """The pending tape's page, served or as its report file; the mode."""
    if request.param == "serve":
        catalog = Catalog([str(pending_tape.parent)])
        server = ViewerServer(catalog, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        try:
            page.goto(f"{server.url}#c=merge.jsonl")
            page.wait_for_selector("#layer .row[data-seq]")
            yield "serve"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(60)
    else:
        out = tmp_path / "merge.html"
        assert main(["report", str(pending_tape), "-o", str(out)]) == 0
        page.goto(out.as_uri())
        page.wait_for_selector("#layer .row[data-seq]")
        yield "report"


def test_pending_changes_show_in_place(page: Page, opened: str, pending_tape: Path) -> None:
    merge = next(
        e.seq
        for e in sessiontape.load(pending_tape).calls
        if getattr(e, "argv", None) == ["git", "merge", "task/b"]
    )
    head = page.locator("#pending-head").text_content() or ""
    assert head.startswith(f"1 pending change ({pending_tape}.pending); review them: ")
    assert head.endswith(f"sessiontape review {pending_tape}")
    change = page.locator("#pending-list .pending-change")
    assert change.count() == 1
    line = change.locator(".pending-line").text_content() or ""
    assert line.startswith(f"fix request at seq {merge} (w2, process) fix-")
    cells = change.locator("table.diff tr").nth(1).locator("td").all_text_contents()
    assert cells == ["argv[2]", "'task/b'", "'task/c'"]
    command = change.locator(".pending-commands code").first.text_content() or ""
    assert command.startswith("sessiontape accept fix-")
    assert command.endswith(f" --path {pending_tape}")
    if os.environ.get(SCREENSHOTS):
        page.screenshot(path=str(Path(os.environ[SCREENSHOTS]) / f"pending-{opened}.png"))
    # In place in the entry's details too.
    change.locator("button.axis").click()
    detail = page.locator("#detail")
    detail.wait_for()
    assert detail.locator("h3").text_content() == f"seq {merge} · process · w2"
    box = detail.locator(".pending .pending-change")
    assert box.locator("table.diff tr").nth(1).locator("td").all_text_contents() == cells
    if os.environ.get(SCREENSHOTS):
        page.screenshot(path=str(Path(os.environ[SCREENSHOTS]) / f"pending-{opened}-detail.png"))
    # Read-only: the page holds no control that decides (no form, no button but links).
    assert page.locator("form").count() == 0
    assert pending_tape.with_name("merge.jsonl.pending").exists()
    if opened == "serve":
        # The address `sessiontape review` prints for `o` opens the entry, its change shown.
        page.goto(page.url.split("#")[0] + f"#c=merge.jsonl&seq={merge}")
        page.reload()
        detail.wait_for()
        assert detail.locator("h3").text_content() == f"seq {merge} · process · w2"
        assert detail.locator(".pending .pending-change").count() == 1
