"""The lane view's frame times on a big tape, measured in the browser (headless Chromium).

Writes the report of a tape (``bench/gen.py`` makes one: ``python bench/gen.py
huge.jsonl --entries 1000000``), opens its lane view and drives it as a user would: the
whole run, the wheel zooming in step by step down to single calls, drags panning at each
zoom level, the keys zooming back out. The page times every frame it draws
(``performance.now()`` around the drawing, kept in the canvas's ``data-*``); this prints
their count, median, 95th percentile and maximum, the page's size against the tape's and
the time the report took to write. Not part of ``nox -s bench`` (it needs Chromium); run
it by hand; ``--write`` keeps the figures in ``bench/lanes.json`` and puts them into
BENCHMARKS.md (whose full runs, ``bench/render.py``, carry them over)::

    python bench/gen.py huge.jsonl --entries 1000000
    python bench/lanes.py huge.jsonl --write
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: Where ``--write`` keeps the figures, for ``render.py`` to show in every BENCHMARKS.md.
FIGURES = ROOT / "bench" / "lanes.json"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def _frames(page: object) -> list[float]:
    times: list[float] = page.locator("#lane-canvas").evaluate(  # type: ignore[attr-defined]
        "c => c.dataset.allFrames ? c.dataset.allFrames.split(',').map(Number) : []"
    )
    return times


def run(tape: Path, chromium: str, keep: Path | None = None) -> dict[str, float]:
    """Report ``tape`` (into ``keep``, when given), drive its lane view, return the figures.

    The first frame, drawn as the view opens, is kept apart: it also pays for the
    browser compiling the drawing code."""
    from playwright.sync_api import sync_playwright

    from sessiontape.cli import main as cli

    out = keep or Path(tempfile.mkdtemp()) / "lanes.html"
    began = time.perf_counter()
    if keep is None or not keep.exists():
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
        open_s = time.perf_counter() - opened
        switched = time.perf_counter()
        page.click("#v-lanes")
        page.wait_for_selector("#lane-canvas[data-drawn]")
        lanes_s = time.perf_counter() - switched
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
        drawn = _frames(page)
        spans: list[float] = page.locator("#lane-canvas").evaluate(
            "c => c.dataset.allSpans.split(',').map(Number)"
        )
        slow = sorted(range(len(drawn)), key=lambda i: -drawn[i])[:6]
        print("slowest frames (ms @ ns in view):",
              ", ".join(f"{drawn[i]:.1f} @ {spans[i]:.3g}" for i in slow))  # fmt: skip
        first, frames = drawn[0], drawn[1:]  # the first frame also warms the script up
        # The whole run, drawn 30 more times: the fastest shows the frame's own cost on a
        # machine that other work shares (the wall clock counts the waits for a core).
        for _ in range(30):
            page.keyboard.press("a")
            page.wait_for_timeout(20)
            page.keyboard.press("0")
            page.wait_for_timeout(20)
        whole = _frames(page)[-60:][1::2]
        browser.close()
    page_bytes = os.path.getsize(out)
    if keep is None:
        shutil.rmtree(out.parent, ignore_errors=True)
    frames.sort()
    return {
        "first_ms": first,
        "frames": len(frames),
        "median_ms": statistics.median(frames),
        "p95_ms": frames[int(0.95 * (len(frames) - 1))],
        "max_ms": frames[-1],
        "page_over_tape": page_bytes / os.path.getsize(tape),
        "write_s": write_s,
        "open_s": open_s,
        "lanes_s": lanes_s,
        "whole_min_ms": min(whole),
        "whole_median_ms": statistics.median(whole),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tape", type=Path)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--keep", type=Path, help="write the report here, or reuse it")
    parser.add_argument(
        "--write",
        action="store_true",
        help="keep the figures in bench/lanes.json and BENCHMARKS.md",
    )
    parser.add_argument("--note", default="", help="a sentence to print under the table")
    args = parser.parse_args(argv)
    if args.write and args.keep is not None and args.keep.exists():
        parser.error("--write measures a fresh report: drop --keep or remove the page")
    figures: dict[str, Any] = dict(run(args.tape, args.chromium, args.keep))
    entries = sum(1 for _ in args.tape.open("rb"))
    figures |= {
        "entries": entries,
        "tape_bytes": os.path.getsize(args.tape),
        "measured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "load_average": os.getloadavg()[0],
        "chromium": args.chromium,
        "note": args.note,
    }
    if args.write:
        FIGURES.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        _into_benchmarks(figures)
    f = figures
    print(
        f"{args.tape}: report written in {f['write_s']:.1f} s, page open in "
        f"{f['open_s']:.1f} s, lanes laid out in {f['lanes_s']:.1f} s, first frame "
        f"{f['first_ms']:.1f} ms; {f['frames']:.0f} frames of zooming and panning: median "
        f"{f['median_ms']:.1f} ms, p95 {f['p95_ms']:.1f} ms, max {f['max_ms']:.1f} ms; "
        f"the whole run: fastest {f['whole_min_ms']:.1f} ms, median {f['whole_median_ms']:.1f} ms; "
        f"page {f['page_over_tape']:.2f} x the tape"
    )
    return 0


def section(figures: dict[str, Any]) -> list[str]:
    """The lane view's section of BENCHMARKS.md."""
    f = figures
    return [
        "## 8. The lane view in the browser\n",
        f"`python bench/lanes.py` on a generated tape of {f['entries']:,} entries "
        f"({f['tape_bytes'] / 1e6:,.0f} MB), measured {f['measured_at']} in headless Chromium "
        f"(load average {f['load_average']:.1f} on the machine's two cores: the clock counts "
        "the waits for a core). The report's page, opened; the lane view laid out; then the "
        "wheel zooming in 30 steps from the whole run to a few microseconds, a drag panning at "
        "each step, 40 zoom-out keys and `0`. Each frame's drawing is timed in the page "
        "(`performance.now()` around it); the first frame, which also pays for compiling the "
        "drawing code, is kept apart. Not a test: no figure here is asserted.\n",
        "| | figure |",
        "|---|---|",
        f"| page / tape | {f['page_over_tape']:.2f} × |",
        f"| report written | {f['write_s']:.1f} s |",
        f"| page open (table shown) | {f['open_s']:.1f} s |",
        f"| lane view laid out | {f['lanes_s']:.1f} s |",
        f"| first frame | {f['first_ms']:.1f} ms |",
        f"| frames while zooming and panning | {f['frames']:.0f} |",
        f"| median frame | {f['median_ms']:.1f} ms |",
        f"| 95th percentile frame | {f['p95_ms']:.1f} ms |",
        f"| slowest frame | {f['max_ms']:.1f} ms |",
        f"| the whole run, fastest of 30 | {f['whole_min_ms']:.1f} ms |",
        f"| the whole run, median of 30 | {f['whole_median_ms']:.1f} ms |",
        "",
        *([f["note"], ""] if f.get("note") else []),
    ]


def saved_section() -> list[str]:
    """The section from the last ``--write``, or nothing."""
    if not FIGURES.exists():
        return []
    return section(json.loads(FIGURES.read_text(encoding="utf-8")))


def _into_benchmarks(figures: dict[str, Any]) -> None:
    """Put the section into BENCHMARKS.md, before its targets (in place of an older one)."""
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text(encoding="utf-8")
    block = "\n".join(section(figures))
    text = re.sub(r"## 8\. The lane view in the browser\n.*?(?=\n## )\n", "", text, flags=re.S)
    anchor = "## Targets not met"
    at = text.find(anchor)
    text = text[:at] + block + "\n" + text[at:] if at >= 0 else text + "\n" + block
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
