"""``sessiontape export``: OpenTelemetry OTLP/JSON traces with gen_ai attributes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sessiontape

if TYPE_CHECKING:
    from .conftest import Cli, Recorder

WALL0 = 1_700_000_000_000_000_000


def _export(cli: Cli, path: Path, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "trace.json"
    result = cli("export", path, "-o", out, "--format", "otlp")
    assert result.code == 0
    document: dict[str, Any] = json.loads(out.read_text())
    return document


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def test_export_spans_parents_and_attributes(cli: Cli, cassette: Path, tmp_path: Path) -> None:
    run_id = sessiontape.load(cassette).header.run_id
    out = tmp_path / "trace.json"
    result = cli("export", cassette, "-o", out)
    assert result.lines == [f"wrote {out}: 13 spans in trace {run_id}."]
    document = json.loads(out.read_text())
    (resource_spans,) = document["resourceSpans"]
    assert _attrs(resource_spans["resource"])["service.name"] == "app"
    (scope,) = resource_spans["scopeSpans"]
    assert scope["scope"] == {"name": "sessiontape", "version": sessiontape.__version__}
    spans = scope["spans"]
    assert {s["traceId"] for s in spans} == {run_id}
    root = spans[0]
    assert "parentSpanId" not in root
    assert (root["startTimeUnixNano"], root["endTimeUnixNano"]) == (
        str(WALL0), str(WALL0 + 33_000_000)
    )  # fmt: skip
    assert [e["name"] for e in root["events"]] == ["sessiontape.store_snapshot"]
    by_seq = {_attrs(s)["sessiontape.seq"]: s for s in spans[1:]}
    assert sorted(by_seq, key=int) == [str(n) for n in range(2, 14)]
    checkout = by_seq["3"]
    assert checkout["spanId"] == "0000000000000003"
    assert checkout["parentSpanId"] == root["spanId"]
    assert checkout["name"] == "git checkout"
    assert checkout["kind"] == 3
    assert (checkout["startTimeUnixNano"], checkout["endTimeUnixNano"]) == (
        str(WALL0 + 1_000_000), str(WALL0 + 3_000_000)
    )  # fmt: skip
    attrs = _attrs(checkout)
    assert attrs["process.command_args"] == {
        "values": [
            {"stringValue": a} for a in ["git", "-C", "/srv/repo", "checkout", "-b", "task/t1"]
        ]
    }
    assert (attrs["process.exit.code"], attrs["sessiontape.worker"], attrs["thread.name"]) == (
        "0", "worker-1", "MainThread"
    )  # fmt: skip
    turn = by_seq["4"]
    assert turn["name"] == "invoke_agent agent"
    assert _attrs(turn) == {
        "sessiontape.worker": "worker-1",
        "sessiontape.seq": "4",
        "sessiontape.boundary": "agent",
        "thread.name": "MainThread",
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.system": "agent",
        "gen_ai.agent.name": "agent",
        "sessiontape.method": "execute",
        "gen_ai.usage.input_tokens": "100",
        "gen_ai.usage.output_tokens": "20",
        "sessiontape.cost_usd": 0.01,
    }
    assert by_seq["5"]["parentSpanId"] == "0000000000000004"  # claude ran inside the turn
    store = by_seq["2"]
    assert (store["name"], store["kind"]) == ("store.claim", 1)
    assert all("status" not in s for s in spans)


def test_export_marks_a_crash_as_an_error(
    cli: Cli, record_session: Recorder, tmp_path: Path
) -> None:
    path = record_session(crash_after=1)
    root = _export(cli, path, tmp_path)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert root["status"] == {
        "code": 2,
        "message": "RuntimeError: worker worker-2 lost its worktree",
    }
    exception = root["events"][-1]
    assert exception["name"] == "exception"
    assert exception["timeUnixNano"] == str(WALL0 + 16_000_000)
    attrs = _attrs(exception)
    assert attrs["exception.type"] == "RuntimeError"
    assert attrs["exception.message"] == "worker worker-2 lost its worktree"
    assert "Traceback (most recent call last)" in attrs["exception.stacktrace"]


def test_export_a_failed_call_has_an_error_status(cli: Cli, cassette: Path, tmp_path: Path) -> None:
    lines = cassette.read_text().splitlines()
    lines[5] = lines[5].replace(
        '"error":null', '"error":{"type":"TimeoutError","message":"agent took too long"}'
    )
    assert '"seq":4,' in lines[5]
    cassette.write_text("\n".join(lines) + "\n")
    spans = _export(cli, cassette, tmp_path)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    turn = next(s for s in spans if s["spanId"] == "0000000000000004")
    assert turn["status"] == {"code": 2, "message": "TimeoutError: agent took too long"}
    assert turn["events"] == [
        {
            "timeUnixNano": str(WALL0 + 13_000_000),
            "name": "exception",
            "attributes": [
                {"key": "exception.type", "value": {"stringValue": "TimeoutError"}},
                {"key": "exception.message", "value": {"stringValue": "agent took too long"}},
            ],
        }
    ]
