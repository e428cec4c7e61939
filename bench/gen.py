"""Synthetic session tapes at scale, shaped like a real orchestrator's run.

The workers' calls come from ``workload.py`` (tasks claimed, git run, agent turns with a
nested ``claude`` process, merges, back-offs); this module puts them on one timeline,
runs the store for real so every recorded result is what it returns, scales timestamps
so the session lasts as long as asked (eight hours for the big tape), and writes the
tape. Payloads over the 64 KiB inline limit are kept as digests, as recorded.

Entries are written directly with :func:`sessiontape.cassette.encode_entry`; lines come
in the order a recorder writes them (when each call *ends*), seqs in the order the calls
*started*. Usage::

    python bench/gen.py OUT.jsonl --entries 260000 --workers 8 --hours 8
"""

from __future__ import annotations

import argparse
import heapq
import os
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

_HERE = Path(__file__).resolve().parent
if str(_HERE.parent / "src") not in sys.path:
    sys.path.insert(0, str(_HERE.parent / "src"))
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from cases.app import STORE_NAME, BenchStore  # noqa: E402
from cases.texts import Text  # noqa: E402
from workload import Worker, flatten  # noqa: E402

from sessiontape import (  # noqa: E402
    AgentTurn,
    ProcessCall,
    SessionEnd,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
)
from sessiontape.cassette import Level, PayloadCodec, encode_entry  # noqa: E402

__all__ = ["RECORDED_ROOTS", "TapeInfo", "child_generate", "generate"]

#: The roots of the production host the tapes pretend to come from.
RECORDED_ROOTS: Final = {"repo": "/srv/orchestrator/repo", "home": "/home/orch", "tmp": "/tmp"}
_NS: Final = 1_000_000_000
_START_WALL_NS: Final = 1_763_700_000_000_000_000  # 2025-11-21
_START_MONO_NS: Final = 912_345_678_901
_CODEC: Final = PayloadCodec(Level.FULL)  # digests payloads over 64 KiB exactly as recorded


@dataclass(frozen=True)
class TapeInfo:
    """What :func:`generate` wrote."""

    path: str
    entries: int
    bytes: int
    workers: int
    recorded_duration_ns: int
    kinds: dict[str, int]
    truncated_payloads: int
    seconds: float


def _payload(value: Any) -> tuple[Any, bool]:
    encoded = _CODEC.encode(value) if value else (value if value == "" else None)
    truncated = getattr(encoded, "truncated", False)
    return encoded, truncated


