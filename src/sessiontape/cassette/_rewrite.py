"""Replacing a cassette with a new version of itself, whole or not at all.

Update mode (``--sessiontape-update``) and live re-record write a tape anew. The new
version is written to a private file beside the old one, flushed and ``fsync``-ed, then
renamed over it; the directory is synced so the rename itself survives a power cut. A
``kill -9`` at any moment leaves the old tape or the new one, never a mix (a stray
``.NAME.rewrite.PID`` file at worst). Only a regular file that is a cassette is ever
replaced: a symlink, anything else, or a tape in a directory sessiontape cannot write is
refused before anything is touched.

Every tape sessiontape writes whole (update, live re-record, shrink, chaos save, slice,
scrub) comes through here, and is checked here against the structural rules
``sessiontape validate`` checks (``_validity.py``) before it is renamed into place: a
writer that built an invalid tape gets a :class:`CassetteError` saying so, and the old
tape (or no tape) stays where it was.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from .._errors import CassetteError
from ._loader import is_cassette, loads
from ._validity import errors_of, structure_findings
from ._writer import open_private, write_all

__all__ = ["check_rewritable", "check_written", "replace_cassette", "write_new_cassette"]

#: Bytes per write: few system calls.
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


def _tape_bytes(lines: Iterable[bytes]) -> bytes:
    """``lines`` as one file's bytes, each line ending in a newline."""
    return b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)


def write_whole_file(path: Path, data: bytes) -> None:
    """Create ``path`` (which must not exist) holding ``data``, flushed to disk; removed
    again on any failure."""
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        for start in range(0, len(data), _CHUNK):
            write_all(fd, data[start : start + _CHUNK])
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def check_written(data: bytes, target: str | os.PathLike[str]) -> None:
    """Refuse a tape a writer built for ``target`` that ``sessiontape validate`` would
    reject: a :class:`CassetteError` naming what is wrong (nothing is written).

    A tape no loader can read is refused the same way; its sidecar is looked for beside
    ``target``, where it will be.
    """
    name = os.fspath(target)
    try:
        recording = loads(data, path=name)
    except CassetteError as exc:
        problems = exc.reason if exc.line is None else f"line {exc.line}: {exc.reason}"
    else:
        errors = errors_of(structure_findings(recording, sidecar_of=name))
        if not errors:
            return
        problems = "; ".join(
            f"seq {f.seq}: {f.message}" if f.seq is not None else f.message for f in errors[:5]
        )
        if len(errors) > 5:
            problems += f"; and {len(errors) - 5} more"
    raise CassetteError(
        f"sessiontape built a tape that 'sessiontape validate' rejects ({problems}), so it "
        "was not written and the file there is unchanged. This is a bug in sessiontape: "
        "please report it with the command that wrote the tape.",
        path=name,
    )


def sync_directory(directory: Path) -> None:
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
    data = _tape_bytes(lines)
    check_written(data, target)
    temp = target.with_name(f".{target.name}.rewrite.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)  # a leftover of a killed update of this very process id
    write_whole_file(temp, data)
    try:
        # Checked again just before the rename: the tape may have been swapped meanwhile.
        check_rewritable(target)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    sync_directory(target.parent)
    return target


def write_new_cassette(path: str | os.PathLike[str], lines: Iterable[bytes]) -> Path:
    """Write ``lines`` as a new cassette at ``path``, whole or not at all: a file already
    there is replaced only if it is a cassette (see :func:`replace_cassette`)."""
    target = Path(path)
    if os.path.lexists(target):
        return replace_cassette(target, lines)
    data = _tape_bytes(lines)
    check_written(data, target)
    temp = target.with_name(f".{target.name}.rewrite.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)
    write_whole_file(temp, data)
    try:
        os.rename(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    sync_directory(target.parent)
    return target
