"""Export a cassette as OpenTelemetry traces (OTLP/JSON), for Jaeger, Tempo, Honeycomb...

(``--format chrome-trace`` writes the Trace Event Format instead: see ``_chrome.py``.)

The session is one trace: its id is the run id (or, if that is not 32 hex digits, derived
from it), and one root span covers the whole session. Every boundary call is a span whose
id is its seq in 16 hex digits and whose parent is the call it was made in (the root span
for top-level calls): the model process an agent turn ran is a child of that turn's span.
Span times are the recorded wall-clock times.

Attributes follow the OpenTelemetry semantic conventions. Every span has
``sessiontape.worker``, ``sessiontape.seq``, ``sessiontape.boundary`` and ``thread.name``.
A process call has ``process.executable.name``, ``process.command_line``,
``process.command_args`` and ``process.exit.code``. An agent turn is an ``invoke_agent``
span (GenAI conventions: ``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.agent.name``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``,
``gen_ai.usage.output_tokens`` and the cache token counts). The model and the provider are
read from the turn's result, or its request, under ``model`` and ``provider``; a turn that
names no provider gets the one given with --gen-ai-provider (default _OTHER). A call that
raised, timed out, could not start or exited non-zero has an error status and
``error.type``, its error class (``auth``, ``rate_limit``, ``timeout``, ``validation``,
``server``, ``spawn``, ``exit``, ``other``: low-cardinality, as the conventions ask);
one that raised also has an ``exception`` event with the exception's own type. The
session's crash is an error status and an ``exception`` event on the root span, and
store snapshots are events on it too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any, Final

import msgspec

from .._version import __version__
from ..cassette import (
    AgentTurn,
    Call,
    CallEntry,
    ErrorInfo,
    ProcessCall,
    Recording,
    StoreMutation,
    StoreSnapshot,
    boundary_of,
)
from ._common import (
    Progress,
    command_name,
    read_recording,
    recorded_duration,
    write_atomic,
)
from ._failures import classifier

__all__ = [
    "SUMMARY",
    "UNKNOWN_PROVIDER",
    "add_arguments",
    "otlp_json",
    "run",
    "span_id",
    "trace_id",
]

SUMMARY: Final = "export a cassette as OpenTelemetry OTLP/JSON traces or a Chrome trace"

# OTLP enums, as numbers in OTLP/JSON.
_KIND_INTERNAL: Final = 1
_KIND_CLIENT: Final = 3
_STATUS_ERROR: Final = 2

#: ``gen_ai.provider.name`` of agent turns that name no provider (and no --gen-ai-provider).
UNKNOWN_PROVIDER: Final = "_OTHER"

_HEX32: Final = re.compile(r"[0-9a-fA-F]{32}")
# Recorded data put into a string attribute (the outcome) is cut at this length.
_MAX_ATTRIBUTE: Final = 4096


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``export`` options."""
    parser.add_argument("path", metavar="PATH", help="the cassette to export")
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT.json", help="where to write the traces"
    )
    parser.add_argument(
        "--format",
        choices=["otlp", "chrome-trace"],
        default="otlp",
        help="the output format: otlp (OpenTelemetry OTLP/JSON, the default) or chrome-trace "
        "(the Trace Event Format JSON that Perfetto and chrome://tracing open: a lane per worker)",
    )
    parser.add_argument(
        "--gen-ai-provider",
        default=UNKNOWN_PROVIDER,
        metavar="NAME",
        help="gen_ai.provider.name of agent turns whose result names no provider, such as "
        f"anthropic or openai (default: {UNKNOWN_PROVIDER})",
    )


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 is a string in OTLP/JSON
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attributes(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"key": key, "value": _value(value)} for key, value in pairs.items() if value is not None
    ]


def trace_id(run_id: str) -> str:
    """The trace id of a run: its id when that is 32 hex digits (a uuid4), else a digest."""
    if _HEX32.fullmatch(run_id):
        return run_id.lower()
    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def span_id(seq: int) -> str:
    """The span id of the call with this seq."""
    return f"{seq:016x}"


def _root_span_id(run_id: str) -> str:
    # Not derived from seq 0: an all-zero span id is invalid in OpenTelemetry.
    return hashlib.sha256(f"{run_id}:session".encode()).hexdigest()[:16]


