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


def _env(root: Path, **extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]), **extra)


def _project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "shrink_app.py").write_text(_APP, encoding="utf-8")
    (root / "conftest.py").write_text(_CONFTEST, encoding="utf-8")
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


def run(
    *, workdir: Path, entries: int, big_entries: int, budget: float, tapes: int
) -> dict[str, Any]:
    """Run the three measurements; see the module docstring."""
    root = _project(workdir / "shrink-project")
    tape, jobs = _record(root, "tape.jsonl", entries)
    shrink = _shrink(root, tape, jobs)
    big, big_jobs = _record(root, "big.jsonl", big_entries)
    budgeted = _shrink(root, big, big_jobs, "--budget", str(budget))
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
        "minimize": {
            "tapes": tapes,
            "kept": len(result["keep"]),
            "shapes": result["shapes"],
            "replay_ns": plain,
            "minimize_ns": minimize,
            "ratio": minimize / plain,
        },
    }
