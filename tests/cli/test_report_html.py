"""``sessiontape report``: the viewer as one offline page, its data compressed inside it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import sessiontape
from sessiontape.cli import _viewer
from sessiontape.cli._common import entry_data
from sessiontape.cli._viewdata import CLIPPED, MORE, REPORT_LIMIT, SCHEMA, detail_values

if TYPE_CHECKING:
    from .conftest import App, Cli, Clock, Recorder

XSS = "<script>alert(1)</script>"


@pytest.fixture
def hostile(record_session: Recorder) -> Path:
    """A tape whose recorded output is markup."""
    return record_session(table={"git merge task/t1": (0, f"{XSS}\n", 2)})


def unpack(page: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The page's cassette data and rows, and every entry's details as field -> value."""
    blobs = _viewer.embedded(page.read_text(encoding="utf-8"))
    packed = json.loads(blobs["st-rows"])
    cols = packed["columns"]
    cols["text"] = json.loads(blobs["st-text"])
    details = []
    for index, line in enumerate(blobs["st-details"].decode().splitlines()):
        kind = cols["kinds"][cols["kind"][index]]
        details.append(dict(zip(SCHEMA[kind], json.loads(line), strict=True)))
    return packed, details


def row(packed: dict[str, Any], seq: int) -> dict[str, Any]:
    """Row ``seq`` of the page, with names for the indexes."""
    cols = packed["columns"]
    i = cols["seq"].index(seq)
    boundary = cols["boundary"][i]
    return {
        "worker": cols["workers"][cols["worker"][i]],
        "kind": cols["kinds"][cols["kind"][i]],
        "boundary": None if boundary is None else cols["boundaries"][boundary],
        "parent": cols["parent"][i],
        "depth": cols["depth"][i],
        "start": cols["start"][i],
        "duration": cols["duration"][i],
        "status": cols["statuses"][cols["status"][i]],
        "text": cols["text"][i],
    }


