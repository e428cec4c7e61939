"""A fork's branch written as a tape of its own, beside the tape it forked.

The new tape is the original's header (naming what it was forked from), then every line of
the original before the fork's seq, byte for byte, then the branch's calls in the order
they started (``_branch.py``), numbered from the fork's seq on, each recorded call the
tape answered with the calls recorded inside it, and last the branch's own end: its
outcome, or the exception that ended it. Nothing else of the original after the fork is
kept but the ``patched`` markers and store snapshots (facts about the code and the
stores, not about the calls).

A fork never writes over a file it cannot prove is its own: the path beside the tape
(``x.fork-SEQ.jsonl``) may hold only an earlier fork of the same tape (its header names
the tape's file name and SHA-256).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from .._errors import CassetteError
from ..cassette import (
    CallEntry,
    Entry,
    ForkedFrom,
    Recording,
    SessionEnd,
    read_header,
    write_new_cassette,
)
from ._branch import Made
from ._update import _copy_sidecar

__all__ = ["check_fork_target", "fork_target", "sha256_of", "write_fork"]

#: Lines before the fork kept byte for byte; of those after it, these kinds are kept too.
_KEPT_AFTER: Final = frozenset({"patched", "store_snapshot"})
_DROPPED: Final = frozenset({"session_start", "session_end"})


class _Line(msgspec.Struct):
    """What the writer reads of each line of the original: its kind and seq."""

    kind: str = ""
    seq: int = -1


_READ_LINE: Final = msgspec.json.Decoder(_Line).decode
_READ_LINES: Final = msgspec.json.Decoder(_Line).decode_lines
_ENCODE: Final = msgspec.json.encode
_REPLACE: Final = msgspec.structs.replace


def fork_target(tape: str | os.PathLike[str], seq: int) -> Path:
    """Where the fork of ``tape`` at ``seq`` is written: ``x.fork-SEQ.jsonl`` beside it."""
    path = Path(tape)
    return path.with_name(f"{path.stem}.fork-{seq}.jsonl")


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_fork_target(target: Path, tape: str, sha256: str) -> None:
    """Refuse ``target`` when something is there that is not a fork of the tape named
    ``tape`` (file name) with this ``sha256``; nothing is touched either way."""
    if not os.path.lexists(target):
        return
    header = read_header(target) if target.is_file() and not target.is_symlink() else None
    forked = header.forked_from if header is not None else None
    if forked is not None and forked.tape == tape and forked.sha256 == sha256:
        return
    what = "a fork of another tape" if forked is not None else "not a fork sessiontape wrote"
    raise CassetteError(
        f"exists and is {what}; a fork never writes over it. Move it away, or fork a copy "
        "of the tape under another name.",
        path=str(target),
    )


def _original_lines(
    original: bytes, in_order: list[Entry] | None, torn: bool
) -> Iterator[tuple[bytes, str, int]]:
    """Each line of the original that holds an entry, with its kind and seq: read from
    ``in_order``, the entries the lines were loaded as in their order, when given; else
    decoded (all in one call, C code), the lines split as that decoder splits them."""
    raws = [raw.rstrip(b"\r") for raw in original.split(b"\n") if raw.strip()]
    # A torn last line (a crash mid-write) was left out by the load.
    if in_order is not None and len(raws) == len(in_order) + torn:
        for raw, entry in zip(raws[: len(in_order)], in_order, strict=True):
            yield raw, _kind(entry), entry.seq
        return
    try:
        read = _READ_LINES(original)
    except msgspec.DecodeError:
        # A torn last line, which the loader skipped: the only line of a loaded tape
        # that does not decode.
        raws.pop()
        read = _READ_LINES(b"\n".join(raws))
    for raw, line in zip(raws, read, strict=True):
        yield raw, line.kind, line.seq


#: Each entry type's kind (its tag), as met.
_KINDS: Final[dict[type, str]] = {}


def _kind(entry: Entry) -> str:
    cls = type(entry)
    kind = _KINDS.get(cls)
    if kind is None:
        kind = _KINDS[cls] = str(cls.__struct_config__.tag)
    return kind


def _children(recording: Recording) -> dict[int, list[CallEntry]]:
    """The calls recorded inside each call, in seq order (one pass over the tape)."""
    found: dict[int, list[CallEntry]] = {}
    for entry in recording.calls:
        if entry.parent is not None:
            found.setdefault(entry.parent, []).append(entry)
    return found


def write_fork(
    recording: Recording,
    original: bytes,
    target: Path,
    note: ForkedFrom,
    made: Sequence[Made],
    end: Entry | None,
    outcome: Any = None,
    in_order: list[Entry] | None = None,
) -> tuple[Path, dict[int, int]]:
    """Write the branch to ``target`` (see the module's documentation). ``original`` is
    the tape's bytes as forked; ``made`` the branch's calls in the order they started;
    ``end`` the exception entry that ended the branch (``None``: it finished, with
    ``outcome``); ``in_order`` the entries ``recording`` was loaded as from ``original``,
    in the order of its lines (``load_with_lines``), if it was. Returns the path and the
    new seq of each branch call by its seq in the fork (recorded, or provisional for a
    live call).

    The new tape is checked as every tape written is (``check_written``: parsed whole
    and checked as ``sessiontape validate`` checks it).
    """
    seq = note.seq
    header = _REPLACE(recording.header, forked_from=note)
    lines: list[bytes] = [_ENCODE(header)]
    kinds: dict[str, int] = {"session_start": 1}
    later: list[bytes] = []
    for raw, kind, line_seq in _original_lines(original, in_order, recording.torn):
        if kind in _DROPPED:
            continue
        if 0 <= line_seq < seq:
            lines.append(raw)  # before the fork: the original's line, byte for byte
        elif kind in _KEPT_AFTER:
            later.append(raw)
            continue
        else:
            continue
        kinds[kind] = kinds.get(kind, 0) + 1
    number = seq
    for raw in later:
        lines.append(_ENCODE({**msgspec.json.decode(raw), "seq": number}))
        number += 1
        kind = _READ_LINE(raw).kind
        kinds[kind] = kinds.get(kind, 0) + 1
    entries = _branch_entries(recording, made, seq)
    renumbered: dict[int, int] = {}
    last_ns = (recording.header.ts_ns, recording.header.mono_ns)
    for entry, worker, thread in entries:
        renumbered[entry.seq] = number
        parent = entry.parent
        if parent is not None and not 0 <= parent < seq:
            parent = renumbered.get(parent)
        fields: dict[str, Any] = {"seq": number, "parent": parent}
        if worker is not None:
            fields.update(worker=worker, thread=thread)
        lines.append(_ENCODE(_REPLACE(entry, **fields)))
        kind = _kind(entry)
        kinds[kind] = kinds.get(kind, 0) + 1
        number += 1
        done = entry.ts_ns + int(getattr(entry, "duration_ns", 0) or 0)
        if done > last_ns[0]:
            last_ns = (done, entry.mono_ns + (done - entry.ts_ns))
    if end is not None:
        lines.append(_ENCODE(_REPLACE(end, seq=number)))
    else:
        kinds["session_end"] = 1
        lines.append(
            _ENCODE(
                SessionEnd(
                    seq=number,
                    ts_ns=last_ns[0],
                    mono_ns=last_ns[1],
                    outcome=outcome,
                    counts=kinds,
                    duration_ns=last_ns[1] - recording.header.mono_ns,
                )
            )
        )
    check_fork_target(target, note.tape, note.sha256)
    # The payloads first: the tape is checked against its sidecar before it is written.
    _copy_sidecar(Path(recording.path), target)
    # One line-joined piece: every line here is without its newline.
    return write_new_cassette(target, [b"\n".join(lines) + b"\n"]), renumbered


def _branch_entries(
    recording: Recording, made: Sequence[Made], seq: int
) -> Iterator[tuple[Entry, str | None, str | None]]:
    """The branch's entries in the order they started, each with the worker and thread
    that made it (``None``: as recorded); a recorded call the tape answered comes with
    the calls recorded inside it (replay never expects them, the viewer shows them)."""
    children: dict[int, list[CallEntry]] | None = None
    for m in sorted(made, key=lambda m: m.order):
        entry = m.entry
        if entry is None:
            continue  # a live call that never ended (its thread was stopped)
        if not m.from_tape:
            yield entry, None, None
            continue
        yield entry, m.worker, m.thread
        if entry.seq == seq:
            continue
        if children is None:
            children = _children(recording)
        stack = list(reversed(children.get(entry.seq, ())))
        while stack:
            inner = stack.pop()
            yield inner, None, None
            stack.extend(reversed(children.get(inner.seq, ())))
