"""Figure 4: recording overhead per call, on one thread and at 8, and on the example
orchestrator's whole run.

Per call: a ``RecordTape`` (levels ``full`` and ``standard``) wrapping a trivial inner
runner that returns a prebuilt :class:`~sessiontape.ProcessResult`, against that inner
runner called directly, batches taking turns. The requests are the ones of figure 1
(``git`` with a ``cwd`` under the repository root, outputs up to a few kilobytes); every
entry is really encoded and written to a cassette on disk.

Under threads: 8 threads, each inside ``sessiontape.worker(f"w{i}")``, record their calls
through one tape's ``process_runner`` over the trivial inner runner, started together
behind a barrier; the aggregate per call is the wall time from the barrier to the last
thread's end and the tape's close, over all the threads' calls. The same threads on the
inner runner alone are the baseline; recorded and unrecorded rounds alternate.

The orchestrator: the bundled gardener (``sessiontape.examples.gardener``, scenario
``full``, 3 worker threads, its real SQLite backlog and scripted agent) with a fake git
runner, run recorded at level ``full`` (tape set up, every process call, agent turn and
store mutation written, tape finished) and not recorded (``sessiontape.record(None)``:
the same wiring, nothing wrapped). Twice: waiting on ``tape.clock`` as the shipped wiring
does (its back-offs really sleep: the run as it is), and with sleeps that return at once
(only CPU work left: the worst case for a relative overhead).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape import ProcessResult

from .common import median, now_ns, per_call_each
from .replay_call import requests_for

__all__ = ["FakeRunner", "per_call", "run", "threaded"]


class FakeRunner:
    """An inner runner that only hands back prebuilt results, in order."""

    def __init__(self, results: list[ProcessResult] | None = None) -> None:
        self._results = results or []
        self._next = 0

    def run(
        self,
        argv: Any,
        *,
        cwd: Any = None,
        env: Any = None,
        input: Any = None,
        timeout: Any = None,
        text: bool = False,
    ) -> ProcessResult:
        results = self._results
        if not results:
            return ProcessResult(argv, 0, "" if text else b"", "" if text else b"")
        result = results[self._next % len(results)]
        self._next += 1
        return result

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class _InstantClock:
    """A clock whose sleeps return at once: the orchestrator's back-offs cost nothing.

    Each sleep still yields the GIL (as sessiontape's FakeClock does): a worker polling a
    busy lock would otherwise spin and starve the thread holding it.
    """

    def sleep(self, seconds: float) -> None:
        time.sleep(0)


def _loop(run: Callable[..., Any], requests: list[Any]) -> int:
    """Make every request through ``run``, as the application would; how many."""
    for argv, cwd, _ in requests:
        run(argv, cwd=cwd, text=True)
    return len(requests)


def _check_recorded(path: Path, calls: int, workers: int = 1) -> None:
    """The tape at ``path`` holds ``calls`` calls of ``workers`` workers."""
    written = sessiontape.load(path)
    if len(written.calls) != calls or len(written.worker_ids()) != workers:
        raise AssertionError(
            f"{path.name}: {len(written.calls)} calls of {len(written.worker_ids())} "
            f"workers recorded, expected {calls} of {workers}"
        )


def per_call(
    level: str, calls: int, batches: int, workdir: Path, clock: Callable[[], int] = now_ns
) -> dict[str, Any]:
    """Recorded and inner calls per call at ``level``, batches taking turns (``clock``: see
    :func:`~cases.common.per_call_each`)."""
    repo = tempfile.mkdtemp(prefix="bench-rec-", dir=workdir)
    requests = requests_for(calls, repo)
    results = [ProcessResult(argv, 0, out, "") for argv, _, out in requests]
    paths = (workdir / f"rec-{level}-{n}.jsonl" for n in itertools.count())

    def recorded() -> Any:
        path = next(paths)
        tape = sessiontape.record(path, level=level, roots={"repo": repo})
        run = tape.process_runner(FakeRunner(results)).run

        def cleanup() -> None:
            tape.close()
            _check_recorded(path, calls)
            path.unlink()

        return functools.partial(_loop, run, requests), cleanup

    def bare() -> Callable[[], int]:
        return functools.partial(_loop, FakeRunner(results).run, requests)

    timed = per_call_each({"recorded": recorded, "inner": bare}, batches=batches, clock=clock)
    return {**timed, "overhead_ns": timed["recorded"]["median_ns"] - timed["inner"]["median_ns"]}


def _threads_once(
    threads: int,
    requests: list[Any],
    results: list[ProcessResult],
    path: Path | None,
    clock: Callable[[], int] = now_ns,
) -> int:
    """ns (of ``clock``: wall by default) of ``threads`` threads making ``requests`` each
    through one runner: one tape's recording runner (``path``) or the inner runner alone
    (``None``)."""
    repo = requests[0][1]
    tape = sessiontape.record(path, roots={"repo": repo}) if path is not None else None
    inner = FakeRunner(results)
    run = tape.process_runner(inner).run if tape is not None else inner.run
    barrier = threading.Barrier(threads + 1)
    failures: list[BaseException] = []

    def work(index: int) -> None:
        try:
            with sessiontape.worker(f"w{index}"):
                barrier.wait()
                _loop(run, requests)
        except BaseException as exc:  # reported by the main thread below
            failures.append(exc)

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    start = clock()
    for thread in pool:
        thread.join()
    if tape is not None:
        tape.close()  # writes whatever is still pending: part of the cost
    elapsed = clock() - start
    if failures:
        raise failures[0]
    if path is not None:
        _check_recorded(path, threads * len(requests), workers=threads)
        path.unlink()
    return elapsed


def threaded(
    threads: int, calls: int, rounds: int, workdir: Path, clock: Callable[[], int] = now_ns
) -> dict[str, Any]:
    """``threads`` workers recording ``calls`` calls each at once, against the same threads
    on the inner runner alone; rounds alternate, after one of each as warm-up (``clock``:
    the wall clock, or :data:`~cases.common.PROCESS_CPU` for the CPU of every thread)."""
    repo = tempfile.mkdtemp(prefix="bench-threads-", dir=workdir)
    requests = requests_for(calls, repo)
    results = [ProcessResult(argv, 0, out, "") for argv, _, out in requests]
    path = workdir / "rec-threads.jsonl"
    recorded, bare = [], []
    for round_ in range(rounds + 1):
        timed = _threads_once(threads, requests, results, path, clock)
        untimed = _threads_once(threads, requests, results, None, clock)
        if round_:
            recorded.append(timed)
            bare.append(untimed)
    total = threads * calls
    rec_ns, bare_ns = median(recorded), median(bare)
    return {
        "threads": threads,
        "calls_per_thread": calls,
        "rounds": rounds,
        "recorded_wall_ns": rec_ns,
        "inner_wall_ns": bare_ns,
        "recorded_per_call_ns": rec_ns / total,
        "inner_per_call_ns": bare_ns / total,
        "recorded_all_ns": recorded,
        "inner_all_ns": bare,
    }


def _gardener_once(workdir: Path, recorded: bool, instant: bool) -> tuple[int, int, dict[str, int]]:
    """One gardener run; returns (wall ns, boundary calls recorded or 0, fixed costs).

    ``instant``: sleeps return at once (the CPU-bound worst case for the overhead);
    otherwise the run waits on ``tape.clock`` as the shipped wiring does. The fixed costs
    are the parts of the run that do not grow with its calls, timed in ns: opening the
    tape (``setup_ns``, its header written), wrapping the store (``store_ns``: the
    application's ``snapshot`` called and written) and finishing (``finish_ns``).
    """
    from sessiontape.examples import gardener

    work = Path(tempfile.mkdtemp(prefix="bench-gardener-", dir=workdir))
    spec = gardener.get_scenario("full")
    workers = 3
    fixed: dict[str, int] = {}
    start = now_ns()
    with warnings.catch_warnings():
        warnings.simplefilter("error", sessiontape.RecordingWarning)
        tape = (
            sessiontape.record(
                work / "run.jsonl", config={"scenario": "full"}, roots={"work": os.fspath(work)}
            )
            if recorded
            else sessiontape.record(None)
        )
        with tape:
            fixed["setup_ns"] = now_ns() - start
            runner = tape.process_runner(FakeRunner())
            gardener.init_repository(runner, work / "repo", spec.files)
            live = gardener.BacklogStore.create(work / "backlog.db", spec.backlog(workers))
            wrap = now_ns()
            store = tape.store(
                live, mutations=gardener.MUTATIONS, snapshot=gardener.BacklogStore.snapshot
            )
            fixed["store_ns"] = now_ns() - wrap
            agent = tape.agent(gardener.ScriptedAgent(spec.script), result_type=gardener.StepResult)
            orchestrator = gardener.Gardener(
                runner=runner,
                agent=agent,
                store=store,
                clock=_InstantClock() if instant else tape.clock,
                workdir=work,
                workers=workers,
            )
            try:
                summary = orchestrator.run()
            finally:
                store.close()
            finishing = now_ns()
            tape.finish(outcome=dataclasses.asdict(summary))
    elapsed = now_ns() - start
    fixed["finish_ns"] = now_ns() - finishing
    calls = len(sessiontape.load(work / "run.jsonl").calls) if recorded else 0
    return elapsed, calls, fixed


def _own_orchestrator_once(
    workdir: Path, recorded: bool, instant: bool
) -> tuple[int, int, dict[str, int]]:
    """Stand-in when the gardener is not importable: a small loop of the same shape."""
    work = Path(tempfile.mkdtemp(prefix="bench-loop-", dir=workdir))
    fixed: dict[str, int] = {}
    start = now_ns()
    tape = sessiontape.record(work / "run.jsonl") if recorded else sessiontape.record(None)
    with tape:
        fixed["setup_ns"] = now_ns() - start
        runner = tape.process_runner(FakeRunner())
        state: dict[str, Any] = {"done": []}

        class Store:
            def mark(self, task: str) -> dict[str, Any]:
                (work / f"{task}.txt").write_text(task)
                state["done"].append(task)
                return {"task": task, "count": len(state["done"])}

        store = tape.store(Store(), mutations=["mark"])
        for i in range(60):
            with sessiontape.worker(f"worker-{i % 3 + 1}"):
                for sub in ("status", "add", "commit", "rev-parse"):
                    runner.run(["git", sub], cwd=os.fspath(work), text=True)
                store.mark(f"task-{i}")
            if not instant and i % 10 == 9:
                tape.clock.sleep(0.05)  # a back-off now and then
        finishing = now_ns()
        tape.finish(outcome={"done": len(state["done"])})
    elapsed = now_ns() - start
    fixed["finish_ns"] = now_ns() - finishing
    calls = len(sessiontape.load(work / "run.jsonl").calls) if recorded else 0
    return elapsed, calls, fixed


def _orchestrator(runs: int, workdir: Path, *, instant: bool) -> dict[str, Any]:
    try:
        from sessiontape.examples import gardener  # noqa: F401

        once, which = _gardener_once, "sessiontape.examples.gardener (scenario 'full', 3 workers)"
    except ImportError as exc:
        once, which = _own_orchestrator_once, f"own 60-task loop (gardener not importable: {exc})"
    for recorded in (False, True):  # warm-up: imports, SQLite, first files
        once(workdir, recorded, instant)
    plain, rec, calls = [], [], 0
    fixed: list[dict[str, int]] = []
    for _ in range(runs):
        plain.append(once(workdir, False, instant)[0])
        elapsed, calls, costs = once(workdir, True, instant)
        rec.append(elapsed)
        fixed.append(costs)
    p, r = median(plain), median(rec)
    return {
        "orchestrator": which,
        "clock": "instant sleeps" if instant else "tape.clock (real)",
        "runs": runs,
        "plain_ns": p,
        "recorded_ns": r,
        "plain_all_ns": plain,
        "recorded_all_ns": rec,
        "calls_recorded": calls,
        "overhead_ratio": (r - p) / p,
        "overhead_per_call_ns": (r - p) / calls if calls else None,
        # Medians of the recorded runs' fixed costs (see _gardener_once).
        "fixed_ns": {k: median([f[k] for f in fixed]) for k in fixed[0]} if fixed else {},
    }


def run(
    *,
    calls: int,
    batches: int,
    threads: int,
    thread_calls: int,
    thread_rounds: int,
    orchestrator_runs: int,
    workdir: Path,
) -> dict[str, Any]:
    """Per-call overhead at levels full and standard, on one thread and in aggregate at
    ``threads`` threads, and the orchestrator's run."""
    return {
        "full": per_call("full", calls, batches, workdir),
        "standard": per_call("standard", calls, batches, workdir),
        "threads": threaded(threads, thread_calls, thread_rounds, workdir),
        "orchestrator": _orchestrator(orchestrator_runs, workdir, instant=False),
        "orchestrator_instant": _orchestrator(orchestrator_runs, workdir, instant=True),
    }
