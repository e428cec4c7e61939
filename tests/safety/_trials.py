"""Crashes and concurrency: kill -9 at random moments, and sixteen threads recording at once.

A kill trial starts a child process that records in a loop (four worker threads, process
calls with outputs of random sizes, agent turns) and kills it with SIGKILL at a random
moment. What the crash leaves must load, as a crashed session, with every whole line
intact: each thread's calls in order with no gap but the call it was making, every
payload as recorded, and the tape resumable with ``if_exists="append"``.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape import AgentTurn, ProcessCall

THREADS = 4

CHILD = r"""
import random, sys, threading
import sessiontape

class Runner:
    def run(self, argv, **kwargs):
        size = int(argv[2])
        return sessiontape.ProcessResult(list(argv), 0, (argv[1] * size).encode(), b"")

    def stream(self, argv, **kwargs):
        raise NotImplementedError

class Agent:
    def execute(self, tid, n):
        return {"tid": tid, "n": n, "double": 2 * n}

tape = sessiontape.record(sys.argv[1])
runner = tape.process_runner(Runner())
agent = tape.agent(Agent())

def work(tid):
    rng = random.Random(tid)
    with sessiontape.worker(f"w{tid}"):
        n = 0
        while True:
            runner.run(["echo", f"{tid}-{n}.", str(rng.choice([1, 10, 500, 5000]))])
            agent.execute(tid, n)
            n += 1

for tid in range(4):
    threading.Thread(target=work, args=(tid,), daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
"""


def kill_trial(directory: Path, rng: random.Random) -> dict[str, Any]:
    """One child recording, killed at a random moment; what its cassette shows."""
    path = directory / "killed.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        if child.stdout.readline() != "ready\n":  # recording has started
            return {"path": path, "problems": ["the child did not start"], "size": 0}
        time.sleep(rng.random() * 0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    data = path.read_bytes()
    torn = bool(data) and not data.endswith(b"\n")
    return {
        "path": path, "problems": check_killed(path), "size": len(data), "torn": torn,
        "lines": data.count(b"\n"),
    }  # fmt: skip


def check_killed(path: Path) -> list[str]:
    """What is wrong with the cassette a killed recorder left (nothing, when it holds)."""
    try:
        rec = sessiontape.load(path)
    except sessiontape.CassetteError as exc:
        return [f"the cassette of a killed recorder does not load: {exc}"]
    problems: list[str] = []
    if not rec.crashed:
        problems.append("a killed session is not marked crashed")
    steps: dict[str, list[int]] = {}
    for call in rec.calls:
        if isinstance(call, ProcessCall):
            tid, n = call.argv[1].rstrip(".").split("-")
            expected = call.argv[1] * int(call.argv[2])
            if call.stdout != expected:
                problems.append(f"seq {call.seq}: stdout is not what the call returned")
            steps.setdefault(call.worker, []).append(2 * int(n))
        elif isinstance(call, AgentTurn):
            tid, n = call.args
            if call.result != {"tid": tid, "n": n, "double": 2 * n}:
                problems.append(f"seq {call.seq}: the agent's result is not what it returned")
            steps.setdefault(call.worker, []).append(2 * n + 1)
    for worker, done in steps.items():
        if done != list(range(len(done))):
            problems.append(f"{worker}: its calls are not a whole prefix: {done[:10]}...")
    missing = len(rec.missing_seqs)
    if missing > THREADS:
        problems.append(f"{missing} seqs missing: more than the {THREADS} calls in flight")
    problems += check_resumable(path, len(rec.entries))
    return problems


def check_resumable(path: Path, entries: int) -> list[str]:
    """Append to a crashed tape: it must resume after what the crash left."""
    with sessiontape.record(path, if_exists="append") as tape:
        tape.finish(outcome="resumed")
    try:
        rec = sessiontape.load(path)
    except sessiontape.CassetteError as exc:
        return [f"the resumed cassette does not load: {exc}"]
    if rec.end is None or rec.end.outcome != "resumed" or len(rec.entries) != entries + 2:
        return ["resuming the crashed cassette did not add a resume marker and an end"]
    return []


def thread_stress(path: Path, threads: int, calls: int, seed: int) -> list[str]:
    """``threads`` threads recording ``calls`` calls each into one cassette, with outputs
    of random sizes; every line whole, seqs gapless, each thread's calls in order."""
    sizes = [1, 100, 4_000, 70_000]  # 70 kB: over the inline limit, kept as a digest

    class Runner:
        def run(self, argv: Sequence[str], **kwargs: Any) -> sessiontape.ProcessResult:
            return sessiontape.ProcessResult(list(argv), 0, argv[1] * int(argv[2]), "")

    start = threading.Barrier(threads)
    with sessiontape.record(path) as tape:
        runner = tape.process_runner(Runner())  # type: ignore[arg-type]

        def work(tid: int) -> None:
            rng = random.Random(seed * 1000 + tid)
            start.wait()
            with sessiontape.worker(f"w{tid}"):
                for n in range(calls):
                    runner.run(["echo", f"{tid}-{n}.", str(rng.choice(sizes))], text=True)

        pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
    problems: list[str] = []
    data = path.read_bytes()
    if not data.endswith(b"\n") or data.count(b"\n") != threads * calls + 2:
        problems.append("not one whole line per entry")
    rec = sessiontape.load(path)
    if [e.seq for e in rec.entries] != list(range(threads * calls + 2)):
        problems.append("seqs are not gapless")
    for tid in range(threads):
        mine = rec.entries_for("process", f"w{tid}")
        if [int(c.argv[1].rstrip(".").split("-")[1]) for c in mine] != list(range(calls)):
            problems.append(f"w{tid}: calls missing or out of order")
        for call in mine:
            text = call.argv[1] * int(call.argv[2])
            stored = call.stdout
            if isinstance(stored, str) and stored != text:
                problems.append(f"seq {call.seq}: output changed")
    return problems
