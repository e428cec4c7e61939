"""The viewer in a real browser: headless Chromium driven by Playwright.

Without Playwright or Chromium these tests are skipped, so the everyday suite runs
anywhere; ``nox -s browser`` sets ``SESSIONTAPE_BROWSER_REQUIRED=1``, which turns the
skip into a failure. Chromium is ``$SESSIONTAPE_CHROMIUM``, else ``chromium`` on the
PATH, else ``/usr/bin/chromium`` (Debian's package; Playwright's own download is never
used). Only 127.0.0.1 and ``file://`` pages are opened.

The pages get a small tape whose replay diverged (with its receipt) and a big one of
200,000 entries, both served by ``sessiontape serve``'s server on a free port and written
as ``sessiontape report`` files.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import sessiontape
from sessiontape import AgentTurn, ProcessCall, ProcessResult, SessionEnd, SessionStart
from sessiontape.cassette import encode_entry
from sessiontape.cli import main
from sessiontape.cli._catalog import Catalog
from sessiontape.cli._receipt import read_receipt
from sessiontape.cli._server import ViewerServer

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page

REQUIRED = os.environ.get("SESSIONTAPE_BROWSER_REQUIRED") == "1"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Entries of the big tape, and what its last entry says.
BIG = 200_000
#: Playwright's timeout for each wait of a page: a minute, which only a hang reaches (a
#: 200,000-entry page on a loaded machine is slow, not stuck).
TIMEOUT_MS = 60_000


def _unavailable(why: str) -> None:
    if REQUIRED:
        pytest.fail(f"{why} (SESSIONTAPE_BROWSER_REQUIRED=1, so this is a failure)", pytrace=False)
    pytest.skip(why)


def chromium_path() -> str | None:
    """The Chromium to drive, or ``None``."""
    for candidate in (
        os.environ.get("SESSIONTAPE_CHROMIUM"),
        shutil.which("chromium"),
        "/usr/bin/chromium",
    ):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


# Module scope, not session: Playwright's sync API keeps an event loop marked as running
# in this thread while it is started, so a later test in the same worker that calls
# asyncio.run() would fail. The browser stops when pytest leaves this module.
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed: pip install -e '.[browser]'")
    executable = chromium_path()
    if executable is None:
        _unavailable("no Chromium: install Debian's 'chromium' package or set SESSIONTAPE_CHROMIUM")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page; any console error (a script error, a refused CSP) fails the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    problems: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            problems.append(f"console: {message.text}")

    opened.on("console", console)
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    yield opened
    context.close()
    assert problems == []


# -- the tapes ---------------------------------------------------------------------------


class Echo:
    """A process runner that answers like ``echo``, without a process."""

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        out = " ".join(argv[1:]) + "\n"
        return ProcessResult(list(argv), 0, out if text else out.encode(), "" if text else b"")

    def stream(self, argv: Sequence[str], **kwargs: Any) -> Any:
        raise NotImplementedError


def app(tape: sessiontape.Tape, task: str) -> None:
    """Two workers: each says hello, checks the status and merges its task."""
    runner = tape.process_runner(Echo())
    for worker, branch in (("w1", "task/a"), ("w2", f"task/{task}")):
        with sessiontape.worker(worker):
            runner.run(["echo", "hello", worker], text=True)
            runner.run(["git", "status"], text=True)
            runner.run(["git", "merge", branch], text=True)
    tape.finish(outcome={"merged": 2})


def write_big_tape(path: Path, entries: int) -> None:
    """A tape of ``entries`` small entries over four workers, every tenth an agent turn
    with a nested process; seq ``entries - 1`` is the session's end."""
    with path.open("wb") as out:
        start = SessionStart(
            seq=0, ts_ns=0, mono_ns=0, run_id="big", recorded_at="2026-01-01T00:00:00+00:00"
        )
        out.write(encode_entry(start))
        seq = 1
        while seq < entries - 1:
            worker = f"worker-{seq % 4}"
            if seq % 10 == 0 and seq + 1 < entries - 1:
                nested = ProcessCall(seq=seq + 1, ts_ns=seq, mono_ns=seq, worker=worker,
                                     parent=seq, argv=["claude", "-p", f"step {seq}"],
                                     returncode=0, duration_ns=500)  # fmt: skip
                turn = AgentTurn(seq=seq, ts_ns=seq, mono_ns=seq, worker=worker,
                                 args=[{"task": f"t{seq}"}], result={"state": "done"},
                                 duration_ns=900)  # fmt: skip
                out.write(encode_entry(nested) + encode_entry(turn))
                seq += 2
                continue
            call = ProcessCall(seq=seq, ts_ns=seq, mono_ns=seq, worker=worker,
                               argv=["git", "status", f"#{seq}"], returncode=0,
                               duration_ns=1000)  # fmt: skip
            out.write(encode_entry(call))
            seq += 1
        end = SessionEnd(seq=seq, ts_ns=seq, mono_ns=seq, outcome={"last": seq})
        out.write(encode_entry(end))


@dataclass(frozen=True)
class Tapes:
    """The cassettes of the browser tests, the receipt of the small one, and reports."""

    folder: Path
    small: Path
    big: Path
    receipt: Path
    merge_seq: int  # where the small tape's replay diverged
    reports: dict[str, Path]


@pytest.fixture(scope="session")
def tapes(tmp_path_factory: pytest.TempPathFactory) -> Tapes:
    folder = tmp_path_factory.mktemp("tapes")
    small = folder / "small.jsonl"
    with sessiontape.record(small, entrypoint="app run") as tape:
        app(tape, "b")
    with sessiontape.replay(small) as tape:
        app(tape, "c")  # worker w2 merges another branch than recorded
    receipt = folder.parent / "receipt.json"
    receipt.write_text(json.dumps([{"nodeid": "tests/test_app.py::test_merge",
                                    **tape.report.to_dict()}]))  # fmt: skip
    merge_seq = next(
        e.seq for e in sessiontape.load(small).calls if e.argv == ["git", "merge", "task/b"]
    )
    big = folder / "big.jsonl"
    write_big_tape(big, BIG)
    reports = {}
    for name, path in (("small.jsonl", small), ("big.jsonl", big)):
        out = folder.parent / f"{path.stem}.html"
        assert main(["report", str(path), "--receipt", str(receipt), "-o", str(out)]
                    if path is small else ["report", str(path), "-o", str(out)]) == 0  # fmt: skip
        reports[name] = out
    return Tapes(folder, small, big, receipt, merge_seq, reports)


def serving(catalog: Catalog) -> Iterator[str]:
    """The URL of a viewer server over ``catalog`` on a thread, until the generator ends."""
    server = ViewerServer(catalog, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.url
    server.shutdown()
    server.server_close()
    thread.join(60)


@pytest.fixture(scope="session")
def served(tapes: Tapes) -> Iterator[str]:
    """The URL of a server over the tapes' folder, with the receipt."""
    yield from serving(Catalog([str(tapes.folder)], receipt=read_receipt(str(tapes.receipt))))


Open = Callable[[str], None]


@pytest.fixture(params=["serve", "report"])
def viewer(request: pytest.FixtureRequest, tapes: Tapes, page: Page) -> Open:
    """Opens a cassette's page, as ``serve`` shows it and as its ``report`` file."""
    mode: str = request.param

    def open_cassette(name: str) -> None:
        if mode == "serve":
            url = request.getfixturevalue("served")
            page.goto(f"{url}#c={name}")
        else:
            page.goto(tapes.reports[name].as_uri())
        page.wait_for_selector("#layer .row[data-seq]")

    return open_cassette
