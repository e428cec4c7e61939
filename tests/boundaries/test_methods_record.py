"""Recording method calls (agent, store, user boundaries): what each entry holds.

A call's arguments and result are converted to JSON data in one conversion, and
scrubbed once, on the write path, with the rest of its entry. These tests read the raw
cassette: what reached the disk is what counts.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import AgentTurn, Call, RecordingWarning, StoreMutation, Usage

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@dataclasses.dataclass(frozen=True)
class Step:
    state: str
    payload: dict[str, Any]
    usage: dict[str, int] | None = None


class Agent:
    def execute(self, request: Any, *, mode: str = "plain") -> Step:
        if request == "fail":
            raise RuntimeError(f"the backend refused with {TOKEN}")
        return Step("done", {"echo": request, "mode": mode}, {"input_tokens": 3})


class Store:
    def __init__(self) -> None:
        self.rows: dict[str, Any] = {}

    def put(self, key: str, value: Any) -> dict[str, Any]:
        self.rows[key] = value
        return {"key": key, "value": value, "count": len(self.rows)}


def test_agent_turns_hold_request_result_type_and_usage(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    work = tmp_path / "work"
    with sessiontape.record(path, roots={"work": str(work)}) as tape:
        agent = tape.agent(Agent(), name="planner")
        assert agent.execute({"file": f"{work}/a.py", "auth": TOKEN}, mode="fast") == Step(
            "done",
            {"echo": {"file": f"{work}/a.py", "auth": TOKEN}, "mode": "fast"},
            {"input_tokens": 3},
        )
        with pytest.raises(RuntimeError):
            agent.execute("fail")
    _header, *entries = path.read_text().splitlines()
    assert not [line for line in entries if TOKEN in line or str(work) in line]
    first, failed = sessiontape.load(path).entries_for("agent")
    assert isinstance(first, AgentTurn)
    assert (first.agent, first.method) == ("planner", "execute")
    assert first.args == [{"file": "{work}/a.py", "auth": "[REDACTED]"}]
    assert first.kwargs == {"mode": "fast"}
    assert first.result == {
        "state": "done",
        "payload": {"echo": {"file": "{work}/a.py", "auth": "[REDACTED]"}, "mode": "fast"},
        "usage": {"input_tokens": 3},
    }
    assert first.result_type == f"{__name__}.Step"
    assert first.usage == Usage(input_tokens=3)
    assert first.error is None
    assert isinstance(failed, AgentTurn)
    assert (failed.args, failed.kwargs, failed.result) == (["fail"], {}, None)
    assert (failed.result_type, failed.usage) == (None, None)
    assert failed.error is not None
    assert failed.error.type == "RuntimeError"
    assert failed.error.message == "the backend refused with [REDACTED:github]"


def test_store_mutations_and_user_calls_hold_their_names_and_data(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with sessiontape.record(path) as tape:
        store = tape.store(Store(), mutations=["put"], name="rows")
        lookup = tape.boundary("lookup", Store(), methods=["put"], kind="verify")
        store.put("a", [1, {"password": "hunter2"}])
        store.put("b", None)
        lookup.put(key="c", value="x")
    mutations = sessiontape.load(path).entries_for("store")
    assert [(m.store, m.operation, m.args, m.kwargs) for m in mutations] == [
        ("rows", "put", ["a", [1, {"password": "[REDACTED]"}]], {}),
        ("rows", "put", ["b", None], {}),
    ]
    assert all(isinstance(m, StoreMutation) for m in mutations)
    assert mutations[1].result == {"key": "b", "value": None, "count": 2}
    (call,) = sessiontape.load(path).entries_for("lookup")
    assert isinstance(call, Call)
    assert (call.boundary, call.method, call.mode) == ("lookup", "put", "verify")
    assert (call.args, call.kwargs) == ([], {"key": "c", "value": "x"})
    assert call.result == {"key": "c", "value": "x", "count": 1}


def test_an_unencodable_argument_is_its_repr_named_as_an_argument(
    tmp_path: Path,
) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return f"<Opaque {TOKEN}>"

    path = tmp_path / "u.jsonl"
    with sessiontape.record(path) as tape:
        store = tape.store(Store(), mutations=["put"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store.put("k", Opaque())
            store.put(key="j", value=Opaque())
    assert [str(w.message).split(" (")[0] for w in caught] == [
        "sessiontape: store.put arguments has no JSON form",
        "sessiontape: store.put has no JSON form",
    ]
    assert all(w.category is RecordingWarning for w in caught)
    entry, by_name = sessiontape.load(path).entries_for("store")
    assert isinstance(entry, StoreMutation)
    assert isinstance(by_name, StoreMutation)
    assert by_name.kwargs == {"key": "j", "value": {"$repr": "<Opaque [REDACTED:github]>"}}
    # Each argument with no JSON form is its repr: the arguments stay a list, so the
    # entry loads (a repr of the whole list made a tape that no longer loaded).
    assert entry.args == ["k", {"$repr": "<Opaque [REDACTED:github]>"}]
    assert entry.result == {
        "$repr": "{'key': 'k', 'value': <Opaque [REDACTED:github]>, 'count': 1}"
    }


def test_at_level_minimal_no_data_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    with sessiontape.record(path, level="minimal") as tape:
        tape.store(Store(), mutations=["put"]).put("k", TOKEN)
    (entry,) = sessiontape.load(path).entries_for("store")
    assert isinstance(entry, StoreMutation)
    assert (entry.args, entry.kwargs, entry.result) == ([], {}, None)
    assert entry.duration_ns > 0
