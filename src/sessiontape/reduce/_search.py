"""The search for the smallest tape that still fails the same way.

The reductions, cheapest first: cut what follows the failure; drop what the failing replay
left unconsumed; keep only the failing call's task, and its worker; remove tasks (a
snapshot item and the calls made for it) and snapshot items; remove whole workers; remove
time windows; delta debugging over the top-level calls and then over every call; finally
simpler values (empty or shorter outputs). Each reduction writes a batch of candidates,
as many as the oracle replays side by side, and accepts the first of them, in its own
order, that fails with the tape's signature: the result does not depend on which replay
finished first. The best tape so far is always at the output (a new file renamed over
it), so a spent budget or Ctrl-C leaves a usable result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..cassette import ShrunkFrom
from ._cuts import Cut, Cuts, Unit, simpler_outputs
from ._verdict import Oracle, Signature, Verdict

__all__ = ["Search", "ShrinkProgress"]

#: Top-level calls are first removed in at most this many windows of time.
_TIME_WINDOWS: Final = 16


@dataclass(frozen=True)
class ShrinkProgress:
    """Where a shrink is, after each batch of candidates (for a progress line)."""

    #: Candidates replayed so far.
    candidates: int
    #: Entries of the best tape so far, header included.
    entries: int
    #: Seconds since the search started.
    seconds: float
    #: The reduction running (``tasks``, ``calls``, ``simpler values``...).
    phase: str


class Search:
    """The reductions, each accepting the first candidate that fails the same way."""

    def __init__(
        self,
        tape: Cuts,
        oracle: Oracle,
        signature: Signature,
        work: Path,
        output: str,
        deadline: float | None,
        progress: Callable[[ShrinkProgress], None],
    ) -> None:
        self.tape = tape
        self.oracle = oracle
        self.signature = signature
        self.work = work
        self.output = output
        self.deadline = deadline
        self.progress = progress
        self.best = tape.whole
        self.origin: list[int] = []
        self.verdict: Verdict | None = None
        self.tried = 0
        self.steps: dict[str, int] = {}
        self.started = time.monotonic()
        self.phase = "start"
        self.out_of_time = False
        #: How long the last batch of candidates took, written and replayed.
        self._batch_s = 0.0
        header = tape.header
        base = header.shrunk_from
        self._from = ShrunkFrom(
            run_id=base.run_id if base is not None else header.run_id,
            entries=base.entries if base is not None else len(tape.recording.entries),
            failure=str(signature),
        )

    @property
    def entries(self) -> int:
        return self.tape.size(self.best)

    def shrunk(self) -> ShrunkFrom:
        how = [f"{name}: {count}" for name, count in self.steps.items()]
        return ShrunkFrom(self._from.run_id, self._from.entries, self._from.failure, how)

    def _timed_out(self) -> bool:
        # A batch that would end past the deadline is not started: the budget is kept,
        # not overrun by the last batch (on a long tape one takes seconds).
        if self.deadline is not None and time.monotonic() + self._batch_s >= self.deadline:
            self.out_of_time = True
        return self.out_of_time

    def start(self, verdict: Verdict) -> None:
        """Write the whole tape, renumbered, as the first best (the input stays untouched)."""
        self.origin = self.tape.write(self.best, self.shrunk(), self.output)
        self.verdict = verdict

    def first(self, cuts: Sequence[tuple[Cut, str]]) -> bool:
        """Replay ``cuts`` side by side; accept the first (in their order) that fails the
        same way. Whether one was accepted."""
        if not cuts or self._timed_out():
            return False
        began = time.monotonic()
        paths, origins = [], []
        for index, (cut, _) in enumerate(cuts):
            path = str(self.work / f"candidate-{index}.jsonl")
            origins.append(self.tape.write(cut, self.shrunk(), path))
            paths.append(path)
        verdicts = self.oracle.run(paths)
        self.tried += len(cuts)
        accepted = False
        for (cut, step), verdict, origin in zip(cuts, verdicts, origins, strict=True):
            if not verdict.passed and not verdict.lost and verdict.signature == self.signature:
                self.best, self.verdict, self.origin = cut, verdict, origin
                self.steps[step] = self.steps.get(step, 0) + 1
                self.tape.write(cut, self.shrunk(), self.output)
                accepted = True
                break
        self._batch_s = time.monotonic() - began
        self.progress(
            ShrinkProgress(self.tried, self.entries, time.monotonic() - self.started, self.phase)
        )
        return accepted

    def ddmin(
        self, step: str, units_of: Callable[[Cut], list[Unit]], limit: int | None = None
    ) -> None:
        """Delta debugging: remove chunks of ``units``, halving the chunks when none can go."""
        self.phase = step
        if self._timed_out():
            return
        units = units_of(self.best)
        chunks_wanted = min(2, len(units))
        start = 0
        while units and not self._timed_out():
            chunks = _split(units, chunks_wanted)
            order = chunks[start:] + chunks[:start]
            accepted = False
            for offset in range(0, len(order), self.oracle.size):
                window = order[offset : offset + self.oracle.size]
                cuts = [
                    (cut, step)
                    for cut in (self.tape.without_all(self.best, chunk) for chunk in window)
                    if cut is not None
                ]
                if self.first(cuts):
                    accepted = True
                    start = (start + offset) % max(1, len(chunks))
                    break
                if self.out_of_time:
                    return
            if accepted:
                units = [u for u in units if self.tape.alive(self.best, u)]
                chunks_wanted = max(min(chunks_wanted - 1, len(units)), min(2, len(units)))
                start = min(start, max(0, chunks_wanted - 1))
                continue
            if chunks_wanted >= len(units) or (limit is not None and chunks_wanted >= limit):
                return
            chunks_wanted = min(chunks_wanted * 2, len(units))
            start = 0

    def cut_after_failure(self) -> None:
        """Everything after the failing call; else the failing worker's later calls."""
        self.phase = "cut after the failure"
        verdict = self.verdict
        if verdict is None or verdict.seq is None or verdict.seq >= len(self.origin):
            return
        seq = self.origin[verdict.seq]
        worker = self.tape.by_seq[seq].worker
        cuts = [
            self.tape.without(self.best, self.tape.after(self.best, seq)),
            self.tape.without(self.best, self.tape.after(self.best, seq, worker=worker)),
        ]
        self.first([(c, "cut after the failure") for c in cuts if c is not None])

    def focus(self) -> None:
        """Everything but the failing call's task, and everything but its worker: one
        candidate each, which often does most of the work at once."""
        self.phase = "focus"
        verdict = self.verdict
        if verdict is None or verdict.seq is None or verdict.seq >= len(self.origin):
            return
        seq = self.origin[verdict.seq]
        root = self.tape.tree.root_of.get(seq, seq)
        tasks = self.tape.tasks(self.best)
        others = [t for t in tasks if root not in t.seqs]
        if len(others) < len(tasks):
            cut = self.tape.without_all(self.best, others)
            if cut is not None:
                self.first([(cut, "tasks")])
        worker = self.tape.by_seq[seq].worker
        workers = [w for w in self.tape.workers(self.best) if root not in w.seqs]
        if workers and worker != "main":
            cut = self.tape.without_all(self.best, workers)
            if cut is not None:
                self.first([(cut, "workers")])

    def drop_unconsumed(self) -> None:
        """What the failing replay never asked for."""
        self.phase = "drop unconsumed"
        verdict = self.verdict
        if verdict is None or not verdict.unconsumed:
            return
        seqs = frozenset(self.origin[s] for s in verdict.unconsumed if s < len(self.origin))
        cut = self.tape.without(self.best, Unit(seqs))
        if cut is not None:
            self.first([(cut, "drop unconsumed")])

    def simplify(self) -> None:
        """Shorter recorded outputs, where the failure does not depend on them."""
        self.phase = "simpler values"
        seqs = [e.seq for e in self.tape.entries if e.seq in self.best.kept]
        pending: list[tuple[int, str, Any]] = []
        for seq in seqs:
            entry = self.best.values.get(seq, self.tape.by_seq[seq])
            pending.extend((seq, label, simpler) for label, simpler in simpler_outputs(entry))
        while pending and not self._timed_out():
            window, pending = pending[: self.oracle.size], pending[self.oracle.size :]
            cuts = []
            for seq, _, simpler in window:
                if seq in self.best.kept:
                    values = {**self.best.values, seq: simpler}
                    cuts.append(
                        (Cut(self.best.kept, self.best.dropped_items, values), "simpler values")
                    )
            self.first(cuts)

    def run(self) -> None:
        """Every reduction, cheapest first; the structural ones again while they help."""
        for _ in range(3):
            before = self.entries, len(self.best.dropped_items)
            self.cut_after_failure()
            self.drop_unconsumed()
            self.focus()
            self.ddmin("tasks", self.tape.tasks)
            self.ddmin("snapshot items", self.tape.items)
            self.ddmin("workers", self.tape.workers)
            self.ddmin("time windows", self.tape.roots, limit=_TIME_WINDOWS)
            self.ddmin("top-level calls", self.tape.roots)
            self.ddmin("calls", self.tape.calls)
            if (self.entries, len(self.best.dropped_items)) == before or self.out_of_time:
                break
        self.simplify()


def _split(units: list[Unit], count: int) -> list[list[Unit]]:
    """``units`` in ``count`` contiguous chunks of (nearly) equal size."""
    count = max(1, min(count, len(units)))
    size, extra = divmod(len(units), count)
    chunks, at = [], 0
    for index in range(count):
        width = size + (1 if index < extra else 0)
        chunks.append(units[at : at + width])
        at += width
    return chunks
