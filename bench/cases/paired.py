"""The measurements of ``bench/run.py --against REV``: one repetition each, in a child.

Each function runs in a fresh interpreter of the tree under test (``cases/_child.py``
with that tree's environment), measures one group of figures once and returns
``{figure id: value}``; ``bench/against.py`` runs it in both trees in turns and divides.
The cases are this checkout's (``bench/cases``), run against the other tree's
sessiontape package: the same workload, the same timing code, so a ratio measures the
library and nothing else. They use only the public API that both trees have (records,
replays, ``load``, the pytest plugin and its ``sessiontape_replay`` hook); where the
older tree lacks something, the figure says so rather than measuring something else.

Per-call figures are timed by the CPU time of the thread (of the process at 8 threads),
not the wall clock: on a shared machine a batch that waits for a core does not count
against either tree. Start-up figures are the best of a few runs, as in the main suite.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Final

from . import boundaries, corpus, record, replay_call, startup
from .common import PROCESS_CPU, THREAD_CPU, median, per_call_each

__all__ = [
    "FIXED_DIR_ENV",
    "boundary_calls",
    "corpus_items",
    "corpus_project",
    "process_calls",
    "record_calls",
    "recording",
    "replay_boundary_calls",
    "replay_calls",
    "start_up",
]

#: Where each child writes its tapes: its own temporary folder, removed when it exits.
_PREFIX: Final = "sessiontape-against-"


#: Set by ``--instructions`` (``against._per_call``) for the children it counts: their work
#: directory, at the same path in every run. Paths go through the scrubber, whose cost
#: depends on their characters: a random name per run made the counts differ by up to a
#: third from run to run.
FIXED_DIR_ENV: Final = "SESSIONTAPE_BENCH_FIXED_DIR"


def _workdir() -> Path:
    fixed = os.environ.get(FIXED_DIR_ENV)
    if not fixed:
        # A child measures once and exits: its tapes (megabytes per figure) go with it.
        made = Path(tempfile.mkdtemp(prefix=_PREFIX))
        atexit.register(shutil.rmtree, made, True)
        return made
    path = Path(fixed)
    shutil.rmtree(path, ignore_errors=True)  # the harness's own directory, from a run before
    path.mkdir(parents=True)
    return path


def _repo(work: Path) -> str:
    """The repository directory of a measurement, inside its work directory."""
    path = work / "repo"
    path.mkdir()
    return str(path)


def recording(
    *, calls: int, batches: int, threads: int, thread_calls: int, thread_rounds: int
) -> dict[str, float]:
    """Recording overhead per call at levels full and standard on one thread (recorded
    minus the inner runner, µs of thread CPU), and per call at ``threads`` threads (µs of
    process CPU over all the calls, the inner runner's subtracted)."""
    work = _workdir()
    full = record.per_call("full", calls, batches, work, THREAD_CPU)
    standard = record.per_call("standard", calls, batches, work, THREAD_CPU)
    many = record.threaded(threads, thread_calls, thread_rounds, work, PROCESS_CPU)
    return {
        "record_full_us": full["overhead_ns"] / 1000,
        "record_standard_us": standard["overhead_ns"] / 1000,
        "record_threads_us": (many["recorded_per_call_ns"] - many["inner_per_call_ns"]) / 1000,
    }


def process_calls(*, calls: int, batches: int) -> dict[str, float]:
    """One replayed process call through the fake runner (µs of thread CPU), its floor
    (a bare deque and compare) taking turns with it."""
    work = _workdir()
    repo = _repo(work)
    tape = work / "calls.jsonl"
    replay_call.write_tape(tape, calls, with_cwd=True)
    import sessiontape

    recording = sessiontape.load(tape)
    requests = replay_call.requests_for(calls, repo)
    timed = per_call_each(
        {
            "sessiontape": replay_call.replaying(recording, requests, repo, patch_time=True),
            "deque": replay_call.deque_floor(requests),
        },
        batches=batches,
        clock=THREAD_CPU,
    )
    ours, floor = timed["sessiontape"]["median_ns"], timed["deque"]["median_ns"]
    return {"replay_call_us": ours / 1000, "replay_call_floor_ratio": ours / floor}


def boundary_calls(*, calls: int, batches: int) -> dict[str, float]:
    """One replayed agent turn, store mutation and user-boundary call (µs of thread CPU)."""
    timed = boundaries.run(calls=calls, batches=batches, workdir=_workdir(), clock=THREAD_CPU)
    return {
        f"replay_{name}_us": timed[name]["sessiontape"]["median_ns"] / 1000
        for name in ("agent", "store", "user")
    }


def corpus_items(*, cassettes: int, sessions: int) -> dict[str, float]:
    """``cassettes`` tiny cassettes through ``pytest`` beside as many trivial tests, in one
    session: the items' CPU time (each item's whole run protocol), cassettes over trivial
    tests, summed (the first replay's one-time work included, as the suite's figure) and
    by the median item; the median of ``sessions`` sessions."""
    work = _workdir()
    root = corpus.write_corpus(work / "corpus", cassettes, cassettes)
    sums, medians, wall = [], [], []
    for n in range(sessions):
        items = corpus.session_items(root, work / f"timing-{n}.json", cassettes)
        sums.append(sum(items["cpu_cassette"]) / sum(items["cpu_test"]))
        medians.append(median(items["cpu_cassette"]) / median(items["cpu_test"]))
        wall.append(sum(items["cassette"]) / sum(items["test"]))
    return {
        "corpus_ratio": median(sums),
        "corpus_ratio_median_item": median(medians),
        "corpus_ratio_wall": median(wall),
    }


def start_up(*, rounds: int) -> dict[str, float]:
    """The plugin's entry point import after pytest's (ms of the importing thread's CPU,
    best of ``3 * rounds``), and over pytest-recording's in the same rounds; a one-test
    pytest run over the same run with ``-p no:sessiontape`` (CPU time, best runs);
    ``import sessiontape`` + ``record(None)`` over a bare interpreter (ms of CPU, best)."""
    work = _workdir()
    project = work / "project"
    project.mkdir()
    (project / "test_one.py").write_text(startup.TEST, encoding="utf-8")
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = startup.child_env()
    entries = startup.entry_points()
    if "sessiontape" not in entries:
        raise RuntimeError(f"no pytest11 entry point of sessiontape in {os.__file__}'s site")
    peers = {d: e for d, e in entries.items() if d in ("sessiontape", "pytest-recording")}
    ours = {"sessiontape": entries["sessiontape"]}
    # Warm-up: bytecode written, caches filled.
    startup.import_cpu(peers, 1, project, env)
    startup.pytest_runs(ours, 1, project, env)
    startup.record_none(1, project, env)
    imports = startup.import_cpu(peers, 3 * rounds, project, env)
    runs = startup.pytest_runs(ours, rounds, project, env)
    off = startup.record_none(rounds, project, env)
    entry = imports["sessiontape"]
    out = {
        "startup_entry_ms": entry,
        "startup_run_ratio": runs["all_cpu_best_s"] / runs["without_cpu_best_s"]["sessiontape"],
        "startup_record_none_ms": off["best_overhead_cpu_ms"],
    }
    recording_ms = imports.get("pytest-recording")
    if recording_ms:
        out["startup_entry_vs_recording"] = entry / recording_ms
    return out


# -- instructions (``--instructions``): fixed work, nothing timed --------------------------
#
# Each runs under ``valgrind --tool=callgrind`` twice, with ``calls`` and twice as many:
# the difference is the cost of ``calls`` calls, every fixed cost (start-up, imports, the
# tape's set-up and close, warm-up) cancelling out.

#: Kept alive to the end of the process (see :func:`replay_calls`).
_KEPT: list[Any] = []


def record_calls(*, level: str, calls: int, threads: int = 1) -> dict[str, float]:
    """Record ``calls`` process calls on each of ``threads`` threads through one tape."""
    import threading

    import sessiontape
    from sessiontape import ProcessResult

    work = _workdir()
    repo = _repo(work)
    requests = replay_call.requests_for(max(calls, 200), repo)
    results = [ProcessResult(argv, 0, out, "") for argv, _, out in requests]
    tape = sessiontape.record(work / "rec.jsonl", level=level, roots={"repo": repo})
    run = tape.process_runner(record.FakeRunner(results)).run
    for argv, cwd, _ in requests[:50]:  # warm-up: the scrubber's memos, first writes
        run(argv, cwd=cwd, text=True)

    def work_on(index: int) -> None:
        with sessiontape.worker(f"w{index}"):
            for i in range(calls):
                argv, cwd, _ = requests[i % len(requests)]
                run(argv, cwd=cwd, text=True)

    pool = [threading.Thread(target=work_on, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    tape.close()
    return {"calls": float(calls * threads)}


def replay_calls(*, calls: int, tape_calls: int) -> dict[str, float]:
    """Replay the first ``calls`` process calls of a ``tape_calls``-call tape (the same
    tape in both runs); the replay is left open, so no report of the calls left over."""
    import sessiontape

    work = _workdir()
    repo = _repo(work)
    path = work / "calls.jsonl"
    replay_call.write_tape(path, tape_calls, with_cwd=True)
    recording = sessiontape.load(path)
    requests = replay_call.requests_for(tape_calls, repo)
    tape = sessiontape.replay(recording, roots={"repo": repo})
    tape.__enter__()
    run = tape.process_runner().run
    for argv, cwd, _ in requests[:calls]:
        run(argv, cwd=cwd, text=True)
    _KEPT.append(tape)
    return {"calls": float(calls)}


def replay_boundary_calls(*, kind: str, calls: int, tape_calls: int) -> dict[str, float]:
    """Replay the first ``calls`` calls of a ``tape_calls``-call tape of one boundary
    (``agent``, ``store`` or ``user``: ``cases/boundaries.py``'s workloads), recorded by
    this tree (the same tape in both runs of a count); the replay is left open."""
    import sessiontape

    work = _workdir()
    repo = _repo(work)
    case = boundaries.boundary_case(kind, tape_calls, repo)
    if len(case.calls) < calls:
        raise ValueError(f"the {kind} tape holds {len(case.calls)} calls, fewer than {calls}")
    recording = boundaries.record_case(work / f"{kind}.jsonl", repo, case)
    tape = sessiontape.replay(recording, roots={"repo": repo})
    tape.__enter__()
    target = case.replay(tape)
    for method, args in case.calls[:calls]:
        getattr(target, method)(*args)
    _KEPT.append(tape)
    return {"calls": float(calls)}


def corpus_project(*, root: str, cassettes: int, trivial: int) -> dict[str, float]:
    """Write the corpus project at ``root`` with this tree's recorder (a tape is read by
    the tree that wrote it), and a second module of ``trivial`` more trivial tests."""
    project = corpus.write_corpus(Path(root), cassettes, trivial)
    more = (project / "test_trivial.py").read_text(encoding="utf-8")
    (project / "test_more.py").write_text(more.replace("test_trivial", "test_more"), "utf-8")
    return {"cassettes": float(cassettes)}


def fork_branch(*, workers: int, calls: int, every: int, rounds: int) -> dict[str, float]:
    """A fork at the middle of a tape against a plain replay of it plus writing its
    branch, and against the plain replay alone, in CPU and wall time (``fork.py``: medians
    of per-round ratios); the fork's own median CPU time in ms. Nothing in a tree that
    has no fork."""
    import sessiontape.cassette

    if not hasattr(sessiontape.cassette, "write_new_cassette"):
        return {}  # a tree from before fork: it has no such figures (``against.compare``)
    # Imported here: the fork case needs names a tree before fork existed lacks, and every
    # other measurement of this module must still run against such a tree.
    from . import fork

    work = _workdir()
    got = fork.child_fork(str(work / "four-workers.jsonl"), workers, calls, every, rounds)
    return {
        "fork_budget_ratio": got["budget_ratio_cpu"],
        "fork_budget_ratio_wall": got["budget_ratio"],
        "fork_ratio": got["ratio"],
        "fork_ratio_cpu": got["ratio_cpu"],
        "fork_cpu_ms": got["fork_cpu_ns"] / 1e6,
    }
