"""The append-only cassette writer: one encoded, flushed line per entry.

Seqs are reserved when a boundary call *starts* (so they give the order replay serves
calls in) and a line is written when the call *ends*; an outer call's line therefore
follows the lines of the calls made inside it. The loader orders entries by seq again.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Final

import msgspec

from .._errors import RecordingWarning
from ._entries import Entry

__all__ = ["CassetteWriter", "encode_entry"]


def _enc_hook(obj: Any) -> Any:
    # Values the recorder converts are JSON-ready; anything left is user data msgspec
    # cannot encode. Keep its repr so the line is still written.
    return {"$repr": repr(obj)}


_ENCODER: Final = msgspec.json.Encoder(enc_hook=_enc_hook)


def encode_entry(entry: Entry) -> bytes:
    """One cassette line for ``entry``, newline included."""
    return _ENCODER.encode(entry) + b"\n"


class CassetteWriter:
    """Appends entries to a cassette, one flushed line each, under a lock.

    A failure to write (unwritable directory, full disk, a payload that cannot be encoded)
    emits a single :class:`RecordingWarning` and turns the writer off: the application
    goes on, and the cassette keeps every line written before.
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._fd: int | None = None
        self.failed: str | None = None
        self.lines = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
            if not append:
                flags |= os.O_TRUNC
            self._fd = os.open(self.path, flags, 0o600)
            # The mode given to open() is filtered by the umask and ignored for an
            # existing file; cassettes hold production data, so force 0600.
            os.chmod(self.path, 0o600)
        except OSError as exc:
            self._fail(f"cannot open the cassette for writing ({exc})")

    @property
    def active(self) -> bool:
        """Whether lines are still being written."""
        return self._fd is not None

    def _fail(self, why: str) -> None:
        self.failed = why
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        warnings.warn(
            f"sessiontape: recording to {str(self.path)!r} stopped: {why}. The application "
            f"goes on unrecorded; the cassette keeps the {self.lines} line(s) written before.",
            RecordingWarning,
            stacklevel=4,
        )

    def write(self, entry: Entry) -> None:
        """Encode and append one entry (thread-safe, flushed to the OS at once)."""
        if not self.active:
            return
        try:
            data = encode_entry(entry)
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
            with self._lock:
                self._fail(f"seq {entry.seq} could not be encoded as JSON ({exc})")
            return
        with self._lock:
            fd = self._fd
            if fd is None:  # another thread's write failed meanwhile
                return
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                self.lines += 1
            except OSError as exc:
                self._fail(f"writing seq {entry.seq} failed ({exc})")

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
