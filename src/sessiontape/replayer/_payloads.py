"""Recorded outputs as a replay serves them: decoded from the tape's line, expanded, or
named as damaged with where and what to do.

A replay loads a process call's ``stdout`` and ``stderr`` as their raw JSON (see
``cassette/_lazy.py``): most replays never read most outputs, so they are decoded here,
when a fake process first hands them to the application.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._errors import CassetteError, TruncatedPayloadError
from ..cassette import Blob, CallEntry, Payload, PayloadCodec, Recording, damaged_line
from ..cassette import stored as stored_payload

__all__ = ["served", "stored"]


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
