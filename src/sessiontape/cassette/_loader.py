"""Reading cassettes: the loader, the header check, the cheap ``is_cassette`` probe and
``read_header``.

:func:`load` decodes a whole file with msgspec's ``decode_lines`` while the garbage
collector is paused; a damaged file is then read line by line to name the bad line, or
to keep the valid prefix of a tape whose last line was torn by a crash.

Tapes are untrusted input: for any bytes, :func:`load` and :func:`loads` return a
:class:`~sessiontape.Recording` or raise :class:`~sessiontape.CassetteError` naming the
file and line, in time and memory linear in the file; nothing a tape names is imported or
called (every line is decoded into the entry types, plain data only).
"""

from __future__ import annotations

import gc
import itertools
import mmap
import os
import shlex
import stat
from collections.abc import Callable, Iterator
from typing import Any, Final

import msgspec

from .._errors import CassetteError
from ._depth import MAX_DEPTH, too_deep
from ._entries import FORMAT_VERSION, Entry, SessionStart
from ._lazy import LazyEntry, ViewEntry
from ._mapped import MAP_AT, MappedFile
from ._recording import Recording, SeqError

__all__ = [
    "damaged_line",
    "decode_header",
    "is_cassette",
    "line_numbers",
    "load",
    "load_for_replay",
    "load_for_view",
    "load_with_lines",
    "loads",
    "read_header",
]

_ENTRY_DECODER: Final = msgspec.json.Decoder(Entry)
_LAZY_DECODER: Final = msgspec.json.Decoder(LazyEntry)
_HEADER_DECODER: Final = msgspec.json.Decoder(SessionStart)
_VIEW_DECODER: Final = msgspec.json.Decoder(ViewEntry)
_PROBE_DECODER: Final = msgspec.json.Decoder(dict[str, Any])


class _SeqOnly(msgspec.Struct):
    """What the loader reads of a line to find where a seq is (every other field ignored)."""

    seq: Any = None


_SEQ_DECODER: Final = msgspec.json.Decoder(_SeqOnly)

#: What msgspec raises for bytes that are not a valid entry. Invalid UTF-8 surfaces as a
#: ``UnicodeDecodeError`` and nesting deeper than the interpreter's recursion limit as a
#: ``RecursionError``: both are bad lines like any other.
_BAD_LINE: Final = (
    msgspec.DecodeError,
    msgspec.ValidationError,
    UnicodeDecodeError,
    RecursionError,
)
#: Bad lines that may be the torn end of a line cut short by a crash (checked after
#: ``ValidationError``, a subclass of ``DecodeError`` that a torn line never gives).
_TORN: Final = (msgspec.DecodeError, UnicodeDecodeError)
#: ``is_cassette`` reads at most this much of a file's first line.
_PROBE_BYTES: Final = 1 << 20


def _why(exc: BaseException) -> str:
    """What was wrong with a line, in words."""
    if isinstance(exc, msgspec.ValidationError):
        return f"not a valid sessiontape entry: {exc}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not valid UTF-8 text (byte {exc.start} of the line: {exc.reason})"
    if isinstance(exc, RecursionError):
        return "nested deeper than any recorded value can be (a damaged or crafted line)"
    return f"not valid JSON ({exc})"


def _decode_line(line: bytes, path: str, lineno: int) -> Entry:
    try:
        entry: Entry = _ENTRY_DECODER.decode(line)
        return entry
    except _BAD_LINE as exc:
        _refuse_bare_carriage_returns(line, path, lineno)
        raise CassetteError(
            f"{_why(exc)}. Fix or delete the line, or re-record the cassette.",
            path=path,
            line=lineno,
        ) from None


def _refuse_bare_carriage_returns(line: bytes, path: str, lineno: int) -> None:
    """A line that does not decode because entries run together on it, ended by ``\r``
    alone (classic Mac line ends, or an editor's conversion): say so, and how to fix it."""
    if b"\r{" not in line.replace(b"\r\n", b"\n"):
        return
    quoted = shlex.quote(path)
    fixed = shlex.quote(
        path[: -len(".jsonl")] + ".lf.jsonl" if path.endswith(".jsonl") else path + ".lf"
    )
    raise CassetteError(
        "its entries end with a carriage return alone ('\\r', as classic Mac OS ends lines) "
        "instead of a newline ('\\n'), so they run together on this line; a cassette is "
        "JSON lines, each ended by '\\n'. Convert the line ends and check the copy: "
        f"tr '\\r' '\\n' < {quoted} > {fixed} && sessiontape validate {fixed}",
        path=path,
        line=lineno,
    )


