"""What the record and replay sides of ``patch_subprocess()`` share.

Both sides replace methods of :class:`subprocess.Popen` itself (never the name), so code
that bound ``Popen`` before the patch (``from subprocess import Popen``, GitPython) and
asyncio's transports, which call ``subprocess.Popen`` inside, are covered alike. A
process the patch handles carries its tracker in :data:`TRACKER`; every replaced method
calls the original for any other process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import termios
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple

from ..._errors import UsageError

__all__ = [
    "ORIGINALS",
    "TAPE_PID_BASE",
    "TRACKER",
    "ChunkLog",
    "Spawn",
    "close_quietly",
    "install_methods",
    "internal_thread",
    "pending_bytes",
    "popen_argv",
]

#: Replayed processes get ``pid = TAPE_PID_BASE + seq``: above Linux's highest possible
#: pid (2**22), so a stray ``os.kill(proc.pid, ...)`` gets ``ProcessLookupError``.
TAPE_PID_BASE: Final = 2**22
#: The attribute of a ``Popen`` that holds the patch's tracker of it.
TRACKER: Final = "_sessiontape_process"

_POPEN: Final = subprocess.Popen
#: The methods of ``subprocess.Popen`` the two sides replace, as they were at import.
ORIGINALS: Final[dict[str, Any]] = {
    name: _POPEN.__dict__[name]
    for name in (
        "__init__",
        "_get_handles",
        "communicate",
        "_execute_child",
        "_internal_poll",
        "_wait",
        "_communicate",
        "_remaining_time",
        "_check_timeout",
        "_handle_exitstatus",
        "send_signal",
    )
}

_lock = threading.Lock()
_active = False


@contextlib.contextmanager
def install_methods(replacements: Mapping[str, Any]) -> Iterator[None]:
    """Replace methods of ``subprocess.Popen`` for the block (one block at a time).

    A name ``Popen`` does not have (a descriptor the block adds) is removed afterwards.
    """
    global _active
    with _lock:
        if _active:
            raise UsageError(
                "subprocess.Popen is already intercepted by another patch_subprocess() block; "
                "nest no patch_subprocess() blocks (one per tape is enough: it covers every "
                "thread)."
            )
        _active = True
        for name, method in replacements.items():
            setattr(_POPEN, name, method)
    try:
        yield
    finally:
        with _lock:
            for name in replacements:
                if name in ORIGINALS:
                    setattr(_POPEN, name, ORIGINALS[name])
                else:
                    delattr(_POPEN, name)
            _active = False


def popen_argv(args: Any, executable: Any, shell: bool) -> list[str]:
    """The argv a ``Popen`` runs, as ``Popen._execute_child`` builds it (POSIX)."""
    argv: list[Any]
    if type(args) is list and not shell and not executable:
        # The common case, checked first: isinstance() against os.PathLike (an ABC) alone
        # costs more than the rest of this function.
        for arg in args:
            if type(arg) is not str:
                break
        else:
            return args[:]
    if isinstance(args, (str, bytes)):
        argv = [args]
    elif isinstance(args, os.PathLike):
        if shell:
            raise TypeError("path-like args is not allowed when shell is true")
        argv = [args]
    else:
        argv = list(args)
    if shell:
        argv = ["/bin/sh", "-c", *argv]
    if executable:
        argv[0] = executable
    return [a if type(a) is str else os.fsdecode(a) for a in argv]


class Spawn(NamedTuple):
    """What ``Popen._execute_child`` is called with that the patch needs (POSIX; the
    same positions from Python 3.10 to 3.13)."""

    argv: list[str]
    cwd: Any
    env: Any
    #: ``(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)``: Popen's pipe ends.
    fds: tuple[int, int, int, int, int, int]

    @classmethod
    def of(cls, args: Any, executable: Any, rest: tuple[Any, ...]) -> Spawn:
        """From ``_execute_child(self, args, executable, *rest)``."""
        fds: tuple[int, int, int, int, int, int] = rest[8:14]
        return cls(popen_argv(args, executable, rest[7]), rest[3], rest[4], fds)


def pending_bytes(fd: int) -> int:
    """How many bytes wait unread in the pipe ``fd`` (0 for a closed one)."""
    try:
        raw = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return 0
    return int.from_bytes(raw, sys.byteorder)


def close_quietly(*fds: int | None) -> None:
    """Close each fd that is not ``None``, ignoring one already closed."""
    for fd in fds:
        if fd is not None and fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def internal_thread(target: Callable[[], None], name: str) -> threading.Thread:
    """One of the patch's own threads, not started (not the application's: it takes no
    worker name). Daemon, because it serves a process the program may leave running past
    the interpreter's end; every one ends when its pipes close and is joined where it can
    be. Its owner keeps it before starting it, and keeps nothing of it once it has ended
    (a weak reference, or one the thread drops itself, however fast it ends): a program may
    count the thread objects it can still see, as CPython 3.10's test support does
    (``threading._dangling``)."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread._sessiontape_internal = True  # type: ignore[attr-defined]
    return thread


class ChunkLog:
    """The bytes that crossed a process's pipes, in order; one stream's run is one chunk.

    ``conversation`` is set once stdin is written after output was read: only then does
    the order matter enough to keep the chunks themselves.
    """

    __slots__ = ("_lock", "chunks", "conversation", "logging", "seen_output")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.chunks: list[tuple[str, bytearray]] = []
        self.conversation = False
        self.seen_output = False
        self.logging = True

    def add(self, stream: str, data: bytes) -> None:
        """Note ``data`` crossing ``stream`` (before it is passed on: causal order)."""
        with self._lock:
            if not self.logging:
                return
            if stream == "stdin":
                if self.seen_output:
                    self.conversation = True
            else:
                self.seen_output = True
            if self.chunks and self.chunks[-1][0] == stream:
                self.chunks[-1][1].extend(data)
            else:
                self.chunks.append((stream, bytearray(data)))

    def retract(self, stream: str, size: int) -> None:
        """Take back the last ``size`` bytes noted on ``stream``: they were never passed on
        (the reader went away), so the tape must not say they crossed."""
        with self._lock:
            if not self.logging or size <= 0:
                return
            for index in range(len(self.chunks) - 1, -1, -1):
                name, data = self.chunks[index]
                if name != stream:
                    continue
                cut = min(size, len(data))
                del data[len(data) - cut :]
                size -= cut
                if not data:
                    del self.chunks[index]
                    chunks = self.chunks
                    if 0 < index < len(chunks) and chunks[index - 1][0] == chunks[index][0]:
                        chunks[index - 1][1].extend(chunks.pop(index)[1])
                if size <= 0:
                    break

    def stop(self) -> list[tuple[str, bytes]]:
        """Stop logging and return the chunks."""
        with self._lock:
            self.logging = False
            return [(stream, bytes(data)) for stream, data in self.chunks]

    @staticmethod
    def joined(chunks: Sequence[tuple[str, bytes]], stream: str) -> bytes:
        """Every byte of ``stream`` in ``chunks``."""
        return b"".join(data for name, data in chunks if name == stream)
