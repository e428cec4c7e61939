"""The cassette layer: the entry types, the writer, the loader and the payload forms.

The bottom of sessiontape's layers: it knows the format and nothing of recording,
replay or boundaries. Every other layer imports it through this module.
"""

from __future__ import annotations

from ._entries import (
    BOUNDARY_AGENT,
    BOUNDARY_PROCESS,
    BOUNDARY_STORE,
    FORMAT_VERSION,
    MAX_NS,
    MAX_SEQ,
    AgentTurn,
    Blob,
    BoundaryKind,
    Call,
    CallEntry,
    Entry,
    Error,
    ErrorInfo,
    Payload,
    ProcessCall,
    SessionEnd,
    SessionResume,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
    Usage,
    boundary_of,
    request_of,
)
from ._loader import is_cassette, line_numbers, load, loads
from ._payload import DEFAULT_MAX_INLINE_BYTES, Level, PayloadCodec, digest
from ._recording import Recording, SeqGaps
from ._writer import (
    CassetteWriter,
    beside,
    encode_entry,
    open_private,
    set_aside_tail,
    write_private_file,
)

__all__ = [
    "BOUNDARY_AGENT",
    "BOUNDARY_PROCESS",
    "BOUNDARY_STORE",
    "DEFAULT_MAX_INLINE_BYTES",
    "FORMAT_VERSION",
    "MAX_NS",
    "MAX_SEQ",
    "AgentTurn",
    "Blob",
    "BoundaryKind",
    "Call",
    "CallEntry",
    "CassetteWriter",
    "Entry",
    "Error",
    "ErrorInfo",
    "Level",
    "Payload",
    "PayloadCodec",
    "ProcessCall",
    "Recording",
    "SeqGaps",
    "SessionEnd",
    "SessionResume",
    "SessionStart",
    "StoreMutation",
    "StoreSnapshot",
    "Usage",
    "beside",
    "boundary_of",
    "digest",
    "encode_entry",
    "is_cassette",
    "line_numbers",
    "load",
    "loads",
    "open_private",
    "request_of",
    "set_aside_tail",
    "write_private_file",
]