def _check_header(first: bytes, path: str) -> None:
    """Refuse files that are not sessiontape cassettes, or of an unknown format version."""
    try:
        probe = _PROBE_DECODER.decode(first)
    except _BAD_LINE:
        _refuse_bare_carriage_returns(first, path, 1)
        raise CassetteError(
            "the first line is not a JSON object, so this is not a sessiontape cassette "
            "(it must start with a session_start entry).",
            path=path,
            line=1,
        ) from None
    if probe.get("kind") != "session_start":
        kind = probe.get("kind")
        shown = repr(kind) if isinstance(kind, str) and len(kind) <= 40 else "another"
        raise CassetteError(
            f"the first line has kind {shown}; a sessiontape cassette starts "
            "with a session_start entry.",
            path=path,
            line=1,
        )
    version = probe.get("format_version")
    if type(version) is not int or not 1 <= version <= FORMAT_VERSION:
        shown = repr(version) if type(version) is int and abs(version) < 10**6 else "unknown"
        raise CassetteError(
            f"format version {shown} is not one this sessiontape reads (1 to "
            f"{FORMAT_VERSION}). Upgrade sessiontape to read it, or re-record the cassette.",
            path=path,
            line=1,
        )


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


def _decode_fast(decode: Callable[[], list[Any]]) -> list[Any] | None:
    """Run ``decode`` (every line at once) with the GC paused; ``None`` for a bad line."""
    gc_was_enabled = gc.isenabled()
    gc.disable()  # hundreds of thousands of small objects: a pause saves ~30%.
    try:
        try:
            decoded = decode()
        except _BAD_LINE:
            return None
        if gc_was_enabled and len(decoded) >= _PROMOTE_AT and not gc.get_freeze_count():
            _promote_to_oldest_generation()
        return decoded
    finally:
        if gc_was_enabled:
            gc.enable()


def _decode_all(
    data: bytes, path: str, decoder: msgspec.json.Decoder[Any] = _ENTRY_DECODER
) -> tuple[list[Entry], bool]:
    """Decode every line; return the entries and whether a torn last line was set aside."""
    decoded = _decode_fast(lambda: decoder.decode_lines(data))
    if decoded is not None and (decoder is _ENTRY_DECODER or _text_tail(data)):
        return decoded, False
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        # Slow path, only for damaged files: find the bad line and decide whether it is
        # the torn tail of a crash (keep the prefix) or corruption (name the line).
        lines = data.split(b"\n")
        while lines and not lines[-1].strip():
            lines.pop()
        entries: list[Entry] = []
        last = len(lines) - 1
        torn_possible = not data.endswith(b"\n")
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            if index == last and torn_possible:
                try:
                    entries.append(_ENTRY_DECODER.decode(line))
                except (msgspec.ValidationError, RecursionError):
                    pass  # complete but wrong: named below like any other bad line
                except _TORN:
                    return entries, True  # cut short by a crash: the prefix stands
                else:
                    continue
            entries.append(_decode_line(line, path, index + 1))
        return entries, False
    finally:
        if gc_was_enabled:
            gc.enable()


def _text_tail(data: bytes | mmap.mmap) -> bool:
    """Whether the last line, if no newline ends it, is text (UTF-8).

    A decoder that keeps values as their JSON (``msgspec.Raw``) does not check that their
    bytes are UTF-8, so it takes a last line that a crash cut inside a character, which
    :func:`load` sets aside as a torn tail. A loader using one checks that line itself.
    """
    if not data or data[-1:] == b"\n":
        return True
    try:
        data[data.rfind(b"\n") + 1 :].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _line_seqs(data: bytes) -> Iterator[tuple[int, int]]:
    """``(line number, seq)`` of every line of ``data`` whose seq can be read."""
    for index, line in enumerate(data.split(b"\n")):
        if not line.strip():
            continue
        try:
            probe = _SEQ_DECODER.decode(line)
        except _BAD_LINE:
            continue
        if type(probe.seq) is int:
            yield index + 1, probe.seq


def _lines_holding(data: bytes, seq: int) -> list[int]:
    """The numbers of the lines whose entry has ``seq`` (read again, for an error only)."""
    return [lineno for lineno, found in _line_seqs(data) if found == seq]


def line_numbers(path: str | os.PathLike[str]) -> dict[int, int]:
    """The line of the cassette at ``path`` each seq is on (entries are loaded in seq
    order, which is not the order of the lines): for messages that point into the file."""
    return {seq: lineno for lineno, seq in _line_seqs(_read_regular_file(os.fspath(path)))}


def damaged_line(path: str, seq: int, reason: str) -> CassetteError:
    """The error for the line of ``seq``, damaged in a way only serving it shows (a value
    kept as its JSON at load): ``reason`` names the file and, when it can, the line."""
    try:
        line = line_numbers(path).get(seq)
    except CassetteError:  # loaded from bytes: no file to point into
        line = None
    return CassetteError(reason, path=path, line=line)