def generate(
    path: str | os.PathLike[str],
    entries: int,
    *,
    workers: int = 8,
    hours: float | None = None,
    seed: int = 20251121,
) -> TapeInfo:
    """Write a tape of exactly ``entries`` lines to ``path``; return what was written.

    ``hours`` is the recorded duration (default: 8 hours per 250,000 entries).
    """
    began = time.perf_counter()
    if entries < 50:
        raise ValueError("a generated tape needs at least 50 entries")
    rng = random.Random(seed)
    text = Text(rng)
    pool = [Worker(f"worker-{i + 1}", i, rng, text) for i in range(workers)]
    budget = entries - 3  # session_start, store_snapshot, session_end
    # Round-robin cycles until the workers together made enough calls.
    made = 0
    task_no = 0
    pending: dict[str, str | None] = {w.name: None for w in pool}
    while made < budget:
        for w in pool:
            tid = pending[w.name]
            if tid is None:
                task_no += 1
                tid = f"T{task_no:06d}"
                w.tasks.append(tid)
            before = len(w.calls)
            done = w.cycle(tid)
            pending[w.name] = None if done else tid
            made += sum(1 + len(c.children) for c in w.calls[before:])
    # Every call (nested ones too) on one timeline, by start time: that is seq order.
    flat = heapq.merge(
        *(sorted(flatten(w.calls), key=lambda c: c.start) for w in pool),
        key=lambda c: c.start,
    )
    calls = list(flat)[:budget]
    raw_end = max(c.start + c.duration for c in calls)
    wanted_h = hours if hours is not None else 8.0 * entries / 250_000
    scale = wanted_h * 3600 / raw_end

    def ns(seconds: float) -> int:
        return int(seconds * scale * _NS)

    # Backlog: every task a worker claimed, plus a tail never reached.
    backlog = []
    for w in pool:
        for prio, tid in enumerate(w.tasks + [f"{w.name}-later-{k}" for k in range(3)]):
            backlog.append(
                {
                    "id": tid,
                    "title": f"Task {tid}: {text.take(40)}",
                    "status": "pending",
                    "affinity": w.name,
                    "worker": None,
                    "claims": 0,
                    "attempt": 0,
                    "commit": None,
                    "priority": prio,
                }
            )
    store = BenchStore(backlog)
    header = SessionStart(
        seq=0,
        ts_ns=_START_WALL_NS,
        mono_ns=_START_MONO_NS,
        run_id=f"bench{seed:x}{entries}",
        recorded_at="2025-11-21T05:20:00+00:00",
        sessiontape_version="bench",
        app_version="orchestrator 3.1.4",
        entrypoint=f"orchestrator run --workers {workers}",
        config={"workers": workers, "backlog": "backlog.db"},
        level="full",
        host="prod-runner-7",
        platform="Linux-6.8-x86_64",
        python="3.11.7",
        roots=dict(RECORDED_ROOTS),
    )
    lines: list[tuple[int, int, bytes]] = [(0, 0, encode_entry(header))]
    snap = StoreSnapshot(
        seq=1,
        ts_ns=_START_WALL_NS + 1000,
        mono_ns=_START_MONO_NS + 1000,
        store=STORE_NAME,
        data=store.snapshot(),
    )
    lines.append((1, 1, encode_entry(snap)))
    seq_of: dict[int, int] = {}
    kinds = {"process": 0, "agent_turn": 0, "store_mutation": 0}
    truncated = 0
    for offset, call in enumerate(calls):
        seq = offset + 2
        seq_of[id(call)] = seq
        start = ns(call.start) + 2000
        common: dict[str, Any] = {
            "seq": seq,
            "ts_ns": _START_WALL_NS + start,
            "mono_ns": _START_MONO_NS + start,
            "worker": call.worker,
            "thread": f"orchestrator-{call.worker}",
            "duration_ns": max(1, ns(call.duration)),
        }
        f = call.fields
        entry: Any
        if call.kind == "process":
            parent = getattr(call, "parent_seq", None)
            stdout, t1 = _payload(f["stdout"])
            stderr, t2 = _payload(f["stderr"])
            stdin, t3 = _payload(f.get("input"))
            truncated += t1 + t2 + t3
            entry = ProcessCall(
                **common,
                parent=parent,
                argv=f["argv"],
                cwd=f["cwd"],
                env=f["env"],
                input=stdin,
                text=f["text"],
                returncode=f["returncode"],
                stdout=stdout,
                stderr=stderr,
            )
            kinds["process"] += 1
        elif call.kind == "agent":
            for child in call.children:
                child.parent_seq = seq  # type: ignore[attr-defined]
            entry = AgentTurn(
                **common, args=f["args"], result=f["result"], result_type="cases.app.StepResult"
            )
            kinds["agent_turn"] += 1
        else:
            result = getattr(store, f["operation"])(*f["args"])
            entry = StoreMutation(
                **common, store=STORE_NAME, operation=f["operation"], args=f["args"], result=result
            )
            kinds["store_mutation"] += 1
        lines.append((common["ts_ns"] + common["duration_ns"], seq, encode_entry(entry)))
    end_offset = max(end for end, _, _ in lines) - _START_WALL_NS + 1000
    outcome = {k: sum(w.outcomes[k] for w in pool) for k in pool[0].outcomes}
    end = SessionEnd(
        seq=len(calls) + 2,
        ts_ns=_START_WALL_NS + end_offset,
        mono_ns=_START_MONO_NS + end_offset,
        outcome=outcome,
        counts={"session_start": 1, "store_snapshot": 1, **kinds, "session_end": 1},
        duration_ns=end_offset,
    )
    # A recorder writes a line when its call ends: file order is end order.
    lines.sort(key=lambda t: (t[0], t[1]))
    data = b"".join(line for _, _, line in lines) + encode_entry(end)
    Path(path).write_bytes(data)
    return TapeInfo(
        path=os.fspath(path),
        entries=len(lines) + 1,
        bytes=len(data),
        workers=workers,
        recorded_duration_ns=end_offset,
        kinds={"session_start": 1, "store_snapshot": 1, **kinds, "session_end": 1},
        truncated_payloads=truncated,
        seconds=time.perf_counter() - began,
    )


def child_generate(
    path: str, entries: int, workers: int, hours: float | None = None
) -> dict[str, Any]:
    """:func:`generate` as the suite runs it in a fresh interpreter: what was written."""
    return asdict(generate(path, entries, workers=workers, hours=hours))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the .jsonl tape to write")
    parser.add_argument("--entries", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--hours", type=float, default=None)
    parser.add_argument("--seed", type=int, default=20251121)
    args = parser.parse_args(argv)
    info = generate(args.out, args.entries, workers=args.workers, hours=args.hours, seed=args.seed)
    print(
        f"{info.path}: {info.entries} entries, {info.bytes / 1e6:.1f} MB, {info.workers} "
        f"workers, {info.recorded_duration_ns / 3.6e12:.2f} h recorded, "
        f"{info.truncated_payloads} payloads over the inline limit, {info.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
