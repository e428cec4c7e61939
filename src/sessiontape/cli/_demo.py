"""``sessiontape demo``: record a live session of the bundled orchestrator, then replay it.

The demo shows the whole loop on a real run: three worker threads, a SQLite backlog, real
git (worktrees, merges, a conflict and its recovery), an agent review loop and back-off
sleeps are recorded; the tape is replayed in a fraction of the time; then a copy with one
altered entry is replayed to show the mismatch report.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .._time import REAL
from ..cassette import ProcessCall, load
from ..report import describe, format_ms
from ._common import write_atomic

__all__ = ["add_demo_arguments", "run_demo"]


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``demo`` subcommand's options."""
    parser.add_argument(
        "--keep",
        metavar="DIR",
        default=None,
        help="keep the recorded and the altered cassettes in DIR (default: a temp dir, removed)",
    )
    parser.add_argument(
        "--scenario",
        default="full",
        help="gardener scenario to record: full (default), happy, review, conflict, crash",
    )
    parser.add_argument("--workers", type=int, default=3, help="worker threads (default: 3)")
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the reports (default: auto, when stdout is a terminal)",
    )


def _alter(source: Path, target: Path) -> str:
    """Copy a tape, changing the commit message of one recorded ``git commit``.

    It stands for a code change: today's code writes another message than the code that
    was recorded, and the replay must say exactly where.
    """
    recording = load(source)
    commits = [
        e
        for e in recording.calls
        if isinstance(e, ProcessCall) and "commit" in e.argv and "-m" in e.argv
    ]
    if not commits:
        raise RuntimeError(f"{source}: no 'git commit -m' call to alter; record again.")
    victim = commits[len(commits) // 2]
    lines = source.read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        entry: dict[str, Any] = json.loads(line)
        if entry.get("seq") == victim.seq:
            at = entry["argv"].index("-m") + 1
            entry["argv"][at] = entry["argv"][at] + " (reworded)"
            line = json.dumps(entry)
        out.append(line)
    # Created 0600 from the start (not written, then chmod-ed): it is a copy of a tape.
    write_atomic(str(target), [("\n".join(out) + "\n").encode("utf-8")])
    return describe(victim)


def run_demo(args: argparse.Namespace) -> int:
    """Record, replay, alter, replay again; print what happened. Returns the exit code."""
    import sys

    from ..examples.gardener import record_scenario, replay_scenario

    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sessiontape-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    tape = base / "gardener.jsonl"
    altered = base / "gardener-altered.jsonl"
    work = Path(tempfile.mkdtemp(prefix="sessiontape-demo-work-"))
    try:
        print(f"1. Recording a live '{args.scenario}' session of the gardener orchestrator")
        print(f"   ({args.workers} workers, SQLite backlog, real git, scripted agent) ...")
        started = REAL.perf_counter()
        crashed: BaseException | None = None
        try:
            summary = record_scenario(tape, work / "live", args.scenario, args.workers)
        except Exception as exc:  # the crash scenario: the crash is on the tape
            crashed = exc
        recorded_s = REAL.perf_counter() - started
        recording = load(tape)
        if crashed is None:
            print(f"   done: {len(summary.completed)} tasks completed, {len(summary.failed)} "
                  f"failed, {summary.changes_requested} change request(s) in review, "
                  f"{summary.conflicts_recovered} merge conflict(s) recovered")  # fmt: skip
        else:
            print(f"   the session crashed, as this scenario does: {crashed}")
        counts: dict[str, int] = {}
        for entry in recording.calls:
            kind = type(entry).__name__
            counts[kind] = counts.get(kind, 0) + 1
        print(f"   tape: {tape} ({tape.stat().st_size / 1024:.1f} KiB, "
              f"{len(recording.entries)} entries: "
              + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
              + f"; workers {', '.join(recording.worker_ids())})")  # fmt: skip
        nested = sum(1 for entry in recording.calls if entry.parent is not None)
        if nested:
            print(f"   {nested} call(s) ran inside another one (each agent turn's model process):"
                  " linked by parent, and not expected on replay")  # fmt: skip

        print("\n2. Replaying it against today's code (fake runner, replay agent, fake clock)")
        started = REAL.perf_counter()
        report = replay_scenario(tape, work / "replay")
        replay_s = REAL.perf_counter() - started
        print(f"   recorded in {recorded_s:.2f} s, replayed in {replay_s:.2f} s "
              f"({recorded_s / max(replay_s, 1e-9):.0f}x faster; the tape covers "
              f"{format_ms(report.recorded_duration_ns)} of recorded time)")  # fmt: skip
        print("   " + report.render(color=color).replace("\n", "\n   "))

        print("\n3. Replaying a copy with one altered entry")
        what = _alter(tape, altered)
        print(f"   altered: {what}")
        bad = replay_scenario(altered, work / "altered")
        print("   " + bad.render(color=color).replace("\n", "\n   "))

        ok = report.ok and not bad.ok
        print()
        if ok:
            print("The tape replayed green, and the altered tape failed where it was altered.")
        else:
            print("Unexpected: the demo's replays did not come out as they should; see above.")
        if args.keep:
            print(f"Cassettes kept in {base}: replay them with `pytest --replay {tape}`.")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
