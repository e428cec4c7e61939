"""Export a cassette in the Trace Event Format (Chrome trace JSON), for Perfetto and chrome://tracing.

The document is ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``.
The session is one process (``pid`` 1, named by a ``process_name`` metadata event) and
each worker one thread of it (a ``tid``, named by a ``thread_name`` metadata event and
ordered by ``thread_sort_index`` in the order the workers first appear): each worker is
a lane. Every boundary call is a complete event (``"ph": "X"``) with ``ts`` and ``dur``
in microseconds since the session started, on the recorded monotonic clock. Viewers
nest complete events on one thread by time containment, so a call made inside another
on the same worker (the model process an agent turn ran) is drawn under it. Two calls of
one worker that overlap without one containing the other (threads sharing a worker
name) cannot nest: the later one goes to a lane of its own, ``worker-1 (2)``.

Each event's ``args`` answer the five W's: ``seq``, ``worker``, ``thread``, ``parent``
(the seq of the call it was made in), ``boundary``, ``what`` (the row text of
``sessiontape show``) and, for a failed call, ``error_class`` and ``error``. The
session's crash is an instant event (``"ph": "i"``) on its worker's lane.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import msgspec

from .._version import __version__
from ..cassette import AgentTurn, CallEntry, ProcessCall, Recording, StoreMutation, boundary_of
from ._common import Progress, command_name, recorded_duration
from ._failures import classifier, failure_text
from ._viewdata import row_text

__all__ = ["PID", "chrome_trace"]

#: The one process of the trace: the session.
PID: Final = 1


class _Lanes:
    """The thread id of each worker's lane, and the calls open on each lane."""

    def __init__(self) -> None:
        self.tids: dict[str, int] = {}  # lane name -> tid
        self.names: list[str] = []
        self.open: dict[int, list[int]] = {}  # tid -> ends of the calls open on it

    def tid(self, name: str) -> int:
        """The tid of the lane ``name`` (a new lane for a new name)."""
        tid = self.tids.get(name)
        if tid is None:
            tid = self.tids[name] = len(self.tids) + 1
            self.names.append(name)
            self.open[tid] = []
        return tid

    def place(self, worker: str, start: int, end: int) -> int:
        """The tid a call of ``worker`` from ``start`` to ``end`` nests on."""
        extra = 1
        while True:
            tid = self.tid(worker if extra == 1 else f"{worker} ({extra})")
            stack = self.open[tid]
            while stack and stack[-1] <= start:
                stack.pop()
            if not stack or end <= stack[-1]:
                stack.append(end)
                return tid
            extra += 1


def _us(ns: int) -> float:
    """ns as the format's microseconds (a float keeps the ns)."""
    return ns / 1000


def _name(call: CallEntry) -> str:
    """What a call's bar is titled: ``git merge``, ``agent.execute``, ``store.claim``."""
    if isinstance(call, ProcessCall):
        return command_name(call.argv)
    if isinstance(call, AgentTurn):
        return f"{call.agent}.{call.method}"
    if isinstance(call, StoreMutation):
        return f"{call.store}.{call.operation}"
    return f"{call.boundary}.{call.method}"


def _call_event(call: CallEntry, tid: int, start: int, error_class: str | None) -> dict[str, Any]:
    boundary = boundary_of(call)
    args: dict[str, Any] = {
        "seq": call.seq,
        "worker": call.worker,
        "thread": call.thread,
        "parent": call.parent,
        "boundary": boundary,
        "what": row_text(call),
    }
    if error_class is not None:
        args["error_class"] = error_class
        args["error"] = failure_text(call)
    return {
        "name": _name(call),
        "cat": boundary,
        "ph": "X",
        "ts": _us(start),
        "dur": _us(call.duration_ns),
        "pid": PID,
        "tid": tid,
        "args": args,
    }


def _metadata(recording: Recording, lanes: _Lanes) -> Iterator[dict[str, Any]]:
    header = recording.header
    name = f"sessiontape {header.entrypoint or header.run_id}"
    yield {"name": "process_name", "ph": "M", "pid": PID, "tid": 0, "args": {"name": name}}
    for index, lane in enumerate(lanes.names):
        tid = lanes.tids[lane]
        yield {"name": "thread_name", "ph": "M", "pid": PID, "tid": tid, "args": {"name": lane}}
        yield {
            "name": "thread_sort_index",
            "ph": "M",
            "pid": PID,
            "tid": tid,
            "args": {"sort_index": index},
        }


def _events(recording: Recording) -> Iterator[dict[str, Any]]:
    """Every call's complete event in start order (outer before inner), the crash, then
    the metadata naming the lanes they were put on."""
    origin = recording.header.mono_ns
    classify = classifier()
    lanes = _Lanes()
    # By start, and the longer first at one start, so that a parent comes before its child.
    calls = sorted(recording.calls, key=lambda c: (c.mono_ns, -c.duration_ns, c.seq))
    for call in Progress("export", len(calls)).iter(calls):
        start = call.mono_ns - origin
        tid = lanes.place(call.worker, start, start + call.duration_ns)
        yield _call_event(call, tid, start, classify(call))
    crashes = [*recording.worker_errors, *([recording.error] if recording.error else [])]
    for error in crashes:
        tid = lanes.tid(error.worker)
        yield {
            "name": f"crash: {error.type}",
            "cat": error.origin,
            "ph": "i",
            "s": "t",
            "ts": _us(error.mono_ns - origin),
            "pid": PID,
            "tid": tid,
            "args": {"seq": error.seq, "worker": error.worker, "message": error.message},
        }
    yield from _metadata(recording, lanes)


def chrome_trace(recording: Recording) -> Iterator[bytes]:
    """The recording as a Trace Event Format JSON object, in chunks (one per event)."""
    encode = msgspec.json.encode
    yield b'{"traceEvents":['
    for index, event in enumerate(_events(recording)):
        yield encode(event) if index == 0 else b",\n" + encode(event)
    header = recording.header
    other = {
        "run_id": header.run_id,
        "entrypoint": header.entrypoint,
        "recorded_at": header.recorded_at,
        "duration_ns": recorded_duration(recording),
        "exporter": f"sessiontape {__version__}",
    }
    yield b'],"displayTimeUnit":"ms","otherData":' + encode(other) + b"}"
