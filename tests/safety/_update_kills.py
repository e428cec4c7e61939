"""kill -9 during an update: the tape is the old one or the new one, whole, never a mix.

A child process replays a tape with ``update=True`` (today's code passes another
argument to every process call, so every call's line is rewritten) and signals when it
starts to finish: planning, writing the new file beside the tape, renaming it over. The
parent kills it with SIGKILL after a chosen delay; the kill points are spread over that
last stretch, and past it. What is left at the tape's path must be, byte for byte,
either the tape as it was or the tape a completed update writes.
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

CALLS = 3000

CHILD = r"""
import sys
import sessiontape

class Runner:
    def run(self, argv, **kwargs):
        return sessiontape.ProcessResult(list(argv), 0, b"out " * 8, b"")

    def stream(self, argv, **kwargs):
        raise NotImplementedError

path, word, update, calls = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
if update:
    tape = sessiontape.replay(path, update=True, patch_time=False)
else:
    tape = sessiontape.record(path)
runner = tape.process_runner(Runner())
with sessiontape.worker("w1"):
    for n in range(calls):
        runner.run(["tool", "do", f"{word}-{n}"])
print("ready", flush=True)
report = tape.finish()
tape.close()
if update:
    assert report.ok and report.rewritten_to, report.render()
print("done", flush=True)
"""


def _child(path: Path, word: str, update: bool) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), word, "1" if update else "0", str(CALLS)],
        stdout=subprocess.PIPE,
        text=True,
    )


def prepare(directory: Path) -> tuple[Path, bytes, bytes, float]:
    """The tape as recorded, and as a completed update leaves it; how long the update's
    finish (plan, write, rename) took, in seconds."""
    original = directory / "original.jsonl"
    recording = _child(original, "then", update=False)
    recording.communicate()
    updated = directory / "updated.jsonl"
    shutil.copyfile(original, updated)
    child = _child(updated, "now", update=True)
    assert child.stdout is not None
    assert child.stdout.readline() == "ready\n"
    started = time.perf_counter()
    rest, _ = child.communicate()
    finishing = time.perf_counter() - started
    if child.returncode != 0 or rest != "done\n":
        raise RuntimeError("the reference update did not complete")
    return original, original.read_bytes(), updated.read_bytes(), finishing


def kill_point(directory: Path, original: Path, delay: float) -> dict[str, Any]:
    """One update killed ``delay`` seconds into its finish; what the tape's path holds."""
    tape = directory / "tape.jsonl"
    for leftover in directory.glob(".tape.jsonl.rewrite.*"):
        leftover.unlink()
    shutil.copyfile(original, tape)
    child = _child(tape, "now", update=True)
    try:
        assert child.stdout is not None
        if child.stdout.readline() != "ready\n":
            return {"problems": ["the child did not get to finish"], "state": "none"}
        time.sleep(delay)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    return {"data": tape.read_bytes(), "problems": []}


def kill_trials(directory: Path, points: int) -> dict[str, Any]:
    """``points`` kills spread over an update's finish (and a little past it)."""
    original, old, new, finishing = prepare(directory)
    states = {"old": 0, "new": 0}
    problems: list[str] = []
    for i in range(points):
        delay = finishing * 1.2 * i / max(points - 1, 1)
        found = kill_point(directory, original, delay)
        problems += found["problems"]
        data = found.get("data")
        if data == old:
            states["old"] += 1
        elif data == new:
            states["new"] += 1
        elif data is not None:
            problems.append(
                f"killed {delay * 1000:.1f} ms into the update's finish: the tape is neither "
                f"the old one nor the new one ({len(data)} bytes)"
            )
    try:
        sessiontape.load(directory / "tape.jsonl")
    except sessiontape.CassetteError as exc:  # pragma: no cover - reported as broken
        problems.append(f"the tape left does not load: {exc}")
    return {
        "points": points,
        "old": states["old"],
        "new": states["new"],
        "finish_ms": finishing * 1000,
        "failures": problems,
    }
