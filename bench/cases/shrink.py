"""Shrinking a long tape, and minimising a corpus, as a user runs them.

* **shrink**: a tape of three workers claiming jobs from a store and running each job's
  steps through an injected runner (``entries`` entries, recorded in the project's own
  process), whose replay fails at one step of one job (a planted change of today's code,
  switched on by an environment variable). ``sessiontape shrink TAPE -o SMALL -j 2`` runs
  as a command in the project folder, replaying each candidate through the project's
  ``sessiontape_replay`` hook in worker processes. Figures: the wall time, the candidates
  tried, the time per candidate, and the entries before and after against the smallest
  tape that shows the failure (the job's claim and steps up to the failing one, the
  header, the snapshot, each other worker's last claim).
* **shrink under a budget**: the same on a tape of ``big_entries`` entries with
  ``--budget``: it must stop within the budget (plus the time to start its workers and
  write the best tape) with a tape that fails the same way.
* **a candidate against the plain replay**: the design's figure, a candidate costs at most
  3 times the plain replay of its tape once the workers started. On a tape of
  ``candidate_entries`` entries, ``candidates`` candidates of the kind delta debugging
  makes (the tape less one top-level call, spread over the tape and its workers) are each
  written and replayed through shrink's own replay worker, taking turns with a replay of
  the whole tape through the same worker, ``rounds`` times. Figures: each candidate's
  median cost over the median plain replay (their median, the largest, and how many are
  over 3), and the shrink of that tape (its search only, workers started: seconds per
  candidate in worker time over the tape's plain replay).
* **corpus --minimize**: ``tapes`` tiny cassettes (bench/cases/corpus.py's corpus) through
  ``sessiontape corpus DIR --minimize -n 2``, against the plain replay of the same folder,
  ``pytest --replay DIR -n 2``; wall time of each command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

from .common import now_ns
from .corpus import write_corpus

__all__ = ["run"]

PLANT: Final = "SESSIONTAPE_BENCH_PLANT"
STEPS: Final = 80
WORKERS: Final = 3

_APP: Final = (
    '''
"""Workers claim jobs from a store and run each job's steps through a runner."""
import os
import threading

import sessiontape
from sessiontape import ProcessResult

ENTRY = "bench-shrink"


class Runner:
    def run(self, argv, *, cwd=None, env=None, input=None, timeout=None, text=False):
        return ProcessResult(argv, 0, " ".join(argv[2:]) + "\\n", "")

    def stream(self, *args, **kwargs):
        raise NotImplementedError


class Jobs:
    def __init__(self, jobs):
        self.jobs = {job["id"]: dict(job) for job in jobs}
        self.lock = threading.Lock()

    def snapshot(self):
        return [dict(self.jobs[key]) for key in sorted(self.jobs)]

    def claim(self, worker):
        with self.lock:
            for key in sorted(self.jobs):
                job = self.jobs[key]
                if job["worker"] == worker and job["status"] == "pending":
                    job["status"] = "claimed"
                    return dict(job)
        return None

    def complete(self, job_id):
        with self.lock:
            self.jobs[job_id]["status"] = "done"


def app(tape, jobs, workers, steps):
    replaying = tape.mode is sessiontape.Mode.REPLAY
    live = None if replaying else Jobs(
        [{"id": f"job-{i:04d}", "worker": f"worker-{i % workers}", "steps": steps,
          "status": "pending"} for i in range(jobs)]
    )
    store = tape.store(live, mutations=["claim", "complete"], snapshot=Jobs.snapshot,
                       factory=Jobs)
    runner = tape.process_runner(Runner())
    planted = os.environ.get("'''
    + PLANT
    + """")
    errors = []

    def work(name):
        try:
            with sessiontape.worker(name):
                while (job := store.claim(name)) is not None:
                    for step in range(job["steps"]):
                        argv = ["tool", "run", job["id"], str(step)]
                        if planted == job["id"] and step == 5:
                            argv.append("--planted")
                        runner.run(argv, text=True)
                    store.complete(job["id"])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"worker-{w}",)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    tape.finish({"jobs": jobs})
    return True


def record(path, jobs, workers, steps):
    config = {"jobs": jobs, "workers": workers, "steps": steps}
    with sessiontape.record(path, config=config, entrypoint=ENTRY) as tape:
        app(tape, jobs, workers, steps)


def sessiontape_replay(tape, recording):
    if recording.header.entrypoint != ENTRY:
        return None
    config = recording.header.config
    return app(tape, config["jobs"], config["workers"], config["steps"])
"""
)

_CONFTEST: Final = "from shrink_app import sessiontape_replay  # noqa: F401\n"

