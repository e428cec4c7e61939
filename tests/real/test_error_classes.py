"""Real failures, recorded through sessiontape, and the error classes the tools give them.

A missing program, a ``git`` that exits non-zero, a ``subprocess.TimeoutExpired``, and an
agent adapter whose LLM client (the real ``openai`` and ``anthropic`` SDKs) raises what it
raises for a 401, 429, 400 and 500 answer. The answers come from the SDK's own HTTP
client with an in-process transport: the SDK builds its exceptions from the status code
as it does against the real service, and no network is used. ``stats --json``, ``show
--json`` and the OpenTelemetry export (parsed with the official protobuf schema) must
carry the classes; the tape replays in another directory without starting a process.
"""

from __future__ import annotations

import base64
import io
import json
import shutil
import subprocess
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape.cli import main

from .conftest import Spawns

httpx2 = pytest.importorskip("httpx2")
openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

GIT = shutil.which("git")
STATUSES = (401, 429, 400, 500)


def _answer(request: Any) -> Any:
    """The LLM service: the status code the request asks for, with an error body."""
    code = int(request.headers["x-want-status"])
    body = {"type": "error", "error": {"type": "x", "message": f"refused with {code}"}}
    return httpx2.Response(code, json=body)


class LlmAgent:
    """An agent adapter calling a real LLM client library; it lets the client's errors out."""

    def __init__(self) -> None:
        transport = httpx2.MockTransport(_answer)
        self.openai = openai.OpenAI(
            api_key="sk-test", base_url="http://llm.invalid/v1", max_retries=0,
            http_client=httpx2.Client(transport=transport),
        )  # fmt: skip
        self.anthropic = anthropic.Anthropic(
            api_key="sk-ant-test", base_url="http://llm.invalid", max_retries=0,
            http_client=httpx2.Client(transport=transport),
        )  # fmt: skip

    def execute(self, sdk: str, status: int) -> dict[str, Any]:
        headers = {"x-want-status": str(status)}
        messages = [{"role": "user", "content": "hi"}]
        if sdk == "openai":
            self.openai.chat.completions.create(model="m", messages=messages, extra_headers=headers)
        else:
            self.anthropic.messages.create(
                model="m", max_tokens=8, messages=messages, extra_headers=headers
            )
        return {"state": "done"}


def _program(work: Path, agent: Any) -> list[str]:
    """Fail in every way once; return the exception type names the application saw."""
    seen: list[str] = []
    try:
        subprocess.run(["sessiontape-no-such-program"], capture_output=True)
    except OSError as exc:
        seen.append(type(exc).__name__)
    done = subprocess.run(
        [GIT or "git", "-C", str(work), "rev-parse", "--verify", "no-such-ref"],
        capture_output=True,
        text=True,
    )
    seen.append(f"exit {done.returncode}")
    try:
        subprocess.run(["sleep", "5"], timeout=0.2)
    except subprocess.TimeoutExpired as exc:
        seen.append(type(exc).__name__)
    for sdk in ("openai", "anthropic"):
        for status in STATUSES:
            try:
                agent.execute(sdk, status)
            except Exception as exc:  # each SDK's own APIStatusError subclasses
                seen.append(type(exc).__name__)
    return seen


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([str(a) for a in argv]) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    if GIT is None:
        pytest.skip("git is not installed")
    base = tmp_path_factory.mktemp("errors")
    then = base / "then"
    then.mkdir()
    subprocess.run([GIT, "init", "-q", str(then)], check=True)
    cassette = base / "errors.jsonl"
    with sessiontape.record(cassette, roots={"work": str(then)}) as tape:
        agent = tape.agent(LlmAgent())
        with tape.patch_subprocess():
            seen = _program(then, agent)
    return cassette, seen


EXPECTED = ["spawn", "exit", "timeout"] + ["auth", "rate_limit", "validation", "server"] * 2


