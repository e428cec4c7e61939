"""``sessiontape serve``: the JSON API, its filters and pages, and what it refuses to serve.

Each test starts a server on a free port of 127.0.0.1 in a thread and shuts it down after;
requests time out after a minute (only a hang takes that long), so nothing waits forever.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import sessiontape
from sessiontape.cli import _server
from sessiontape.cli._catalog import MAX_LIMIT, Catalog
from sessiontape.cli._receipt import read_receipt
from sessiontape.cli._server import ViewerServer
from sessiontape.cli._viewer import page

if TYPE_CHECKING:
    from .conftest import App, Cli, Clock, Recorder

#: Seconds a request or the server process may take: a minute, which only a hang reaches.
TIMEOUT = 60


@pytest.fixture
def folder(tmp_path: Path, record_session: Recorder) -> Path:
    """Two cassettes (one in a subfolder), and files that are not cassettes."""
    root = tmp_path / "tapes"
    (root / "sub").mkdir(parents=True)
    record_session("run.jsonl").rename(root / "run.jsonl")
    record_session("crash.jsonl", crash_after=1).rename(root / "sub" / "crash.jsonl")
    (root / "notes.jsonl").write_text('{"kind": "note"}\n')
    (root / "readme.txt").write_text("not a cassette\n")
    return root


Get = Callable[..., tuple[int, Any]]


class Running:
    """A server on a thread, and a client for it."""

    def __init__(self, server: ViewerServer) -> None:
        self.server = server
        # A short poll, so that shutdown() returns at once.
        self.thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def get(self, path: str, host: str | None = None, method: str = "GET") -> tuple[int, Any]:
        request = urllib.request.Request(self.server.url + path.lstrip("/"), method=method)
        if host is not None:
            request.add_header("Host", host)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                body = response.read()
                status = response.status
                kind = response.headers["Content-Type"]
        except urllib.error.HTTPError as exc:
            body, status, kind = exc.read(), exc.code, exc.headers["Content-Type"]
        return status, json.loads(body) if kind.startswith("application/json") else body

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(TIMEOUT)


@pytest.fixture
def serve() -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(*paths: Path, receipt: Path | None = None) -> Running:
        catalog = Catalog(
            [str(p) for p in paths], receipt=read_receipt(str(receipt)) if receipt else None
        )
        running = Running(ViewerServer(catalog, "127.0.0.1", 0))
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


def seqs(page: dict[str, Any]) -> list[int]:
    return [row["seq"] for row in page["rows"]]


def test_the_list_holds_the_folders_cassettes_only(
    serve: Callable[..., Running], folder: Path
) -> None:
    api = serve(folder)
    assert api.server.server_address[0] == "127.0.0.1"
    status, listing = api.get("/api/cassettes")
    assert status == 200
    run = sessiontape.load(folder / "run.jsonl").header
    assert [c["name"] for c in listing["cassettes"]] == ["run.jsonl", "sub/crash.jsonl"]
    assert listing["cassettes"][0] == {
        "name": "run.jsonl",
        "path": str(folder / "run.jsonl"),
        "size": (folder / "run.jsonl").stat().st_size,
        "run_id": run.run_id,
        "entrypoint": "app run",
        "recorded_at": run.recorded_at,
        "entries": None,  # not loaded yet
        "crashed": None,
        "reports": None,
        "mismatches": None,
    }
    assert api.get("/api/cassettes/sub%2Fcrash.jsonl")[0] == 200
    status, listing = api.get("/api/cassettes")
    assert (listing["cassettes"][1]["entries"], listing["cassettes"][1]["crashed"]) == (9, True)


def test_a_cassette_and_its_pages(serve: Callable[..., Running], folder: Path) -> None:
    api = serve(folder / "run.jsonl")
    status, cassette = api.get("/api/cassettes/run.jsonl")
    assert status == 200
    assert (cassette["entries"], cassette["calls"], cassette["crashed"]) == (15, 12, False)
    assert cassette["workers"] == ["main", "worker-1", "worker-2"]
    assert cassette["boundaries"] == ["store", "process", "agent"]
    assert cassette["statuses"] == {"ok": 15, "error": 0, "mismatch": 0}
    assert cassette["receipt"] is None
    status, page = api.get("/api/cassettes/run.jsonl/entries?offset=3&limit=4")
    assert (status, page["total"], page["offset"], page["limit"]) == (200, 15, 3, 4)
    assert seqs(page) == [3, 4, 5, 6]
    assert page["rows"][2] == {
        "index": 5,
        "seq": 5,
        "worker": "worker-1",
        "kind": "process",
        "boundary": "process",
        "parent": 4,
        "depth": 1,
        "start_ns": 6_000_000,
        "duration_ns": 2_000_000,
        "status": "ok",
        "error_class": None,
        "text": "claude -p work on t1 -> exit 0",
    }
    assert seqs(api.get("/api/cassettes/run.jsonl/entries?offset=13")[1]) == [13, 14]
    assert api.get("/api/cassettes/run.jsonl/entries?limit=0")[1]["rows"] == []
    many = api.get(f"/api/cassettes/run.jsonl/entries?limit={MAX_LIMIT + 5}")[1]
    assert (many["limit"], len(many["rows"])) == (MAX_LIMIT, 15)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("worker=worker-2", [8, 9, 10, 11, 12, 13]),
        ("kind=process", [3, 5, 6, 9, 11, 12]),
        ("boundary=store&worker=worker-1", [2, 7]),
        ("worker=worker-1&worker=worker-2&kind=agent_turn", [4, 10]),
        ("q=merge", [6, 12]),
        ("q=MERGE%20task%2Ft2", [12]),
        ("q=claude&worker=worker-1", [5]),
        ("status=error", [12]),
        ("status=ok&kind=process&worker=worker-2", [9, 11]),
        ("q=no+such+text", []),
    ],
)
def test_filters_select_exactly(
    serve: Callable[..., Running],
    record_session: Recorder,
    query: str,
    expected: list[int],
) -> None:
    tape = record_session(table={"git merge task/t2": (1, "CONFLICT\n", 3)})
    api = serve(tape)
    status, page = api.get(f"/api/cassettes/run.jsonl/entries?limit=100&{query}")
    assert status == 200
    assert (seqs(page), page["total"]) == (expected, len(expected))


def test_seek_says_where_an_entry_is_among_the_selected(
    serve: Callable[..., Running], folder: Path
) -> None:
    api = serve(folder)
    base = "/api/cassettes/run.jsonl/entries?limit=0&worker=worker-2"
    assert api.get(base + "&seek=10")[1] == {
        "total": 6,
        "offset": 0,
        "limit": 0,
        "rows": [],
        "position": 2,
    }
    assert api.get(base + "&seek=3")[1]["position"] is None  # worker-1's
    assert api.get("/api/cassettes/run.jsonl/entries?limit=0&seek=14")[1]["position"] == 14


def test_an_entry_with_its_links(serve: Callable[..., Running], folder: Path) -> None:
    api = serve(folder)
    status, agent = api.get("/api/cassettes/run.jsonl/entries/4")
    assert status == 200
    assert agent["row"]["text"].startswith('agent.execute({"task":"t1"}) -> {"state":"done"')
    assert agent["entry"]["kind"] == "agent_turn"
    assert agent["entry"]["args"] == [{"task": "t1"}]
    assert agent["entry"]["result"]["state"] == "done"
    assert agent["parent"] is None
    assert [c["seq"] for c in agent["children"]] == [5]
    assert (agent["children_total"], agent["mismatches"]) == (1, [])
    assert agent["positions"] == {"4": 4, "5": 5}
    claude = api.get("/api/cassettes/run.jsonl/entries/5?kind=process")[1]
    assert claude["parent"]["seq"] == 4
    assert claude["entry"]["argv"] == ["claude", "-p", "work on t1"]
    assert claude["positions"] == {"5": 1, "4": None}  # the agent turn is filtered out


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        ("/api/cassettes/nope.jsonl", 404, "no cassette named 'nope.jsonl'"),
        ("/api/cassettes/..%2F..%2Fetc%2Fpasswd", 404, "no cassette named '../../etc/passwd'"),
        ("/api/cassettes/%2Fetc%2Fpasswd", 404, "no cassette named '/etc/passwd'"),
        ("/api/cassettes/../readme.txt", 404, "no cassette named '..'"),
        ("/api/cassettes/notes.jsonl", 404, "no cassette named 'notes.jsonl'"),
        ("/readme.txt", 404, "no such page: /readme.txt."),
        ("/api/cassettes/run.jsonl/entries/999", 404, "run.jsonl has no entry with seq 999."),
        ("/api/cassettes/run.jsonl/entries/x", 404, "'x' is not a seq"),
        ("/api/cassettes/run.jsonl/entries?offset=-1", 400, "offset=-1 is negative"),
        ("/api/cassettes/run.jsonl/entries?limit=ten", 400, "limit='ten' is not a whole number."),
        ("/api/cassettes/run.jsonl/entries?kind=nope", 400, "unknown kind 'nope'; use one of "),
        ("/api/cassettes/run.jsonl/entries?worker=w9", 400, "no worker 'w9' in run.jsonl; "),
        ("/api/cassettes/run.jsonl/entries?status=bad", 400, "unknown status 'bad'; use one of"),
    ],
)
def test_what_the_server_refuses(
    serve: Callable[..., Running], folder: Path, path: str, status: int, error: str
) -> None:
    api = serve(folder)
    got, body = api.get(path)
    assert got == status
    assert body["error"].startswith(error), body
    assert body["error"].endswith(".")


@pytest.mark.writes_invalid_tapes
def test_a_cassette_broken_since_the_start_is_a_json_error(
    serve: Callable[..., Running], folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api = serve(folder)
    tape = folder / "run.jsonl"
    lines = tape.read_text().splitlines(keepends=True)
    tape.write_text("".join([*lines[:3], "{not json\n", *lines[4:]]))
    status, body = api.get("/api/cassettes/run.jsonl")
    assert status == 500
    assert body["error"].startswith(f"{tape}:4: not valid JSON (")
    assert body["error"].endswith("Fix or delete the line, or re-record the cassette.")
    assert capsys.readouterr().err == f"sessiontape serve: {body['error']}\n"


def test_only_reads_for_this_host_are_answered(serve: Callable[..., Running], folder: Path) -> None:
    api = serve(folder)
    port = api.server.server_address[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert api.get("/api/cassettes", host=host)[0] == 200
    status, body = api.get("/api/cassettes", host=f"attacker.example:{port}")
    assert status == 403
    assert body["error"] == (
        f"this server answers requests for {api.server.url} only, not for host "
        f"'attacker.example:{port}'; open it by that address."
    )
    status, body = api.get("/api/cassettes", method="POST")
    assert status == 405
    assert body["error"] == "POST is not supported: the viewer's API is read-only; use GET."


def test_the_page_and_its_policy(serve: Callable[..., Running], folder: Path) -> None:
    api = serve(folder)
    with urllib.request.urlopen(api.server.url, timeout=TIMEOUT) as response:
        html = response.read()
        headers = response.headers
    assert html == b"".join(page("sessiontape", mode="serve"))
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Content-Security-Policy"].endswith("; frame-ancestors 'none'")
    assert "connect-src 'self'" in headers["Content-Security-Policy"]
    assert (headers["X-Frame-Options"], headers["Server"]) == ("DENY", "sessiontape")


def test_a_receipt_marks_entries_and_gives_their_diffs(
    serve: Callable[..., Running], folder: Path, clock: Clock, app: App, tmp_path: Path
) -> None:
    tape = folder / "run.jsonl"
    with sessiontape.replay(tape) as replaying:
        app(replaying, clock, plan=[("worker-1", "t1"), ("worker-2", "t3")])
        report = replaying.finish()
    receipt = tmp_path / "replays.json"
    receipt.write_text(json.dumps([{"nodeid": "tapes/run.jsonl::run", **report.to_dict()}]))
    api = serve(folder, receipt=receipt)
    listing = api.get("/api/cassettes")[1]["cassettes"]
    assert [(c["reports"], c["mismatches"]) for c in listing] == [
        (1, len(report.mismatches)),
        (0, None),  # the crash tape is of another run: no report of it in the receipt
    ]
    marked = api.get("/api/cassettes/run.jsonl/entries?status=mismatch")[1]
    assert seqs(marked) == [8, 9, 10, 12, 13]
    detail = api.get("/api/cassettes/run.jsonl/entries/9")[1]
    (mismatch,) = detail["mismatches"]
    assert (mismatch["kind"], mismatch["nodeid"]) == ("argument_mismatch", "tapes/run.jsonl::run")
    assert mismatch["diffs"] == [
        {"path": "argv[5]", "expected": "task/t2", "actual": "task/t3", "detail": None}
    ]
    cassette = api.get("/api/cassettes/run.jsonl")[1]
    assert cassette["receipt"]["reports"][0]["nodeid"] == "tapes/run.jsonl::run"
    assert cassette["statuses"]["mismatch"] == 5


# -- the command ---------------------------------------------------------------------------


def test_serve_prints_its_address_and_stops_on_ctrl_c(
    cli: Cli, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: ViewerServer, poll_interval: float = 0.5) -> None:
        assert self.server_address[0] == "127.0.0.1"
        raise KeyboardInterrupt

    monkeypatch.setattr(_server.ViewerServer, "serve_forever", interrupted)
    result = cli("serve", folder, "--port", "0")
    assert result.code == 0
    assert re.fullmatch(
        r"sessiontape serve: 2 cassettes at http://127\.0\.0\.1:\d+/ \(Ctrl-C stops\)",
        result.lines[0],
    )
    assert result.lines[1:] == ["sessiontape serve: stopped."]
    assert result.err == ""


def test_serve_runs_until_interrupted(folder: Path, interruptible: None) -> None:
    """The real command in a process of its own: it answers, then SIGINT stops it cleanly."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "sessiontape", "serve", str(folder), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # printed once the port is bound
        found = re.search(r"(http://127\.0\.0\.1:\d+/)", first)
        assert found, first
        with urllib.request.urlopen(found[1] + "api/cassettes/run.jsonl", timeout=TIMEOUT) as r:
            assert json.loads(r.read())["entries"] == 15
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0
    assert out == "sessiontape serve: stopped.\n"
    assert re.fullmatch(r"sessiontape serve: loaded run\.jsonl: 15 entries in \d+\.\d\d s\n", err)


