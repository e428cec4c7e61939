"""A loaded cassette: the header, every entry in seq order, and indexes over them."""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, overload

from .._errors import CassetteError
from ._entries import (
    MAX_SEQ,
    AgentTurn,
    Call,
    CallEntry,
    Entry,
    Error,
    Patched,
    ProcessCall,
    SessionEnd,
    SessionResume,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
    boundary_of,
)
from ._mapped import MappedFile

__all__ = ["Recording", "SeqError", "SeqGaps"]

_SEQ: Final = operator.attrgetter("seq")
#: The entries ``boundary_of`` names a boundary for: the calls.
_CALL_TYPES: Final = (ProcessCall, AgentTurn, StoreMutation, Call)
#: Whether an entry type is one of the calls (its forms for replay and view included),
#: found once per type: a dict lookup is cheaper than isinstance() against four classes.
_IS_CALL_KIND: Final[dict[type, bool]] = {}


class SeqError(CassetteError):
    """An entry whose seq cannot be right (twice, before the header, a second header).

    Raised by :class:`Recording`, which does not know the lines its entries came from;
    the loader catches it and names the line(s) holding ``seq``.
    """

    def __init__(self, message: str, *, path: str, seq: int, twice: bool = False) -> None:
        super().__init__(message, path=path)
        self.seq = seq
        self.twice = twice


