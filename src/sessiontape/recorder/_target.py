"""Where a recording goes: the cassette path, what to do with an existing one, the header.

``if_exists="force"`` moves an existing cassette aside; ``"append"`` resumes it, continuing
its seqs and run id. Everything here runs once, before the first line is written, and
follows one rule: nothing at the path is moved, cut or written to before it is proven to
be a sessiontape cassette (a regular file whose first line is a ``session_start``).

* A directory, a symlink, a FIFO or a device at the path is refused with a
  :class:`~sessiontape.UsageError` naming it, before anything is touched; so is a file
  that is not a cassette, unless it is empty (there is nothing in it to lose).
* ``force`` renames the old cassette to ``NAME.old.<timestamp>`` in the same directory
  (one atomic ``os.rename``). If the rename fails, recording is off with one warning.
* ``append`` opens the cassette once, reads and checks it through that descriptor, sets a
  torn last line aside in ``NAME.torn.<timestamp>`` (never drops it) and appends through
  the same descriptor. A cassette that cannot be opened or read gives one warning and
  recording is off; one that is not a valid cassette is refused, unchanged.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path
from typing import Final, Literal, NamedTuple

from .._errors import CassetteError, UsageError
from ..cassette import beside, is_cassette, loads, open_private, set_aside_tail

__all__ = ["IF_EXISTS", "IfExists", "Target", "default_entrypoint", "prepare"]

IfExists = Literal["force", "append"]
IF_EXISTS: Final[tuple[IfExists, ...]] = ("force", "append")

# A module global rather than a direct call: tests inject faults by replacing it.
_rename: Final = os.rename


class Target(NamedTuple):
    """What :func:`prepare` found and did: where seqs start, what was kept or moved."""

    #: The first seq to allocate (0 for a new cassette).
    first_seq: int = 0
    #: The run id of the cassette being resumed, or ``None`` for a new one.
    run_id: str | None = None
    #: Where ``if_exists="force"`` moved the previous cassette, if there was one.
    moved_to: Path | None = None
    #: An open descriptor to write through (an existing file checked here), else ``None``.
    fd: int | None = None
    #: Why recording must stay off (a fault met here, not a refusal), else ``None``.
    failure: str | None = None
    #: Where a torn last line of the resumed cassette was set aside, if there was one.
    torn_to: Path | None = None


def prepare(path: Path, if_exists: IfExists) -> Target:
    """Make ``path`` ready to record to, following ``if_exists`` (see the module's rules).

    Raises :class:`~sessiontape.UsageError` for what is refused (nothing was touched) and
    :class:`~sessiontape.CassetteError` for a damaged cassette that cannot be appended to;
    a fault (a failed rename, an unreadable cassette) is returned as ``failure``.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return Target()
    except OSError as exc:
        # ENOTDIR (a parent is a file), EACCES (a parent cannot be searched)...: the
        # writer meets the same fault opening the file and warns once.
        if exc.errno in _NOT_THERE:
            return Target()
        return Target(failure=f"cannot look at the path ({exc.strerror or exc})")
    _refuse_non_files(path, info)
    if if_exists == "append":
        return _resume(path, info)
    if info.st_size == 0:
        return _reuse_empty(path, info)
    if not is_cassette(path):
        raise UsageError(
            f"{path} exists and is not a sessiontape cassette (its first line is not a "
            "session_start entry), so if_exists='force' leaves it untouched. Record to "
            "another path, or move the file away yourself."
        )
    return _move_aside(path)


_NOT_THERE: Final = {errno.ENOENT, errno.ENOTDIR}


def _refuse_non_files(path: Path, info: os.stat_result) -> None:
    """Refuse anything at the path but a regular file, naming it and what to do."""
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return
    if stat.S_ISLNK(mode):
        raise UsageError(
            f"{path} is a symbolic link (to {os.readlink(path)!r}); sessiontape records only "
            "to a regular file it can check, so nothing was touched. Record to the link's "
            "target, or remove the link."
        )
    if stat.S_ISDIR(mode):
        raise UsageError(
            f"{path} is a directory; nothing was touched. Name a cassette file, such as "
            f"{path / 'session.jsonl'}."
        )
    raise UsageError(
        f"{path} is not a regular file (a FIFO, socket or device); nothing was touched. "
        "Name a cassette file (.jsonl) instead."
    )


def _move_aside(path: Path) -> Target:
    """Rename the cassette at ``path`` to a free ``NAME.old.<timestamp>`` beside it."""
    target = beside(path, "old")
    try:
        _rename(path, target)
    except OSError as exc:
        return Target(
            failure=f"the existing cassette could not be moved aside to {target.name} "
            f"({exc.strerror or exc}); it was left as it was"
        )
    _make_private(target)
    return Target(moved_to=target)


def _make_private(path: Path) -> None:
    """Mode 0600 for a cassette moved aside (one written before cassettes were private)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)


def _reuse_empty(path: Path, info: os.stat_result) -> Target:
    """An empty file holds nothing to keep: record into it (checked to be the same file)."""
    try:
        fd = open_private(path, os.O_WRONLY | os.O_APPEND)
    except OSError as exc:
        return Target(failure=f"cannot open the empty file to record into ({exc.strerror})")
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino) or now.st_size != 0:
        os.close(fd)
        return Target(failure="the file at the path changed while the recording started")
    return Target(fd=fd)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _resume(path: Path, info: os.stat_result) -> Target:
    """Prepare to append: check the cassette through the descriptor that will write it."""
    try:
        fd = open_private(path, os.O_RDWR | os.O_APPEND)
    except OSError as exc:
        return Target(failure=f"cannot open the cassette to append to it ({exc.strerror})")
    keep_fd = False
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            return Target(failure="the file at the path changed while the recording started")
        try:
            data = _read_all(fd)
        except OSError as exc:
            return Target(failure=f"cannot read the cassette to append to it ({exc.strerror})")
        if not data:
            keep_fd = True
            return Target(fd=fd)
        try:
            previous = loads(data, path=os.fspath(path))
        except CassetteError as exc:
            raise CassetteError(
                f"cannot append to it: {exc.reason} Nothing was changed; record with "
                "if_exists='force' to move it aside and start a new cassette.",
                path=exc.path,
                line=exc.line,
            ) from None
        torn_to = None
        try:
            if previous.torn:
                keep = data.rfind(b"\n") + 1
                torn_to = set_aside_tail(fd, path, keep, data[keep:])
            elif not data.endswith(b"\n"):
                os.write(fd, b"\n")  # a whole last line without its newline: end it
        except OSError as exc:
            return Target(
                failure=f"cannot set the torn last line aside ({exc.strerror}); the "
                "cassette was left as it was"
            )
        keep_fd = True
        return Target(previous.entries[-1].seq + 1, previous.header.run_id, fd=fd, torn_to=torn_to)
    finally:
        if not keep_fd:
            with contextlib.suppress(OSError):
                os.close(fd)


def default_entrypoint() -> str:
    """The program's command line, as recorded when the application names none."""
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else ""
