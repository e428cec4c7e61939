"""Where a recording goes: the cassette path, what to do with an existing one, the header.

``if_exists="force"`` moves an existing cassette aside; ``"append"`` resumes it, continuing
its seqs and run id. Everything here runs once, before the first line is written.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import sys
from pathlib import Path
from typing import Final, Literal, NamedTuple

from .._errors import CassetteError
from ..cassette import load, truncate_torn_tail

__all__ = ["IF_EXISTS", "IfExists", "Target", "default_entrypoint", "prepare"]

IfExists = Literal["force", "append"]
IF_EXISTS: Final[tuple[IfExists, ...]] = ("force", "append")


class Target(NamedTuple):
    """What :func:`prepare` found: where seqs start, the run id to keep, what was moved."""

    #: The first seq to allocate (0 for a new cassette).
    first_seq: int
    #: The run id of the cassette being resumed, or ``None`` for a new one.
    run_id: str | None
    #: Where ``if_exists="force"`` moved the previous cassette, if there was one.
    moved_to: Path | None


def prepare(path: Path, if_exists: IfExists) -> Target:
    """Make ``path`` ready to record to, following ``if_exists``."""
    if not path.exists():
        return Target(0, None, None)
    if if_exists == "append":
        first_seq, run_id = _resume(path)
        return Target(first_seq, run_id if first_seq > 0 else None, None)
    return Target(0, None, _move_aside(path))


def _resume(path: Path) -> tuple[int, str]:
    """Prepare to append: drop a torn tail, return the next seq and the run id."""
    try:
        truncate_torn_tail(path)
        previous = load(path)
    except CassetteError as exc:
        raise CassetteError(
            f"cannot append to it: {exc.reason} Nothing was changed; record with "
            "if_exists='force' to move it aside and start a new cassette.",
            path=exc.path,
            line=exc.line,
        ) from None
    return previous.entries[-1].seq + 1, previous.header.run_id


def _move_aside(path: Path) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.old.{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.old.{stamp}.{n}")
        n += 1
    shutil.move(os.fspath(path), os.fspath(target))
    return target


def default_entrypoint() -> str:
    """The program's command line, as recorded when the application names none."""
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else ""
