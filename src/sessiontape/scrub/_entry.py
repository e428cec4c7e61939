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

from collections.abc import Callable
from typing import Any, Final

import msgspec

from ..cassette import (
    AgentTurn,
    Call,
    Chunk,
    Entry,
    Error,
    ErrorInfo,
    Patched,
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
#: replay raises them again), ``roots`` (the header's path roots: secrets redacted, paths
#: kept).
SCRUBBED_FIELDS: Final[dict[type, tuple[tuple[str, str], ...]]] = {
    SessionStart: (("entrypoint", "text"), ("config", "data"), ("roots", "roots")),
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
    # A change marker's id is a name the code chose, never recorded data.
    Patched: (),
}


def _error(scrubber: Scrubber, info: ErrorInfo) -> ErrorInfo:
    """An error's message and traceback redacted (paths kept: replay raises them again)."""
    message = scrubber.secrets(info.message)
    traceback = scrubber.secrets(info.traceback) if info.traceback is not None else None
    if message == info.message and traceback == info.traceback:
        return info
    return msgspec.structs.replace(info, message=message, traceback=traceback)


def _roots(scrubber: Scrubber, roots: dict[str, str]) -> dict[str, str]:
    """The header's path roots, secrets redacted (a directory name may hold one); a root
    is never written as a placeholder of itself."""
    out = {name: scrubber.secrets(path) for name, path in roots.items()}
    return roots if out == roots else out


def _payload(scrubber: Scrubber, value: Any) -> Any:
    """A payload's text scrubbed; a Blob holds bytes that are not UTF-8 text, or only a
    digest: nothing to read."""
    return scrubber.text(value) if isinstance(value, str) else value


def _chunks(scrubber: Scrubber, chunks: list[Chunk]) -> list[Chunk]:
    """A conversation's chunks, each one's text scrubbed (the same list when none changes)."""
    out = [
        c if not isinstance(c.data, str) else msgspec.structs.replace(c, data=scrubber.text(c.data))
        for c in chunks
    ]
    return chunks if all(a is b or a == b for a, b in zip(out, chunks, strict=True)) else out


#: How each kind of :data:`SCRUBBED_FIELDS` is scrubbed.
_SCRUB_KIND: Final[dict[str, Callable[[Scrubber, Any], Any]]] = {
    "data": Scrubber.data,
    "text": Scrubber.text,
    "payload": _payload,
    "argv": Scrubber.argv,
    "env": Scrubber.env,
    "chunks": _chunks,
    "error": _error,
    "roots": _roots,
}
# SCRUBBED_FIELDS with each kind's function looked up once, not per recorded entry.
_PLANS: Final = {
    entry_type: tuple((field, _SCRUB_KIND[kind]) for field, kind in fields)
    for entry_type, fields in SCRUBBED_FIELDS.items()
}


def scrub_fields(entry: Entry, scrubber: Scrubber) -> dict[str, Any]:
    """The fields of ``entry`` that scrubbing changes, with their scrubbed values."""
    changed: dict[str, Any] = {}
    for field, scrub in _PLANS[type(entry)]:
        old = getattr(entry, field)
        if old:  # an empty value (no text, nothing in it) holds nothing to scrub
            new = scrub(scrubber, old)
            if new is not old and new != old:
                changed[field] = new
    return changed


def scrub_entry(entry: Entry, scrubber: Scrubber) -> Entry:
    """``entry`` with every recorded value scrubbed (the entry itself when nothing changes).

    This runs on every recorded entry. A value comes back as it is when scrubbing leaves
    it alone and the scrubber knows it (a short text, a value it just returned); a new
    one, equal or not, simply takes its place, which costs less than comparing them.
    """
    scrubbed: dict[str, Any] = {}
    for field, scrub in _PLANS[type(entry)]:
        old = getattr(entry, field)
        if old:
            new = scrub(scrubber, old)
            if new is not old:
                scrubbed[field] = new
    return msgspec.structs.replace(entry, **scrubbed) if scrubbed else entry
