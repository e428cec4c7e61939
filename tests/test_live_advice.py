"""The live re-record advice (``report/_advice.py``): which workers the selector names when
several diverge, and which it leaves to the next run because they diverged only as a
consequence of another's divergence (issue 34: a worker that claimed another task once
the first worker to die let the store's order go)."""

from __future__ import annotations

from sessiontape import AgentTurn, ProcessCall, SessionEnd, SessionStart, StoreMutation
from sessiontape.cassette import Recording
from sessiontape.report import Mismatch, MismatchKind, live_advice

WORKERS = ("worker-1", "worker-2", "worker-3")


def _recording() -> Recording:
    """Three workers, each: a claim, an agent turn, a git call."""
    entries: list[object] = [
        SessionStart(seq=0, ts_ns=0, mono_ns=0, run_id="r", recorded_at="2026-01-01T00:00:00")
    ]
    for worker in WORKERS:
        seq = len(entries)
        entries += [
            StoreMutation(seq=seq, ts_ns=seq, mono_ns=seq, worker=worker, operation="claim"),
            AgentTurn(seq=seq + 1, ts_ns=seq + 1, mono_ns=seq + 1, worker=worker),
            ProcessCall(seq=seq + 2, ts_ns=seq + 2, mono_ns=seq + 2, worker=worker, argv=["git"]),
        ]
    seq = len(entries)
    entries.append(SessionEnd(seq=seq, ts_ns=seq, mono_ns=seq, outcome={}, duration_ns=seq))
    return Recording(entries)  # type: ignore[arg-type]


def _m(kind: MismatchKind, worker: str, boundary: str) -> Mismatch:
    return Mismatch(kind=kind, seq=None, worker=worker, boundary=boundary, message="m")


def test_every_worker_making_the_new_call_is_named() -> None:
    found = [_m(MismatchKind.UNEXPECTED_CALL, w, "process") for w in WORKERS]
    _, selector = live_advice(found, _recording(), (), ())
    assert selector == "process"


def test_a_worker_that_made_a_store_call_the_tape_lacks_diverged_as_a_consequence() -> None:
    # worker-1 meets the new git call (the cause); worker-3 then makes a claim the tape
    # lacks (the order let go), and asks the agent something the tape has no answer for.
    found = [
        _m(MismatchKind.UNEXPECTED_CALL, "worker-1", "process"),
        _m(MismatchKind.UNEXPECTED_CALL, "worker-3", "store"),
        _m(MismatchKind.EXHAUSTED, "worker-3", "agent"),
    ]
    _, selector = live_advice(found, _recording(), (), ())
    assert selector == "process@worker-1"


def test_a_worker_whose_claim_gave_another_result_diverged_as_a_consequence() -> None:
    found = [
        _m(MismatchKind.UNEXPECTED_CALL, "worker-1", "process"),
        _m(MismatchKind.STORE_MISMATCH, "worker-2", "store"),
        _m(MismatchKind.UNEXPECTED_CALL, "worker-2", "process"),
    ]
    _, selector = live_advice(found, _recording(), (), ())
    assert selector == "process@worker-1"


def test_consequences_alone_are_still_advised() -> None:
    # No worker diverged first: what the strayed workers met is all there is to record.
    found = [
        _m(MismatchKind.UNEXPECTED_CALL, "worker-3", "store"),
        _m(MismatchKind.EXHAUSTED, "worker-3", "agent"),
    ]
    _, selector = live_advice(found, _recording(), (), ())
    assert selector == "agent@worker-3"
