"""The cassette layer: the entry types, the writer, the loader and the payload forms.

The bottom of sessiontape's layers: it knows the format and nothing of recording,
replay or boundaries. Every other layer imports it through this module.
"""

from __future__ import annotations

from ._entries import (
    BOUNDARY_AGENT,
    BOUNDARY_PROCESS,
    BOUNDARY_STORE,
    ENV_DELTA_SINCE,
    FORMAT_VERSION,
    AgentTurn,
    Blob,
    BoundaryKind,
    Call,
    CallEntry,
    Chunk,
    Entry,
    Error,
    ErrorInfo,
    Payload,
    ProcessCall,
    SessionEnd,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
    Usage,
    boundary_of,
    process_payloads,
    request_of,
)
from ._loader import is_cassette, load, loads, truncate_torn_tail
from ._payload import DEFAULT_MAX_INLINE_BYTES, Level, PayloadCodec, digest
from ._recording import Recording
from ._sidecar import SIDECAR_SUFFIX, Sidecar, sidecar_dir
from ._writer import CassetteWriter, encode_entry

__all__ = [
    "BOUNDARY_AGENT",
    "BOUNDARY_PROCESS",
    "BOUNDARY_STORE",
    "DEFAULT_MAX_INLINE_BYTES",
    "ENV_DELTA_SINCE",
    "FORMAT_VERSION",
    "SIDECAR_SUFFIX",
    "AgentTurn",
    "Blob",
    "BoundaryKind",
    "Call",
    "CallEntry",
    "CassetteWriter",
    "Chunk",
    "Entry",
    "Error",
    "ErrorInfo",
    "Level",
    "Payload",
    "PayloadCodec",
    "ProcessCall",
    "Recording",
    "SessionEnd",
    "SessionStart",
    "Sidecar",
    "StoreMutation",
    "StoreSnapshot",
    "Usage",
    "boundary_of",
    "digest",
    "encode_entry",
    "is_cassette",
    "load",
    "loads",
    "process_payloads",
    "request_of",
    "sidecar_dir",
    "truncate_torn_tail",
]
