"""Find where two recordings of the same program part ways.

For each worker and boundary, the calls of both tapes are walked side by side in seq order
and the first position where the requests differ is reported, with both calls and the
differing fields. A request is what the code asked: the argv and stdin of a process, the
method and arguments of an agent, store or custom boundary call (cwd and env are left out:
they differ between hosts without the program behaving differently). Before that point, the
first call whose outcome differs (exit code, output, result, error) is reported too; so are
calls only one tape made, and a different session outcome or crash.

Exit code 1 when the tapes part, 0 when they agree.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

import msgspec

from ..cassette import (
    AgentTurn,
    CallEntry,
    ErrorInfo,
    ProcessCall,
    Recording,
    StoreMutation,
    boundary_of,
)
from ..report import (
    MISSING,
    MISSING_TEXT,
    FieldDiff,
    describe,
    diff_values_counted,
    summarize_value,
)
from ._common import read_recording

__all__ = ["SUMMARY", "Difference", "add_arguments", "call_streams", "compare", "request_of", "run"]

SUMMARY: Final = "show where two recorded runs part ways"

_NO_DIFFS: Final[tuple[list[FieldDiff], int]] = ([], 0)

#: Field diffs shown per difference; the JSON form says how many there are in all.
_MAX_DIFFS: Final = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``diff`` options."""
    parser.add_argument("a", metavar="A", help="the reference cassette (the expected side)")
    parser.add_argument("b", metavar="B", help="the second cassette")
    parser.add_argument("--json", action="store_true", help="print the differences as JSON")


class Difference(msgspec.Struct, frozen=True, kw_only=True):
    """One place where the tapes part.

    ``kind`` is ``request`` (the calls ask different things), ``outcome`` (same request,
    different answer), ``extra_calls`` (one tape made more calls here), ``session_outcome``
    or ``crash``. ``position`` counts the stream's calls from 1; ``a`` and ``b`` describe
    the entries on each side (``None`` where there is none).
    """

    kind: str
    worker: str | None = None
    boundary: str | None = None
    position: int | None = None
    a: str | None = None
    b: str | None = None
    a_seq: int | None = None
    b_seq: int | None = None
    message: str
    diffs: list[FieldDiff] = []
    total_diffs: int = 0


def _error(info: ErrorInfo | None) -> dict[str, str] | None:
    # The traceback's line numbers change with any edit; type and message say what failed.
    return None if info is None else {"type": info.type, "message": info.message}


def request_of(call: CallEntry) -> dict[str, Any]:
    """What ``call`` asked: the fields two runs compare it by (``diff``, ``serve --against``)."""
    if isinstance(call, ProcessCall):
        return {"argv": call.argv, "input": call.input}
    if isinstance(call, AgentTurn):
        return {
            "agent": call.agent,
            "method": call.method,
            "args": call.args,
            "kwargs": call.kwargs,
        }
    if isinstance(call, StoreMutation):
        return {"store": call.store, "operation": call.operation, "args": call.args,
                "kwargs": call.kwargs}  # fmt: skip
    return {"method": call.method, "args": call.args, "kwargs": call.kwargs}


def _outcome(call: CallEntry) -> dict[str, Any]:
    if isinstance(call, ProcessCall):
        return {
            "returncode": call.returncode,
            "stdout": call.stdout,
            "stderr": call.stderr,
            "timed_out": call.timed_out,
            "spawn_error": _error(call.spawn_error),
        }
    return {"result": call.result, "error": _error(call.error)}


def call_streams(recording: Recording) -> dict[tuple[str, str], list[CallEntry]]:
    """The calls of ``recording`` by (worker, boundary), each stream in seq order."""
    streams: dict[tuple[str, str], list[CallEntry]] = {}
    for call in recording.calls:
        boundary = boundary_of(call)
        assert boundary is not None  # every call has a boundary
        streams.setdefault((call.worker, boundary), []).append(call)
    return streams


def _pair(
    kind: str,
    key: tuple[str, str],
    position: int,
    a: CallEntry | None,
    b: CallEntry | None,
    message: str,
    diffs: tuple[list[FieldDiff], int] | None = None,
) -> Difference:
    found, total = diffs if diffs is not None else ([], 0)
    return Difference(
        kind=kind,
        worker=key[0],
        boundary=key[1],
        position=position,
        a=describe(a) if a is not None else None,
        b=describe(b) if b is not None else None,
        a_seq=a.seq if a is not None else None,
        b_seq=b.seq if b is not None else None,
        message=message,
        diffs=found,
        total_diffs=total,
    )