def test_serve_refuses_what_it_cannot_serve(cli: Cli, folder: Path, tmp_path: Path) -> None:
    missing = cli("serve", tmp_path / "nope")
    assert (missing.code, missing.err) == (
        2,
        f"sessiontape: error: no such file or folder: {tmp_path / 'nope'}. Check the path.\n",
    )
    notes = cli("serve", folder / "notes.jsonl")
    assert (notes.code, notes.err) == (
        2,
        f"sessiontape: error: {folder / 'notes.jsonl'} is not a sessiontape cassette: its first "
        "line is not a session_start entry. Name a cassette, or a folder of them.\n",
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = cli("serve", empty)
    assert (nothing.code, nothing.err) == (
        2,
        f"sessiontape: error: no sessiontape cassettes in {empty} (looked for *.jsonl files "
        "whose first line is a session_start entry). Record one first, or name another "
        "folder.\n",
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = cli("serve", folder, "--port", str(port))
    assert (busy.code, busy.out) == (2, "")
    assert busy.err == (
        f"sessiontape: error: cannot listen on 127.0.0.1:{port}: the port is in use. Pass "
        "another --port, or --port 0 for a free one.\n"
    )


def test_serve_says_when_the_receipt_matches_nothing(
    cli: Cli, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_server.ViewerServer, "serve_forever", lambda self, poll_interval=0.5: None)
    report = sessiontape.ReplayReport(
        cassette="elsewhere.jsonl",
        run_id="another-run",
        ok=True,
        strict=False,
        loaded=1,
        consumed=1,
        unconsumed=0,
        extra=0,
    )
    receipt = tmp_path / "replay.json"
    receipt.write_bytes(report.to_json())
    result = cli("serve", folder, "--port", "0", "--receipt", receipt)
    assert result.code == 0
    assert result.err == (
        f"sessiontape serve: note: none of the 1 report in {receipt} is of a cassette served "
        "here; no mismatch will be marked.\n"
    )
