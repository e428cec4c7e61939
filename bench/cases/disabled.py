"""Figure 5: what recording costs when it is off.

``sessiontape.record(None)`` with ``SESSIONTAPE_RECORD`` unset returns a DisabledTape whose
``process_runner(inner)`` is ``inner`` itself: nothing stands between the application and
its runner, so the per-call cost is that of the runner. Measured beside it: the active
wrapper's fast path once its writer has failed (a RecordTape whose cassette could not be
opened: every call goes ``if not tape.active: return inner.run(...)``), and what
``record(None)`` itself costs, once per session.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape import ProcessResult
from sessiontape.tape import RecordTape

from .common import per_call_ns
from .record import FakeRunner

__all__ = ["run"]


def _loop(run: Callable[..., Any], calls: int) -> Callable[[], Callable[[], int]]:
    argv = ["git", "status", "--porcelain"]

    def batch() -> Callable[[], int]:
        def go() -> int:
            for _ in range(calls):
                run(argv, cwd=None, text=True)
            return calls

        return go

    return batch


def _sessions(calls: int) -> Callable[[], Callable[[], int]]:
    def batch() -> Callable[[], int]:
        def go() -> int:
            for _ in range(calls):
                sessiontape.record(None)
            return calls

        return go

    return batch


def run(*, calls: int, batches: int, workdir: Path) -> dict[str, Any]:
    saved = os.environ.pop(sessiontape.ENV_VAR, None)
    try:
        inner = FakeRunner([ProcessResult(["git", "status"], 0, "", "")])
        tape = sessiontape.record(None)
        runner = tape.process_runner(inner)
        bare = per_call_ns(_loop(inner.run, calls), batches=batches)
        disabled = per_call_ns(_loop(runner.run, calls), batches=batches)
        blocker = workdir / "not-a-directory"
        blocker.write_text("a file where the cassette's directory should be")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            failed = sessiontape.record(blocker / "run.jsonl")
        if (
            not isinstance(failed, RecordTape)
            or failed.active
            or not any(issubclass(w.category, sessiontape.RecordingWarning) for w in caught)
        ):
            raise AssertionError("the failed-writer tape should be inactive, with a warning")
        try:
            failed_runner = failed.process_runner(inner)
            bare_again = per_call_ns(_loop(inner.run, calls), batches=batches)
            failed_fast = per_call_ns(_loop(failed_runner.run, calls), batches=batches)
        finally:
            # An open tape, even one whose writer failed, names the process's threads:
            # closing it gives threading back as it was.
            failed.close()
        record_none = per_call_ns(_sessions(calls), batches=batches)
    finally:
        if saved is not None:
            os.environ[sessiontape.ENV_VAR] = saved
    return {
        "runner_is_inner": runner is inner,
        "agent_is_adapter": tape.agent(inner) is inner,
        "store_is_store": tape.store(inner, mutations=["run"]) is inner,
        "inner": bare,
        "disabled": disabled,
        "disabled_overhead_ns": max(0.0, disabled["median_ns"] - bare["median_ns"]),
        "failed_writer": failed_fast,
        "failed_writer_inner": bare_again,
        "failed_writer_overhead_ns": failed_fast["median_ns"] - bare_again["median_ns"],
        "record_none": record_none,
    }