def test_the_application_saw_real_failures(recorded: tuple[Path, list[str]]) -> None:
    _, seen = recorded
    statuses = ["AuthenticationError", "RateLimitError", "BadRequestError", "InternalServerError"]
    assert seen == ["FileNotFoundError", "exit 128", "TimeoutExpired", *statuses, *statuses]


def test_show_json_classifies_each_failure(recorded: tuple[Path, list[str]]) -> None:
    cassette, _ = recorded
    shown = json.loads(_cli("show", cassette, "--json"))["entries"]
    calls = [e for e in shown if e["boundary"] is not None]
    # The SDKs run a program or two of their own (platform probes), which succeed.
    assert [e["error_class"] for e in calls if e["error_class"]] == EXPECTED
    assert all("-> exit 0 (" in e["what"] for e in calls if not e["error_class"])
    text = _cli("show", cassette)
    assert "sessiontape-no-such-program -> FileNotFoundError" in text
    assert text.count("! rate_limit") == 2


def test_stats_json_counts_classes_per_boundary_and_worker(
    recorded: tuple[Path, list[str]],
) -> None:
    cassette, _ = recorded
    errors = json.loads(_cli("stats", cassette, "--json"))["errors"]
    assert errors["total"] == 11
    assert {name: c["count"] for name, c in errors["classes"].items()} == {
        "auth": 2, "rate_limit": 2, "timeout": 1, "validation": 2, "server": 2,
        "spawn": 1, "exit": 1,
    }  # fmt: skip
    assert list(errors["classes"]) == [
        "auth", "rate_limit", "timeout", "validation", "server", "spawn", "exit",
    ]  # fmt: skip
    process, agent = errors["boundaries"]["process"], errors["boundaries"]["agent"]
    assert process["classes"] == {"spawn": 1, "exit": 1, "timeout": 1}
    assert agent["classes"] == {"auth": 2, "rate_limit": 2, "validation": 2, "server": 2}
    assert agent["last"]["error"].startswith("anthropic.InternalServerError: Error code: 500")
    assert process["last"]["error"] == "timed out after 0.2s"
    assert errors["workers"]["main"]["count"] == 11
    last_auth = errors["classes"]["auth"]["last"]
    assert (last_auth["boundary"], last_auth["class"]) == ("agent", "auth")
    assert last_auth["error"].startswith("anthropic.AuthenticationError: Error code: 401")


def test_the_otel_export_sets_error_type_to_the_class(
    recorded: tuple[Path, list[str]], tmp_path: Path
) -> None:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    cassette, _ = recorded
    out = tmp_path / "trace.json"
    _cli("export", cassette, "-o", out)
    document = json.loads(out.read_text())

    def ids_as_base64(node: Any) -> Any:  # OTLP/JSON's hex ids, as protobuf's JSON has them
        if isinstance(node, dict):
            return {
                k: base64.b64encode(bytes.fromhex(v)).decode()
                if k in ("traceId", "spanId", "parentSpanId")
                else ids_as_base64(v)
                for k, v in node.items()
            }
        return [ids_as_base64(v) for v in node] if isinstance(node, list) else node

    request = json_format.Parse(json.dumps(ids_as_base64(document)), ExportTraceServiceRequest())
    spans = list(request.resource_spans[0].scope_spans[0].spans)[1:]  # after the root
    classes = []
    for span in spans:
        attrs = {a.key: a.value.string_value for a in span.attributes}
        failed = span.status.code == span.status.STATUS_CODE_ERROR
        assert failed == ("error.type" in attrs)
        if failed:
            classes.append(attrs["error.type"])
    assert classes == EXPECTED
    # The exception's own type stays on its exception event.
    events = [
        {a.key: a.value.string_value for a in e.attributes}["exception.type"]
        for span in spans
        for e in span.events
    ]
    assert events[0] == "FileNotFoundError"
    assert events[1:] == [f"{sdk}.{name}" for sdk in ("openai", "anthropic") for name in (
        "AuthenticationError", "RateLimitError", "BadRequestError", "InternalServerError"
    )]  # fmt: skip


