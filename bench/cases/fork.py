"""A fork's cost: what a replay costs up to the fork, plus what answers the calls after it
(issue 33: a fork costs what a replay costs up to SEQ, plus what runs live).

The program is ``chaos.py``'s workers (``workers_program``: threads, each making ``calls``
process calls through an injected runner that answers like ``echo``, and a store call
every ``every`` of them), recorded once in a fresh interpreter. The fork parts at the
middle of the tape, at one of the first worker's process calls, with another stdout that
the program does not read: every call after it asks what a recorded call asked, so the
tape answers all of them (matched by content, as chaos matches) and none runs live
(``live=False`` would stop the fork at one that did). The fork writes its branch tape
beside the original; the bench removes it after each round (it wrote it).

The budget held: with nothing run live, a fork serves the calls a plain replay of the
whole tape serves (the tape's before the fork, the same answers after it), then writes
its branch as a tape, which every writer checks as ``sessiontape validate`` does before
it renames it into place. So a fork costs a plain replay of the tape plus writing its
branch: ``fork / (plain replay + write) <= 1.2`` (``fork_budget_ratio``), where "write"
is ``write_new_cassette`` of the branch's own bytes beside it (checked, written, flushed),
timed in the same round. The fork over the plain replay alone (``fork_ratio``) is shown
too: the branch's write is most of what lies between the two.

Each round times a plain replay, a fork and the write, taking turns in one interpreter,
``rounds`` times; the ratios are taken per round (each fork against the replay and the
write of its own round) and their median reported with their spread: on a loaded machine
single rounds swing by 2x, their median less. Each is given in wall time and in the
process's CPU time (``_cpu``, every thread's): on a machine whose cores other work holds,
the CPU time is the steadier reading (a thread waiting for a core, or for the disk to
flush, costs none).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape.cassette import write_new_cassette

from .chaos import workers_program
from .common import PROCESS_CPU, in_subprocess, median, now_ns

__all__ = ["child_fork", "run"]

ENTRY = "bench fork"


def child_fork(path: str, workers: int, calls: int, every: int, rounds: int) -> dict[str, Any]:
    """Record the program at ``path``, then time plain replays and forks taking turns."""
    cassette = Path(path)
    with sessiontape.record(cassette, entrypoint=ENTRY) as recording:
        workers_program(recording, workers, calls, every)
    recorded = sessiontape.load(cassette)
    processes = [
        c for c in recorded.calls if isinstance(c, sessiontape.ProcessCall) and c.worker == "w0"
    ]
    middle = len(recorded.calls) // 2
    seq = min(processes, key=lambda c: abs(c.seq - middle)).seq
    fork = sessiontape.Fork(seq=seq, answer={"stdout": "another answer\n"}, live=False)

    def plain() -> tuple[int, int]:
        started, cpu = now_ns(), PROCESS_CPU()
        with sessiontape.replay(cassette) as tape:
            workers_program(tape, workers, calls, every)
        spent = (now_ns() - started, PROCESS_CPU() - cpu)
        if tape.report is None or not tape.report.ok:
            raise RuntimeError(f"the plain replay of {cassette} failed: nothing to compare with")
        return spent

    def forked() -> tuple[tuple[int, int], sessiontape.ForkResult, bytes]:
        started, cpu = now_ns(), PROCESS_CPU()
        with sessiontape.replay(cassette, fork=fork) as tape:
            workers_program(tape, workers, calls, every)
        spent = (now_ns() - started, PROCESS_CPU() - cpu)
        result = tape.fork
        if result is None or result.written is None or result.stopped or result.live:
            said = result.line() if result is not None else "no fork result"
            raise RuntimeError(f"the fork did not do what it measures: {said}")
        branch = Path(result.written)
        written = branch.read_bytes()
        branch.unlink()  # the bench's own branch tape, written just now
        return spent, result, written

    def write(data: bytes) -> tuple[int, int]:
        """Write ``data`` (the branch's bytes) as a new tape, as every writer does."""
        copy = cassette.with_name("written-again.jsonl")
        started, cpu = now_ns(), PROCESS_CPU()
        write_new_cassette(copy, [data])
        spent = (now_ns() - started, PROCESS_CPU() - cpu)
        copy.unlink()  # the bench's own copy, written just now
        return spent

    plain()
    write(forked()[2])  # a warm-up of each
    plains: list[tuple[int, int]] = []
    forks: list[tuple[int, int]] = []
    writes: list[tuple[int, int]] = []
    result: sessiontape.ForkResult | None = None
    for _ in range(rounds):
        plains.append(plain())
        spent, result, data = forked()
        forks.append(spent)
        writes.append(write(data))
    assert result is not None
    figures: dict[str, Any] = {
        "entries": len(recorded.calls),
        "workers": workers,
        "seq": seq,
        "rounds": rounds,
    }
    for clock, suffix in ((0, ""), (1, "_cpu")):  # wall time, then the process's CPU time
        p, f, w = ([t[clock] for t in ts] for ts in (plains, forks, writes))
        ratios = sorted(a / b for a, b in zip(f, p, strict=True))
        budget = sorted(a / (b + c) for a, b, c in zip(f, p, w, strict=True))
        figures |= {
            f"replay{suffix}_ns": median(p),
            f"fork{suffix}_ns": median(f),
            f"write{suffix}_ns": median(w),
            f"ratio{suffix}": median(ratios),
            f"ratio{suffix}_min": ratios[0],
            f"ratio{suffix}_max": ratios[-1],
            f"budget_ratio{suffix}": median(budget),
            f"budget_ratio{suffix}_min": budget[0],
            f"budget_ratio{suffix}_max": budget[-1],
        }
    return {
        **figures,
        "from_tape": result.from_tape,
        "live": result.live,
        "after": sum(1 for c in recorded.calls if c.seq > seq),
    }


def run(*, workdir: Path, workers: int, calls: int, every: int, rounds: int) -> dict[str, Any]:
    """The measurement, in a fresh interpreter (its threads and heap stay out of the suite's)."""
    where = Path(tempfile.mkdtemp(prefix="bench-fork-", dir=workdir))
    result: dict[str, Any] = in_subprocess(
        "cases.fork:child_fork",
        path=str(where / "four-workers.jsonl"),
        workers=workers,
        calls=calls,
        every=every,
        rounds=rounds,
    )
    return result
