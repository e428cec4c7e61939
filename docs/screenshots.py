"""The README's screenshot of the lane view, made from the real viewer in headless Chromium.

Writes the report of the corpus's gardener tape, opens its lane view, zooms onto the
stretch where the workers' agent turns and merges overlap, points at a bar so that its
one-line summary shows, and saves ``docs/lanes.png``. ``nox -s screenshots`` runs it;
nothing in the picture is drawn by hand.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

from sessiontape.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
TAPE = ROOT / "cassettes" / "gardener-full.jsonl"
OUT = ROOT / "docs" / "lanes.png"


def main() -> int:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("SESSIONTAPE_CHROMIUM") or shutil.which("chromium")
    if not chromium:
        print("no Chromium: install Debian's chromium or set SESSIONTAPE_CHROMIUM", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp())
    page_path = folder / "gardener.html"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli(["report", str(TAPE), "-o", str(page_path)]) == 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 460}, device_scale_factor=1)
        page.goto(page_path.as_uri())
        page.wait_for_selector("#layer .row[data-seq]")
        page.click("#v-lanes")
        page.wait_for_selector("#lane-canvas[data-drawn]")
        box = page.locator("#lane-canvas").bounding_box()
        assert box is not None
        # Zoom in around the middle of the run, where the workers overlap.
        page.mouse.move(box["x"] + 640, box["y"] + 100)
        for _ in range(4):
            page.mouse.wheel(0, -250)
            page.wait_for_timeout(50)
        # Point at the first bar of worker-3's nested track: its summary shows.
        tip = page.locator("#lane-tip")
        for x in range(300, 1200, 6):
            page.mouse.move(box["x"] + x, box["y"] + 148)
            if tip.is_visible():
                break
        page.wait_for_timeout(200)
        page.screenshot(path=str(OUT), clip={"x": 0, "y": 60, "width": 1280, "height": 300})
        browser.close()
    shutil.rmtree(folder, ignore_errors=True)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