#: Run in the project folder: each candidate's cost as shrink pays it (written, then
#: replayed by a replay worker), taking turns with a replay of the whole tape.
_PROBE: Final = '''
"""Candidates of a tape (less one top-level call each) against the tape's plain replay."""
import json
import statistics
import sys
import time
from pathlib import Path

import sessiontape
from sessiontape.cassette import ShrunkFrom


def main():
    tape, count, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        from sessiontape.reduce import Cuts, Pool
    except ImportError:  # a tree from before sessiontape.reduce
        from sessiontape.cli._pool import Pool
        from sessiontape.cli._reduce import Tape as Cuts
    recording = sessiontape.load(tape)
    cuts = Cuts(recording)
    roots = cuts.roots(cuts.whole)
    step = max(1, len(roots) // count)
    sample = roots[step // 2 :: step][:count]
    work = Path(tape).with_name("candidates")
    work.mkdir(exist_ok=True)
    shrunk = ShrunkFrom(recording.header.run_id, len(recording.entries), "bench")
    plain, cost = [], {i: [] for i in range(len(sample))}
    with Pool(tape, jobs=1) as pool:
        pool.run([tape])  # the worker's first replay pays its first-use imports
        for _ in range(rounds):
            for index, unit in enumerate(sample):
                start = time.perf_counter()
                pool.run([tape])
                plain.append(time.perf_counter() - start)
                start = time.perf_counter()
                path = str(work / f"candidate-{index}.jsonl")
                cuts.write(cuts.without(cuts.whole, unit), shrunk, path)
                pool.run([path])
                cost[index].append(time.perf_counter() - start)
    base = statistics.median(plain)
    ratios = sorted(statistics.median(c) / base for c in cost.values())
    print(json.dumps({
        "entries": len(recording.entries),
        "candidates": len(sample),
        "rounds": rounds,
        "plain_ns": round(base * 1e9),
        "plain_min_ns": round(min(plain) * 1e9),
        "plain_max_ns": round(max(plain) * 1e9),
        "ratio_median": statistics.median(ratios),
        "ratio_max": ratios[-1],
        "over_3": sum(1 for r in ratios if r > 3),
        "ratios": ratios,
    }))


if __name__ == "__main__":
    main()
'''


def _env(root: Path, **extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]), **extra)


def _project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "shrink_app.py").write_text(_APP, encoding="utf-8")
    (root / "conftest.py").write_text(_CONFTEST, encoding="utf-8")
    (root / "probe_candidates.py").write_text(_PROBE, encoding="utf-8")
    return root


def _record(root: Path, name: str, entries: int) -> tuple[Path, int]:
    """A tape of about ``entries`` entries; its path and how many jobs it holds."""
    jobs = max(WORKERS, entries // (STEPS + 2))
    path = root / name
    code = f"import shrink_app; shrink_app.record({str(path)!r}, {jobs}, {WORKERS}, {STEPS})"
    subprocess.run([sys.executable, "-c", code], cwd=root, env=_env(root), check=True)
    return path, jobs


def _command(root: Path, args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Wall ns and stdout of one command run in ``root``; fails loudly if it fails."""
    start = now_ns()
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, check=False)
    wall = now_ns() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, done.stdout


def _shrink(root: Path, tape: Path, jobs: int, *extra: str) -> dict[str, Any]:
    planted = f"job-{jobs // 2:04d}"
    out = tape.with_name(tape.stem + "-small.jsonl")
    args = [sys.executable, "-m", "sessiontape", "shrink", str(tape), "-o", str(out)]
    wall, stdout = _command(
        root, [*args, "-j", "2", "--json", *extra], _env(root, **{PLANT: planted})
    )
    figures: dict[str, Any] = json.loads(stdout)
    # The smallest tape that fails the same way: header, snapshot, the job's claim and
    # its steps 0 to 5, and the other workers' last claims.
    smallest = 2 + 1 + 6 + (WORKERS - 1)
    return {**figures, "wall_ns": wall, "smallest": smallest, "planted": planted}


def _candidates(root: Path, entries: int, count: int, rounds: int) -> dict[str, Any]:
    """A candidate's cost against the plain replay of its tape (see the docstring)."""
    tape, jobs = _record(root, "candidates.jsonl", entries)
    env = _env(root, **{PLANT: f"job-{jobs // 2:04d}"})
    args = [sys.executable, "probe_candidates.py", str(tape), str(count), str(rounds)]
    _, stdout = _command(root, args, env)
    figures: dict[str, Any] = json.loads(stdout)
    shrink = _shrink(root, tape, jobs)
    # Worker time per candidate (two workers), against the probe's plain replay.
    per_candidate = shrink["search_seconds"] * 2 / max(1, shrink["candidates"])
    return {
        **figures,
        "shrink": shrink,
        "shrink_ratio": per_candidate / (figures["plain_ns"] / 1e9),
    }


def run(
    *,
    workdir: Path,
    entries: int,
    big_entries: int,
    budget: float,
    tapes: int,
    candidate_entries: int,
    candidates: int,
    rounds: int,
) -> dict[str, Any]:
    """Run the four measurements; see the module docstring."""
    root = _project(workdir / "shrink-project")
    tape, jobs = _record(root, "tape.jsonl", entries)
    shrink = _shrink(root, tape, jobs)
    big, big_jobs = _record(root, "big.jsonl", big_entries)
    budgeted = _shrink(root, big, big_jobs, "--budget", str(budget))
    candidate = _candidates(root, candidate_entries, candidates, rounds)
    corpus_root = write_corpus(workdir / "minimize-project", tapes, 0)
    env = _env(corpus_root)
    folder = str(corpus_root / "tapes")
    plain, _ = _command(
        corpus_root,
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--replay",
            folder,
            "-n",
            "2",
        ],
        env,
    )
    minimize, stdout = _command(
        corpus_root,
        [sys.executable, "-m", "sessiontape", "corpus", folder, "--minimize", "-n", "2", "--json"],
        env,
    )
    result = json.loads(stdout)
    return {
        "shrink": shrink,
        "budget": {**budgeted, "budget_s": budget},
        "candidate": candidate,
        "minimize": {
            "tapes": tapes,
            "kept": len(result["keep"]),
            "shapes": result["shapes"],
            "replay_ns": plain,
            "minimize_ns": minimize,
            "ratio": minimize / plain,
        },
    }