def _compare_stream(
    key: tuple[str, str], a_calls: list[CallEntry], b_calls: list[CallEntry]
) -> list[Difference]:
    found: list[Difference] = []
    outcome_reported = False
    for index, (a, b) in enumerate(zip(a_calls, b_calls, strict=False)):
        # `==` first: it runs in C, and equal calls are the rule. (It takes True for 1,
        # which the field diff tells apart; recorded JSON hardly ever holds that mix.)
        request_a, request_b = request_of(a), request_of(b)
        diffs = _NO_DIFFS
        if request_a != request_b:
            diffs = diff_values_counted(request_a, request_b, limit=_MAX_DIFFS)
        if diffs[1]:
            found.append(_pair("request", key, index + 1, a, b, "the requests differ", diffs))
            return found  # past here the streams are out of step; nothing more is news
        if not outcome_reported:
            outcome_a, outcome_b = _outcome(a), _outcome(b)
            if outcome_a != outcome_b:
                diffs = diff_values_counted(outcome_a, outcome_b, limit=_MAX_DIFFS)
            if diffs[1]:
                outcome_reported = True
                message = "the same request got a different outcome"
                found.append(_pair("outcome", key, index + 1, a, b, message, diffs))
    common = min(len(a_calls), len(b_calls))
    if len(a_calls) != len(b_calls):
        longer, side, other = (a_calls, "A", "B") if len(a_calls) > common else (b_calls, "B", "A")
        extra = len(longer) - common
        where = f"after call {common}" if common else f"where {other} made none"
        message = f"{side} made {extra} more call(s) {where}"
        first = longer[common]
        only_a, only_b = (first, None) if side == "A" else (None, first)
        found.append(_pair("extra_calls", key, common + 1, only_a, only_b, message))
    return found


def _compare_session(a: Recording, b: Recording) -> list[Difference]:
    found: list[Difference] = []
    if a.end is not None and b.end is not None:
        diffs = diff_values_counted(a.end.outcome, b.end.outcome, "outcome", limit=_MAX_DIFFS)
        if diffs[1]:
            found.append(
                Difference(
                    kind="session_outcome",
                    a=describe(a.end),
                    b=describe(b.end),
                    a_seq=a.end.seq,
                    b_seq=b.end.seq,
                    message="the sessions ended with different outcomes",
                    diffs=diffs[0],
                    total_diffs=diffs[1],
                )
            )
    crash_a = None if a.error is None else {"type": a.error.type, "message": a.error.message}
    crash_b = None if b.error is None else {"type": b.error.type, "message": b.error.message}
    if a.crashed != b.crashed or crash_a != crash_b:

        def state(rec: Recording) -> str:
            if rec.error is not None:
                return f"crashed with {rec.error.type}: {rec.error.message}"
            return "crashed" if rec.crashed else "ended normally"

        diffs = diff_values_counted(crash_a, crash_b, "error", limit=_MAX_DIFFS)
        found.append(
            Difference(
                kind="crash",
                a=state(a),
                b=state(b),
                a_seq=a.error.seq if a.error is not None else None,
                b_seq=b.error.seq if b.error is not None else None,
                message="the sessions ended differently",
                diffs=diffs[0],
                total_diffs=diffs[1],
            )
        )
    return found


def compare(a: Recording, b: Recording) -> list[Difference]:
    """Every place where ``a`` and ``b`` part, stream by stream, then the session's end."""
    streams_a, streams_b = call_streams(a), call_streams(b)
    keys = list(dict.fromkeys([*streams_a, *streams_b]))
    found: list[Difference] = []
    for key in keys:
        found += _compare_stream(key, streams_a.get(key, []), streams_b.get(key, []))
    return found + _compare_session(a, b)


def _render(diff: Difference) -> list[str]:
    where = f"{diff.worker} {diff.boundary}" if diff.worker is not None else "session"
    at = f" at call {diff.position}" if diff.kind in ("request", "outcome") else ""
    lines = [f"{where}: {diff.message}{at}"]
    lines.append(f"  A: {diff.a if diff.a is not None else '-'}")
    lines.append(f"  B: {diff.b if diff.b is not None else '-'}")
    for d in diff.diffs:
        lines.append(
            f"  {d.path or '<value>'}: A {summarize_value(d.expected, 60)}  "
            f"B {summarize_value(d.actual, 60)}"
        )
        if d.detail:
            lines.append(f"    {d.detail}")
    if diff.total_diffs > len(diff.diffs):
        lines.append(f"  ... and {diff.total_diffs - len(diff.diffs)} more differing field(s)")
    return lines


def _json_default(value: Any) -> Any:
    if value is MISSING:
        return MISSING_TEXT
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    return repr(value)


def run(args: argparse.Namespace) -> int:
    """``sessiontape diff``."""
    a, b = read_recording(args.a), read_recording(args.b)
    found = compare(a, b)
    if args.json:
        document = {
            "a": {"cassette": a.path, "run_id": a.header.run_id, "entries": len(a)},
            "b": {"cassette": b.path, "run_id": b.header.run_id, "entries": len(b)},
            "differ": bool(found),
            "differences": [
                {
                    **msgspec.to_builtins(d, enc_hook=_json_default),
                    "diffs": [
                        {"path": x.path, "a": x.expected, "b": x.actual, "detail": x.detail}
                        for x in d.diffs
                    ],
                }
                for d in found
            ],
        }
        print(json.dumps(document, indent=2, default=_json_default))
        return 1 if found else 0
    # The field diffs' details say "expected" for A and "got" for B.
    print(f"A: {a.path} (run {a.header.run_id}, {len(a)} entries), the expected side")
    print(f"B: {b.path} (run {b.header.run_id}, {len(b)} entries)")
    for diff in found:
        print()
        print("\n".join(_render(diff)))
    print()
    if found:
        print(f"the runs part in {len(found)} place(s).")
        return 1
    streams = len(set(call_streams(a)) | set(call_streams(b)))
    print(f"the runs agree: {len(a.calls)} calls in {streams} worker/boundary stream(s).")
    return 0