class SeqGaps(Sequence[int]):
    """The seqs missing between the first and the last seq of a tape, held as ranges.

    A tape cut by ``sessiontape slice`` keeps its seqs, so the seqs missing from it can be
    far more than the lines it holds: they are kept as ranges (memory in the number of
    gaps, never in their size) and read like a sorted list of ints.
    """

    __slots__ = ("_ranges", "_totals")

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        #: ``(first, last)`` of each run of missing seqs, inclusive, in order.
        self._ranges: list[tuple[int, int]] = list(ranges)
        self._totals: list[int] = list(
            itertools.accumulate(last - first + 1 for first, last in self._ranges)
        )

    def ranges(self) -> list[tuple[int, int]]:
        """``(first, last)`` of each run of missing seqs, inclusive, in order."""
        return list(self._ranges)

    def __len__(self) -> int:
        return self._totals[-1] if self._totals else 0

    def __bool__(self) -> bool:
        return bool(self._ranges)

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> list[int]: ...

    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            return [self[i] for i in range(start, stop, step)]
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("SeqGaps index out of range")
        run = bisect.bisect_right(self._totals, index)
        before = self._totals[run - 1] if run else 0
        return self._ranges[run][0] + index - before

    def __contains__(self, seq: object) -> bool:
        if not isinstance(seq, int):
            return False
        run = bisect.bisect_right(self._ranges, (seq, MAX_SEQ + 1)) - 1
        return run >= 0 and self._ranges[run][0] <= seq <= self._ranges[run][1]

    def __iter__(self) -> Iterator[int]:
        for first, last in self._ranges:
            yield from range(first, last + 1)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SeqGaps):
            return self._ranges == other._ranges
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            # Compared item by item only when the sizes agree: bounded by ``other``.
            return len(other) == len(self) and all(map(operator.eq, self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        runs = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in self._ranges)
        return f"SeqGaps([{runs}])"


def _gaps(seqs: list[int]) -> SeqGaps:
    """The runs of seqs missing from sorted, distinct ``seqs``."""
    return SeqGaps((a + 1, b - 1) for a, b in itertools.pairwise(seqs) if b - a > 1)


class Recording:
    """A loaded cassette: the header, every entry in seq order, and indexes over them.

    ``end`` is ``None`` for a session that crashed (no ``session_end`` line after the last
    ``session_resume``, if the tape was appended to); ``torn`` says a torn last line (a
    crash mid-write) was set aside; ``missing_seqs`` lists seqs reserved but never written,
    the calls that were still open when a process died (or the entries cut out by slice).
    ``error`` is the exception that ended the session (``None`` when none did), and
    ``worker_errors`` the ones that ended a worker (a thread, a future or a task nobody
    read) while the session went on, in seq order.
    """

    __slots__ = (
        "_by_seq",
        "_calls",
        "_workers",
        "end",
        "entries",
        "error",
        "header",
        "mapped",
        "missing_seqs",
        "patches",
        "path",
        "resumes",
        "snapshots",
        "torn",
        "worker_errors",
    )

    def __init__(
        self, entries: Sequence[Entry], *, path: str = "<memory>", torn: bool = False
    ) -> None:
        if not entries or not isinstance(entries[0], SessionStart):
            raise CassetteError("the cassette has no session_start entry.", path=path)
        self.path = path
        #: The file mapped into memory, for a long tape loaded to replay (its pages are let
        #: go as outputs are served); ``None`` otherwise.
        self.mapped: MappedFile | None = None
        self.header: SessionStart = entries[0]
        ordered = list(entries)
        # Pairwise checks through map() rather than a generator: this runs over every
        # entry of every replayed tape.
        seqs = [e.seq for e in ordered]
        if any(map(operator.ge, seqs, itertools.islice(seqs, 1, None))):
            ordered.sort(key=_SEQ)  # linear on the nearly sorted input
            seqs.sort()  # the entries' seqs in their new order, without reading them again
            if any(map(operator.eq, seqs, itertools.islice(seqs, 1, None))):
                twice = next(a for a, b in itertools.pairwise(seqs) if a == b)
                raise SeqError(
                    f"seq {twice} appears twice; the file was edited or two sessions wrote "
                    "to it at once. Delete the copy that does not belong, or re-record.",
                    path=path,
                    seq=twice,
                    twice=True,
                )
            if ordered[0] is not self.header:
                first = ordered[0].seq
                raise SeqError(
                    f"seq {first} is lower than the session_start's seq "
                    f"{self.header.seq}; every entry follows the header. The file was edited "
                    "or two cassettes were joined: re-record it.",
                    path=path,
                    seq=first,
                )
        self.entries: list[Entry] = ordered
        self.torn = torn
        self.end: SessionEnd | None = None
        self.error: Error | None = None
        self.worker_errors: list[Error] = []
        self.resumes: list[SessionResume] = []
        self.snapshots: dict[str, StoreSnapshot] = {}
        #: The change markers (``sessiontape.patched``) the recorded code knew, in order.
        self.patches: dict[str, Patched] = {}
        calls: list[CallEntry] = []
        append = calls.append
        # Noted while each entry is at hand: touching every entry again later costs a
        # cache miss each on a long tape.
        workers: dict[str, int] = {}
        is_call_kind = _IS_CALL_KIND.get
        for entry in itertools.islice(ordered, 1, None):
            kind = type(entry)
            is_call = is_call_kind(kind)
            if is_call is None:
                is_call = _IS_CALL_KIND[kind] = issubclass(kind, _CALL_TYPES)
            if is_call:  # boundary_of(entry) is not None, inlined
                append(entry)  # type: ignore[arg-type]
                if entry.worker not in workers:
                    workers[entry.worker] = entry.seq
            elif isinstance(entry, SessionEnd):
                self.end = entry
            elif isinstance(entry, Error):
                if entry.origin == "session":
                    self.error = entry
                else:
                    self.worker_errors.append(entry)
            elif isinstance(entry, StoreSnapshot):
                self.snapshots.setdefault(entry.store, entry)
            elif isinstance(entry, Patched):
                self.patches.setdefault(entry.id, entry)
            elif isinstance(entry, SessionResume):
                # A later run continued the tape: its session is the one that counts.
                self.resumes.append(entry)
                self.end = self.error = None
                self.worker_errors = []
            elif isinstance(entry, SessionStart):
                raise SeqError(
                    f"a second session_start (seq {entry.seq}): two cassettes were joined "
                    "into one file. Split them again, or re-record.",
                    path=path,
                    seq=entry.seq,
                )
        self._calls = calls
        self._workers = workers
        self._by_seq: dict[int, Entry] | None = None
        if seqs[-1] - seqs[0] + 1 == len(ordered):
            self.missing_seqs: SeqGaps = SeqGaps()
        else:
            self.missing_seqs = _gaps(seqs)

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
        return list(self._workers)

    def first_seq(self, worker: str) -> int | None:
        """The seq of ``worker``'s first call (``None``: it made none)."""
        return self._workers.get(worker)

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
