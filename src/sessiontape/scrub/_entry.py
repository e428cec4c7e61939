"""The one function every entry goes through before it is written: :func:`scrub_entry`.

It knows, for every entry kind, which fields hold recorded content and how each is
scrubbed; the recorder applies it in ``Recorder.write()`` to every entry, so no value
reaches disk unscrubbed whatever the boundary that built it did. ``sessiontape scrub``
and ``validate`` apply the same table to tapes already written, so the three always
agree on what a secret is. Scrubbing is idempotent, and what a boundary already scrubbed
is recognised (by :meth:`Scrubber.scrubbed` or the scrubber's memo) at the cost of a
lookup.

Fields not named here are identifiers and timing (seqs, times, worker and thread names,
boundary, method and type names, the run id, versions and the header's path roots):
names the application chose, which replay matches on; they are written as they are.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..cassette import (
    AgentTurn,
    Call,
    Chunk,
    Entry,
    Error,
    ErrorInfo,
    ProcessCall,
    SessionEnd,
    SessionResume,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
)
from ._scrubber import Scrubber

__all__ = ["SCRUBBED_FIELDS", "scrub_entry", "scrub_fields"]

#: How each recorded field is scrubbed, per entry kind: ``text`` (redaction, path
#: placeholders, the project's scrubbers), ``argv``, ``env``, ``data`` (JSON values:
#: every string, and every value under a secret-looking key), ``payload`` (text, or a
#: Blob of bytes or digest left as it is), ``chunks`` (a conversation's chunks, each a
#: payload), ``error`` (an ErrorInfo: message and traceback redacted, paths kept, as
#: replay raises them again).
SCRUBBED_FIELDS: Final[dict[type, tuple[tuple[str, str], ...]]] = {
    SessionStart: (("entrypoint", "text"), ("config", "data")),
    SessionResume: (("entrypoint", "text"), ("config", "data")),
    StoreSnapshot: (("data", "data"), ("error", "error")),
    ProcessCall: (
        ("argv", "argv"),
        ("cwd", "text"),
        ("env", "env"),
        ("input", "payload"),
        ("stdout", "payload"),
        ("stderr", "payload"),
        ("chunks", "chunks"),
        ("spawn_error", "error"),
    ),
    AgentTurn: (("args", "data"), ("kwargs", "data"), ("result", "data"), ("error", "error")),
    StoreMutation: (("args", "data"), ("kwargs", "data"), ("result", "data"), ("error", "error")),
    Call: (("args", "data"), ("kwargs", "data"), ("result", "data"), ("error", "error")),
    Error: (("message", "text"), ("traceback", "text")),
    SessionEnd: (("outcome", "data"),),
}


def _error(info: ErrorInfo, scrubber: Scrubber) -> ErrorInfo:
    message = scrubber.secrets(info.message)
    traceback = scrubber.secrets(info.traceback) if info.traceback is not None else None
    if message == info.message and traceback == info.traceback:
        return info
    return msgspec.structs.replace(info, message=message, traceback=traceback)


def _scrub(kind: str, value: Any, scrubber: Scrubber) -> Any:
    """``value`` of a field scrubbed as its ``kind`` (see :data:`SCRUBBED_FIELDS`) says."""
    if kind == "data":
        return scrubber.data(value)
    if kind == "text":
        return scrubber.text(value)
    if kind == "payload":
        # A Blob holds bytes that are not UTF-8 text, or only a digest: nothing to read.
        return scrubber.text(value) if isinstance(value, str) else value
    if kind == "argv":
        return scrubber.argv(value)
    if kind == "env":
        return scrubber.env(value)
    if kind == "chunks":
        return _chunks(value, scrubber)
    return _error(value, scrubber)


def _chunks(chunks: list[Chunk], scrubber: Scrubber) -> list[Chunk]:
    """A conversation's chunks, each one's text scrubbed (the same list when none changes)."""
    out = [
        c if not isinstance(c.data, str) else msgspec.structs.replace(c, data=scrubber.text(c.data))
        for c in chunks
    ]
    return chunks if all(a is b or a == b for a, b in zip(out, chunks, strict=True)) else out


def scrub_fields(entry: Entry, scrubber: Scrubber) -> dict[str, Any]:
    """The fields of ``entry`` that scrubbing changes, with their scrubbed values.

    This runs on every recorded entry: an empty value (no text, nothing in it) and a value
    this scrubber just returned are passed over before any dispatch.
    """
    changed: dict[str, Any] = {}
    scrubbed = scrubber.scrubbed
    for field, kind in SCRUBBED_FIELDS[type(entry)]:
        old = getattr(entry, field)
        if not old or scrubbed(old):
            continue
        new = _scrub(kind, old, scrubber)
        if new is not old and new != old:
            changed[field] = new
    return changed


def scrub_entry(entry: Entry, scrubber: Scrubber) -> Entry:
    """``entry`` with every recorded value scrubbed (the entry itself when nothing changes)."""
    changed = scrub_fields(entry, scrubber)
    return msgspec.structs.replace(entry, **changed) if changed else entry
