"""One phase of the conformance run, in its own interpreter: run the given CPython tests.

``python _child.py MODE RESULTS TAPES TEST_ID...`` runs each test (a ``unittest`` id such
as ``test.test_subprocess.ProcessTestCase.test_call_seq``) through the ordinary unittest
machinery (class and module fixtures included), in one of three ways:

- ``plain``: as CPython runs it;
- ``record``: inside ``sessiontape.record(TAPES/<id>.jsonl)`` with ``patch_subprocess()``;
- ``replay``: inside ``sessiontape.replay(TAPES/<id>.jsonl)`` with ``patch_subprocess()``,
  counting every process the interpreter starts meanwhile (its audit events).

Each test's start and result are appended to RESULTS as one JSON line, flushed, so that
the driver (``run_conformance.py``) can tell which test hung when no line comes.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import unittest
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sessiontape

#: Audit events of a process being started (``subprocess.Popen`` is raised by the real
#: ``_execute_child`` only: a replayed ``Popen`` never reaches it).
SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.posix_spawn", "os.fork", "os.forkpty", "os.exec"}
)


class _SpawnCounter:
    """Counts the processes started while ``counting`` is set (an audit hook: it sees them
    however they are started, from any thread)."""

    def __init__(self) -> None:
        self.counting = False
        self.events: list[str] = []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.counting and event in SPAWN_EVENTS:
            self.events.append(event)


class _Result(unittest.TestResult):
    """Writes one JSON line per test: ``start``, then its outcome."""

    def __init__(self, out: Any) -> None:
        super().__init__()
        self._out = out
        self._status: dict[str, str] = {}
        self._detail: dict[str, str] = {}
        self._started: dict[str, float] = {}

    def emit(self, record: dict[str, Any]) -> None:
        """Append ``record`` as one flushed line."""
        self._out.write(json.dumps(record) + "\n")
        self._out.flush()

    def begin(self, test_id: str) -> None:
        """A test starts (before its tape is opened)."""
        self._status[test_id] = "pass"
        self._started[test_id] = time.monotonic()
        self.emit({"event": "start", "id": test_id})

    def end(self, test_id: str, extra: dict[str, Any]) -> None:
        """A test ended (after its tape was closed): its status, detail and ``extra``."""
        record = {"event": "end", "id": test_id, "status": self._status.get(test_id, "pass")}
        started = self._started.pop(test_id, time.monotonic())
        record["seconds"] = round(time.monotonic() - started, 3)
        if test_id in self._detail:
            record["detail"] = self._detail[test_id]
        record.update(extra)
        self.emit(record)

    def _set(self, test: unittest.TestCase, status: str, err: Any = None) -> None:
        tid = test.id()
        if self._status.get(tid) in ("fail", "error") and status == "pass":
            return
        self._status[tid] = status
        if err is not None:
            self._detail[tid] = self._exc_info_to_string(err, test)[-1500:]

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self._set(test, "fail", err)

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        self._set(test, "error", err)

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self._set(test, "skip")
        self._detail[test.id()] = reason

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._set(test, "pass")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self._set(test, "fail")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._set(test, "fail" if failed else "error", err)


def _cases(suite: unittest.TestSuite) -> Iterator[unittest.TestCase]:
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _cases(item)
        else:
            yield item


def _tape_path(tapes: Path, test_id: str) -> Path:
    return tapes / f"{test_id}.jsonl"


def main(argv: list[str]) -> int:
    mode, results, tapes_dir, *ids = argv
    tapes = Path(tapes_dir)
    tapes.mkdir(parents=True, exist_ok=True)
    counter = _SpawnCounter()
    suite = unittest.defaultTestLoader.loadTestsFromNames(ids)

    def wrap(case: unittest.TestCase) -> None:
        original = case.run
        tid = case.id()

        def run(result: Any = None) -> Any:
            extra: dict[str, Any] = {}
            result.begin(tid)
            try:
                return _run(result, extra)
            finally:
                result.end(tid, extra)

        def _run(result: Any, extra: dict[str, Any]) -> Any:
            path = _tape_path(tapes, tid)
            if mode == "plain":
                return original(result)
            if mode == "record":
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", sessiontape.RecordingWarning)
                    with sessiontape.record(path) as tape, tape.patch_subprocess():
                        outcome = original(result)
                warned = [w for w in caught if w.category is sessiontape.RecordingWarning]
                notes = [str(w.message) for w in warned]
                extra["recording_warnings"] = notes[:5]
                return outcome
            counter.events.clear()
            counter.counting = True
            report = None
            try:
                with sessiontape.replay(path) as tape:
                    with tape.patch_subprocess():
                        outcome = original(result)
                    report = tape.finish()
            finally:
                counter.counting = False
                info = extra
                info["spawned"] = list(counter.events)
                if report is not None:
                    info["report_ok"] = report.ok
                    info["mismatches"] = [
                        f"{m.kind.value}: {m.message}"[:300] for m in report.mismatches[:3]
                    ]
                    info["warnings"] = [
                        f"{m.kind.value}: {m.message}"[:300]
                        for m in getattr(report, "warnings", [])[:3]
                    ]
            return outcome

        case.run = run  # type: ignore[method-assign]

    for case in _cases(suite):
        wrap(case)
    with open(results, "a", encoding="utf-8") as out:
        result = _Result(out)
        suite.run(result)
    # A test may leave a thread behind; the phase is over once its results are written.
    threading.enumerate()
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    raise SystemExit(main(sys.argv[1:]))
