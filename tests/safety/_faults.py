"""The disk-fault matrix: each recording fault at each moment of a run.

One case records a small application (process calls through a fake runner, agent turns)
while a fault strikes at one moment, and returns what happened. The contract checked by
:func:`check`: exactly one :class:`~sessiontape.RecordingWarning`, the application's
results exactly as without recording, and the lines written before the fault intact (they
load, as a crashed session, from wherever the cassette now is).

Write faults (a full disk, an I/O error) are injected by replacing the writer's
``os.write``; a full disk writes part of the line first, as a real one does. Open faults
(permission denied, a full disk) replace its ``os.open``. File-system faults are real: the
cassette's directory or file is deleted, the file moved away or replaced by another.
"""

from __future__ import annotations

import errno
import os
import shutil
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape import RecordingWarning
from sessiontape.cassette import _writer

CALLS = 6
#: Entries a run writes without a fault: header, CALLS process calls, CALLS agent turns, end.
ENTRIES = 2 * CALLS + 2

WRITE_FAULTS = {"full disk": errno.ENOSPC, "I/O error": errno.EIO}
OPEN_FAULTS = {"permission denied": errno.EACCES, "full disk": errno.ENOSPC}
FS_FAULTS = ("directory deleted", "file deleted", "file moved away", "file replaced")


class Runner:
    """A fake process runner: echoes its last argument."""

    def run(self, argv: Sequence[str], **kwargs: Any) -> sessiontape.ProcessResult:
        return sessiontape.ProcessResult(list(argv), 0, f"{argv[-1]}\n".encode(), b"")

    def stream(self, argv: Sequence[str], **kwargs: Any) -> Any:
        raise NotImplementedError


class Agent:
    """A fake agent: returns its request doubled."""

    def execute(self, n: int) -> dict[str, int]:
        return {"n": n, "double": 2 * n}


def application(tape: sessiontape.Tape, between: Callable[[int], None]) -> list[Any]:
    """The application under recording; ``between(i)`` runs before its i-th step."""
    runner = tape.process_runner(Runner())
    agent = tape.agent(Agent())
    results: list[Any] = []
    for i in range(CALLS):
        between(i)
        results.append(runner.run(["echo", str(i)]).stdout)
        results.append(agent.execute(i))
    between(CALLS)
    return results


EXPECTED = application(sessiontape.tape.DisabledTape(), lambda i: None)


@dataclass
class Outcome:
    """What one case left: the warnings, the results, and where the kept lines are."""

    fault: str
    moment: str
    warnings: list[str]
    results: list[Any]
    kept: Path | None  # the file holding the lines written before the fault, if any
    untouched: dict[Path, bytes]  # files that were not the recorder's and must be intact


@contextmanager
def _patched(name: str, value: Any) -> Iterator[None]:
    old = getattr(_writer, name)
    setattr(_writer, name, value)
    try:
        yield
    finally:
        setattr(_writer, name, old)


