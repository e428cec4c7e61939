"""The lane view in real Chromium: lanes, bars, zoom and pan, details, marks, a schedule.

The canvas says what it drew in its ``data-*`` attributes (lanes, bars, the time in view,
where each lane starts, how long each frame took); where a test needs to know that a bar
is really there, it reads the canvas's pixels.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import sessiontape
from sessiontape.cli import main
from sessiontape.cli._catalog import Catalog
from sessiontape.cli._server import ViewerServer

from .conftest import BIG, Open, Tapes

if TYPE_CHECKING:
    from playwright.sync_api import Page

CORPUS = Path(__file__).resolve().parents[2] / "cassettes"
GARDENER = sorted(CORPUS.glob("gardener-*.jsonl"))
MISMATCH_RGB = (198, 40, 40)  # --mismatch
SCHEDULE_RGB = (61, 90, 128)  # the schedule's order marks
WHITE = (255, 255, 255)


@pytest.fixture(scope="module")
def corpus_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("corpus-reports")
    out = {}
    for tape in GARDENER:
        page = folder / f"{tape.stem}.html"
        assert main(["report", str(tape), "-o", str(page)]) == 0
        out[tape.name] = page
    return out


@pytest.fixture(scope="module")
def corpus_served() -> Iterator[str]:
    server = ViewerServer(Catalog([str(CORPUS)]), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.url
    server.shutdown()
    server.server_close()
    thread.join(60)


def lanes_of(page: Page) -> dict[str, Any]:
    """What the canvas says it drew."""
    canvas = page.locator("#lane-canvas")
    data: dict[str, Any] = canvas.evaluate("c => Object.assign({}, c.dataset)")
    data["width"] = canvas.evaluate("c => c.clientWidth")
    return data


def switch_to_lanes(page: Page) -> dict[str, Any]:
    page.click("#v-lanes")
    page.wait_for_selector("#lanes:not([hidden]) #lane-canvas[data-drawn]")
    return lanes_of(page)


def wait_for_frame(page: Page, before: str) -> dict[str, Any]:
    """The canvas's state once a frame after ``before`` (a frames count) was drawn."""
    page.wait_for_function(
        "n => Number(document.getElementById('lane-canvas').dataset.frames) > n",
        arg=int(before),
    )
    return lanes_of(page)


def lane_depths(recording: sessiontape.Recording) -> dict[int, int]:
    """Each call's track on its lane: one under a parent of the same worker."""
    calls = {c.seq: c for c in recording.calls}
    depth: dict[int, int] = {}
    for call in recording.calls:
        parent = calls.get(call.parent) if call.parent is not None else None
        same = parent is not None and parent.worker == call.worker
        depth[call.seq] = depth[parent.seq] + 1 if same and parent is not None else 0
    return depth


def bar_point(
    state: dict[str, Any], recording: sessiontape.Recording, seq: int
) -> tuple[float, float]:
    """The middle of the bar of call ``seq`` (canvas px), as the canvas placed it."""
    call = next(c for c in recording.calls if c.seq == seq)
    workers = list(dict.fromkeys(e.worker for e in recording.entries))
    t0, t1 = float(state["t0"]), float(state["t1"])
    left = float(state["plotLeft"])
    start = call.mono_ns - recording.header.mono_ns
    middle = start + call.duration_ns / 2
    x = left + (middle - t0) / (t1 - t0) * (state["width"] - left)
    top = [float(t) for t in state["laneTops"].split(",")][workers.index(call.worker)]
    track = float(state["trackHeight"])
    y = (float(state["axisHeight"]) - float(state["y"]) + top + float(state["lanePad"]) / 2
         + lane_depths(recording)[seq] * track + (track - 3) / 2)  # fmt: skip
    return x, y


