"""A loaded cassette: the header, every entry in seq order, and indexes over them."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator, Sequence
from typing import Any, Final

from .._errors import CassetteError
from ._entries import (
    AgentTurn,
    Call,
    CallEntry,
    Entry,
    Error,
    ProcessCall,
    SessionEnd,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
    boundary_of,
)

__all__ = ["Recording"]

_SEQ: Final = operator.attrgetter("seq")
#: The entries ``boundary_of`` names a boundary for: the calls.
_CALL_TYPES: Final = (ProcessCall, AgentTurn, StoreMutation, Call)


class Recording:
    """A loaded cassette: the header, every entry in seq order, and indexes over them.

    ``end`` is ``None`` for a session that crashed (no ``session_end`` line); ``torn`` says a
    torn last line (a crash mid-write) was dropped; ``missing_seqs`` lists seqs reserved but
    never written, the calls that were still open when the process died.
    """

    __slots__ = (
        "_by_seq",
        "_calls",
        "end",
        "entries",
        "error",
        "header",
        "missing_seqs",
        "path",
        "snapshots",
        "torn",
    )

    def __init__(
        self, entries: Sequence[Entry], *, path: str = "<memory>", torn: bool = False
    ) -> None:
        if not entries or not isinstance(entries[0], SessionStart):
            raise CassetteError("the cassette has no session_start entry.", path=path)
        self.path = path
        self.header: SessionStart = entries[0]
        ordered = list(entries)
        # Pairwise checks through map() rather than a generator: this runs over every
        # entry of every replayed tape.
        seqs = [e.seq for e in ordered]
        if any(map(operator.ge, seqs, itertools.islice(seqs, 1, None))):
            ordered.sort(key=_SEQ)  # linear on the nearly sorted input
            seqs = [e.seq for e in ordered]
            if any(map(operator.eq, seqs, itertools.islice(seqs, 1, None))):
                twice = next(a for a, b in itertools.pairwise(seqs) if a == b)
                raise CassetteError(
                    f"seq {twice} appears twice; the file was edited or two "
                    "sessions wrote to it at once. Re-record it, or renumber by hand.",
                    path=path,
                )
        self.entries: list[Entry] = ordered
        self.torn = torn
        self.end: SessionEnd | None = None
        self.error: Error | None = None
        self.snapshots: dict[str, StoreSnapshot] = {}
        calls: list[CallEntry] = []
        append = calls.append
        for entry in ordered:
            if isinstance(entry, _CALL_TYPES):  # boundary_of(entry) is not None, inlined
                append(entry)
            elif isinstance(entry, SessionEnd):
                self.end = entry
            elif isinstance(entry, Error):
                self.error = entry
            elif isinstance(entry, StoreSnapshot):
                self.snapshots.setdefault(entry.store, entry)
        self._calls = calls
        self._by_seq: dict[int, Entry] | None = None
        first, last = seqs[0], seqs[-1]
        if last - first + 1 == len(ordered):
            self.missing_seqs: list[int] = []
        else:
            present = set(seqs)
            self.missing_seqs = [s for s in range(first, last + 1) if s not in present]

    @property
    def crashed(self) -> bool:
        """Whether the session ended without a ``session_end`` line."""
        return self.end is None

    @property
    def calls(self) -> list[CallEntry]:
        """Every boundary call, in seq order."""
        return self._calls

    @property
    def snapshot(self) -> Any:
        """The data of the first store snapshot (``None`` when there is none)."""
        for snap in self.snapshots.values():
            return snap.data
        return None

    @property
    def duration_ns(self) -> int:
        """How long the recorded session ran, in ns: ``SessionEnd.duration_ns``, or for a
        crashed session the end of its last entry (never negative)."""
        if self.end is not None:
            return self.end.duration_ns
        last = self.entries[-1]
        duration = getattr(last, "duration_ns", 0)
        return max(0, int(last.mono_ns + duration - self.header.mono_ns))

    def worker_ids(self) -> list[str]:
        """Workers that made boundary calls, in order of their first call."""
        return list(dict.fromkeys(e.worker for e in self._calls))

    def entries_for(self, boundary: str, worker: str | None = None) -> list[CallEntry]:
        """The calls through ``boundary`` (of ``worker``, when given), in seq order."""
        return [
            e
            for e in self._calls
            if boundary_of(e) == boundary and (worker is None or e.worker == worker)
        ]

    def by_seq(self, seq: int) -> Entry | None:
        """The entry with this seq, or ``None``."""
        if self._by_seq is None:
            self._by_seq = {e.seq: e for e in self.entries}
        return self._by_seq.get(seq)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        state = "crashed" if self.crashed else "complete"
        return (
            f"<Recording {self.path!r} run {self.header.run_id} {len(self.entries)} entries "
            f"{len(self.worker_ids())} workers {state}>"
        )
