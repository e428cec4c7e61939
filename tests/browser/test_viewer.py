"""The viewer in headless Chromium, served by ``sessiontape serve`` and as a report file.

Each test runs against both: the served page asks the JSON API, the report answers from
the data inside it, and both must show the same thing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import sessiontape

from .conftest import BIG, REQUIRED

if REQUIRED:  # a missing Playwright fails the session
    from playwright.sync_api import expect
else:
    reason = "Playwright is not installed: pip install -e '.[browser]', or run nox -s browser"
    expect = pytest.importorskip("playwright.sync_api", reason=reason).expect

if TYPE_CHECKING:
    from pathlib import Path

    from playwright.sync_api import Locator, Page

    from .conftest import Open, Tapes

ROWS = "#layer .row[data-seq]:not([hidden])"


def visible_seqs(page: Page) -> list[int]:
    return [int(s) for s in page.eval_on_selector_all(ROWS, "rows => rows.map(r => r.dataset.seq)")]


def selected_seq(page: Page) -> int:
    return int(page.get_attribute("#layer .row.sel", "data-seq") or -1)


def test_the_list_page_shows_the_cassettes(page: Page, served: str, tapes: Tapes) -> None:
    page.goto(served)
    page.wait_for_selector("#cassettes tbody tr")
    names = page.locator("#cassettes tbody tr a.name").all_text_contents()
    assert names == ["big.jsonl", "small.jsonl"]
    chips = page.locator("#cassettes tbody tr .chip").all_text_contents()
    assert chips == ["—", "1 mismatch"]  # the big tape has no report in the receipt
    page.locator("#cassettes tbody tr a.name", has_text="small.jsonl").click()
    page.wait_for_selector(ROWS)
    assert visible_seqs(page) == list(range(8))


def test_the_report_lists_its_one_cassette(page: Page, tapes: Tapes) -> None:
    page.goto(tapes.reports["small.jsonl"].as_uri() + "#list")
    page.wait_for_selector("#cassettes tbody tr")
    assert page.locator("#cassettes tbody tr a.name").all_text_contents() == ["small.jsonl"]
    page.locator("#cassettes tbody tr a.name").click()
    page.wait_for_selector(ROWS)
    assert visible_seqs(page) == list(range(8))


def test_opening_a_cassette_shows_its_rows(page: Page, viewer: Open) -> None:
    viewer("small.jsonl")
    assert visible_seqs(page) == list(range(8))
    assert page.locator("#count").text_content() == "8 entries"
    merge = page.locator('#layer .row[data-seq="6"]')
    assert merge.locator(".worker").text_content() == "w2"
    assert merge.locator(".text").text_content() == "git merge task/b -> exit 0"
    assert "s-mismatch" in (merge.get_attribute("class") or "")
    # The lanes: one per worker, each row's mark in its worker's lane.
    lanes = page.eval_on_selector_all(
        ROWS, "rows => rows.map(r => r.querySelector('.lanes i').style.left)"
    )
    assert lanes == ["0px", "14px", "14px", "14px", "28px", "28px", "28px", "0px"]


def test_search_narrows_the_rows(page: Page, viewer: Open) -> None:
    viewer("small.jsonl")
    page.keyboard.press("/")
    page.keyboard.type("GIT MERGE")  # the session end says "merged", too
    expect(page.locator("#count")).to_have_text("2 of 8 entries")
    assert visible_seqs(page) == [3, 6]
    # The rows the narrowed list no longer needs are hidden and name no entry, so that a
    # selector of one entry finds the one row that shows it.
    assert page.eval_on_selector_all("#layer .row[data-seq]", "rows => rows.length") == 2
    page.fill("#f-q", "")
    page.select_option("#f-worker", "w2")
    expect(page.locator("#count")).to_have_text("3 of 8 entries")
    assert visible_seqs(page) == [4, 5, 6]


def test_search_narrows_a_big_tape_to_the_exact_count(page: Page, viewer: Open) -> None:
    viewer("big.jsonl")
    page.fill("#f-q", "#19999")
    page.keyboard.press("Enter")
    # git status #19999 and #199992..#199998; 199990 and 199991 are an agent turn and its
    # claude process, 199999 the session's end.
    expected = [19999, *range(199992, 199999)]
    expect(page.locator("#count")).to_have_text(f"{len(expected)} of 200,000 entries")
    assert visible_seqs(page) == expected


def test_scrolling_reaches_the_last_entry_of_a_big_tape(page: Page, viewer: Open) -> None:
    viewer("big.jsonl")
    assert page.locator("#count").text_content() == "200,000 entries"
    # The scrollbar dragged to the bottom (the list is taller than the scroll range).
    page.eval_on_selector("#rows", "box => { box.scrollTop = box.scrollHeight; }")
    last = page.locator(f'#layer .row[data-seq="{BIG - 1}"]')
    last.wait_for()
    assert last.locator(".text").text_content() == f"session end: {{'last': {BIG - 1}}} after 0µs"
    assert last.is_visible()
    # The wheel scrolls by pixels, even where scroll positions are scaled.
    page.hover("#rows")
    page.mouse.wheel(0, -22 * 10)
    page.locator(f'#layer .row[data-seq="{BIG - 11}"]').wait_for()
    # Home and End with the keyboard.
    page.focus("#rows")
    page.keyboard.press("Home")
    page.locator('#layer .row.sel[data-seq="0"]').wait_for()
    page.keyboard.press("End")
    page.locator(f'#layer .row.sel[data-seq="{BIG - 1}"]').wait_for()


def test_a_mismatch_shows_its_diff(page: Page, viewer: Open, tapes: Tapes) -> None:
    viewer("small.jsonl")
    assert page.locator("#mismatch-head").text_content() == "replay diverged: 1 mismatch"
    at = f"argument_mismatch at seq {tapes.merge_seq}"
    page.locator("#mismatch-list li", has_text=at).click()
    detail = page.locator("#detail")
    detail.wait_for()
    assert detail.locator("h3").text_content() == f"seq {tapes.merge_seq} · process · w2"
    diff = detail.locator(".mismatch table tr").nth(1).locator("td").all_text_contents()
    assert diff == ["argv[2]", '"task/b"', '"task/c"']
    assert detail.locator(".mismatch .kind").first.text_content() == "argument_mismatch"
    assert selected_seq(page) == tapes.merge_seq
    assert "found by tests/test_app.py::test_merge" in (detail.text_content() or "")


def test_keyboard_moves_the_selection(page: Page, viewer: Open) -> None:
    viewer("small.jsonl")
    page.focus("#rows")
    for key, seq in (("j", 1), ("j", 2), ("ArrowDown", 3), ("k", 2), ("ArrowUp", 1)):
        page.keyboard.press(key)
        page.locator(f'#layer .row.sel[data-seq="{seq}"]').wait_for()
    page.keyboard.press("Enter")
    page.locator("#detail h3", has_text="seq 1 · process · w1").wait_for()
    page.keyboard.press("j")  # the open detail follows the selection
    page.locator("#detail h3", has_text="seq 2 · process · w1").wait_for()
    page.keyboard.press("Escape")
    page.locator("#detail").wait_for(state="hidden")
    page.keyboard.press("/")
    expect(page.locator("#f-q")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#rows")).to_be_focused()


def test_parent_links_are_drawn_and_followed(page: Page, viewer: Open) -> None:
    viewer("big.jsonl")
    page.locator('#layer .row[data-seq="11"]').click()  # a claude process inside seq 10
    page.locator("#detail h3", has_text="seq 11").wait_for()
    assert "linked" in (page.get_attribute('#layer .row[data-seq="10"]', "class") or "")
    assert page.locator('#layer .row[data-seq="11"] .text .nest').text_content() == "↳10 "
    page.locator("#detail .links button", has_text="parent seq 10").click()
    page.locator("#detail h3", has_text="seq 10 · agent · worker-2").wait_for()
    assert page.locator("#detail .links button").all_text_contents() == ["↳ child seq 11"]
    page.keyboard.press("j")
    page.keyboard.press("p")  # back to the parent with the keyboard
    page.locator("#detail h3", has_text="seq 10 · agent").wait_for()


def _echo_report(page: Page, folder: Path, name: str, words: str) -> Locator:
    """Record one ``echo words`` call, open the report of it, select the call; its stdout
    cell in the detail panel."""
    from sessiontape.cli import main

    from .conftest import Echo

    tape_path = folder / f"{name}.jsonl"
    with sessiontape.record(tape_path) as tape:
        tape.process_runner(Echo()).run(["echo", words], text=True)
        tape.finish()
    out = folder / f"{name}.html"
    assert main(["report", str(tape_path), "-o", str(out)]) == 0
    page.goto(out.as_uri())
    page.wait_for_selector(ROWS)
    page.locator('#layer .row[data-seq="1"]').click()
    page.locator("#detail h3").wait_for()
    row = page.locator("#detail table.fields tr", has=page.locator("td.name", has_text="stdout"))
    return row.locator("pre")


def test_recorded_markup_stays_text(page: Page, tmp_path: Path) -> None:
    """A tape whose output is markup: the page shows it as text and runs nothing."""
    markup = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    stdout = _echo_report(page, tmp_path, "xss", markup)
    assert page.evaluate("() => window.pwned") is None
    assert stdout.text_content() == f"{markup}\n"
    assert page.locator("img").count() == 0


def test_a_long_output_shows_as_text_clipped(page: Page, tmp_path: Path) -> None:
    """The report clips a long output as JSON, undecoded: the page shows the text it
    begins (newlines, tabs, quotes and backslashes as themselves) and how much more."""
    import msgspec

    from sessiontape.cli._viewdata import REPORT_LIMIT

    words = "".join(f'line {i}\tsays "hi" \\ back\n' for i in range(100))
    shown = _echo_report(page, tmp_path, "long", words).text_content() or ""
    more = len(msgspec.json.encode(f"{words}\n")) - REPORT_LIMIT
    note = f"… ({more:,} more bytes of JSON in the cassette)"
    assert shown.endswith(note)
    text = shown.removesuffix(note)
    assert f"{words}\n".startswith(text)
    assert text.count("\n") >= 10  # escapes shown as what they stand for
    assert len(text) >= REPORT_LIMIT - 100  # at most one escape's bytes per 6 dropped
