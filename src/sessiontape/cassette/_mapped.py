"""A long cassette mapped into memory for replay, its pages let go once read.

Read into memory, a tape's bytes stay there for the whole replay: the outputs and results
a replay serves late are kept as their JSON (see ``_lazy.py``), and that JSON is most of
the file. Mapped, the bytes are the file's own pages in the operating system's cache:
each window of the file is decoded, then its pages are let go (``MADV_DONTNEED``), and an
output read when its call is served is paged in again from the cache, and let go again
after every :data:`SERVED_WINDOW` bytes served. So a replay holds the decoded entries and
a few windows of the file, not the file (DESIGN.md: peak RSS at most 1.5x the file).

The one hazard of a mapping: the file cut short *in place* while it is replayed (a
truncating write, not a rename) makes reading the lost pages fail with ``SIGBUS``, which
ends the process. sessiontape itself never rewrites a cassette in place (it writes a new
file and renames, or appends), and a mapping is used only for tapes of at least
:data:`MAP_AT` bytes, the long production sessions a regression corpus keeps as they
are. Where ``madvise`` is missing (Windows), the pages simply stay.
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Iterator
from typing import Final

__all__ = ["MAP_AT", "SERVED_WINDOW", "WINDOW", "MappedFile"]

#: Tapes at least this long are mapped; shorter ones are read (one system call).
MAP_AT: Final = 32 << 20
#: How much of the file is decoded at once.
WINDOW: Final = 16 << 20
#: How much stored JSON is served between two lettings-go (a served output's page holds
#: other lines too, so more than that is paged in meanwhile; each let-go is cheap).
SERVED_WINDOW: Final = 32 << 20

_DONTNEED: Final = getattr(mmap, "MADV_DONTNEED", None)
_PAGE: Final = mmap.PAGESIZE


class MappedFile:
    """The bytes of a cassette as a read-only mapping, decoded window by window."""

    __slots__ = ("_served", "mapping", "size")

    def __init__(self, fd: int, size: int) -> None:
        self.mapping = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        self.size = size
        self._served = 0

    def first_line(self) -> tuple[bytes, bool]:
        """The first line and whether a newline ends it."""
        newline = self.mapping.find(b"\n")
        if newline < 0:
            return self.mapping[:], False
        return self.mapping[:newline], True

    def windows(self) -> Iterator[memoryview]:
        """The file in whole lines, about :data:`WINDOW` bytes at a time; the pages of each
        window are let go once the next one is asked for (the entries decoded from it keep
        their view, and page it in again when read)."""
        view = memoryview(self.mapping)
        start, size = 0, self.size
        while start < size:
            newline = self.mapping.find(b"\n", min(start + WINDOW, size) - 1)
            end = size if newline < 0 else newline + 1
            yield view[start:end]
            self._let_go(start, end)
            start = end

    def served(self, nbytes: int) -> None:
        """Count ``nbytes`` of stored JSON read while serving; let the pages go every
        :data:`SERVED_WINDOW` bytes, so what a replay reads does not pile up in memory
        (each letting-go walks the whole mapping: not too often)."""
        self._served += nbytes
        if self._served >= SERVED_WINDOW:
            self._served = 0
            self._let_go(0, self.size)

    def _let_go(self, start: int, end: int) -> None:
        if _DONTNEED is None:
            return
        first = start - start % _PAGE
        with contextlib.suppress(OSError, ValueError):  # advice only: else the pages stay
            self.mapping.madvise(_DONTNEED, first, end - first)
