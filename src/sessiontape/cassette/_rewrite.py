"""Replacing a cassette with a new version of itself, whole or not at all.

Update mode (``--sessiontape-update``) and live re-record write a tape anew. The new
version is written to a private file beside the old one, flushed and ``fsync``-ed, then
renamed over it; the directory is synced so the rename itself survives a power cut. A
``kill -9`` at any moment leaves the old tape or the new one, never a mix (a stray
``.NAME.rewrite.PID`` file at worst). Only a regular file that is a cassette is ever
replaced: a symlink, anything else, or a tape in a directory sessiontape cannot write is
refused before anything is touched.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from .._errors import CassetteError
from ._loader import is_cassette
from ._writer import open_private, write_all

__all__ = ["check_rewritable", "replace_cassette", "write_new_cassette"]

#: Bytes gathered before one write: few system calls, bounded memory.
_CHUNK = 1 << 20


def check_rewritable(path: str | os.PathLike[str]) -> Path:
    """``path`` if it is a cassette sessiontape may replace; a :class:`CassetteError`
    naming it and saying why not otherwise. Nothing is touched either way."""
    target = Path(path)
    try:
        info = os.lstat(target)
    except OSError as exc:
        raise CassetteError(
            f"cannot update the tape: {exc.strerror or exc}. Check the path.", path=str(target)
        ) from None
    if stat.S_ISLNK(info.st_mode):
        raise CassetteError(
            "is a symlink; sessiontape updates only the cassette file itself, never "
            "through a link. Update the file it points to.",
            path=str(target),
        )
    if not stat.S_ISREG(info.st_mode) or not is_cassette(target):
        raise CassetteError(
            "is not a sessiontape cassette (its first line is not a session_start entry); "
            "update mode replaces only cassettes. Nothing was changed.",
            path=str(target),
        )
    directory = target.parent
    # The mode bits too: a directory made read-only on purpose is respected even by a
    # user (root) whom the permission check would let through.
    if not os.access(directory, os.W_OK | os.X_OK) or not (
        os.stat(directory).st_mode & stat.S_IWUSR
    ):
        raise CassetteError(
            f"the directory {str(directory)!r} is read-only, so the tape cannot be replaced "
            "by rename. Make it writable, or copy the tape somewhere writable and update "
            "the copy. Nothing was changed.",
            path=str(target),
        )
    return target


def _write_lines(path: Path, lines: Iterable[bytes]) -> None:
    """Create ``path`` (which must not exist) with ``lines``, each ending in a newline,
    flushed to disk; removed again on any failure."""
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        buffer: list[bytes] = []
        size = 0
        for line in lines:
            buffer.append(line if line.endswith(b"\n") else line + b"\n")
            size += len(line) + 1
            if size >= _CHUNK:
                write_all(fd, b"".join(buffer))
                buffer.clear()
                size = 0
        if buffer:
            write_all(fd, b"".join(buffer))
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def _sync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def replace_cassette(path: str | os.PathLike[str], lines: Iterable[bytes]) -> Path:
    """Replace the cassette at ``path`` with ``lines`` (new file beside, flushed,
    renamed over); returns the path. Refuses what :func:`check_rewritable` refuses."""
    target = check_rewritable(path)
    temp = target.with_name(f".{target.name}.rewrite.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)  # a leftover of a killed update of this very process id
    _write_lines(temp, lines)
    try:
        # Checked again just before the rename: the tape may have been swapped meanwhile.
        check_rewritable(target)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _sync_directory(target.parent)
    return target


def write_new_cassette(path: str | os.PathLike[str], lines: Iterable[bytes]) -> Path:
    """Write ``lines`` as a new cassette at ``path``, whole or not at all: a file already
    there is replaced only if it is a cassette (see :func:`replace_cassette`)."""
    target = Path(path)
    if os.path.lexists(target):
        return replace_cassette(target, lines)
    temp = target.with_name(f".{target.name}.rewrite.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)
    _write_lines(temp, lines)
    try:
        os.rename(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _sync_directory(target.parent)
    return target
