"""A failing chaos schedule written as a tape of its own: a regression test.

The saved tape holds the calls in the order the schedule ran them, each under the worker
that made it, answered as the original tape answered it; a verify call holds the result it
really gave under the schedule. Replayed in plain mode, each worker's queue then serves
what the schedule served it, and the verify calls (which a plain replay runs in their
recorded order) run in the schedule's order: the program takes the same path and fails
the same way. Everything else of the original (header, snapshots, the recorded end and
crash) is kept as it was; calls nested in a substituted call are left out, as replay never
expects them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from .._errors import UsageError
from ..cassette import (
    SIDECAR_SUFFIX,
    CallEntry,
    Recording,
    SavedSchedule,
    is_cassette,
    write_new_cassette,
)
from ..report import ChaosFailure
from ._renamed import REQUEST_FIELDS, renamed
from ._schedule import Schedule, Strategy
from ._trace import Trace

__all__ = ["save_schedule", "saved_schedule"]

#: Entry kinds that are calls (renumbered and reordered); everything else keeps its place.
_CALL_KINDS: Final = frozenset({"process", "agent_turn", "store_mutation", "call"})


def _lines(path: str) -> list[dict[str, Any]]:
    with open(path, "rb") as fh:
        return [msgspec.json.decode(line) for line in fh if line.strip()]


def _with_answer(entry: dict[str, Any], answer: Any) -> dict[str, Any]:
    """A verify call's entry holding the result (or error) it gave under the schedule."""
    entry = dict(entry)
    if isinstance(answer, dict) and "error" in answer:
        entry["error"] = answer["error"]
        entry.pop("result", None)
    elif isinstance(answer, dict) and "result" in answer:
        entry["result"] = answer["result"]
        entry.pop("error", None)
    return entry


def saved_schedule(
    recording: Recording, schedule: Schedule, failure: ChaosFailure | None
) -> SavedSchedule:
    """What the header of a schedule saved from ``recording`` says it is."""
    return SavedSchedule(
        tape=os.path.basename(str(recording.path)),
        run_id=recording.header.run_id,
        seed=schedule.seed,
        strategy=Strategy(schedule.strategy).value,
        depth=schedule.depth,
        kind=failure.kind.value if failure is not None else "",
        message=failure.message if failure is not None else "",
        worker=failure.worker if failure is not None else None,
    )


def save_schedule(
    source: str,
    trace: Trace,
    tokens: Mapping[str, CallEntry],
    target: Path,
    schedule: SavedSchedule,
) -> Path:
    """Write a schedule that ran on the tape ``source`` to the cassette ``target``.

    ``trace`` holds the calls as they ran; ``tokens`` by boundary the entry standing in
    for a verify call with no recorded twin; ``schedule`` what the header says the
    tape is. A call answered by another worker's recorded call in that worker's name is
    written in the name of the worker that made it.

    ``target`` is replaced only if it is a cassette already (a schedule saved before);
    anything else there is refused. The file is written beside it and renamed over it.
    """
    if os.path.lexists(target) and not is_cassette(target):
        raise UsageError(
            f"{target} exists and is not a sessiontape cassette; sessiontape will not "
            "overwrite it. Choose another directory for --sessiontape-chaos-save."
        )
    lines = _lines(source)
    by_seq = {line["seq"]: line for line in lines if line.get("kind") in _CALL_KINDS}
    # Every other entry (header, snapshots, crash, end) goes after as many calls as it
    # followed in the original; the end stays last.
    others: list[tuple[int, dict[str, Any]]] = []
    count = 0
    for line in lines:
        if line.get("kind") in _CALL_KINDS:
            count += 1
        elif line.get("kind") == "session_start":
            others.append((count, {**line, "schedule": msgspec.to_builtins(schedule)}))
        else:
            others.append((count if line.get("kind") != "session_end" else 1 << 62, line))
    answers = trace.saved_answers(tokens)
    calls: list[dict[str, Any]] = []
    for order, (worker, boundary, entry, _) in enumerate(trace.calls, 1):
        _, request, answer = answers.get(order, (None, None, None))
        if entry is not None:
            line = dict(by_seq[entry.seq])
        else:
            # A verify call with no recorded twin: the stand-in entry, with today's request.
            assert boundary is not None
            token = by_seq[tokens[boundary].seq]
            line = dict(token)
            assert request is not None
            line["operation" if "operation" in line else "method"] = request["method"]
            line["args"] = request["args"]
            line["kwargs"] = request["kwargs"]
        if answer is not None:
            line = _with_answer(line, answer)
        if order in trace.renamed and entry is not None:
            for field in REQUEST_FIELDS:
                if field in line:
                    line[field] = renamed(line[field], entry.worker, worker)
        line["worker"] = worker
        line["parent"] = None
        calls.append(line)
    ordered: list[dict[str, Any]] = []
    pending = iter(others)
    upcoming = next(pending, None)
    for index in range(len(calls) + 1):
        while upcoming is not None and min(upcoming[0], len(calls)) <= index:
            ordered.append(upcoming[1])
            upcoming = next(pending, None)
        if index < len(calls):
            ordered.append(calls[index])
    out = []
    for number, line in enumerate(ordered):
        line = dict(line)
        line["seq"] = number
        out.append(line)
    target.parent.mkdir(parents=True, exist_ok=True)
    # The payloads first: the tape is checked against its sidecar before it is written.
    _copy_sidecar(Path(source), target)
    return write_new_cassette(target, (msgspec.json.encode(line) for line in out))


def _copy_sidecar(source: Path, target: Path) -> None:
    """Payloads kept beside the original go beside the saved tape too."""
    blobs = source.with_name(source.name + SIDECAR_SUFFIX)
    if not blobs.is_dir():
        return
    there = target.with_name(target.name + SIDECAR_SUFFIX)
    there.mkdir(mode=0o700, exist_ok=True)
    for blob in blobs.iterdir():
        copy = there / blob.name
        if blob.is_file() and not copy.exists():
            shutil.copyfile(blob, copy)
            os.chmod(copy, 0o600)
