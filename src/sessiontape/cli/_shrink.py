"""The smallest tape that still fails the same way: ``sessiontape shrink TAPE -o SMALL``.

Each candidate is replayed as ``pytest --replay`` replays it, through the project's
``sessiontape_replay`` hook (from the conftest.py pytest finds in the current directory),
in worker processes (``-j N``, all cores by default); nothing the tape recorded is spawned.
A candidate is kept when its first failure has the same signature as the tape's: the
mismatch's kind, boundary and call (program and subcommand, store operation, agent step),
or an escaped exception's type and the place it was raised. ``--until "CMD {}"`` replaces
that test with a shell command run on the candidate's path (exit 0: still interesting).

The reductions, cheapest first: cut what follows the failure; drop what the failing replay
left unconsumed; remove tasks (a snapshot item and the calls made for it) and snapshot
items; remove whole workers; remove time windows; delta debugging over the top-level calls
and then over every call; finally simpler values (empty or shorter outputs). Every tape
written is valid: renumbered seqs, parents that resolve, and a header that says what it was
shrunk from. The best tape so far is always at OUT (a new file renamed over it), so
``--budget`` and Ctrl-C leave a usable result. The input is never written.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..cassette import ShrunkFrom, is_cassette, load
from ._common import (
    CommandError,
    add_workers_option,
    plural,
    print_json,
    read_recording,
    seconds,
)

if TYPE_CHECKING:
    # The engine loads when shrink runs, not with every other command (start-up time).
    from ._pool import Pool, Signature, Verdict
    from ._reduce import Cut, Tape, Unit

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "the smallest tape that still fails the same way (for a fixture)"

#: Top-level calls are first removed in at most this many windows of time.
_TIME_WINDOWS: Final = 16


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``shrink`` options."""
    parser.add_argument("path", metavar="TAPE", help="a tape whose replay fails")
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="where to write the small tape"
    )
    parser.add_argument(
        "--until",
        metavar="CMD",
        help="a shell command that decides instead of a replay: {} is the candidate's path; "
        "exit 0 means it is still interesting",
    )
    parser.add_argument(
        "--budget", type=seconds, metavar="SECONDS", help="stop after SECONDS with the best so far"
    )
    add_workers_option(parser, "-j", "--jobs", auto=False)
    parser.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="give up on a candidate after SECONDS (default: 10 times the tape's replay, "
        "at least 30 s)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


# -- deciding ------------------------------------------------------------------------------


