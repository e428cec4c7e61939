"""Reading cassettes: the loader, the header check and the cheap ``is_cassette`` probe.

:func:`load` decodes a whole file with msgspec's ``decode_lines`` while the garbage
collector is paused; a damaged file is then read line by line to name the bad line, or
to keep the valid prefix of a tape whose last line was torn by a crash.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any, Final

import msgspec

from .._errors import CassetteError
from ._entries import FORMAT_VERSION, Entry
from ._recording import Recording

__all__ = ["is_cassette", "load", "loads", "truncate_torn_tail"]

_ENTRY_DECODER: Final = msgspec.json.Decoder(Entry)
_PROBE_DECODER: Final = msgspec.json.Decoder(dict[str, Any])


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
