"""kill -9 during an accept: the tape is the old one or the new one, whole, and the
accept can be run again to completion.

A tape of many calls gets pending changes (today's code passes another argument to
every process call). A child process accepts them all and signals when it starts to
write (the pending file with the decisions, then the tape, then the pending file's
removal); the parent kills it with SIGKILL after a chosen delay, the kill points spread
over that stretch and past it. What is left at the tape's path must be, byte for byte,
the tape as it was or the tape a completed accept writes; and ``accept --all`` run
again must then complete, leaving the new tape and no pending file.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape.cassette import pending_path
from sessiontape.review import decide

from ._update_kills import CALLS
from ._update_kills import _child as _record_or_update

PROPOSE = r"""
import sys
import sessiontape

class Runner:
    def run(self, argv, **kwargs):
        return sessiontape.ProcessResult(list(argv), 0, b"out " * 8, b"")

    def stream(self, argv, **kwargs):
        raise NotImplementedError

path, calls = sys.argv[1], int(sys.argv[2])
tape = sessiontape.replay(path, update="pending", patch_time=False)
runner = tape.process_runner(Runner())
with sessiontape.worker("w1"):
    for n in range(calls):
        runner.run(["tool", "do", f"now-{n}"])
report = tape.finish()
tape.close()
assert report.pending_to, report.render()
"""

ACCEPT = r"""
import sys
from sessiontape.review import open_pending

[tape] = open_pending([sys.argv[1]])
tape.decide_all("accept")
print("ready", flush=True)
saved = tape.save()
assert saved.done
print("done", flush=True)
"""


def _accept(path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", ACCEPT, str(path)], stdout=subprocess.PIPE, text=True
    )


def prepare(directory: Path) -> tuple[Path, bytes, bytes, float]:
    """The tape with its pending changes, as it is and as a completed accept leaves it;
    how long the accept's writing took, in seconds."""
    original = directory / "original.jsonl"
    _record_or_update(original, "then", update=False).communicate()
    subprocess.run([sys.executable, "-c", PROPOSE, str(original), str(CALLS)], check=True)
    accepted = directory / "accepted.jsonl"
    shutil.copyfile(original, accepted)
    shutil.copyfile(pending_path(original), pending_path(accepted))
    child = _accept(accepted)
    assert child.stdout is not None
    assert child.stdout.readline() == "ready\n"
    started = time.perf_counter()
    rest, _ = child.communicate()
    writing = time.perf_counter() - started
    if child.returncode != 0 or rest != "done\n":
        raise RuntimeError("the reference accept did not complete")
    return original, original.read_bytes(), accepted.read_bytes(), writing


def kill_point(directory: Path, original: Path, delay: float, new: bytes) -> dict[str, Any]:
    """One accept killed ``delay`` seconds into its writing; what the tape's path holds,
    and whether accepting again completes."""
    tape = directory / "tape.jsonl"
    for leftover in directory.glob(".tape.jsonl*"):
        leftover.unlink()
    shutil.copyfile(original, tape)
    shutil.copyfile(pending_path(original), pending_path(tape))
    child = _accept(tape)
    try:
        assert child.stdout is not None
        if child.stdout.readline() != "ready\n":
            return {"problems": ["the child did not get to write"]}
        time.sleep(delay)  # the kill point: how far into the writing the kill lands
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    data = tape.read_bytes()
    problems: list[str] = []
    if pending_path(tape).exists():
        try:
            decide("accept", [], [tape], every=True)
        except sessiontape.SessiontapeError as exc:
            problems.append(f"killed {delay * 1000:.1f} ms in: accepting again failed: {exc}")
    if tape.read_bytes() != new:
        problems.append(f"killed {delay * 1000:.1f} ms in: accepting again did not complete")
    if pending_path(tape).exists():
        problems.append(f"killed {delay * 1000:.1f} ms in: the pending file stayed")
    return {"data": data, "problems": problems}


def kill_trials(directory: Path, points: int) -> dict[str, Any]:
    """``points`` kills spread over an accept's writing (and a little past it)."""
    original, old, new, writing = prepare(directory)
    states = {"old": 0, "new": 0}
    problems: list[str] = []
    for i in range(points):
        delay = writing * 1.2 * i / max(points - 1, 1)
        found = kill_point(directory, original, delay, new)
        problems += found["problems"]
        data = found.get("data")
        if data == old:
            states["old"] += 1
        elif data == new:
            states["new"] += 1
        elif data is not None:
            problems.append(
                f"killed {delay * 1000:.1f} ms into the accept: the tape is neither the old "
                f"one nor the new one ({len(data)} bytes)"
            )
    return {
        "points": points,
        "old": states["old"],
        "new": states["new"],
        "finish_ms": writing * 1000,
        "failures": problems,
    }
