"""Zoo program 2: an asyncio pipeline, a task per worker, children through asyncio.

The style: a service written async from the start. Each worker is an ``asyncio`` task
that takes a job from an in-memory board (wrapped with ``tape.store``), awaits an
``async def`` planner (the agent, ``tape.agent``) and runs the job as a Python child with
``asyncio.create_subprocess_exec`` under ``asyncio.wait_for`` (intercepted by
``tape.patch_subprocess()``: the program takes no runner), then backs off with
``asyncio.sleep``. A watchdog task wakes after a deadline and times out the jobs still
running, after sending an alert (another child) for each.

A service token comes from ``ZOO_TOKEN``: each child gets it in its environment and its
argv, and echoes it on stderr.

The planted race, a timeout racing a completion: the watchdog checks a job's state, awaits
the alert, then marks it timed out; the deployed board's ``time_out`` only touches a job
still running. The ``racy`` variant's board times it out whatever its state, so a job that
completes while its alert is sent is lost. The recorded run's deadline falls after every
job ended, so production never sees it.

Variants (``--variant``): ``default``; ``racy``; ``changed`` (a reworded planner request
and a child argument more: an update); ``new_call`` (a ``git --version`` probe before each
job: a live re-record); ``patched`` (that probe behind ``sessiontape.patched``);
``broken`` (job ``j3`` runs with another size: a failure to shrink).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

import sessiontape

ENTRYPOINT = "zoo-asyncio"
JOBS = {"j1": 3, "j2": 5, "j3": 2, "j4": 4}
WORKERS = 2
BACKOFF = 0.01
DEADLINE = 0.6
MUTATIONS = ("next_queued", "start", "finish", "running", "time_out")
CHILD = """
import hashlib, os, sys
job, size = sys.argv[1], int(sys.argv[2])
token = sys.argv[sys.argv.index("--token") + 1] if "--token" in sys.argv else ""
if os.environ.get("ZOO_SERVICE_TOKEN", "") != token:
    sys.exit("token mismatch")
print(hashlib.sha256((job * size).encode()).hexdigest()[:16])
print("authorized with", token, file=sys.stderr)
"""


@dataclasses.dataclass(frozen=True)
class Plan:
    """The planner's answer: how big a job is and how long it may take."""

    job: str
    size: int
    timeout: float


class Planner:
    """The agent: an ``async def`` stand-in for a model."""

    async def execute(self, request: dict[str, Any]) -> Plan:
        await asyncio.sleep(0)
        return Plan(request["job"], int(request["hint"]), 60.0)


class Board:
    """The job board: plain dicts. Each public method is one store call."""

    def __init__(self, jobs: dict[str, dict[str, Any]], *, checked: bool = True) -> None:
        self.jobs = jobs
        self.checked = checked

    @classmethod
    def fresh(cls, *, checked: bool) -> Board:
        jobs = {j: {"state": "queued", "digest": None} for j in JOBS}
        return cls(jobs, checked=checked)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return {j: dict(v) for j, v in sorted(self.jobs.items())}

    def next_queued(self) -> str | None:
        return next((j for j, v in sorted(self.jobs.items()) if v["state"] == "queued"), None)

    def start(self, job: str) -> bool:
        if self.jobs[job]["state"] != "queued":
            return False
        self.jobs[job]["state"] = "running"
        return True

    def finish(self, job: str, digest: str) -> str:
        self.jobs[job].update(state="done", digest=digest)
        return job

    def running(self) -> list[str]:
        return sorted(j for j, v in self.jobs.items() if v["state"] == "running")

    def time_out(self, job: str) -> bool:
        if self.checked and self.jobs[job]["state"] != "running":
            return False
        self.jobs[job]["state"] = "timed out"
        return True


class Pipeline:
    """The workers and the watchdog."""

    def __init__(self, board: Any, planner: Any, variant: str) -> None:
        self.board = board
        self.planner = planner
        self.variant = variant
        self.token = os.environ.get("ZOO_TOKEN", "")

    async def child(self, *args: str, timeout: float) -> str:
        argv = [sys.executable, "-c", CHILD, *args]
        env = dict(os.environ)
        if self.token:
            argv += ["--token", self.token]
            env["ZOO_SERVICE_TOKEN"] = self.token
        proc = await asyncio.create_subprocess_exec(
            *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"child {args} failed: {err.decode()}")
        return out.decode().strip()

    async def worker(self, index: int) -> None:
        with sessiontape.worker(f"worker-{index}"):
            while (job := self.board.next_queued()) is not None:
                if not self.board.start(job):
                    continue
                request: dict[str, Any] = {"job": job, "hint": JOBS[job]}
                if self.variant == "changed":
                    request["style"] = "terse"
                plan = await self.planner.execute(request)
                probe = self.variant == "new_call" or (
                    self.variant == "patched" and sessiontape.patched("zoo-asyncio-probe")
                )
                if probe:
                    version = await asyncio.create_subprocess_exec(
                        "git", "--version", stdout=asyncio.subprocess.PIPE
                    )
                    await version.communicate()
                size = plan.size + 1 if self.variant == "broken" and job == "j3" else plan.size
                args = [job, str(size)] + (["--verbose"] if self.variant == "changed" else [])
                digest = await self.child(*args, timeout=plan.timeout)
                self.board.finish(job, digest)
                await asyncio.sleep(BACKOFF)

    async def watchdog(self) -> None:
        with sessiontape.worker("watchdog"):
            await asyncio.sleep(DEADLINE)
            for job in self.board.running():
                await self.child("alert", "1", timeout=60.0)  # the window
                self.board.time_out(job)

    async def run(self) -> dict[str, Any]:
        tasks = [asyncio.create_task(self.worker(i)) for i in range(1, WORKERS + 1)]
        tasks.append(asyncio.create_task(self.watchdog()))
        await asyncio.gather(*tasks)
        outcome: dict[str, Any] = self.board.snapshot()
        return outcome


async def serve(tape: sessiontape.Tape, variant: str = "default") -> dict[str, Any]:
    """The pipeline, wired through ``tape`` (the same in every mode), on the running loop."""
    checked = variant != "racy"
    live = Board.fresh(checked=checked) if tape.mode is not sessiontape.Mode.REPLAY else None

    def seeded(jobs: dict[str, dict[str, Any]]) -> Board:
        return Board(jobs, checked=checked)

    board = tape.store(live, mutations=MUTATIONS, snapshot=Board.snapshot, factory=seeded)
    planner = tape.agent(Planner(), result_type=Plan)

    def none_lost() -> str | None:
        jobs = board.snapshot().items()
        lost = sorted(j for j, v in jobs if v["digest"] and v["state"] != "done")
        return f"completed jobs timed out: {lost}" if lost else None

    tape.invariant(none_lost)
    with tape.patch_subprocess():
        return await Pipeline(board, planner, variant).run()


def run(tape: sessiontape.Tape, workdir: Path, variant: str = "default") -> dict[str, Any]:
    """The whole program: :func:`serve` on a loop of its own, its result written down."""
    outcome = asyncio.run(serve(tape, variant))
    (workdir / "board.txt").write_text(repr(outcome), encoding="utf-8")
    tape.finish(outcome=outcome)
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zoo-asyncio", description=__doc__)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--variant", default="default")
    sessiontape.add_record_argument(parser)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = sessiontape.record_path(args)
    roots = {"work": str(args.workdir)}
    with sessiontape.record(path, entrypoint=ENTRYPOINT, roots=roots) as tape:
        print(run(tape, args.workdir, args.variant))
    return 0


if __name__ == "__main__":
    sys.exit(main())
