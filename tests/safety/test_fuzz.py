"""Fuzzing the loader: any bytes give a Recording or a CassetteError with path:line.

The suite runs a fast slice; ``nox -s reliability`` runs the same fuzzers on more than
100,000 tapes (``SESSIONTAPE_FUZZ_EXAMPLES`` and ``SESSIONTAPE_FUZZ_MUTATIONS`` scale
them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import _fuzz
from ._tapes import TS, header

EXAMPLES = int(os.environ.get("SESSIONTAPE_FUZZ_EXAMPLES", "100"))
MUTATIONS = int(os.environ.get("SESSIONTAPE_FUZZ_MUTATIONS", "400"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

KINDS = [
    "session_start", "session_resume", "store_snapshot", "process", "agent_turn",
    "store_mutation", "call", "error", "session_end", "unknown",
]  # fmt: skip
FIELDS = [
    "seq", "ts_ns", "mono_ns", "worker", "thread", "parent", "duration_ns", "argv", "cwd",
    "env", "input", "stdout", "stderr", "returncode", "spawn_error", "error", "result",
    "result_type", "args", "kwargs", "type", "message", "outcome", "counts", "level",
    "format_version", "run_id", "recorded_at", "config", "roots", "store", "operation",
    "boundary", "method", "data", "usage", "timed_out", "timeout", "text",
]  # fmt: skip
numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**53, 2**63 - 1, 2**63, 2**64, 10**26]),
    st.floats(allow_nan=False, allow_infinity=False),
)
leaves = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=40))
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=8,
)
entries = st.builds(
    lambda kind, fields: {"kind": kind, **fields},
    st.sampled_from(KINDS),
    st.dictionaries(st.sampled_from(FIELDS), values, max_size=8),
)


def encode_line(entry: dict[str, Any]) -> bytes:
    # json.dumps writes Infinity for big floats and \\udXXX for lone surrogates: both are
    # lines a damaged tape may hold.
    return json.dumps(entry).encode("utf-8", "surrogatepass")


@FUZZ
@given(st.binary(max_size=2000))
def test_any_bytes(data: bytes) -> None:
    assert _fuzz.contract(data)[0] is None


@FUZZ
@given(st.lists(entries, max_size=8), st.booleans(), st.booleans())
def test_any_entries(items: list[dict[str, Any]], with_header: bool, torn: bool) -> None:
    lines = [encode_line(e) for e in items]
    if with_header:
        lines.insert(0, encode_line(header()))
    data = b"\n".join(lines) + (b"" if torn else b"\n")
    assert _fuzz.contract(data)[0] is None


@FUZZ
@given(
    st.lists(
        st.fixed_dictionaries(
            {"kind": st.sampled_from(["process", "agent_turn", "error", "session_end"])},
            optional=dict.fromkeys(("seq", "ts_ns", "mono_ns", "parent", "duration_ns"), numbers),
        ),
        max_size=6,
    )
)
def test_any_numbers_in_a_valid_tape(items: list[dict[str, Any]]) -> None:
    common = {"ts_ns": TS, "mono_ns": 7, "argv": ["x"], "type": "E", "message": "m"}
    lines = [encode_line(header())]
    lines += [encode_line({"seq": i + 1, **common, **e}) for i, e in enumerate(items)]
    assert _fuzz.contract(b"\n".join(lines) + b"\n")[0] is None


def test_mutated_real_cassettes(tmp_path: Path) -> None:
    result = _fuzz.run_mutations(MUTATIONS, seed=11, workdir=tmp_path)
    assert result["failures"] == []
    assert result["loaded"] + result["refused"] == MUTATIONS
    assert result["loaded"] > 0  # some damage leaves a tape that still loads
    assert all(result["by_mutation"].values())  # every kind of damage was tried