def _exception(info: ErrorInfo, when: int) -> dict[str, Any]:
    """An OpenTelemetry ``exception`` span event."""
    attributes = {
        "exception.type": info.type,
        "exception.message": info.message,
        "exception.stacktrace": info.traceback,
    }
    return {"timeUnixNano": str(when), "name": "exception", "attributes": _attributes(attributes)}


def _named(call: AgentTurn, key: str) -> str | None:
    """The string an agent turn's result (or else its request) holds under ``key``."""
    request = call.args[0] if call.args else None
    for source in (call.result, request, call.kwargs):
        if isinstance(source, Mapping):
            value = source.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _process_attributes(call: ProcessCall) -> dict[str, Any]:
    argv = list(call.argv)
    return {
        "process.executable.name": argv[0].replace("\\", "/").rsplit("/", 1)[-1] if argv else None,
        "process.command_line": shlex.join(argv),
        "process.command_args": argv,
        "process.exit.code": call.returncode,
    }


def _agent_attributes(call: AgentTurn, provider: str) -> dict[str, Any]:
    usage = call.usage
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": _named(call, "provider") or provider,
        "gen_ai.agent.name": call.agent,
        "gen_ai.request.model": _named(call, "model"),
        "gen_ai.usage.input_tokens": usage.input_tokens if usage else None,
        "gen_ai.usage.output_tokens": usage.output_tokens if usage else None,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens if usage else None,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens if usage else None,
        "sessiontape.method": call.method,
        "sessiontape.cost_usd": usage.cost_usd if usage else None,
    }


def _call_span(
    call: CallEntry, parent_id: str, trace: str, provider: str, error_class: str | None
) -> dict[str, Any]:
    boundary = boundary_of(call)
    attributes: dict[str, Any] = {
        "sessiontape.worker": call.worker,
        "sessiontape.seq": call.seq,
        "sessiontape.boundary": boundary,
        "thread.name": call.thread,
    }
    error: ErrorInfo | None
    status_message: str | None = None
    kind = _KIND_CLIENT
    if isinstance(call, ProcessCall):
        name = command_name(call.argv)
        attributes |= _process_attributes(call)
        error = call.spawn_error
        if call.timed_out:
            status_message = f"timed out after {call.timeout}s"
        elif error is None and call.returncode:
            status_message = f"exit {call.returncode}"
    elif isinstance(call, AgentTurn):
        # An adapter the application runs in its own process: the GenAI conventions'
        # "invoke agent internal" span.
        name = f"invoke_agent {call.agent}"
        attributes |= _agent_attributes(call, provider)
        error = call.error
        kind = _KIND_INTERNAL
    elif isinstance(call, StoreMutation):
        name = f"{call.store}.{call.operation}"
        attributes |= {"sessiontape.store": call.store, "sessiontape.method": call.operation}
        error = call.error
        kind = _KIND_INTERNAL
    else:
        assert isinstance(call, Call)
        name = f"{call.boundary}.{call.method}"
        attributes |= {"sessiontape.method": call.method, "sessiontape.mode": call.mode}
        error = call.error
        kind = _KIND_INTERNAL if call.mode == "verify" else _KIND_CLIENT
    end = call.ts_ns + call.duration_ns
    if error is not None:
        status_message = f"{error.type}: {error.message}"
    # error.type: a low-cardinality class of the failure (the exception's own type is
    # the exception event's exception.type).
    attributes["error.type"] = error_class
    span: dict[str, Any] = {
        "traceId": trace,
        "spanId": span_id(call.seq),
        "parentSpanId": parent_id,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(call.ts_ns),
        "endTimeUnixNano": str(end),
        "attributes": _attributes(attributes),
    }
    if error is not None:
        span["events"] = [_exception(error, end)]
    if status_message is not None:
        span["status"] = {"code": _STATUS_ERROR, "message": status_message}
    return span