def test_report_writes_the_viewer_with_the_tape_inside(
    cli: Cli, hostile: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run.html"
    result = cli("report", hostile, "-o", out)
    assert result.code == 0
    assert result.err == ""
    size, tape = out.stat().st_size, hostile.stat().st_size
    assert result.lines == [
        f"wrote {out}: 15 entries in 3 swimlanes; {size / 1e3:.1f} kB, "
        f"{size / tape:.0%} of the cassette's {tape / 1e3:.1f} kB."
    ]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    packed, details = unpack(out)
    assert packed["columns"]["seq"] == list(range(15))
    assert packed["columns"]["workers"] == ["main", "worker-1", "worker-2"]
    assert row(packed, 6) == {
        "worker": "worker-1",
        "kind": "process",
        "boundary": "process",
        "parent": None,
        "depth": 0,
        "start": 13_000_000,
        "duration": 2_000_000,
        "status": "ok",
        "text": "git merge task/t1 -> exit 0",
    }
    assert (row(packed, 5)["parent"], row(packed, 5)["depth"]) == (4, 1)
    assert row(packed, 4)["text"] == (
        'agent.execute({"task":"t1"}) -> '
        '{"state":"done","usage":{"input_tokens":100,"output_tokens"…'
    )
    # Every field of every entry is there, the recorded markup as data.
    recorded = entry_data(sessiontape.load(hostile).entries[6])
    assert recorded.pop("kind") == "process"
    assert details[6] == recorded
    assert details[6]["stdout"] == f"{XSS}\n"
    cassette = packed["cassette"]
    assert (cassette["name"], cassette["entries"], cassette["duration_ns"]) == (
        "run.jsonl",
        15,
        33_000_000,
    )
    assert cassette["receipt"] is None


def test_the_page_is_offline_and_runs_only_its_own_script(
    cli: Cli, hostile: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run.html"
    assert cli("report", hostile, "-o", out).code == 0
    page = out.read_text(encoding="utf-8")
    # Recorded text is inside the compressed data only: never markup in the page.
    assert "alert(1)" not in page
    assert re.findall(r"<script[^>]*>", page) == [
        '<script id="st-details" type="application/gzip">',
        '<script id="st-text" type="application/gzip">',
        '<script id="st-rows" type="application/gzip">',
        "<script>",
    ]
    # Nothing to fetch: no URL, no protocol-relative link; links stay in the page.
    assert not re.search(r"https?://", page)
    assert not re.search(r"""(src|href)\s*=\s*["']?//""", page)
    targets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", page)
    assert sorted(targets) == ["#", "#c=", "#list", "data:,"]
    # The policy allows exactly the page's own script and style.
    script = re.search(r"<script>(.*?)</script>", page, re.S)
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert script is not None
    assert style is not None

    def digest(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert policy is not None
    assert policy.group(1) == (
        f"default-src 'none'; script-src 'sha256-{digest(script.group(1))}'; "
        f"style-src 'sha256-{digest(style.group(1))}'; img-src data:; connect-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )
    assert '<body data-mode="report">' in page


def test_the_report_and_the_server_share_one_front_end(
    cli: Cli, cassette: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run.html"
    assert cli("report", cassette, "-o", out).code == 0
    served = b"".join(_viewer.page("sessiontape", mode="serve")).decode()
    page = out.read_text(encoding="utf-8")
    script = re.compile(r"<script>(.*?)</script>", re.S)
    served_script, page_script = script.search(served), script.search(page)
    assert served_script is not None
    assert page_script is not None
    assert served_script.group(1) == page_script.group(1)
    assert "DecompressionStream('gzip')" in page_script.group(1)
    assert '<body data-mode="serve">' in served


def test_report_marks_the_mismatches_of_a_replay(
    cli: Cli, cassette: Path, tmp_path: Path, clock: Clock, app: App
) -> None:
    with sessiontape.replay(cassette) as tape:
        app(tape, clock, plan=[("worker-1", "t1"), ("worker-2", "t3")])
        report = tape.finish()
    marked = sorted({m.seq for m in report.mismatches if m.seq is not None})
    assert marked == [8, 9, 10, 12, 13], "the replay was meant to diverge on worker-2's calls"
    with_seq = len([m for m in report.mismatches if m.seq is not None])
    receipt = tmp_path / "replay.json"
    receipt.write_bytes(report.to_json())
    for option in ("--receipt", "--replay-report"):  # the old name still works
        out = tmp_path / f"run{option}.html"
        result = cli("report", cassette, option, receipt, "-o", out)
        assert result.code == 0
        assert result.lines[0].startswith(
            f"wrote {out}: 15 entries in 3 swimlanes, {with_seq} mismatches marked; "
        )
        packed, _ = unpack(out)
        cols = packed["columns"]
        flagged = [s for s, st in zip(cols["seq"], cols["status"], strict=True) if st == 2]
        assert flagged == marked
        shown = packed["cassette"]["receipt"]
        assert shown["path"] == str(receipt)
        assert [(r["ok"], r["nodeid"]) for r in shown["reports"]] == [(False, None)]
        first = report.mismatches[0]
        assert shown["mismatches"][0] == {**report.to_dict()["mismatches"][0], "nodeid": None}
        assert shown["mismatches"][0]["diffs"][0]["path"] == first.diffs[0].path


def test_report_refuses_a_receipt_of_another_run(
    cli: Cli, record_session: Recorder, tmp_path: Path, clock: Clock, app: App
) -> None:
    a, b = record_session("a.jsonl"), record_session("b.jsonl")
    with sessiontape.replay(a) as tape:
        report = tape.finish(outcome=app(tape, clock))
    receipt = tmp_path / "replay.json"
    receipt.write_bytes(report.to_json())
    result = cli("report", b, "--receipt", receipt, "-o", tmp_path / "x.html")
    assert result.code == 2
    run_a, run_b = sessiontape.load(a).header.run_id, sessiontape.load(b).header.run_id
    assert result.err == (
        f"sessiontape: error: the replay report {receipt} is of run {run_a}, the cassette {b} "
        f"of run {run_b}; pass the report of a replay of this cassette.\n"
    )
    # The pytest form: a list of reports, none of this run.
    receipt.write_text(json.dumps([report.to_dict(), report.to_dict()]))
    listed = cli("report", b, "--receipt", receipt, "-o", tmp_path / "x.html")
    assert listed.code == 2
    assert listed.err == (
        f"sessiontape: error: the receipt {receipt} holds 2 reports, none of run {run_b} (the "
        f"cassette {b}); pass the receipt of a run that replayed this cassette.\n"
    )
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("[1, 2]", "{receipt}, item 0 is not a replay report: expected a JSON object, found int."),
        ('"text"', "{receipt} is not a replay receipt: expected the JSON object"),
        ("{nope", "{receipt} is not a replay receipt: it is not JSON ("),
        ('{"run_id": "r"}', "{receipt} is not a replay report written by ReplayReport"),
    ],
)
def test_report_says_what_is_wrong_with_a_receipt(
    cli: Cli, cassette: Path, tmp_path: Path, content: str, error: str
) -> None:
    receipt = tmp_path / "replay.json"
    receipt.write_text(content)
    result = cli("report", cassette, "--receipt", receipt, "-o", tmp_path / "x.html")
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith("sessiontape: error: " + error.format(receipt=receipt))
    assert result.err.count("\n") == 1
    assert not (tmp_path / "x.html").exists()


def test_a_missing_receipt_or_output_folder_is_one_line(
    cli: Cli, cassette: Path, tmp_path: Path
) -> None:
    missing = cli("report", cassette, "--receipt", tmp_path / "no.json", "-o", tmp_path / "x.html")
    assert missing.code == 2
    assert missing.err == (
        f"sessiontape: error: cannot read the receipt {tmp_path / 'no.json'}: No such file or "
        "directory. Check the path.\n"
    )
    nowhere = tmp_path / "no" / "run.html"
    result = cli("report", cassette, "-o", nowhere)
    assert result.code == 2
    assert result.err == (
        f"sessiontape: error: cannot write {nowhere}: No such file or directory. Check that the "
        "directory exists and is writable.\n"
    )


def test_the_page_never_replaces_the_cassette(cli: Cli, cassette: Path) -> None:
    before = cassette.read_bytes()
    result = cli("report", cassette, "-o", cassette)
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        f"sessiontape: error: {cassette} is the cassette itself; name another file for the "
        "page (-o run.html).\n"
    )
    assert cassette.read_bytes() == before


def test_long_values_are_clipped_in_the_details(
    cli: Cli, record_session: Recorder, tmp_path: Path
) -> None:
    long = "x" * (REPORT_LIMIT + 100)
    tape = record_session(table={"git merge task/t1": (0, long, 2)})
    out = tmp_path / "run.html"
    assert cli("report", tape, "-o", out).code == 0
    _, details = unpack(out)
    # An output is clipped as the JSON the tape holds, never decoded (the page shows the
    # text it begins): its first bytes, and how many more.
    assert details[6]["stdout"] == {CLIPPED: '"' + "x" * (REPORT_LIMIT - 1), MORE: 102}
    assert details[6]["argv"] == ["git", "merge", "task/t1"]  # short values stay whole
    # A value that is not a string is clipped as JSON: its first bytes, and how many more.
    big = {"k": list(range(300))}
    raw = json.dumps(big, separators=(",", ":")).encode()
    entry = sessiontape.Call(seq=1, ts_ns=0, mono_ns=0, boundary="b", method="m", result=big)
    values = dict(zip(SCHEMA["call"], detail_values(entry), strict=True))
    assert values["result"] == {CLIPPED: raw[:REPORT_LIMIT].decode(), MORE: len(raw) - REPORT_LIMIT}


def test_a_crashed_tape_says_so(cli: Cli, record_session: Recorder, tmp_path: Path) -> None:
    tape = record_session(crash_after=1)
    out = tmp_path / "run.html"
    assert cli("report", tape, "-o", out).code == 0
    packed, _ = unpack(out)
    assert packed["cassette"]["crashed"] is True
    assert packed["cassette"]["notes"] == [
        "no session_end: the session crashed, or the tape was cut by 'sessiontape slice'."
    ]
    assert row(packed, 8) == {**row(packed, 8), "kind": "error", "status": "error"}


@pytest.mark.writes_invalid_tapes
def test_stored_bytes_that_are_not_text_are_shown_not_fatal(cli: Cli, tmp_path: Path) -> None:
    # The report keeps outputs as the JSON the tape holds, undecoded: a damaged output
    # (bytes that are not UTF-8, which load() refuses) is shown, marked, not a crash.
    from sessiontape.cassette import encode_entry

    header = sessiontape.SessionStart(
        seq=0, ts_ns=0, mono_ns=0, run_id="r", recorded_at="2026-11-25T00:00:00+00:00"
    )
    call = sessiontape.ProcessCall(seq=1, ts_ns=1, mono_ns=1, argv=["cat"], stdout="é" * 300)
    end = sessiontape.SessionEnd(seq=2, ts_ns=2, mono_ns=2)
    damaged = encode_entry(call).replace("é".encode(), b"\xcf(", 1)
    tape = tmp_path / "damaged.jsonl"
    tape.write_bytes(encode_entry(header) + damaged + encode_entry(end))
    with pytest.raises(sessiontape.CassetteError, match=r"damaged\.jsonl:2: not valid UTF-8"):
        sessiontape.load(tape)
    out = tmp_path / "damaged.html"
    result = cli("report", tape, "-o", out)
    assert (result.code, result.err) == (0, "")
    _, details = unpack(out)
    stdout = details[1]["stdout"]
    assert stdout[CLIPPED].startswith('"\ufffd(éé')  # the bad byte shown as U+FFFD
    assert stdout[MORE] > 0
