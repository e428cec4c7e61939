"""A replay whose worker stopped does not wait for the store calls that worker never makes.

Verify boundaries (a store) run in their recorded global order: a call waits until every
earlier recorded call of the store has run. When a worker is told that a call has no
recorded answer (or its thread dies), its later store calls never come, and every other
worker's store call behind them used to wait out the order timeout (2 s) before the replay
gave up the order. Most of ``shrink``'s candidates are such replays (a call cut out of one
worker), so each paid the timeout: 0.47 s per candidate against a 10 ms replay of the tape
(issue 29, defect 13). Now the wait ends when the worker stops, with the same report.

The program is the ledger of ``shrinkapps.py``: worker threads claiming tasks from a SQLite
backlog (``tape.store``), committing with git through stdlib ``subprocess.run`` under
``patch_subprocess``, asking an agent for a dataclass verdict. The order timeout is set to
an hour: only a replay that waits for the stopped worker can reach it, and the test then
fails at the join, which waits for the replay to finish with a timeout only a hang reaches.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape.cassette import ProcessCall, ShrunkFrom, StoreMutation
from sessiontape.reduce import Cuts, Unit

from . import shrinkapps

#: Longer than any replay of this tape, however loaded the machine: reached only by a wait.
ORDER_TIMEOUT = 3600.0
#: How long the test waits for the replay to end: only a hang reaches it.
HANG = 120.0


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ledger")
    tape = root / "ledger.jsonl"
    shrinkapps.record_ledger(tape, root / "live", tasks=9, workers=3)
    return tape


def _stranding_cut(recording: sessiontape.Recording) -> tuple[int, int, int]:
    """A process call to cut out, the worker's process call before it (its last one left),
    and the store call that then never comes.

    The cut is a worker's last process call: asked for it, the replay has no answer left
    for that worker, which stops there. Its next store call never comes, and another
    worker's store call recorded after it waits for it.
    """
    stores = [e for e in recording.calls if isinstance(e, StoreMutation)]
    for worker in recording.worker_ids():
        processes = [
            e for e in recording.calls if isinstance(e, ProcessCall) and e.worker == worker
        ]
        if not worker.startswith("worker-") or len(processes) < 2:
            continue
        last = processes[-1]
        after = [s for s in stores if s.worker == worker and s.seq > last.seq]
        if after and any(s.worker != worker and s.seq > after[0].seq for s in stores):
            return last.seq, processes[-2].seq, after[0].seq
    raise AssertionError("the ledger tape has no call whose cut strands a store call")


def _replay(path: Path, workdir: Path) -> tuple[sessiontape.ReplayReport | None, Any]:
    """Replay the ledger at ``path`` in a thread; its report and the exception it raised."""
    done: dict[str, Any] = {}

    def run() -> None:
        tape = sessiontape.replay(path, order_timeout=ORDER_TIMEOUT)
        try:
            with tape:
                tape.set_roots({"work": str(workdir)})
                shrinkapps.run_ledger(tape, workdir, tasks=9, workers=3)
        except BaseException as exc:  # the stopped worker's error, handed to the test
            done["error"] = exc
        done["report"] = tape.report

    # A daemon: a replay that hangs must not keep the test run from ending.
    thread = threading.Thread(target=run, name="replay", daemon=True)
    thread.start()
    thread.join(HANG)
    assert not thread.is_alive(), "the replay waited for the store calls of a stopped worker"
    return done["report"], done.get("error")


def test_a_store_call_does_not_wait_for_a_worker_that_stopped(ledger: Path, tmp_path: Path) -> None:
    recording = sessiontape.load(ledger)
    cut_seq, previous, stranded = _stranding_cut(recording)
    cuts = Cuts(recording)
    cut = cuts.without(cuts.whole, Unit(frozenset({cut_seq})))
    assert cut is not None
    candidate = tmp_path / "candidate.jsonl"
    origin = cuts.write(
        cut, ShrunkFrom(recording.header.run_id, len(recording.entries)), str(candidate)
    )
    stopped = recording.by_seq(cut_seq)
    assert stopped is not None

    report, error = _replay(candidate, tmp_path / "work")

    assert isinstance(error, sessiontape.UnrecordedCallError)
    assert error.worker == stopped.worker
    assert report is not None
    assert not report.ok
    # The store call that never came is named, as the order timeout named it (by its seq
    # in the candidate), by the worker that waited for it.
    (order,) = [m for m in report.mismatches if m.kind == "order_mismatch"]
    assert order.seq == origin.index(stranded)
    assert order.worker != stopped.worker
    assert f"the recorded call at seq {order.seq} never came" in order.message
    # The worker stopped where the tape had no answer left for it.
    exhausted = ("exhausted", origin.index(previous), stopped.worker)
    assert exhausted in {(m.kind, m.seq, m.worker) for m in report.mismatches}
