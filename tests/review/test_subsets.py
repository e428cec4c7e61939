"""Every subset of a live re-record's pending changes makes a valid tape: calls created,
calls dropped and answers changed, on two workers, accepted in any combination."""

from __future__ import annotations

import itertools
import subprocess
import threading
from pathlib import Path

import sessiontape
from sessiontape.cassette import load_pending, loads, pending_path
from sessiontape.cassette._rewrite import check_written
from sessiontape.replayer import pending_tape
from sessiontape.review import decide

from ._programs import PY


def _run(text: str) -> str:
    return subprocess.check_output([PY, "-c", f"print({text!r})"], text=True)


def program(*, today: bool) -> None:
    """Two workers; today w1 makes a new call between its two, w2 no longer makes its
    middle call and its last call says something else."""

    def w1() -> None:
        with sessiontape.worker("w1"):
            _run("a1")
            if today:
                _run("new")
            _run("a2")

    def w2() -> None:
        with sessiontape.worker("w2"):
            _run("b1")
            if not today:
                _run("gone")
            _run("B2" if today else "b2")

    threads = [threading.Thread(target=w1), threading.Thread(target=w2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_every_subset_of_changes_is_a_valid_tape(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    with sessiontape.record(tape) as recording, recording.patch_subprocess():
        program(today=False)
    live = sessiontape.replay(tape, live=["process"], update="pending")
    with live, live.patch_subprocess():
        program(today=True)
    assert live.report is not None
    assert live.report.pending_to is not None, live.report.render()
    pending = load_pending(pending_path(tape))
    assert sorted(c.category for c in pending.changes) == ["create", "trim", "update"]
    base = loads(pending.base.encode(), path=str(tape))
    ids = [c.id for c in pending.changes]
    written: set[bytes] = set()
    for n in range(len(ids) + 1):
        for subset in itertools.combinations(ids, n):
            lines = list(pending_tape(pending, base, set(subset)).lines(pending.base.encode()))
            data = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
            check_written(data, tape)  # what `sessiontape validate` checks, or it raises
            written.add(data)
    assert len(written) == 2 ** len(ids)  # each subset its own tape
    # All of them: the tape today's code replays.
    [(_, accepted, saved)] = decide("accept", [], [tape], every=True)
    assert sorted(accepted) == sorted(ids)
    assert saved.done
    with sessiontape.replay(tape, strict=True) as whole, whole.patch_subprocess():
        program(today=True)
        assert whole.finish().ok
