"""``shrink()``: the smallest tape that still fails the same way.

Each candidate is replayed as ``pytest --replay`` replays it, through the project's
``sessiontape_replay`` hook (from the conftest.py pytest finds in ``cwd``), in worker
processes (``jobs``); nothing the tape recorded is spawned. A candidate is kept when its
first failure has the same signature as the tape's: the mismatch's kind, boundary and call
(program and subcommand, store operation, agent step), or an escaped exception's type and
the place it was raised. ``until`` replaces that test with a shell command run on the
candidate's path (exit 0: still interesting). The search is ``_search.py``; every tape
written is valid (renumbered seqs, parents that resolve, and a header that says what it
was shrunk from), and the input is never written.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..cassette import Recording, is_cassette, load
from ._cuts import Cuts
from ._errors import ReduceError
from ._pool import Pool
from ._search import Search, ShrinkProgress
from ._until import Until
from ._verdict import Oracle, Signature, Verdict

__all__ = ["ShrinkResult", "check_output", "shrink"]


@dataclass(frozen=True)
class ShrinkResult:
    """What :func:`shrink` did: the tape it wrote, and how it got there."""

    #: The tape shrunk, and the smallest tape found (written at ``output``).
    input: str
    output: str
    entries_before: int
    entries_after: int
    #: The failure every accepted candidate kept.
    failure: Signature
    #: Candidates replayed (or judged by the ``until`` command).
    candidates: int
    #: Wall seconds of the whole shrink, workers' start included.
    seconds: float
    #: Wall seconds of the search alone: from the tape's own first replay (the workers
    #: started) to the last candidate.
    search_seconds: float = 0.0
    #: Seconds the tape's own replay took in a worker (its first, which pays the
    #: worker's first-use imports).
    replay_seconds: float = 0.0
    #: How many candidates each reduction had accepted (``{"tasks": 2, ...}``).
    steps: dict[str, int] = field(default_factory=dict)
    #: Ctrl-C stopped the search: ``output`` holds the best tape so far.
    interrupted: bool = False
    #: The budget ran out: ``output`` holds the best tape so far.
    budget_spent: bool = False


def check_output(source: str | os.PathLike[str], output: str | os.PathLike[str]) -> None:
    """Refuse an ``output`` that is ``source`` itself or an existing file that is not a
    cassette (:class:`ReduceError`), before anything is replayed or written."""
    target = Path(output)
    if target.exists() or target.is_symlink():
        if Path(source).resolve() == target.resolve():
            raise ReduceError(
                f"{os.fspath(output)}: is the tape being shrunk; shrink never writes over its "
                "input. Name another output with -o."
            )
        if target.is_dir() or not is_cassette(target):
            raise ReduceError(
                f"{os.fspath(output)}: exists and is not a sessiontape cassette; shrink only "
                "replaces a cassette. Name a new file with -o, or move that one away."
            )


def shrink(
    tape: str | os.PathLike[str] | Recording,
    output: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    until: str | None = None,
    budget: float | None = None,
    timeout: float | None = None,
    progress: Callable[[ShrinkProgress], None] | None = None,
) -> ShrinkResult:
    """Shrink ``tape`` (a path, or a loaded recording) to the smallest tape whose replay
    still fails the same way, written at ``output``.

    ``jobs`` replay workers (default: one per core) each run ``pytest --replay`` from the
    current directory; ``until`` is a shell command that decides instead (``{}`` is the
    candidate's path; exit 0 keeps it). ``budget`` stops the search after that many
    seconds, ``timeout`` gives up on one candidate after that many (default: 10 times the
    tape's replay, at least 30 s). ``progress`` is called after each batch of candidates.
    Ctrl-C stops the search too: the result says so, and ``output`` holds the best tape.

    Raises :class:`~sessiontape.reduce.ReduceError` for a tape whose replay passes (nothing
    to keep) or fails before replaying anything, and for an ``output`` that is not a
    cassette or is the input.
    """
    recording = tape if isinstance(tape, Recording) else load(tape)
    source = str(recording.path)
    out = os.fspath(output)
    check_output(source, out)
    cuts = Cuts(recording)
    started = time.monotonic()
    deadline = None if budget is None else started + budget
    size = jobs if jobs is not None else os.cpu_count() or 1
    oracle: Oracle = Until(until, size) if until else Pool(source, jobs=size)
    interrupted = False
    with tempfile.TemporaryDirectory(prefix="sessiontape-shrink-") as work:
        try:
            search, first = _prepare(
                source, out, cuts, oracle, Path(work), deadline, timeout, progress
            )
            try:
                search.run()
            except KeyboardInterrupt:
                interrupted = True
            searched = time.monotonic() - search.started
        finally:
            oracle.close()
    written = load(out)
    return ShrinkResult(
        input=source,
        output=out,
        entries_before=len(recording.entries),
        entries_after=len(written.entries),
        failure=search.signature,
        candidates=search.tried,
        seconds=time.monotonic() - started,
        search_seconds=searched,
        replay_seconds=first.seconds,
        steps=dict(search.steps),
        interrupted=interrupted,
        budget_spent=search.out_of_time,
    )


def _prepare(
    source: str,
    output: str,
    cuts: Cuts,
    oracle: Oracle,
    work: Path,
    deadline: float | None,
    timeout: float | None,
    progress: Callable[[ShrinkProgress], None] | None,
) -> tuple[Search, Verdict]:
    """Replay the tape as it is; refuse one that passes; write it renumbered as the start.
    The search, and the verdict of the tape's own replay."""
    (verdict,) = oracle.run([source])
    if verdict.lost:
        raise ReduceError(
            f"{source}: its replay did not finish (the worker died or hung); shrink needs "
            "a tape whose replay fails. Run 'pytest --replay' on it to see why."
        )
    if verdict.passed or verdict.signature is None:
        if isinstance(oracle, Until):
            raise ReduceError(
                f"{source}: the --until command does not exit 0 for the tape itself, so "
                "there is nothing to keep while shrinking. Check the command on the tape."
            )
        raise ReduceError(
            f"{source}: its replay passes (pytest --replay through the project's "
            "sessiontape_replay hook), so there is no failure to keep and nothing to shrink. "
            "To cut a passing tape, use 'sessiontape slice'."
        )
    if verdict.signature.kind in ("failed", "uncollected"):
        raise ReduceError(
            f"{source}: its replay fails before anything is replayed ({verdict.summary}); "
            "shrink keeps a failure of the replay itself. Run 'pytest --replay' on it and "
            "fix what it says first."
        )
    oracle.timeout = timeout if timeout is not None else max(30.0, 10 * verdict.seconds)
    search = Search(
        cuts, oracle, verdict.signature, work, output, deadline, progress or _no_progress
    )
    search.start(verdict)
    return search, verdict


def _no_progress(progress: ShrinkProgress) -> None:
    """The default progress callback: nothing shown."""
