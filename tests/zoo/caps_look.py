"""Capabilities that show a tape: ``report`` and ``serve`` (the page states the failure),
and ``export`` (OpenTelemetry and Chrome trace)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import sessiontape
from interrupts import ctrl_c_interrupts
from sessiontape.cli import _viewer

from .caps_chaos import first_failing_seed
from .harness import Cell


def failing_receipt(cell: Cell) -> tuple[Path, Path, dict[str, Any]]:
    """A tape, the receipt of its failing replay under the ``changed`` code, and the
    first mismatch of that replay."""
    tape = cell.recorded(into=cell.project.path / "tapes")
    receipt = cell.fresh("receipt") / "receipt.json"
    result, _ = cell.pytest(
        "--replay", str(tape), f"--sessiontape-report={receipt}", variant="changed"
    )
    result.assert_outcomes(failed=1)
    (report,) = json.loads(receipt.read_text(encoding="utf-8"))
    first: dict[str, Any] = report["mismatches"][0]
    return tape, receipt, first


def page_data(page: Path) -> dict[str, Any]:
    """What the page shows of the cassette and its receipt (the page's own data)."""
    blobs = _viewer.embedded(page.read_text(encoding="utf-8"))
    cassette: dict[str, Any] = json.loads(blobs["st-rows"])["cassette"]
    return cassette


def report(cell: Cell) -> None:
    """``sessiontape report --receipt`` of a failing replay: the page leads with that
    failure (its first mismatch is the replay's first)."""
    tape, receipt, first = failing_receipt(cell)
    page = cell.fresh("page") / "run.html"
    code, _ = cli_json_free("report", str(tape), "--receipt", str(receipt), "-o", str(page))
    assert code == 0
    shown = page_data(page)["receipt"]["mismatches"][0]
    assert (shown["kind"], shown["seq"]) == (first["kind"], first["seq"])


def report_chaos(cell: Cell) -> None:
    """The page of a failing chaos schedule's receipt states the failure chaos found."""
    race = cell.program.race
    assert race is not None
    found = first_failing_seed(cell, "racy")
    assert found is not None, "no schedule found the race"
    seed, _ = found
    tape = cell.recorded(into=cell.project.path / "tapes")
    receipt = cell.fresh("receipt") / "receipt.json"
    cell.pytest(
        "--replay",
        str(tape),
        "--sessiontape-chaos-seed",
        str(seed),
        f"--sessiontape-report={receipt}",
        variant="racy",
    )[0].assert_outcomes(failed=1)
    page = cell.fresh("page") / "chaos.html"
    code, _ = cli_json_free("report", str(tape), "--receipt", str(receipt), "-o", str(page))
    assert code == 0
    data = page_data(page)
    assert race in json.dumps(data["receipt"]["mismatches"][:1]), data["receipt"]["mismatches"][:2]


def cli_json_free(*argv: str) -> tuple[int, str]:
    """``sessiontape ARGV`` (a command without ``--json``) in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-m", "sessiontape", *argv], capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout + done.stderr


def serve(cell: Cell) -> None:
    """``sessiontape serve --receipt`` of a failing replay: the cassette's page data
    (the JSON API the page reads) leads with that failure; the page itself is served."""
    tape, receipt, first = failing_receipt(cell)
    # Started interruptible: the SIGINT that stops it must not be ignored by inheritance.
    with ctrl_c_interrupts():
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sessiontape",
                "serve",
                str(tape.parent),
                "--receipt",
                str(receipt),
                "--port",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            assert " at http://127.0.0.1:" in line, (
                line + server.stderr.read() if server.stderr else ""
            )
            url = line.split(" at ")[1].split()[0]
            name = urllib.parse.quote(tape.name, safe="")
            with urllib.request.urlopen(url + f"api/cassettes/{name}", timeout=60) as answer:
                data = json.load(answer)
            with urllib.request.urlopen(url, timeout=60) as answer:
                assert answer.status == 200
                assert "<title>" in answer.read().decode()
        finally:
            server.send_signal(signal.SIGINT)
            server.communicate(timeout=60)
    shown = data["receipt"]["mismatches"][0]
    assert (shown["kind"], shown["seq"]) == (first["kind"], first["seq"])


def export(cell: Cell) -> None:
    """``sessiontape export``: one span per boundary call under one root, each process
    span naming its program; the Chrome trace has an event per call."""
    tape = cell.recorded()
    recording = sessiontape.load(tape)
    calls = list(recording.calls)
    otlp = tape.parent / "otlp.json"
    code, text = cli_json_free("export", str(tape), "-o", str(otlp))
    assert code == 0, text
    spans = [
        span
        for resource in json.loads(otlp.read_text())["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]
    assert len(spans) == len(calls) + 1
    roots = [s for s in spans if not s.get("parentSpanId")]
    assert len(roots) == 1
    names = {
        a["key"]: a["value"]
        for s in spans
        for a in s.get("attributes", [])
        if a["key"] == "process.executable.name"
    }
    processes = [e for e in calls if isinstance(e, sessiontape.ProcessCall)]
    assert bool(names) == bool(processes)
    trace = tape.parent / "trace.json"
    code, text = cli_json_free("export", str(tape), "-o", str(trace), "--format", "chrome-trace")
    assert code == 0, text
    events = json.loads(trace.read_text())
    listed = events["traceEvents"] if isinstance(events, dict) else events
    complete = [e for e in listed if e.get("ph") == "X"]
    assert len(complete) >= len(calls)