def test_the_tape_replays_elsewhere_without_a_process(
    recorded: tuple[Path, list[str]], tmp_path: Path
) -> None:
    cassette, seen = recorded
    now = tmp_path / "now"
    now.mkdir()
    with (
        Spawns().counting() as spawns,
        sessiontape.replay(cassette, roots={"work": str(now)}) as tape,
    ):
        agent = tape.agent(LlmAgent())
        with tape.patch_subprocess():
            replayed = _program(now, agent)
        report = tape.finish()
    assert spawns.started == []
    assert report.ok, report.render()
    assert replayed[:3] == seen[:3]


SHELL_FAILURES = [
    ("echo 'gh: HTTP 503: Service Unavailable' >&2; exit 1", "server"),
    ("echo 'API rate limit exceeded for user' >&2; exit 1", "rate_limit"),
    ("echo 'fatal: Authentication failed for repo' >&2; exit 128", "auth"),
    ("exit 124", "timeout"),
    ("sessiontape-no-such-command", "spawn"),  # the shell's 127
    ("exit 3", "exit"),
]


class _ExitThreeIsValidation:
    """A project's rule: its linter's exit 3 means the request was rejected."""

    @staticmethod
    def sessiontape_classify_error(entry: Any) -> str | None:
        if isinstance(entry, sessiontape.ProcessCall) and entry.returncode == 3:
            return "validation"
        return None


def test_output_exit_codes_and_the_hook_decide_a_process_failure(tmp_path: Path) -> None:
    cassette = tmp_path / "shell.jsonl"
    with sessiontape.record(cassette) as tape, tape.patch_subprocess():
        for script, _ in SHELL_FAILURES:
            subprocess.run(["sh", "-c", script], capture_output=True)
    shown = json.loads(_cli("show", cassette, "--json"))["entries"]
    expected = [error_class for _, error_class in SHELL_FAILURES]
    assert [e["error_class"] for e in shown if e["boundary"]] == expected
    from sessiontape import _hooks

    plugin = _ExitThreeIsValidation()
    _hooks.register(plugin, "exit-three")
    try:
        shown = json.loads(_cli("show", cassette, "--json"))["entries"]
    finally:
        _hooks.unregister(plugin)
    assert [e["error_class"] for e in shown if e["boundary"]] == [*expected[:-1], "validation"]


def test_the_viewer_filters_by_error_class(
    recorded: tuple[Path, list[str]], tmp_path: Path
) -> None:
    from sessiontape.cli._catalog import Loaded, Query, QueryError
    from sessiontape.cli._viewer import embedded

    cassette, _ = recorded
    loaded = Loaded("errors.jsonl", sessiontape.load(cassette), None, None)
    page = loaded.page(Query.from_params({"error": ["rate_limit"]}), 0, 10)
    assert [(r["text"].split(" -> ")[1].split(":")[0], r["error_class"]) for r in page["rows"]] == [
        ("openai.RateLimitError", "rate_limit"), ("anthropic.RateLimitError", "rate_limit"),
    ]  # fmt: skip
    assert loaded.data["error_classes"]["validation"] == 2
    with pytest.raises(QueryError, match="unknown error class 'slow'; use one of auth, "):
        Query.from_params({"error": ["slow"]})
    # The report embeds the classes sparsely: the rows of failed calls and their classes.
    out = tmp_path / "errors.html"
    _cli("report", cassette, "-o", out)
    columns = json.loads(embedded(out.read_text())["st-rows"])["columns"]
    classes = [columns["error_classes"][c] for c in columns["error_class"]]
    assert classes == EXPECTED
    assert [columns["status"][i] for i in columns["error_at"]] == [1] * len(EXPECTED)