def _root_span(recording: Recording, trace: str) -> dict[str, Any]:
    header = recording.header
    end = header.ts_ns + recorded_duration(recording)
    events = [
        {
            "timeUnixNano": str(entry.ts_ns),
            "name": "sessiontape.store_snapshot",
            "attributes": _attributes(
                {"sessiontape.store": entry.store, "sessiontape.seq": entry.seq}
            ),
        }
        for entry in recording.entries
        if isinstance(entry, StoreSnapshot)
    ]
    outcome = None
    if recording.end is not None:
        outcome = json.dumps(recording.end.outcome, ensure_ascii=False)[:_MAX_ATTRIBUTE]
    span: dict[str, Any] = {
        "traceId": trace,
        "spanId": _root_span_id(header.run_id),
        "name": f"session {header.entrypoint or header.run_id}",
        "kind": _KIND_INTERNAL,
        "startTimeUnixNano": str(header.ts_ns),
        "endTimeUnixNano": str(end),
        "attributes": _attributes(
            {
                "sessiontape.run_id": header.run_id,
                "sessiontape.seq": header.seq,
                "sessiontape.level": header.level,
                "sessiontape.outcome": outcome,
                "sessiontape.worker": header.worker,
                "thread.name": header.thread,
            }
        ),
    }
    error = recording.error
    if error is not None:
        events.append(
            _exception(
                ErrorInfo(type=error.type, message=error.message, traceback=error.traceback),
                error.ts_ns,
            )
        )
        span["status"] = {"code": _STATUS_ERROR, "message": f"{error.type}: {error.message}"}
    elif recording.crashed:
        span["status"] = {
            "code": _STATUS_ERROR,
            "message": "the session did not end (no session_end)",
        }
    if events:
        span["events"] = events
    return span


def _spans(recording: Recording, provider: str) -> Iterator[dict[str, Any]]:
    """The root span, then one span per boundary call in seq order."""
    header = recording.header
    trace = trace_id(header.run_id)
    root_id = _root_span_id(header.run_id)
    calls = {call.seq for call in recording.calls}
    classify = classifier()
    yield _root_span(recording, trace)
    for call in Progress("export", len(recording.calls)).iter(recording.calls):
        parent = call.parent
        parent_id = span_id(parent) if parent is not None and parent in calls else root_id
        yield _call_span(call, parent_id, trace, provider, classify(call))


def _resource(recording: Recording) -> dict[str, Any]:
    header = recording.header
    entrypoint = (header.entrypoint or "").split()
    attributes = {
        "service.name": entrypoint[0] if entrypoint else "unknown_service",
        "service.version": header.app_version,
        "host.name": header.host or None,
        "os.description": header.platform or None,
        "process.runtime.name": "python",
        "process.runtime.version": header.python or None,
        "sessiontape.run_id": header.run_id,
    }
    return {"attributes": _attributes(attributes)}


def otlp_json(recording: Recording, *, provider: str = UNKNOWN_PROVIDER) -> Iterator[bytes]:
    """The recording as an OTLP/JSON ``ExportTraceServiceRequest``, in chunks.

    One resource, one scope, every span. Spans are encoded one at a time, so a tape of
    hundreds of thousands of calls never exists as one document in memory. ``provider``
    is the ``gen_ai.provider.name`` of agent turns that name none.
    """
    encode = msgspec.json.encode
    scope = {"name": "sessiontape", "version": __version__}
    yield b'{"resourceSpans":[{"resource":%s,"scopeSpans":[{"scope":%s,"spans":[' % (
        encode(_resource(recording)),
        encode(scope),
    )
    for index, span in enumerate(_spans(recording, provider)):
        yield encode(span) if index == 0 else b"," + encode(span)
    yield b"]}]}]}"


def run(args: argparse.Namespace) -> int:
    """``sessiontape export``."""
    recording = read_recording(args.path)
    if args.format == "chrome-trace":
        from ._chrome import chrome_trace

        write_atomic(args.output, chrome_trace(recording))
        workers = len(recording.worker_ids())
        print(
            f"wrote {args.output}: {len(recording.calls)} calls on {workers} worker lane(s); "
            "open it in https://ui.perfetto.dev or chrome://tracing."
        )
        return 0
    write_atomic(args.output, otlp_json(recording, provider=args.gen_ai_provider))
    spans = 1 + len(recording.calls)
    print(f"wrote {args.output}: {spans} spans in trace {trace_id(recording.header.run_id)}.")
    return 0
