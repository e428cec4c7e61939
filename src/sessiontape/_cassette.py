"""Cassette files: the append-only writer and the loader.

A cassette is JSONL, one :data:`~sessiontape._entries.Entry` per line. Seqs are reserved
when a boundary call *starts* (so they give the order replay serves calls in) and a line
is written when the call *ends*; an outer call's line therefore follows the lines of the
calls made inside it. :func:`load` orders entries by seq again.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import operator
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from ._entries import (
    FORMAT_VERSION,
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
from ._errors import CassetteError, RecordingWarning

__all__ = ["CassetteWriter", "Recording", "is_cassette", "load"]

_ENTRY_DECODER: Final = msgspec.json.Decoder(Entry)
_PROBE_DECODER: Final = msgspec.json.Decoder(dict[str, Any])


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


def _decode_line(line: bytes, path: str, lineno: int) -> Entry:
    try:
        entry: Entry = _ENTRY_DECODER.decode(line)
        return entry
    except msgspec.ValidationError as exc:
        raise CassetteError(
            f"not a valid sessiontape entry: {exc}. Fix or delete the line, or re-record "
            "the cassette.",
            path=path,
            line=lineno,
        ) from None
    except msgspec.DecodeError as exc:
        raise CassetteError(
            f"not valid JSON ({exc}). Fix or delete the line, or re-record the cassette.",
            path=path,
            line=lineno,
        ) from None


def _check_header(first: bytes, path: str) -> None:
    """Refuse files that are not sessiontape cassettes, or of an unknown format version."""
    try:
        probe = _PROBE_DECODER.decode(first)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise CassetteError(
            "the first line is not a JSON object, so this is not a sessiontape cassette "
            "(it must start with a session_start entry).",
            path=path,
            line=1,
        ) from None
    if probe.get("kind") != "session_start":
        raise CassetteError(
            f"the first line has kind {probe.get('kind')!r}; a sessiontape cassette starts "
            "with a session_start entry.",
            path=path,
            line=1,
        )
    version = probe.get("format_version")
    if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise CassetteError(
            f"format version {version!r} is not one this sessiontape reads (1 to "
            f"{FORMAT_VERSION}). Upgrade sessiontape to read it, or re-record the cassette.",
            path=path,
            line=1,
        )


def _split_lines(data: bytes) -> list[bytes]:
    return [ln for ln in data.split(b"\n") if ln.strip()]


#: Entries decoded at once from which promoting them to the oldest GC generation pays.
_PROMOTE_AT: Final = 10_000


def _promote_to_oldest_generation() -> None:
    """Move every tracked object to the oldest GC generation, in constant time.

    Objects allocated while the GC is paused all wait in the youngest generation; left
    there, the collections of generations 0, 1 and then 2 that follow would each traverse
    every decoded entry (about a microsecond per object: longer than decoding a big tape).
    A loaded cassette lives as long as its replay, so it belongs in the oldest generation,
    where only a full collection visits it. ``freeze()`` + ``unfreeze()`` moves the lists
    in O(1); nothing is collected or kept alive that would not be otherwise.
    """
    gc.freeze()
    gc.unfreeze()


def _decode_all(data: bytes, path: str) -> tuple[list[Entry], bool]:
    """Decode every line; return the entries and whether a torn last line was dropped."""
    gc_was_enabled = gc.isenabled()
    gc.disable()  # hundreds of thousands of small objects: a pause saves ~30%.
    try:
        try:
            decoded: list[Entry] = _ENTRY_DECODER.decode_lines(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
        else:
            if gc_was_enabled and len(decoded) >= _PROMOTE_AT and not gc.get_freeze_count():
                _promote_to_oldest_generation()
            return decoded, False
        # Slow path, only for damaged files: find the bad line and decide whether it is
        # the torn tail of a crash (keep the prefix) or corruption (name the line).
        lines = data.split(b"\n")
        while lines and not lines[-1].strip():
            lines.pop()
        entries: list[Entry] = []
        last = len(lines) - 1
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                entries.append(_decode_line(line, path, index + 1))
            except CassetteError:
                if index == last and not data.endswith(b"\n"):
                    return entries, True
                raise
        return entries, False
    finally:
        if gc_was_enabled:
            gc.enable()


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


def load(path: str | os.PathLike[str]) -> Recording:
    """Load a cassette.

    A session that crashed (no ``session_end``, or a torn last line from a crash mid-write)
    loads with ``crashed`` set. Any other bad line raises :class:`CassetteError` naming the
    file, the line number and what was wrong.
    """
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except FileNotFoundError:
        raise CassetteError(
            "no such cassette. Record one first (pytest --record-session, or "
            "sessiontape.record(...)), or check the path.",
            path=name,
        ) from None
    except OSError as exc:
        raise CassetteError(f"cannot read the cassette ({exc}).", path=name) from None
    return loads(data, path=name)


def loads(data: bytes, *, path: str = "<memory>") -> Recording:
    """Load a cassette from bytes (see :func:`load`)."""
    newline = data.find(b"\n")
    first = data if newline < 0 else data[:newline]
    if not first.strip():
        raise CassetteError(
            "the cassette is empty (or starts with a blank line); a cassette starts with a "
            "session_start entry.",
            path=path,
            line=1 if data else None,
        )
    if newline < 0:
        # A single line with no newline: the header itself may be torn.
        try:
            _check_header(first, path)
        except CassetteError as exc:
            raise CassetteError(
                f"{exc.reason} (the file holds one line without a newline: the "
                "recording may have crashed while writing its header).",
                path=path,
                line=1,
            ) from None
    else:
        _check_header(first, path)
    entries, torn = _decode_all(data, path)
    return Recording(entries, path=path, torn=torn)


def is_cassette(path: str | os.PathLike[str]) -> bool:
    """Whether the file's first line is a sessiontape ``session_start`` entry (cheap)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 20)
    except OSError:
        return False
    try:
        probe = _PROBE_DECODER.decode(first)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return probe.get("kind") == "session_start"


def truncate_torn_tail(path: Path) -> int:
    """Cut a torn last line (no trailing newline) off ``path``; return bytes removed.

    Appending to a cassette whose recorder crashed mid-line would otherwise glue the new
    first line onto the torn one and corrupt it.
    """
    with open(path, "rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size == 0:
            return 0
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        block = 1 << 16
        pos = size
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            chunk = fh.read(pos - start)
            idx = chunk.rfind(b"\n")
            if idx >= 0:
                keep = start + idx + 1
                fh.truncate(keep)
                return size - keep
            pos = start
        fh.truncate(0)
        return size
