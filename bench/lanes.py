"""The lane view's frame times on a big tape, measured in the browser (headless Chromium).

Writes the report of a tape (``bench/gen.py`` makes one: ``python bench/gen.py
huge.jsonl --entries 1000000``), opens its lane view and drives it as a user would: the
whole run, the wheel zooming in step by step down to single calls, drags panning at each
zoom level, the keys zooming back out. The page times every frame it draws
(``performance.now()`` around the drawing, kept in the canvas's ``data-*``); this prints
their count, median, 95th percentile and maximum, the page's size against the tape's and
the time the report took to write. Not part of ``nox -s bench`` (it needs Chromium); run
it by hand, and BENCHMARKS.md says when it last was::

    python bench/lanes.py huge.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from sessiontape.cli import main as cli

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def _frames(page: object) -> list[float]:
    times: list[float] = page.locator("#lane-canvas").evaluate(  # type: ignore[attr-defined]
        "c => c.dataset.allFrames ? c.dataset.allFrames.split(',').map(Number) : []"
    )
    return times


def run(tape: Path, chromium: str) -> dict[str, float]:
    """Report ``tape``, drive its lane view, return the figures."""
    from playwright.sync_api import sync_playwright

    out = Path(tempfile.mkdtemp()) / "lanes.html"
    began = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli(["report", str(tape), "-o", str(out)]) == 0
    write_s = time.perf_counter() - began
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(600_000)
        opened = time.perf_counter()
        page.goto(out.as_uri())
        page.wait_for_selector("#layer .row[data-seq]")
        page.click("#v-lanes")
        page.wait_for_selector("#lane-canvas[data-drawn]")
        open_s = time.perf_counter() - opened
        box = page.locator("#lane-canvas").bounding_box()
        assert box is not None
        x, y = box["x"] + 760, box["y"] + 120
        page.mouse.move(x, y)
        for _level in range(30):  # from the whole run down to a few microseconds
            page.mouse.wheel(0, -300)
            page.wait_for_timeout(20)
            page.mouse.down()
            for step in range(1, 6):
                page.mouse.move(x - 60 * step, y + (step % 2) * 10)
                page.wait_for_timeout(16)
            page.mouse.up()
            page.mouse.move(x, y)
        page.locator("#lanes").focus()
        for _ in range(40):
            page.keyboard.press("s")
            page.wait_for_timeout(16)
        page.keyboard.press("0")
        page.wait_for_timeout(100)
        frames = _frames(page)
        browser.close()
    page_bytes = os.path.getsize(out)
    shutil.rmtree(out.parent, ignore_errors=True)
    frames.sort()
    return {
        "frames": len(frames),
        "median_ms": statistics.median(frames),
        "p95_ms": frames[int(0.95 * (len(frames) - 1))],
        "max_ms": frames[-1],
        "page_over_tape": page_bytes / os.path.getsize(tape),
        "write_s": write_s,
        "open_s": open_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tape", type=Path)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args(argv)
    figures = run(args.tape, args.chromium)
    print(
        f"{args.tape}: report written in {figures['write_s']:.1f} s, lanes open in "
        f"{figures['open_s']:.1f} s; {figures['frames']:.0f} frames: median "
        f"{figures['median_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms, "
        f"max {figures['max_ms']:.1f} ms; page {figures['page_over_tape']:.2f} x the tape"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
