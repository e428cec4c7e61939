"""Replays in worker processes, each a pytest session that loaded the project once.

``shrink`` and ``corpus`` replay many cassettes (candidates, or a corpus's tapes) and must
replay each exactly as ``pytest --replay`` would: through the project's
``sessiontape_replay`` hook in its ``conftest.py``, with its ini settings (strict mode,
noise masks), its autouse fixtures and the plugin's own item. So each worker process runs
``pytest --replay ANCHOR`` from the caller's directory (pytest finds the conftests as it
would for the user), and instead of running the collected items it serves jobs: each job
is a cassette path, turned into an item by the ``pytest_collect_file`` hook and run through
``pytest_runtest_protocol``, the path every item takes. The conftest, pytest's start-up and
the application's imports are paid once per worker, not once per replay.

A worker answers with a :class:`Verdict`: passed, or the failure's :class:`Signature`.
Nothing a tape names is spawned, imported or executed: the replay is the plugin's, with
the guarantees of every replay. A worker that dies or exceeds the time limit is replaced
and its job counts as not failing the same way.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ._errors import ReduceError
from ._verdict import Signature, Verdict, signature_of_mismatch

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    import pytest

__all__ = ["Pool"]

#: How long a worker may take to start (pytest, the conftest, the application's imports).
_START_TIMEOUT: Final = 120.0
#: How often the pool looks for a dead or stuck worker while it waits.
_POLL: Final = 0.2


# -- the worker side -------------------------------------------------------------------


class _Serve:
    """The pytest plugin of a worker: serve jobs instead of running the collected items."""

    def __init__(self, wid: int, jobs: Any, results: Any, coverage: str | None) -> None:
        self.wid = wid
        self.jobs = jobs
        self.results = results
        self.coverage_source = coverage
        self.call_report: pytest.TestReport | None = None
        self.excinfo: pytest.ExceptionInfo[BaseException] | None = None

    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        self.results.put(("ready", self.wid, None, None))
        parent = os.getppid()
        while True:
            try:
                job = self.jobs.get(timeout=1.0)
            except queue.Empty:
                # A parent that was killed cannot say stop: a worker never outlives it.
                if os.getppid() != parent:
                    os._exit(0)
                continue
            if job is None:
                # Every item's fixtures, session-scoped ones included, were torn down after
                # it (each ran as the last item); pytest's end of session (its summary,
                # plugins importing their reports) would only make the parent wait.
                self.results.close()
                self.results.join_thread()
                os._exit(0)
            jid, path = job
            self.results.put(("start", self.wid, jid, None))
            started = time.perf_counter()
            verdict = self._replay(session, Path(path))
            verdict = _with_seconds(verdict, time.perf_counter() - started)
            self.results.put(("done", self.wid, jid, verdict))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The first failed phase, else the call phase: what pytest shows for the item.
        if self.call_report is None and (report.failed or report.when == "call"):
            self.call_report = report

    def pytest_exception_interact(self, node: Any, call: pytest.CallInfo[Any], report: Any) -> None:
        if self.excinfo is None:
            self.excinfo = call.excinfo

    def _replay(self, session: pytest.Session, path: Path) -> Verdict:
        self.call_report = None
        self.excinfo = None
        hook = session.config.hook
        collectors = hook.pytest_collect_file(file_path=path, parent=session)
        items = [item for collector in collectors for item in collector.collect()]
        if not items:
            return Verdict(False, Signature("uncollected", "pytest", path.name), "not collected")
        item = items[0]
        lines: frozenset[str] = frozenset()
        with self._covered() as covered:
            item.ihook.pytest_runtest_protocol(item=item, nextitem=None)
        if covered is not None:
            lines = frozenset(covered)
        return self._verdict(self.call_report, lines)

    @contextlib.contextmanager
    def _covered(self) -> Iterator[set[str] | None]:
        if self.coverage_source is None:
            yield None
            return
        import coverage  # an optional extra: checked before the pool starts

        lines: set[str] = set()
        cov = coverage.Coverage(source=[self.coverage_source], data_file=None)
        cov.start()
        try:
            yield lines
        finally:
            cov.stop()
            data = cov.get_data()
            for file in data.measured_files():
                name = os.path.relpath(file, self.coverage_source)
                lines.update(f"{name}:{n}" for n in data.lines(file) or ())

    def _verdict(self, report: pytest.TestReport | None, lines: frozenset[str]) -> Verdict:
        from ..plugin import REPORT_PROPERTY

        if report is None or report.passed:
            return Verdict(True, lines=lines)
        summary = _summary(report)
        replay = next(
            (v for k, v in report.user_properties if k == REPORT_PROPERTY and isinstance(v, dict)),
            None,
        )
        unconsumed: tuple[int, ...] = ()
        if replay is not None:
            unconsumed = tuple(
                int(m["seq"])
                for m in replay.get("mismatches", [])
                if m.get("kind") == "unconsumed" and isinstance(m.get("seq"), int)
            )
        excinfo = self.excinfo
        if excinfo is not None and not excinfo.errisinstance(pytest_fail_exception()):
            return Verdict(
                False, _exception_signature(excinfo), summary, unconsumed=unconsumed, lines=lines
            )
        mismatches = replay.get("mismatches", []) if replay is not None else []
        if mismatches:
            first = mismatches[0]
            seq = first.get("seq")
            return Verdict(
                False,
                signature_of_mismatch(first),
                summary,
                seq=seq if isinstance(seq, int) else None,
                unconsumed=unconsumed,
                lines=lines,
            )
        # Failed without a mismatch: the tape could not be loaded, no hook handled it, a
        # replay that served nothing. The first line says which.
        return Verdict(False, Signature("failed", "pytest", _first_words(summary)), summary)


def pytest_fail_exception() -> type[BaseException]:
    import pytest

    exc: type[BaseException] = pytest.fail.Exception
    return exc


def _first_words(text: str) -> str:
    """The message without its numbers, paths and ids: its words only."""
    words = [w for w in re.split(r"\s+", text) if re.fullmatch(r"[A-Za-z][a-z_-]*[.:,;]?", w)]
    return " ".join(words[:12])


def _summary(report: pytest.TestReport) -> str:
    text = str(report.longrepr or "")
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0].strip()[:300] if lines else "failed"


def _exception_signature(excinfo: pytest.ExceptionInfo[BaseException]) -> Signature:
    """An escaped exception: its type, and where it was raised (file and function)."""
    kind = excinfo.type.__qualname__
    module = excinfo.type.__module__
    name = kind if module in ("builtins", "") else f"{module}.{kind}"
    where = "?"
    if excinfo.traceback:
        entry = excinfo.traceback[-1]
        where = f"{Path(str(entry.path)).name}:{entry.name}:{entry.lineno + 1}"
    return Signature("exception", name, where)


def _with_seconds(verdict: Verdict, seconds: float) -> Verdict:
    from dataclasses import replace

    return replace(verdict, seconds=seconds)


def _worker_main(
    wid: int, cwd: str, args: list[str], jobs: Any, results: Any, coverage: str | None
) -> None:
    """A worker process: ``pytest --replay ANCHOR`` that serves jobs instead of items."""
    # The parent handles Ctrl-C and ends the workers; a worker must not die half-way.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.chdir(cwd)
    # pytest's and the application's output would garble the parent's progress line.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    import pytest

    plugin = _Serve(wid, jobs, results, coverage)
    try:
        code = pytest.main(args, plugins=[plugin])
    except BaseException as exc:  # reported to the parent, which says what to do
        results.put(("error", wid, None, f"{type(exc).__name__}: {exc}"))
        raise
    if code not in (0, 1, 5):  # usage error, internal error: it never served a job
        results.put(("error", wid, None, f"pytest exited with {code}"))


# -- the parent side -------------------------------------------------------------------


class Pool:
    """``jobs`` worker processes replaying cassettes as ``pytest --replay`` would.

    ``anchor`` is a cassette that pytest collects at start-up (the input tape): it makes
    pytest find the same rootdir, ini file and conftests as ``pytest --replay ANCHOR``.
    """

    def __init__(
        self,
        anchor: str,
        *,
        jobs: int,
        timeout: float | None = None,
        coverage: str | None = None,
        cwd: str | None = None,
    ) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._cwd = cwd or os.getcwd()
        self._tmp = tempfile.TemporaryDirectory(prefix="sessiontape-pool-")
        self._args = [
            "--replay",
            os.path.abspath(anchor),
            "-o",
            "addopts=",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-p",
            "no:xdist",
            "-q",
            "--sessiontape-report",
            os.path.join(self._tmp.name, "receipt.json"),
        ]
        if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
            self._args[:0] = ["-p", "sessiontape.plugin"]
        self._coverage = coverage
        self.timeout = timeout
        self._jobs: Any = self._context.Queue()
        self._results: Any = self._context.Queue()
        self._workers: dict[int, BaseProcess] = {}
        self._running: dict[int, tuple[int, float]] = {}  # worker -> (job, started)
        self._next_wid = 0
        self._next_jid = 0
        self.size = max(1, jobs)
        self.replays = 0
        saved = os.environ.pop("PYTEST_ADDOPTS", None)
        try:
            for _ in range(self.size):
                self._spawn()
        finally:
            if saved is not None:
                os.environ["PYTEST_ADDOPTS"] = saved
        self._wait_ready(self.size)

    def _spawn(self) -> None:
        wid = self._next_wid
        self._next_wid += 1
        process = self._context.Process(
            target=_worker_main,
            args=(wid, self._cwd, self._args, self._jobs, self._results, self._coverage),
            daemon=True,
            name=f"sessiontape-replay-{wid}",
        )
        process.start()
        self._workers[wid] = process

    def _wait_ready(self, count: int) -> None:
        deadline = time.monotonic() + _START_TIMEOUT
        ready = 0
        while ready < count:
            try:
                kind, _, _, data = self._results.get(timeout=_POLL)
            except queue.Empty:
                if time.monotonic() > deadline or not any(
                    p.is_alive() for p in self._workers.values()
                ):
                    self.close()
                    raise ReduceError(
                        "the replay workers did not start: 'pytest --replay' could not run "
                        f"in {self._cwd}. Run 'pytest --replay TAPE' there to see why."
                    ) from None
                continue
            if kind == "ready":
                ready += 1
            elif kind == "error":
                self.close()
                raise ReduceError(
                    f"a replay worker could not start pytest in {self._cwd} ({data}). Run "
                    "'pytest --replay TAPE' there to see why."
                )

    def run(self, paths: Sequence[str]) -> list[Verdict]:
        """Replay each of ``paths`` (spread over the workers); verdicts in their order."""
        pending: dict[int, int] = {}
        for index, path in enumerate(paths):
            jid = self._next_jid
            self._next_jid += 1
            pending[jid] = index
            self._jobs.put((jid, os.path.abspath(path)))
        verdicts: list[Verdict | None] = [None] * len(paths)
        while pending:
            try:
                kind, wid, jid, data = self._results.get(timeout=_POLL)
            except queue.Empty:
                self._reap(pending, verdicts)
                continue
            if kind == "start":
                self._running[wid] = (jid, time.monotonic())
            elif kind == "done":
                self._running.pop(wid, None)
                if jid in pending:
                    verdicts[pending.pop(jid)] = data
                    self.replays += 1
            elif kind == "error":
                print(f"sessiontape: warning: a replay worker failed: {data}", file=sys.stderr)
            if not self._workers:
                break
        return [v if v is not None else Verdict(False, lost=True) for v in verdicts]

    def _reap(self, pending: dict[int, int], verdicts: list[Verdict | None]) -> None:
        """Replace a worker that died or overran the time limit; its job is lost."""
        now = time.monotonic()
        for wid, process in list(self._workers.items()):
            running = self._running.get(wid)
            overran = (
                running is not None and self.timeout is not None and now - running[1] > self.timeout
            )
            if process.is_alive() and not overran:
                continue
            if overran:
                process.kill()
            process.join(5)
            del self._workers[wid]
            self._running.pop(wid, None)
            if running is not None and running[0] in pending:
                verdicts[pending.pop(running[0])] = Verdict(False, lost=True, summary="lost")
            # Not waited for: its "ready" arrives among the verdicts, and it takes a job
            # from the queue when it is.
            self._spawn()

    def close(self) -> None:
        """End the workers (each by its own process) and remove the pool's files."""
        for _ in self._workers:
            with contextlib.suppress(Exception):
                self._jobs.put(None)
        for process in self._workers.values():
            process.join(2)
            if process.is_alive():
                process.kill()
                process.join(2)
        self._workers.clear()
        self._tmp.cleanup()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