def pixel(page: Page, x: float, y: float) -> tuple[int, int, int]:
    rgb: list[int] = page.locator("#lane-canvas").evaluate(
        """(c, [x, y]) => {
            const r = window.devicePixelRatio || 1;
            const at = [Math.round(x * r), Math.round(y * r)];
            const d = c.getContext('2d').getImageData(at[0], at[1], 1, 1).data;
            return [d[0], d[1], d[2]];
        }""",
        [x, y],
    )
    return rgb[0], rgb[1], rgb[2]


def is_schedule(rgb: tuple[int, int, int]) -> bool:
    """Whether a pixel is the schedule marks' colour: within 3 of it on each channel, as
    Chromium's anti-aliasing may blend an edge pixel by one (seen: (60, 89, 128))."""
    return all(abs(a - b) <= 3 for a, b in zip(rgb, SCHEDULE_RGB, strict=True))


def click_canvas(page: Page, x: float, y: float) -> None:
    box = page.locator("#lane-canvas").bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + x, box["y"] + y)


# -- the gardener corpus ---------------------------------------------------------------


@pytest.mark.parametrize("tape", GARDENER, ids=lambda p: p.stem)
def test_the_gardener_corpus_has_a_lane_per_worker_and_a_bar_per_call(
    page: Page, corpus_reports: dict[str, Path], tape: Path
) -> None:
    recording = sessiontape.load(tape)
    page.goto(corpus_reports[tape.name].as_uri())
    page.wait_for_selector("#layer .row[data-seq]")
    state = switch_to_lanes(page)
    workers = list(dict.fromkeys(e.worker for e in recording.entries))
    assert int(state["lanes"]) == len(workers)
    assert int(state["bars"]) == len(recording.calls)
    assert len(state["laneTops"].split(",")) == len(workers)
    assert "v=lanes" in page.url
    # Every worker's first call is drawn on its own lane: zoomed to it, its middle is
    # painted in the lane's colour, not the background.
    for worker in recording.worker_ids():
        first = next(c for c in recording.calls if c.worker == worker)
        page.goto(corpus_reports[tape.name].as_uri() + f"#c={tape.name}&v=lanes&seq={first.seq}")
        page.wait_for_selector(f"#detail:not([hidden]) h3:has-text('seq {first.seq} ')")
        state = wait_for_frame(page, "0")
        assert pixel(page, *bar_point(state, recording, first.seq)) != WHITE


def test_serve_draws_the_same_lanes_from_its_columns_api(page: Page, corpus_served: str) -> None:
    tape = CORPUS / "gardener-full.jsonl"
    recording = sessiontape.load(tape)
    page.goto(f"{corpus_served}#c={tape.name}")
    page.wait_for_selector("#layer .row[data-seq]")
    state = switch_to_lanes(page)
    assert (int(state["lanes"]), int(state["bars"])) == (4, len(recording.calls))


# -- zoom, pan, details -------------------------------------------------------------------


