"""Tapes written by hand, line by line, for the safety tests."""

from __future__ import annotations

import json
from typing import Any

TS = 1_700_000_000_000_000_000


def header(seq: int = 0, /, **fields: Any) -> dict[str, Any]:
    """A session_start entry as a dict."""
    entry = {
        "kind": "session_start", "seq": seq, "ts_ns": TS, "mono_ns": 1_000, "run_id": "r1",
        "recorded_at": "2026-11-21T00:00:00+00:00", "format_version": 1,
    }  # fmt: skip
    return {**entry, **fields}


def process(seq: int, /, **fields: Any) -> dict[str, Any]:
    """A process entry as a dict."""
    entry = {
        "kind": "process", "seq": seq, "ts_ns": TS + seq, "mono_ns": 1_000 + seq,
        "argv": ["echo", str(seq)], "returncode": 0, "stdout": f"{seq}\n",
    }  # fmt: skip
    return {**entry, **fields}


def end(seq: int, /, **fields: Any) -> dict[str, Any]:
    """A session_end entry as a dict."""
    entry = {"kind": "session_end", "seq": seq, "ts_ns": TS + seq, "mono_ns": 1_000 + seq}
    return {**entry, **fields}


def tape(*entries: dict[str, Any]) -> bytes:
    """The cassette bytes of ``entries``, one line each."""
    return b"".join(json.dumps(e).encode() + b"\n" for e in entries)


def good_tape(calls: int = 3) -> bytes:
    """A small complete tape: a header, ``calls`` process calls and an end."""
    return tape(header(), *(process(i) for i in range(1, calls + 1)), end(calls + 1))
