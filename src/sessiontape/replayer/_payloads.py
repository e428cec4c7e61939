"""Recorded outputs as a replay serves them: decoded from the tape's line, expanded, or
named as damaged with where and what to do.

A replay loads a process call's ``stdout`` and ``stderr`` as their raw JSON (see
``cassette/_lazy.py``): most replays never read most outputs, so they are decoded here,
when a fake process first hands them to the application.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from .._errors import CassetteError, TruncatedPayloadError
from ..cassette import (
    Blob,
    CallEntry,
    Payload,
    PayloadCodec,
    ProcessCall,
    Recording,
    damaged_line,
    result_json,
)
from ..cassette import stored as stored_payload

__all__ = ["answer_texts", "served", "stored"]


def stored(
    recording: Recording, entry: CallEntry, value: Payload | msgspec.Raw, field: str
) -> Payload:
    """A process call's ``stdout`` or ``stderr`` as stored, for either form of the entry.

    The loader took any JSON there: one that is not a payload (a string, a blob or null)
    is a damaged line, named here with a :class:`CassetteError`.
    """
    if not isinstance(value, msgspec.Raw):
        return value
    mapped = recording.mapped
    if mapped is not None:
        mapped.served(len(value))
    try:
        payload: Payload = stored_payload(value)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise damaged_line(
            recording.path,
            entry.seq,
            f"seq {entry.seq}: the recorded {field} is not an output sessiontape wrote (a "
            f"string, a blob or null): {exc}. Fix or delete the line, or re-record the "
            "cassette.",
        ) from None
    return payload


def served(
    codec: PayloadCodec,
    recording: Recording,
    entry: CallEntry,
    value: Payload | msgspec.Raw,
    field: str,
    *,
    text: bool,
) -> Any:
    """A recorded payload as served today (placeholders expanded).

    Raises :class:`TruncatedPayloadError` for a payload kept as a digest only, and
    :class:`CassetteError` for one whose sidecar file is missing or damaged.
    """
    payload = stored(recording, entry, value, field)
    try:
        return codec.decode(payload, text=text)
    except LookupError as exc:
        raise TruncatedPayloadError(seq=entry.seq, field=field, digest=str(exc)) from None
    except (OSError, ValueError) as exc:
        assert isinstance(payload, Blob)
        where = codec.sidecar.file_for(payload.sha256, gz=payload.gzip)  # type: ignore[union-attr]
        raise CassetteError(
            f"seq {entry.seq}: the recorded {field} ({payload.size} bytes) is kept in the "
            f"sidecar file {where}, which cannot be read ({exc}). Copy the cassette with "
            "its .blobs directory, or re-record it.",
            path=recording.path,
        ) from None


def answer_texts(
    codec: PayloadCodec,
    recording: Recording,
    entry: CallEntry,
    after: int | None = None,
    before: int | None = None,
) -> Iterator[str]:
    """The texts of a recorded call's answers, as stored (placeholders kept): a process's
    output (in a conversation, its output chunks between the chunks ``after`` and
    ``before``), a method call's result as JSON. A payload the tape lacks is left out.
    With ``before``, only a conversation's chunks: a call answers after its request."""
    if isinstance(entry, ProcessCall):
        if entry.chunks is not None:
            start = 0 if after is None else after + 1
            chunks = entry.chunks[start:before]
            payloads = [c.data for c in chunks if c.stream != "stdin"]
        elif before is not None:
            return
        else:
            payloads = [
                stored(recording, entry, entry.stdout, "stdout"),
                stored(recording, entry, entry.stderr, "stderr"),
            ]
        for payload in payloads:
            if isinstance(payload, str):
                yield payload
            elif payload is not None:
                try:
                    text = codec.decode(payload, text=True)
                except (LookupError, OSError, ValueError):
                    continue
                if isinstance(text, str):
                    yield text
        return
    result = getattr(entry, "result", None)
    if result is not None and before is None:
        yield bytes(result_json(result)).decode("utf-8", "replace")