def test_zoom_to_a_single_call_and_back(page: Page, corpus_reports: dict[str, Path]) -> None:
    from playwright.sync_api import expect  # the page fixture has made sure it is there

    tape = CORPUS / "gardener-full.jsonl"
    recording = sessiontape.load(tape)
    turn = next(c for c in recording.calls if isinstance(c, sessiontape.AgentTurn))
    page.goto(corpus_reports[tape.name].as_uri())
    page.wait_for_selector("#layer .row[data-seq]")
    whole = switch_to_lanes(page)
    whole_span = float(whole["t1"]) - float(whole["t0"])
    assert whole_span == pytest.approx(recording_span(recording) * 1.02, rel=0.01)
    # The table's timeline cell links a row to its place on the axis.
    page.click("#v-table")
    page.locator("#f-q").fill("agent.execute")
    # The search applies after a pause for typing: wait for the narrowed list itself, not
    # for the row, which the whole list shows too and which the narrowing then moves.
    expect(page.locator("#count")).to_have_text(re.compile(r" of [\d,]+ entries$"))
    page.wait_for_selector(f"#layer .row[data-seq='{turn.seq}']")
    page.click(f"#layer .row[data-seq='{turn.seq}'] .bar")
    page.wait_for_selector("#lanes:not([hidden])")
    page.wait_for_selector(f"#detail:not([hidden]) h3:has-text('seq {turn.seq} ')")
    state = wait_for_frame(page, whole["frames"])
    span = float(state["t1"]) - float(state["t0"])
    assert span == pytest.approx(turn.duration_ns * 1.2, rel=0.01)  # the call and a margin
    assert float(state["t0"]) < turn.mono_ns - recording.header.mono_ns < float(state["t1"])
    # The nested model process is drawn under the turn, inside it.
    child = next(c for c in recording.calls if c.parent == turn.seq)
    assert pixel(page, *bar_point(state, recording, child.seq)) != WHITE
    # Back to the whole run with a key; then the wheel zooms in around the pointer and a
    # drag pans by as much time as the pointer moved over.
    page.locator("#lanes").focus()
    page.keyboard.press("0")
    state = wait_for_frame(page, state["frames"])
    assert float(state["t1"]) - float(state["t0"]) == pytest.approx(whole_span)
    box = page.locator("#lane-canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 600, box["y"] + 100)
    page.mouse.wheel(0, -500)
    state = wait_for_frame(page, state["frames"])
    zoomed = float(state["t1"]) - float(state["t0"])
    assert zoomed < whole_span / 2
    per_px = zoomed / (state["width"] - float(state["plotLeft"]))
    t0 = float(state["t0"])
    page.mouse.down()
    page.mouse.move(box["x"] + 500, box["y"] + 100, steps=4)
    page.mouse.up()
    state = wait_for_frame(page, state["frames"])
    assert float(state["t0"]) == pytest.approx(t0 + 100 * per_px, rel=0.01)


def recording_span(recording: sessiontape.Recording) -> float:
    end = max(c.mono_ns + c.duration_ns for c in recording.calls) - recording.header.mono_ns
    session_end = recording.end
    duration = session_end.duration_ns if session_end is not None else 0
    return float(max(end, duration))


def test_hover_and_click_on_a_bar(page: Page, corpus_reports: dict[str, Path]) -> None:
    tape = CORPUS / "gardener-full.jsonl"
    recording = sessiontape.load(tape)
    merge = next(c for c in recording.calls if isinstance(c, sessiontape.ProcessCall)
                 and c.argv[:2] == ["git", "merge"])  # fmt: skip
    page.goto(corpus_reports[tape.name].as_uri() + f"#c={tape.name}&v=lanes&seq={merge.seq}")
    page.wait_for_selector("#lanes:not([hidden]) #lane-canvas[data-drawn]")
    page.click("#detail-close")
    state = wait_for_frame(page, "0")
    x, y = bar_point(state, recording, merge.seq)
    box = page.locator("#lane-canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + x, box["y"] + y)
    tip = page.locator("#lane-tip")
    tip.wait_for(state="visible")
    assert tip.inner_text().startswith(f"seq {merge.seq} · {merge.worker} · ")
    assert "git merge" in tip.inner_text()
    click_canvas(page, x, y)
    page.wait_for_selector(f"#detail:not([hidden]) h3:has-text('seq {merge.seq} ')")
    fields = page.locator("#detail table.fields").inner_text()
    assert "argv" in fields
    assert "merge" in fields


# -- marks: a replay's mismatch, a chaos schedule ------------------------------------------


def test_a_mismatch_is_marked_on_its_bar(page: Page, viewer: Open, tapes: Tapes) -> None:
    viewer("small.jsonl")
    switch_to_lanes(page)
    page.locator("#lanes").focus()
    recording = sessiontape.load(tapes.small)
    page.evaluate(f"location.hash = 'c=small.jsonl&v=lanes&seq={tapes.merge_seq}'")
    page.wait_for_selector(f"#detail:not([hidden]) h3:has-text('seq {tapes.merge_seq} ')")
    assert page.locator("#detail .mismatch").count() == 1
    page.click("#detail-close")  # the selection's outline off the bar
    state = wait_for_frame(page, "0")
    assert pixel(page, *bar_point(state, recording, tapes.merge_seq)) == MISMATCH_RGB
    # Its neighbour, which replayed as recorded, is not marked.
    other = next(c for c in recording.calls if c.worker == "w2" and c.seq != tapes.merge_seq)
    page.evaluate(f"location.hash = 'c=small.jsonl&v=lanes&seq={other.seq}'")
    page.wait_for_selector(f"#detail:not([hidden]) h3:has-text('seq {other.seq} ')")
    page.click("#detail-close")
    state = wait_for_frame(page, state["frames"])
    assert pixel(page, *bar_point(state, recording, other.seq)) not in (MISMATCH_RGB, WHITE)


def test_a_chaos_receipts_schedule_is_drawn_in_order(
    page: Page, tapes: Tapes, tmp_path: Path
) -> None:
    recording = sessiontape.load(tapes.small)
    report = json.loads(tapes.receipt.read_text())[0]
    ran = sorted(recording.calls, key=lambda c: (c.worker != "w2", c.seq))  # w2 first
    # The receipt item pytest writes for a chaos schedule: its result under "chaos".
    report["chaos"] = {
        "seed": 7,
        "strategy": "pct",
        "depth": 3,
        "verdict": "failed",
        "command": "pytest --replay small.jsonl --sessiontape-chaos-seed 7",
        "schedule": [
            {"seq": c.seq, "worker": c.worker, "boundary": "process", "order": n}
            for n, c in enumerate(ran, 1)
        ],
    }
    receipt = tmp_path / "chaos.json"
    receipt.write_text(json.dumps([report]))
    out = tmp_path / "chaos.html"
    assert main(["report", str(tapes.small), "--receipt", str(receipt), "-o", str(out)]) == 0
    page.goto(out.as_uri())
    # A failing schedule's page opens on the lanes.
    page.wait_for_selector("#lanes:not([hidden]) #lane-canvas[data-drawn]")
    state = lanes_of(page)
    # Each scheduled call has its order number's disc at the start of its bar.
    for call in ran[:2]:
        x, y = bar_point(state, recording, call.seq)
        start = call.mono_ns - recording.header.mono_ns
        left = float(state["plotLeft"])
        x0 = left + (start - float(state["t0"])) / (float(state["t1"]) - float(state["t0"])) * (
            state["width"] - left
        )
        assert is_schedule(pixel(page, x0 - 5, y))  # the disc, left of its number
    assert x > 0


def test_a_real_failing_chaos_schedule_is_drawn(page: Page, tmp_path: Path) -> None:
    from chaos import racy_jobs  # the racy program of the chaos tests (tests/ is on the path)

    tape = tmp_path / "jobs.jsonl"
    racy_jobs.record(tape, reaper=False)
    for seed in range(100):  # every race open: some schedule finds one
        player = racy_jobs.replay(tape, sessiontape.Schedule(seed=seed), open_race="all")
        assert player.chaos is not None
        if player.chaos.failed:
            break
    else:
        pytest.fail("100 schedules of the racy program found no race")
    assert player.report is not None
    # The receipt item `pytest --sessiontape-report` writes for it (plugin/_run.attach_report).
    item = {"nodeid": "jobs.jsonl::jobs[chaos]", **player.report.to_dict()}
    item["chaos"] = player.chaos.to_dict()
    receipt = tmp_path / "chaos.json"
    receipt.write_text(json.dumps([item]))
    out = tmp_path / "chaos.html"
    assert main(["report", str(tape), "--receipt", str(receipt), "-o", str(out)]) == 0
    page.goto(out.as_uri())
    page.wait_for_selector("#lanes:not([hidden]) #lane-canvas[data-drawn]")
    assert f"chaos seed {seed} (pct): failed" in (page.locator("#info-table").text_content() or "")
    state = lanes_of(page)
    ran = [c for c in item["chaos"]["schedule"] if c["seq"] is not None]
    assert int(state["scheduled"]) == len(ran) >= 2
    # The last call's order mark is drawn over everything before it: a disc around it.
    recording = sessiontape.load(tape)
    last = next(c for c in recording.calls if c.seq == ran[-1]["seq"])
    _, y = bar_point(state, recording, last.seq)
    left = float(state["plotLeft"])
    t0, t1 = float(state["t0"]), float(state["t1"])
    x0 = left + (last.mono_ns - recording.header.mono_ns - t0) / (t1 - t0) * (state["width"] - left)
    ring = [(x0 + dx, y + dy) for dx, dy in ((-6, 0), (6, 0), (0, -6), (0, 6), (-4, -4), (4, 4))]
    assert any(is_schedule(pixel(page, x, yy)) for x, yy in ring)


# -- the big tape ----------------------------------------------------------------------------


def test_a_big_tape_pans_and_zooms(page: Page, tapes: Tapes) -> None:
    """Every frame's drawing time is measured in the page; the figures for the
    1,000,000-entry bench tape are in BENCHMARKS.md (``bench/lanes.py``), never asserted."""
    page.goto(tapes.reports["big.jsonl"].as_uri())
    page.wait_for_selector("#layer .row[data-seq]")
    state = switch_to_lanes(page)
    assert int(state["bars"]) == BIG - 2  # all but the session's start and end
    box = page.locator("#lane-canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 700, box["y"] + 100)
    first = int(state["frames"])
    # Each zoom and each step of the drag moves the span: a frame is drawn for it, waited
    # for before the next (frames drawn are counted, not the time between the inputs).
    for _ in range(8):
        page.mouse.wheel(0, -400)
        state = wait_for_frame(page, state["frames"])
    page.mouse.down()
    for step in range(1, 8):
        page.mouse.move(box["x"] + 700 - 40 * step, box["y"] + 100)
        state = wait_for_frame(page, state["frames"])
    page.mouse.up()
    assert int(state["frames"]) >= first + 15
    assert float(state["t1"]) - float(state["t0"]) < float(state["t1"])  # zoomed in
    assert int(state["drawn"]) > 0
    print(f"lane view, {BIG:,} entries: frame max {state['maxFrameMs']} ms")


def test_a_long_call_right_after_a_short_one_is_drawn(page: Page, tmp_path: Path) -> None:
    """Zoomed out, the bars starting in one pixel column are drawn as one mark and the rest
    skipped; a long call that starts in the same column must not be skipped with them."""
    from sessiontape import SessionEnd, SessionStart
    from sessiontape.cassette import encode_entry

    tape = tmp_path / "short-long.jsonl"
    start = SessionStart(seq=0, ts_ns=0, mono_ns=0, run_id="sl", recorded_at="2026-01-01T00:00:00")
    calls = [
        sessiontape.ProcessCall(seq=1, ts_ns=0, mono_ns=0, argv=["true"], returncode=0,
                                duration_ns=1_000),
        sessiontape.ProcessCall(seq=2, ts_ns=2_000, mono_ns=2_000, argv=["sleep", "1"],
                                returncode=0, duration_ns=1_000_000_000),
    ]  # fmt: skip
    end = SessionEnd(seq=3, ts_ns=1_000_002_000, mono_ns=1_000_002_000)
    tape.write_bytes(b"".join(encode_entry(e) for e in (start, *calls, end)))
    out = tmp_path / "short-long.html"
    assert main(["report", str(tape), "-o", str(out)]) == 0
    page.goto(out.as_uri())
    page.wait_for_selector("#layer .row[data-seq]")
    state = switch_to_lanes(page)
    assert int(state["bars"]) == 2
    x, y = bar_point(state, sessiontape.load(tape), 2)
    assert pixel(page, x, y) != WHITE