def _failing_write(code: int, at: int) -> Callable[[int, Any], int]:
    """``os.write`` that fails from the ``at``-th line on; a full disk writes half first."""
    count = {"n": 0}
    real = os.write

    def write(fd: int, data: Any) -> int:
        n = count["n"]
        count["n"] += 1
        if n < at:
            return real(fd, data)
        if code == errno.ENOSPC and n == at and len(data) > 1:
            return real(fd, bytes(data[: len(data) // 2]))  # a short write, then the error
        raise OSError(code, os.strerror(code))

    return write


def _failing_open(code: int) -> Callable[..., int]:
    def open_(path: Any, flags: int, mode: int = 0o777) -> int:
        raise OSError(code, os.strerror(code))

    return open_


def _fs_fault(fault: str, path: Path, untouched: dict[Path, bytes]) -> Path | None:
    """Strike a file-system fault at ``path``; return where the kept lines are now."""
    if fault == "directory deleted":
        shutil.rmtree(path.parent)
        return None
    if fault == "file deleted":
        path.unlink()
        return None
    moved = path.with_name(path.name + ".moved")
    path.rename(moved)
    if fault == "file replaced":
        path.write_bytes(b"someone else's file\n")
        untouched[path] = b"someone else's file\n"
    return moved


def run_case(root: Path, fault: str, moment: str, at: int = 0) -> Outcome:
    """Record the application with ``fault`` at ``moment`` (``at``: which line or step)."""
    directory = root / f"{fault}-{moment}-{at}".replace(" ", "_")
    directory.mkdir(parents=True)
    path = directory / "run.jsonl"
    untouched: dict[Path, bytes] = {}
    kept: Path | None = path
    options: dict[str, Any] = {}
    if moment == "append":
        path.write_bytes(sessiontape_tape())
        untouched[path] = sessiontape_tape()
        options["if_exists"] = "append"

    def between(i: int) -> None:
        nonlocal kept
        if fault in FS_FAULTS and moment in ("mid-run", "before finish") and i == at:
            kept = _fs_fault(fault, path, untouched)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if fault in WRITE_FAULTS:
            patch = _patched("_write", _failing_write(WRITE_FAULTS[fault], at))
        elif fault == "parent is a file":
            (directory / "parent").write_bytes(b"a file, not a directory\n")
            untouched[directory / "parent"] = b"a file, not a directory\n"
            path = directory / "parent" / "run.jsonl"
            kept = None
            patch = _patched("_open", _writer._open)
        elif moment in ("open", "append"):
            patch = _patched("_open", _failing_open(OPEN_FAULTS[fault]))
            kept = path if moment == "append" else None
        else:
            patch = _patched("_open", _writer._open)
        with patch:
            tape = sessiontape.record(path, **options)
            with tape:
                results = application(tape, between)
    messages = [str(w.message) for w in caught if issubclass(w.category, RecordingWarning)]
    if kept is not None and not kept.exists():
        kept = None
    return Outcome(fault, moment, messages, results, kept, untouched)


def sessiontape_tape() -> bytes:
    """A finished cassette to append to (recorded without faults, kept in memory)."""
    global _APPEND_TARGET
    if _APPEND_TARGET is None:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, "base.jsonl")
            with sessiontape.record(path) as tape:
                application(tape, lambda i: None)
            _APPEND_TARGET = path.read_bytes()
    return _APPEND_TARGET


_APPEND_TARGET: bytes | None = None


def matrix(write_moments: Sequence[int], fs_moments: Sequence[int]) -> list[tuple[str, str, int]]:
    """Every (fault, moment, at) case: write faults at each line of ``write_moments``,
    file-system faults before each step of ``fs_moments``, and the open faults."""
    cases: list[tuple[str, str, int]] = []
    for fault in WRITE_FAULTS:
        cases += [(fault, "line", at) for at in write_moments]
    for fault in FS_FAULTS:
        cases += [(fault, "mid-run", at) for at in fs_moments if at < CALLS]
        cases.append((fault, "before finish", CALLS))
    for fault in OPEN_FAULTS:
        cases += [(fault, "open", 0), (fault, "append", 0)]
    cases.append(("parent is a file", "open", 0))
    return cases


def check(outcome: Outcome) -> list[str]:
    """What is wrong with ``outcome`` (nothing, when the contract holds)."""
    problems: list[str] = []
    where = f"{outcome.fault} at {outcome.moment}"
    if len(outcome.warnings) != 1:
        problems.append(f"{where}: {len(outcome.warnings)} warnings: {outcome.warnings}")
    if outcome.results != EXPECTED:
        problems.append(f"{where}: the application's results changed")
    for path, data in outcome.untouched.items():
        if not path.exists() or path.read_bytes() != data:
            problems.append(f"{where}: {path} was changed")
    if outcome.kept is not None and outcome.kept.stat().st_size:
        try:
            rec = sessiontape.load(outcome.kept)
        except sessiontape.CassetteError as exc:
            problems.append(f"{where}: the kept lines do not load: {exc}")
        else:
            seqs = [e.seq for e in rec.entries]
            if seqs != list(range(len(seqs))):
                problems.append(f"{where}: the kept lines are not a prefix: seqs {seqs}")
            if outcome.moment != "append" and not rec.crashed:
                problems.append(f"{where}: a session that stopped has a session_end")
    return problems
