"""``sessiontape export``: OpenTelemetry OTLP/JSON traces with gen_ai attributes."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

import sessiontape

if TYPE_CHECKING:
    from .conftest import Cli, Editor, Recorder

WALL0 = 1_700_000_000_000_000_000


def _export(cli: Cli, path: Path, tmp_path: Path, *options: str) -> dict[str, Any]:
    out = tmp_path / "trace.json"
    result = cli("export", path, "-o", out, "--format", "otlp", *options)
    assert result.code == 0
    document: dict[str, Any] = json.loads(out.read_text())
    return document


def _spans(document: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


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
    argv = ["git", "-C", "/srv/repo", "checkout", "-b", "task/t1"]
    assert _attrs(checkout) == {
        "sessiontape.worker": "worker-1",
        "sessiontape.seq": "3",
        "sessiontape.boundary": "process",
        "thread.name": "MainThread",
        "process.executable.name": "git",
        "process.command_line": "git -C /srv/repo checkout -b task/t1",
        "process.command_args": {"values": [{"stringValue": a} for a in argv]},
        "process.exit.code": "0",
    }
    turn = by_seq["4"]
    assert (turn["name"], turn["kind"]) == ("invoke_agent agent", 1)  # in-process: INTERNAL
    assert _attrs(turn) == {
        "sessiontape.worker": "worker-1",
        "sessiontape.seq": "4",
        "sessiontape.boundary": "agent",
        "thread.name": "MainThread",
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "_OTHER",
        "gen_ai.agent.name": "agent",
        "gen_ai.usage.input_tokens": "100",
        "gen_ai.usage.output_tokens": "20",
        "sessiontape.method": "execute",
        "sessiontape.cost_usd": 0.01,
    }
    assert _attrs(root)["sessiontape.worker"] == "main"
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
    assert _attrs(turn)["error.type"] == "timeout"
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


def test_the_provider_and_model_come_from_the_turn_or_the_option(
    cli: Cli, cassette: Path, tmp_path: Path, edit: Editor
) -> None:
    spans = _spans(_export(cli, cassette, tmp_path, "--gen-ai-provider", "anthropic"))
    turns = [s for s in spans if s["name"] == "invoke_agent agent"]
    assert [_attrs(s)["gen_ai.provider.name"] for s in turns] == ["anthropic", "anthropic"]
    assert all("gen_ai.request.model" not in _attrs(s) for s in turns)
    # A result that names its model and provider wins over the option.
    edit.set(
        cassette,
        4,
        result={"state": "done", "model": "claude-sonnet-4", "provider": "anthropic.direct"},
    )
    spans = _spans(_export(cli, cassette, tmp_path, "--gen-ai-provider", "anthropic"))
    turn = _attrs(next(s for s in spans if s["spanId"] == "0000000000000004"))
    assert (turn["gen_ai.provider.name"], turn["gen_ai.request.model"]) == (
        "anthropic.direct", "claude-sonnet-4"
    )  # fmt: skip


# -- the official OTLP schema ---------------------------------------------------------

CORPUS = Path(__file__).resolve().parents[2] / "cassettes"


def _otlp_ids_as_base64(node: Any) -> Any:
    """OTLP/JSON writes trace and span ids in hex, where protobuf's JSON mapping has base64
    for bytes: the one difference the OTLP specification makes. Undo it, nothing else."""
    if isinstance(node, dict):
        return {
            key: base64.b64encode(bytes.fromhex(value)).decode()
            if key in ("traceId", "spanId", "parentSpanId")
            else _otlp_ids_as_base64(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_otlp_ids_as_base64(item) for item in node]
    return node


def _proto_attrs(span: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for attribute in span.attributes:
        which = attribute.value.WhichOneof("value")
        found[attribute.key] = getattr(attribute.value, which)
    return found


def test_the_export_parses_as_an_otlp_request_and_nests_the_model_process(
    cli: Cli, tmp_path: Path
) -> None:
    """The corpus's gardener tape, through the official protobuf schema: no unknown field,
    one root span, and each model process a child of the agent turn that ran it."""
    out = tmp_path / "trace.json"
    assert cli("export", CORPUS / "gardener-full.jsonl", "-o", out).code == 0
    text = json.dumps(_otlp_ids_as_base64(json.loads(out.read_text(encoding="utf-8"))))
    request = json_format.Parse(text, ExportTraceServiceRequest())  # unknown fields raise
    (resource_spans,) = request.resource_spans
    (scope_spans,) = resource_spans.scope_spans
    spans = list(scope_spans.spans)
    recording = sessiontape.load(CORPUS / "gardener-full.jsonl")
    assert len(spans) == 1 + len(recording.calls)
    assert {len(s.trace_id) for s in spans} == {16}
    assert {len(s.span_id) for s in spans} == {8}
    roots = [s for s in spans if not s.parent_span_id]
    assert [r.name for r in roots] == ["session gardener"]
    by_id = {s.span_id: s for s in spans}
    assert all(s.parent_span_id in by_id for s in spans if s.parent_span_id)

    models = [s for s in spans if _proto_attrs(s).get("process.command_line") == "sh -c cat"]
    assert len(models) == sum(1 for c in recording.calls if isinstance(c, sessiontape.AgentTurn))
    for model in models:
        turn = by_id[model.parent_span_id]
        assert turn.name == "invoke_agent agent"
        assert turn.kind == Span.SpanKind.SPAN_KIND_INTERNAL
        assert model.kind == Span.SpanKind.SPAN_KIND_CLIENT
        assert turn.start_time_unix_nano <= model.start_time_unix_nano
        assert model.end_time_unix_nano <= turn.end_time_unix_nano
        attrs, process = _proto_attrs(turn), _proto_attrs(model)
        assert attrs["sessiontape.worker"] == process["sessiontape.worker"]
        assert attrs["gen_ai.operation.name"] == "invoke_agent"
        assert attrs["gen_ai.provider.name"] == "sessiontape.scripted"
        assert attrs["gen_ai.request.model"] == "gardener-scripted-1"
        assert attrs["gen_ai.usage.input_tokens"] > 0
        assert attrs["gen_ai.usage.output_tokens"] > 0
        assert "gen_ai.system" not in attrs  # deprecated for gen_ai.provider.name
        assert (process["process.executable.name"], process["process.exit.code"]) == ("sh", 0)
        assert [v.string_value for v in process["process.command_args"].values] == [
            "sh", "-c", "cat"
        ]  # fmt: skip