def _read_regular_file(name: str) -> bytes:
    """The bytes of the regular file ``name``; a :class:`CassetteError` for anything else."""
    fd, size = _open_regular_file(name)
    try:
        return _read_all(fd, size, name)
    finally:
        os.close(fd)


def _open_regular_file(name: str) -> tuple[int, int]:
    """A descriptor open on the regular file ``name``, and its size.

    A FIFO, a device or a directory is refused before a byte is read: reading ``/dev/zero``
    would never end, and reading a FIFO would wait for a writer that may never come.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags)
    except FileNotFoundError:
        raise CassetteError(
            "no such cassette. Record one first (pytest --record-session, or "
            "sessiontape.record(...)), or check the path.",
            path=name,
        ) from None
    except OSError as exc:
        raise CassetteError(
            f"cannot read the cassette ({exc.strerror or exc}). Check the path and its "
            "permissions.",
            path=name,
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise CassetteError(
                f"this is {what}, not a cassette. Name a cassette file (.jsonl).", path=name
            )
    except OSError as exc:
        os.close(fd)
        raise _unreadable(exc, name) from None
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def _unreadable(exc: OSError, name: str) -> CassetteError:
    return CassetteError(
        f"cannot read the cassette ({exc.strerror or exc}). Check the file and the disk.",
        path=name,
    )


def _read_all(fd: int, size: int, name: str) -> bytes:
    """Everything left to read at ``fd`` (``size``: what ``fstat`` said, a hint)."""
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, max(1 << 20, size + 1))
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise _unreadable(exc, name) from None


def load(path: str | os.PathLike[str]) -> Recording:
    """Load a cassette.

    A session that crashed (no ``session_end``, or a torn last line from a crash mid-write)
    loads with ``crashed`` set. Any other bad line raises :class:`CassetteError` naming the
    file, the line number and what was wrong; so does anything that is not a cassette. No
    other exception comes out of it, whatever the file holds.
    """
    name = os.fspath(path)
    return loads(_read_regular_file(name), path=name)


def loads(data: bytes, *, path: str = "<memory>") -> Recording:
    """Load a cassette from bytes (see :func:`load`)."""
    newline = data.find(b"\n")
    _check_start(data if newline < 0 else data[:newline], newline >= 0, bool(data), path)
    entries, torn = _decode_all(data, path)
    return _recording(entries, path, torn, lambda: data)


def load_for_replay(path: str | os.PathLike[str]) -> Recording:
    """Load a cassette to replay it: as :func:`load`, but each process call's output and
    each method call's result stay their stored JSON until served (see ``_lazy.py``), and
    a long tape is mapped into memory rather than read (see ``_mapped.py``).

    The same checks and errors as :func:`load`; a damaged tape is loaded as :func:`load`
    loads it (its valid prefix, or a :class:`CassetteError` naming the line).
    """
    return _load_lazily(os.fspath(path), _LAZY_DECODER)


def load_with_lines(path: str | os.PathLike[str]) -> tuple[Recording, bytes, list[Entry]]:
    """Load a cassette to replay it and copy lines of it into another (a fork): as
    :func:`load_for_replay`, read into memory; with the file's bytes, and its entries in
    the order of its lines (a torn last line left out), which the recording holds in seq
    order."""
    name = os.fspath(path)
    data = _read_regular_file(name)
    newline = data.find(b"\n")
    _check_start(data if newline < 0 else data[:newline], newline >= 0, bool(data), name)
    entries, torn = _decode_all(data, name, _LAZY_DECODER)
    return _recording(entries, name, torn, lambda: data), data, entries


def load_for_view(path: str | os.PathLike[str]) -> Recording:
    """Load a cassette to show it (``sessiontape report``): as :func:`load_for_replay`,
    and a call's arguments, environment and stdin stay their stored JSON as well.

    What stays JSON is not checked against its field's type: a tool that shows a tape
    shows such a value as the tape holds it. Everything else is checked as :func:`load`
    checks it.
    """
    return _load_lazily(os.fspath(path), _VIEW_DECODER)


def _load_lazily(name: str, decoder: msgspec.json.Decoder[Any]) -> Recording:
    """Load ``name`` with ``decoder``, a tape past :data:`MAP_AT` mapped into memory."""
    fd, size = _open_regular_file(name)
    mapped: MappedFile | None = None
    try:
        if size >= MAP_AT:
            try:
                mapped = MappedFile(fd, size)
            except (OSError, ValueError, OverflowError):  # no mapping here: read it
                mapped = None
        data = _read_all(fd, size, name) if mapped is None else b""
    finally:
        os.close(fd)
    if mapped is None:
        newline = data.find(b"\n")
        _check_start(data if newline < 0 else data[:newline], newline >= 0, bool(data), name)
        entries, torn = _decode_all(data, name, decoder)
        return _recording(entries, name, torn, lambda: data)
    first, whole = mapped.first_line()
    _check_start(first, whole, True, name)
    windows = mapped.windows()
    decoded = _decode_fast(
        lambda: list(itertools.chain.from_iterable(map(decoder.decode_lines, windows)))
    )
    if decoded is None or not _text_tail(mapped.mapping):
        # A bad line: read as load() reads it, to name it or keep a prefix.
        return loads(mapped.mapping[:], path=name)
    recording = _recording(decoded, name, False, lambda: mapped.mapping[:])
    recording.mapped = mapped
    return recording


def _check_start(first: bytes, whole: bool, nonempty: bool, path: str) -> None:
    """Refuse a file whose first line is not a sessiontape header (``whole``: a newline
    ends it; a header without one may have been torn by a crash)."""
    if not first.strip():
        raise CassetteError(
            "the cassette is empty (or starts with a blank line); a cassette starts with a "
            "session_start entry.",
            path=path,
            line=1 if nonempty else None,
        )
    if whole:
        _check_header(first, path)
        return
    try:
        _check_header(first, path)
    except CassetteError as exc:
        _refuse_bare_carriage_returns(first, path, 1)  # not torn: its line ends are wrong
        raise CassetteError(
            f"{exc.reason} (the file holds one line without a newline: the "
            "recording may have crashed while writing its header).",
            path=path,
            line=1,
        ) from None


def _recording(entries: list[Entry], path: str, torn: bool, data: Callable[[], bytes]) -> Recording:
    """The :class:`Recording` of ``entries``; a seq error names its lines in ``data()``."""
    deep = too_deep(entries)
    if deep is not None:
        lines = _lines_holding(data(), deep.seq)
        raise CassetteError(
            f"a value of the entry with seq {deep.seq} is nested more than {MAX_DEPTH} levels "
            "deep, deeper than any recorded value can be (a damaged or crafted line). Fix or "
            "delete the line, or re-record the cassette.",
            path=path,
            line=lines[-1] if lines else None,
        )
    try:
        return Recording(entries, path=path, torn=torn)
    except SeqError as exc:
        lines = _lines_holding(data(), exc.seq)
        reason = exc.reason
        if exc.twice and len(lines) > 1:
            reason += f" It is on lines {', '.join(map(str, lines[:-1]))} and {lines[-1]}."
        raise CassetteError(reason, path=path, line=lines[-1] if lines else None) from None


def is_cassette(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a regular file whose first line is a ``session_start`` entry.

    Cheap, and never raises: a directory, a FIFO, a device, an unreadable or binary file,
    or one whose first line is longer than 1 MiB all answer ``False``.
    """
    try:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
    except (OSError, ValueError, TypeError):
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        first = _first_line(fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    return first is not None and _is_header(first)


def _first_line(fd: int) -> bytes | None:
    """The first line of the file open at ``fd`` (at most :data:`_PROBE_BYTES`), or None."""
    buf = b""
    while len(buf) < _PROBE_BYTES:
        chunk = os.read(fd, min(1 << 16, _PROBE_BYTES - len(buf)))
        if not chunk:
            break
        buf += chunk
        if b"\n" in chunk:
            break
    newline = buf.find(b"\n")
    if newline < 0 and len(buf) >= _PROBE_BYTES:
        return None  # no line ends within the probe: not a header this reader would take
    return buf if newline < 0 else buf[:newline]


def _is_header(first: bytes) -> bool:
    """Whether ``first`` is a ``session_start`` line (JSON object, the right kind)."""
    try:
        probe = _PROBE_DECODER.decode(first)
    except _BAD_LINE:
        return False
    return probe.get("kind") == "session_start"


def decode_header(first_line: bytes) -> SessionStart | None:
    """The session header a cassette's first line holds, or ``None`` when the line is not
    one. Never raises, for any bytes."""
    try:
        return _HEADER_DECODER.decode(first_line.strip())
    except _BAD_LINE:
        return None


def read_header(path: str | os.PathLike[str]) -> SessionStart | None:
    """The header of the cassette at ``path``, read from its first line alone (at most
    1 MiB), or ``None`` when the file cannot be read or that line is not a header.

    Cheap: what the pytest plugin, the replay cache and the catalog read of a tape before
    (or instead of) loading it.
    """
    try:
        with open(path, "rb") as fh:
            first = fh.readline(_PROBE_BYTES)
    except OSError:
        return None
    return decode_header(first)
