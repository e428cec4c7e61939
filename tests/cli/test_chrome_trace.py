"""``sessiontape export --format chrome-trace``: the Trace Event Format, lanes and nesting.

Perfetto's trace processor cannot run here (its Python package downloads a binary when
first used), so the export is checked against the format's documented fields (the
"Trace Event Format" document that chrome://tracing and Perfetto follow): a JSON object
with ``traceEvents``; each event a ``name``, a ``ph`` phase, ``pid`` and ``tid``, and a
``ts`` in microseconds; a complete event (``X``) a ``dur``; metadata events (``M``)
``process_name``, ``thread_name`` and ``thread_sort_index`` with their ``args``. Then
that its lanes and nesting are the tape's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import sessiontape
from sessiontape.cli._chrome import PID

if TYPE_CHECKING:
    from .conftest import Cli, Recorder

CORPUS = Path(__file__).resolve().parents[2] / "cassettes"
GARDENER = sorted(CORPUS.glob("gardener-*.jsonl"))

#: The phases the format documents (duration, complete, instant, counter, async, flow,
#: sample, object, metadata, memory dump, mark, clock sync, context).
PHASES = set("BEXiICbneSTpFsftPNODMVvRc(),")
METADATA = {
    "process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index",
}  # fmt: skip


def _export(cli: Cli, path: Path, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "trace.json"
    result = cli("export", path, "--format", "chrome-trace", "-o", out)
    assert result.code == 0, result.err
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return document


def _check_documented_fields(document: dict[str, Any]) -> None:
    assert set(document) <= {"traceEvents", "displayTimeUnit", "otherData", "metadata"}
    assert document["displayTimeUnit"] in ("ms", "ns")
    for event in document["traceEvents"]:
        assert isinstance(event["name"], str)
        assert event["name"]
        assert event["ph"] in PHASES
        assert isinstance(event["pid"], int)
        assert isinstance(event["tid"], int)
        if event["ph"] == "M":
            assert event["name"] in METADATA
            assert isinstance(event["args"], dict)
            continue
        assert isinstance(event["ts"], (int, float))
        assert event["ts"] >= 0
        assert isinstance(event.get("cat", ""), str)
        if event["ph"] == "X":
            assert isinstance(event["dur"], (int, float))
            assert event["dur"] >= 0
        if event["ph"] == "i":
            assert event["s"] in ("g", "p", "t")


@pytest.mark.parametrize("tape", GARDENER, ids=lambda p: p.stem)
def test_the_gardener_corpus_exports_a_lane_per_worker_with_calls_nested(
    cli: Cli, tape: Path, tmp_path: Path
) -> None:
    document = _export(cli, tape, tmp_path)
    _check_documented_fields(document)
    recording = sessiontape.load(tape)
    events = document["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    lanes = {
        e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"
    }
    (process,) = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert process["pid"] == PID
    assert process["args"]["name"].startswith("sessiontape ")
    # One complete event per call, on its worker's lane, at its recorded time.
    assert sorted(e["args"]["seq"] for e in complete) == [c.seq for c in recording.calls]
    assert list(lanes.values()) == recording.worker_ids()
    origin = recording.header.mono_ns
    by_seq = {c.seq: c for c in recording.calls}
    for event in complete:
        call = by_seq[event["args"]["seq"]]
        assert lanes[event["tid"]] == call.worker == event["args"]["worker"]
        assert event["ts"] == pytest.approx((call.mono_ns - origin) / 1000, abs=1e-3)
        assert event["dur"] == pytest.approx(call.duration_ns / 1000, abs=1e-3)
        assert event["args"]["parent"] == call.parent
        assert event["args"]["thread"] == call.thread
    # Nesting by time containment: a call made in another on its lane lies inside it,
    # and no two events of a lane overlap without one containing the other.
    placed = {e["args"]["seq"]: e for e in complete}
    nested = 0
    for event in complete:
        parent = placed.get(event["args"]["parent"])
        if parent is not None and parent["tid"] == event["tid"]:
            nested += 1
            assert parent["ts"] <= event["ts"]
            assert event["ts"] + event["dur"] <= parent["ts"] + parent["dur"] + 1e-3
    assert nested == sum(1 for c in recording.calls if c.parent in by_seq)
    for tid in lanes:
        stack: list[float] = []
        for event in sorted(
            (e for e in complete if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"])
        ):
            while stack and stack[-1] <= event["ts"]:
                stack.pop()
            assert not stack or event["ts"] + event["dur"] <= stack[-1] + 1e-3
            stack.append(event["ts"] + event["dur"])


def test_a_crash_and_a_failed_call_are_on_their_lanes(
    cli: Cli, record_session: Recorder, tmp_path: Path
) -> None:
    path = record_session(crash_after=1, table={"git merge task/t1": (1, "CONFLICT\n", 3)})
    document = _export(cli, path, tmp_path)
    _check_documented_fields(document)
    events = document["traceEvents"]
    lanes = {e["args"]["name"]: e["tid"] for e in events if e["name"] == "thread_name"}
    (crash,) = [e for e in events if e["ph"] == "i"]
    assert crash["name"] == "crash: RuntimeError"
    assert crash["tid"] == lanes[crash["args"]["worker"]]
    assert crash["args"]["message"] == "worker worker-2 lost its worktree"
    (merge,) = [e for e in events if e.get("name") == "git merge"]
    assert (merge["args"]["error_class"], merge["args"]["error"]) == ("exit", "exit 1")
    assert document["otherData"]["run_id"] == sessiontape.load(path).header.run_id


def test_calls_that_overlap_on_one_worker_get_a_second_lane(cli: Cli, tmp_path: Path) -> None:
    """Two threads recording as one worker: their calls overlap without nesting."""
    import threading

    cassette = tmp_path / "threads.jsonl"
    # The second call starts inside the first and ends after it: ordered by events (a
    # minute each, which only a hang reaches), not by how long each thread sleeps.
    first_started, second_started, first_ended = (threading.Event() for _ in range(3))

    class Ordered:
        """Real processes, each started and let end in that order."""

        def __init__(self) -> None:
            self.real = sessiontape.SubprocessRunner()

        def run(self, argv: list[str], **kwargs: Any) -> sessiontape.ProcessResult:
            if argv[-1] == "first":
                first_started.set()
                assert second_started.wait(60)
            else:
                second_started.set()
                assert first_ended.wait(60)
            return self.real.run(argv, **kwargs)

    with sessiontape.record(cassette) as tape:
        runner = tape.process_runner(Ordered())

        def work(which: str) -> None:
            with sessiontape.worker("pool"):  # both threads name the same worker
                if which == "second":
                    assert first_started.wait(60)
                runner.run(["echo", which])
                if which == "first":
                    first_ended.set()

        threads = [threading.Thread(target=work, args=(w,)) for w in ("first", "second")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    events = _export(cli, cassette, tmp_path)["traceEvents"]
    names = [e["args"]["name"] for e in events if e["name"] == "thread_name"]
    assert names == ["pool", "pool (2)"]
    assert sorted(e["tid"] for e in events if e["ph"] == "X") == [1, 2]