class _Until:
    """``--until CMD``: the user's command decides, several at a time."""

    def __init__(self, command: str, jobs: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from ._pool import Signature

        #: The signature every candidate gets when the command exits 0.
        self.signature = Signature("until", "command", "exit 0")
        self.command = command
        self.size = jobs
        self.replays = 0
        self.timeout: float | None = None
        self._threads = ThreadPoolExecutor(max_workers=jobs)

    def _one(self, path: str) -> Verdict:
        from ._pool import Verdict

        quoted = shlex.quote(path)
        line = (
            self.command.replace("{}", quoted)
            if "{}" in self.command
            else (f"{self.command} {quoted}")
        )
        started = time.perf_counter()
        try:
            code = subprocess.run(
                line,
                shell=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=self.timeout,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            return Verdict(True, lost=True)
        spent = time.perf_counter() - started
        if code == 0:
            return Verdict(False, self.signature, "the command exited 0", seconds=spent)
        return Verdict(True, seconds=spent)

    def run(self, paths: Sequence[str]) -> list[Verdict]:
        verdicts = list(self._threads.map(self._one, paths))
        self.replays += len(paths)
        return verdicts

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)


# -- searching ------------------------------------------------------------------------------


class _Search:
    """The reductions, each accepting the first candidate that fails the same way."""

    def __init__(
        self,
        tape: Tape,
        oracle: Pool | _Until,
        signature: Signature,
        work: Path,
        output: str,
        deadline: float | None,
        progress: Callable[[_Search], None],
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
        self.progress(self)
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
        from ._reduce import Unit

        seqs = frozenset(self.origin[s] for s in verdict.unconsumed if s < len(self.origin))
        cut = self.tape.without(self.best, Unit(seqs))
        if cut is not None:
            self.first([(cut, "drop unconsumed")])

    def simplify(self) -> None:
        """Shorter recorded outputs, where the failure does not depend on them."""
        from ._reduce import Cut, simpler_outputs

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


# -- the command ----------------------------------------------------------------------------


def _check_output(source: str, output: str) -> None:
    target = Path(output)
    if target.exists() or target.is_symlink():
        if Path(source).resolve() == target.resolve():
            raise CommandError(
                f"{output}: is the tape being shrunk; shrink never writes over its input. "
                "Name another output with -o."
            )
        if target.is_dir() or not is_cassette(target):
            raise CommandError(
                f"{output}: exists and is not a sessiontape cassette; shrink only replaces a "
                "cassette. Name a new file with -o, or move that one away."
            )


def _progress_line(stream: Any) -> Callable[[_Search], None]:
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()):
        return lambda search: None

    def show(search: _Search) -> None:
        spent = time.monotonic() - search.started
        stream.write(
            f"\r\x1b[Kshrink: {search.tried:,} candidates, {search.entries:,} entries now, "
            f"{spent:.1f} s ({search.phase})"
        )
        stream.flush()

    return show


def run(args: argparse.Namespace) -> int:
    """``sessiontape shrink``."""
    from ._pool import Pool
    from ._reduce import Tape

    _check_output(args.path, args.output)
    recording = read_recording(args.path)
    tape = Tape(recording)
    started = time.monotonic()
    deadline = None if args.budget is None else started + args.budget
    oracle: Pool | _Until = (
        _Until(args.until, args.jobs) if args.until else Pool(args.path, jobs=args.jobs)
    )
    interrupted = False
    show = _progress_line(sys.stderr)
    with tempfile.TemporaryDirectory(prefix="sessiontape-shrink-") as work:
        try:
            search = _prepare(args, tape, oracle, Path(work), deadline, show)
            try:
                search.run()
            except KeyboardInterrupt:
                interrupted = True
        finally:
            oracle.close()
            if sys.stderr.isatty():
                sys.stderr.write("\r\x1b[K")
    spent = time.monotonic() - started
    return _report(args, recording.entries, search, spent, interrupted)


def _prepare(
    args: argparse.Namespace,
    tape: Tape,
    oracle: Pool | _Until,
    work: Path,
    deadline: float | None,
    show: Callable[[_Search], None],
) -> _Search:
    """Replay the tape as it is; refuse one that passes; write it renumbered as the start."""
    (verdict,) = oracle.run([args.path])
    if verdict.lost:
        raise CommandError(
            f"{args.path}: its replay did not finish (the worker died or hung); shrink needs "
            "a tape whose replay fails. Run 'pytest --replay' on it to see why."
        )
    if verdict.passed or verdict.signature is None:
        if isinstance(oracle, _Until):
            raise CommandError(
                f"{args.path}: the --until command does not exit 0 for the tape itself, so "
                "there is nothing to keep while shrinking. Check the command on the tape."
            )
        raise CommandError(
            f"{args.path}: its replay passes (pytest --replay through the project's "
            "sessiontape_replay hook), so there is no failure to keep and nothing to shrink. "
            "To cut a passing tape, use 'sessiontape slice'."
        )
    if verdict.signature.kind in ("failed", "uncollected"):
        raise CommandError(
            f"{args.path}: its replay fails before anything is replayed ({verdict.summary}); "
            "shrink keeps a failure of the replay itself. Run 'pytest --replay' on it and "
            "fix what it says first."
        )
    oracle.timeout = args.timeout if args.timeout is not None else max(30.0, 10 * verdict.seconds)
    search = _Search(tape, oracle, verdict.signature, work, args.output, deadline, show)
    search.start(verdict)
    return search


def _report(
    args: argparse.Namespace,
    original: Sequence[Any],
    search: _Search,
    spent: float,
    interrupted: bool,
) -> int:
    written = load(args.output)
    from ._validate import ERROR, check

    errors = [f for f in check(written, secrets=False) if f.severity == ERROR]
    figures = {
        "input": args.path,
        "output": args.output,
        "entries_before": len(original),
        "entries_after": len(written.entries),
        "failure": str(search.signature),
        "candidates": search.tried,
        "seconds": round(spent, 3),
        "seconds_per_candidate": round(spent / search.tried, 4) if search.tried else None,
        "steps": dict(search.steps),
        "interrupted": interrupted,
        "budget_spent": search.out_of_time,
        "valid": not errors,
    }
    if args.json:
        print_json(figures)
    else:
        stopped = (
            " (interrupted: the best so far)"
            if interrupted
            else " (budget spent: the best so far)"
            if search.out_of_time
            else ""
        )
        print(
            f"{args.path}: {plural(len(original), 'entry', 'entries')} -> "
            f"{plural(len(written.entries), 'entry', 'entries')}, still failing with "
            f"{search.signature}; {plural(search.tried, 'candidate')} in {spent:.1f} s"
            f"{stopped}; wrote {args.output}."
        )
    if errors:
        raise CommandError(
            f"{args.output}: the shrunk tape does not validate ({errors[0].message}). This is "
            "a bug in sessiontape shrink; please report it with the tape."
        )
    return 130 if interrupted else 0
