"""Where the report places a mismatch on the tape's timeline when the worker that made it
was served nothing yet: before the worker's first recorded call, or, for a worker the tape
has no call of, after everything. The first mismatch must not depend on which thread
happened to run first (shrink judges a candidate by it once: issue 34)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape import MismatchKind, ProcessResult

HANG = 60


class Echo:
    """The outside world of the process boundary: every command succeeds, printing its
    argv."""

    def run(self, argv: Sequence[str], **kwargs: Any) -> ProcessResult:
        return ProcessResult(list(argv), 0, " ".join(argv), "")

    def stream(self, argv: Sequence[str], **kwargs: Any) -> Any:
        raise NotImplementedError


def _program(tape: sessiontape.Tape, plan: dict[str, list[list[str]]]) -> None:
    """Each worker of ``plan`` runs its commands in a thread of its own, one after the
    other (worker ``a`` first, then ``b``: their recorded order)."""
    runner = tape.process_runner(Echo())
    went = threading.Event()

    def work(name: str) -> None:
        with sessiontape.worker(name):
            if name != "a":
                assert went.wait(HANG)
            try:
                for argv in plan[name]:
                    runner.run(argv, text=True)
            finally:
                if name == "a":
                    went.set()

    threads = [threading.Thread(target=work, args=(name,)) for name in plan]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG)


def _record(path: Path) -> None:
    with sessiontape.record(path) as tape:
        _program(tape, {"a": [["one"], ["two"]], "b": [["three"], ["four"]]})
        tape.finish()


def test_a_worker_served_nothing_diverges_just_before_its_first_recorded_call(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    _record(path)
    # b diverges at its first call (seq 3); a at its second (seq 2). On the tape's timeline
    # a's comes first, though b's thread may well get there first.
    with sessiontape.replay(path) as tape:
        _program(tape, {"b": [["THREE"], ["four"]], "a": [["one"], ["TWO"]]})
        report = tape.finish()
    calls = [m for m in report.mismatches if m.kind is MismatchKind.UNEXPECTED_CALL]
    assert [(m.worker, m.seq) for m in calls] == [("a", 2), ("b", 3)]
    assert report.mismatches[0] == calls[0]


def test_a_worker_the_tape_has_no_call_of_comes_after_everything(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _record(path)
    # c is new today, and makes its call before a diverges: a's divergence is still the
    # first on the timeline, and c's the last, whenever c's thread runs.
    with sessiontape.replay(path) as tape:
        _program(tape, {"c": [["five"]], "a": [["one"], ["TWO"]], "b": [["three"], ["four"]]})
        report = tape.finish()
    workers = [m.worker for m in report.mismatches]
    assert (workers[0], report.mismatches[0].kind) == ("a", MismatchKind.UNEXPECTED_CALL)
    # c's call, and c's end of it, close the report.
    assert workers[-2:] == ["c", "c"]
    assert {m.kind for m in report.mismatches[-2:]} == {
        MismatchKind.UNEXPECTED_CALL,
        MismatchKind.APPLICATION_ERROR,
    }
