"""The append-only cassette writer: one encoded, flushed line per entry, and private files.

Seqs are reserved when a boundary call *starts* (so they give the order replay serves
calls in) and a line is written when the call *ends*; an outer call's line therefore
follows the lines of the calls made inside it. The loader orders entries by seq again.

Every file sessiontape writes beside a cassette (the cassette itself, a torn tail set
aside, a payload sidecar) is created here, with mode 0600 whatever the umask:
:func:`open_private` and :func:`write_private_file`.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from .._errors import RecordingWarning
from .._time import REAL
from ._entries import KIND_OF_TYPE, Entry

__all__ = [
    "CassetteWriter",
    "beside",
    "encode_entry",
    "open_private",
    "set_aside_tail",
    "write_all",
    "write_private_file",
]


def _enc_hook(obj: Any) -> Any:
    # Values the recorder converts are JSON-ready; anything left is user data msgspec
    # cannot encode. Keep its repr so the line is still written.
    return {"$repr": repr(obj)}


_ENCODER: Final = msgspec.json.Encoder(enc_hook=_enc_hook)

#: Never follow a symlink in the last component, never leak the descriptor to a child.
_SAFE_FLAGS: Final = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
#: How often (in ns of monotonic time) a write also checks that the cassette is still the
#: file at its path: two ``stat`` calls a second at most, nothing per line.
CHECK_EVERY_NS: Final = 1_000_000_000
#: How many times a writing thread looks again for lines added while it wrote.
_DRAIN_ROUNDS: Final = 64

# Module globals rather than attributes: tests inject faults by replacing them.
_open: Final = os.open
_write: Final = os.write
_mono_ns: Final = REAL.monotonic_ns


def encode_entry(entry: Entry) -> bytes:
    """One cassette line for ``entry``, newline included."""
    return _ENCODER.encode(entry) + b"\n"


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open(path, flags)`` for a file only its owner may read: mode 0600, whatever
    the umask, and never through a symlink.

    The mode given to ``open()`` is filtered by the umask and ignored for a file that
    exists, so the descriptor is ``fchmod``-ed too (on the descriptor, not the path, so a
    file swapped in meanwhile is not the one changed).
    """
    fd = _open(path, flags | _SAFE_FLAGS, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        written = _write(fd, view)
        view = view[written:]


def write_private_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Create ``path`` (it must not exist) holding ``data``, mode 0600, flushed to disk.

    Raises ``FileExistsError`` if something is already at ``path`` (nothing is ever
    overwritten) and ``OSError`` for any other failure, after removing the partial file.
    Sidecars, torn tails and every other file written beside a cassette go through here.
    """
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def beside(path: Path, what: str) -> Path:
    """A free name beside ``path``: ``NAME.<what>.<timestamp>`` (``.1``, ``.2``... if taken)."""
    stamp = REAL.now(None).strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.{what}.{stamp}")
    n = 1
    while os.path.lexists(target):
        target = path.with_name(f"{path.name}.{what}.{stamp}.{n}")
        n += 1
    return target


def set_aside_tail(fd: int, path: Path, keep: int, tail: bytes) -> Path:
    """Copy ``tail`` (the bytes of the file at ``fd`` past offset ``keep``) into a new
    0600 file ``NAME.torn.<timestamp>`` beside ``path``, then cut the file to ``keep``.

    The copy is on disk before the cut: a failure leaves the file as it was (and raises
    ``OSError``). Returns where the tail went.
    """
    target = beside(path, "torn")
    write_private_file(target, tail)
    os.ftruncate(fd, keep)
    return target


def _undo_partial(fd: int, written: int) -> None:
    """Cut the ``written`` bytes of a line that failed half-way (a full disk writes part of
    it first), so the cassette ends with its last whole line. Only those bytes, written by
    this writer a moment ago, are cut; if that fails too the loader still sets a torn last
    line aside."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - written))


class CassetteWriter:
    """Appends entries to a cassette: whole lines, handed to the OS as they come.

    A failure to write (unwritable directory, full disk, I/O error, a payload that cannot
    be encoded, the cassette deleted, moved or replaced during the run) emits a single
    :class:`RecordingWarning` and turns the writer off: the application goes on, and the
    lines written before stay as they were. A new cassette is created exclusively (an
    existing file at the path is never truncated); ``fd`` adopts a descriptor the caller
    opened and checked (an existing cassette to append to); ``disabled`` makes a writer
    that is off from the start, warning why.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        append: bool = False,
        fd: int | None = None,
        disabled: str | None = None,
    ) -> None:
        self.path = Path(path)
        # Checked by its absolute form: the application may change directory meanwhile.
        self._where = os.path.abspath(path)
        self._lock = threading.Lock()
        #: Encoded lines waiting for the thread that writes (see :meth:`_drain`), with
        #: their seq and kind.
        self._pending: collections.deque[tuple[int, str, bytes]] = collections.deque()
        # How many entries of each kind were written (counted under the lock: exact).
        self._counts: dict[str, int] = {}
        self._fd: int | None = None
        #: Whether lines are still being written (false once the writer has stopped or
        #: closed). An attribute, not a property: it is read on every recorded call.
        self.active = False
        self._identity: tuple[int, int] | None = None
        self._next_check = 0
        #: Why the writer stopped, once it has.
        self.failed: str | None = None
        #: Lines written so far.
        self.lines = 0
        if disabled is not None:
            if fd is not None:
                os.close(fd)
            self._fail(disabled, started=False)
            return
        try:
            if fd is None:
                fd = self._create(append)
            self._fd = fd
            self.active = True
            info = os.fstat(fd)
            self._identity = (info.st_dev, info.st_ino)
            self._next_check = _mono_ns() + CHECK_EVERY_NS
        except OSError as exc:
            self._fail(
                f"cannot open the cassette for writing ({exc.strerror or exc})", started=False
            )

    def _create(self, append: bool) -> int:
        """Open the cassette: a new file, created exclusively, or an existing one to append."""
        if append:
            return open_private(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file where a directory of the path should be
            raise NotADirectoryError(
                errno.ENOTDIR, f"{self.path.parent} is not a directory"
            ) from None
        try:
            return open_private(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            # Never truncate: whatever appeared at the path since it was checked stays.
            raise FileExistsError(
                errno.EEXIST, "another file appeared at the path meanwhile; it was left untouched"
            ) from None

    def _fail(self, why: str, *, started: bool = True, kept: str | None = None) -> None:
        self.failed = why
        self.active = False
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        if not started:
            message = (
                f"sessiontape: not recording to {str(self.path)!r}: {why}. The application "
                "goes on unrecorded."
            )
        else:
            kept = kept or f"the cassette keeps the {self.lines} line(s) written before"
            message = (
                f"sessiontape: recording to {str(self.path)!r} stopped: {why}. The "
                f"application goes on unrecorded; {kept}."
            )
        warnings.warn(message, RecordingWarning, stacklevel=4)

    def _lost(self, fd: int) -> tuple[str, str] | None:
        """Why the file at ``fd`` is no longer the cassette at the path, and what is left."""
        assert self._identity is not None
        if os.fstat(fd).st_nlink == 0:
            return (
                "the cassette was deleted during the run (the file, or its directory)",
                f"the {self.lines} line(s) written before went with it",
            )
        try:
            info = os.lstat(self._where)
        except FileNotFoundError:
            return (
                "the cassette was moved away during the run (it, or its directory)",
                f"the moved file keeps the {self.lines} line(s) written before",
            )
        if (info.st_dev, info.st_ino) != self._identity:
            return (
                "another file replaced the cassette at its path during the run; it is left "
                "untouched",
                f"the replaced file keeps the {self.lines} line(s) written before",
            )
        return None

    def _check_locked(self, fd: int) -> bool:
        """Check the cassette is still the file at its path; stop (warning) if not."""
        try:
            lost = self._lost(fd)
        except OSError as exc:
            lost = (f"the cassette can no longer be checked ({exc.strerror or exc})", "")
        if lost is None:
            return True
        self._fail(lost[0], kept=lost[1] or None)
        return False

    def verify(self) -> bool:
        """Whether the writer is on and its file is still the cassette at the path.

        Called at the end of a recording: a cassette deleted, moved or replaced during the
        run is noticed here at the latest (and by writes, once a second), with one warning.
        """
        with self._lock:
            self._write_pending()
            fd = self._fd
            return fd is not None and self._check_locked(fd)

    def counts(self) -> dict[str, int]:
        """How many entries of each kind are written, once those waiting are."""
        with self._lock:
            self._write_pending()
            return dict(self._counts)

    def write(self, entry: Entry) -> None:
        """Encode and append one entry (thread-safe, handed to the OS before any writer
        returns). When no line waits and no thread is writing, the line is written at
        once; otherwise it waits for the thread writing (see :meth:`_drain`)."""
        if self._fd is None:
            return
        try:
            data = _ENCODER.encode(entry) + b"\n"
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
            with self._lock:
                if self._fd is not None:
                    self._fail(f"seq {entry.seq} could not be encoded as JSON ({exc})")
            return
        line = (entry.seq, KIND_OF_TYPE[type(entry)], data)
        lock = self._lock
        if not self._pending and lock.acquire(blocking=False):
            # Nothing waits and no thread writes (the usual case): this line, at once.
            try:
                self._write_lines((line,), data)
            finally:
                lock.release()
            if self._pending:  # lines other threads added meanwhile
                self._drain()
            return
        self._pending.append(line)
        self._drain()

    def _drain(self) -> None:
        """Write what is pending, if no other thread is writing now.

        The thread that takes the lock writes every line pending, its own and those other
        threads added meanwhile, in one ``os.write``; a thread that finds the lock taken
        returns at once, its line written by the holder. So threads never queue behind
        the lock (``os.write`` releases the GIL while it holds it), and many threads make
        few system calls. The holder looks again after releasing the lock, so a line added
        while it wrote is never left behind; it stops after a few rounds so that it goes
        back to its own work (the next writer, or :meth:`close`, takes over).
        """
        pending = self._pending
        lock = self._lock
        rounds = 0
        while pending and rounds < _DRAIN_ROUNDS and lock.acquire(blocking=False):
            try:
                self._write_pending()
            finally:
                lock.release()
            rounds += 1

    def _write_pending(self) -> None:
        """Write the pending lines (the lock is held)."""
        pending = self._pending
        # Only appends happen outside the lock: the lines counted here are all there.
        count = len(pending)
        if count == 0:
            return
        if count == 1:
            batch = [pending.popleft()]
            data = batch[0][2]
        else:
            take = pending.popleft
            batch = [take() for _ in range(count)]
            data = b"".join([line for _, _, line in batch])
        self._write_lines(batch, data)

    def _write_lines(self, batch: Sequence[tuple[int, str, bytes]], data: bytes) -> None:
        """Write ``data``, the lines of ``batch`` joined, in one call (the lock is held)."""
        fd = self._fd
        if fd is None:  # the writer stopped meanwhile: nothing more is written
            return
        now = _mono_ns()
        if now >= self._next_check:
            self._next_check = now + CHECK_EVERY_NS
            if not self._check_locked(fd):
                return
        written = 0
        try:
            written = _write(fd, data)
            if written < len(data):  # the kernel took part of it: write the rest
                view = memoryview(data)
                while written < len(data):
                    written += _write(fd, view[written:])
        except OSError as exc:
            # The whole lines the kernel took stay; only a torn one is cut.
            whole = data.rfind(b"\n", 0, written) + 1
            if written > whole:
                _undo_partial(fd, written - whole)
            kept = data.count(b"\n", 0, whole)
            self._count(batch[:kept])
            self._fail(f"writing seq {batch[kept][0]} failed ({exc.strerror or exc})")
            return
        self._count(batch)

    def _count(self, written: Sequence[tuple[int, str, bytes]]) -> None:
        self.lines += len(written)
        counts = self._counts
        for _, kind, _ in written:
            counts[kind] = counts.get(kind, 0) + 1

    def close(self) -> None:
        """Write what is still pending, then close the file (idempotent)."""
        with self._lock:
            self._write_pending()
            self.active = False
            fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
