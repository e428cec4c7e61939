"""The review engine: pending changes, their decisions, and the tapes they make.

An update or a live re-record run with ``update="pending"`` leaves its tape as it is
and writes its changes beside it (``NAME.pending``). This layer is what decides them:
:class:`PendingTape` loads one tape's pending changes (refused when the tape changed
since), takes decisions and writes the tape the accepted ones make (always valid,
whatever subset); :func:`decide` accepts or rejects by id across tapes. The command line
(``sessiontape review``, ``pending``, ``accept``, ``reject``) and the viewer are clients.

Names are imported on first use (``sessiontape._lazy``): the replay engine, which builds
the tapes, is imported only when pending changes are read.
"""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ._batch import decide, open_pending
    from ._pending import PendingTape, Saved, StalePending, entry_text, find_pending

#: Each name and the module that defines it, imported on first access.
_EXPORTS: dict[str, str] = {
    "PendingTape": "._pending",
    "Saved": "._pending",
    "StalePending": "._pending",
    "decide": "._batch",
    "entry_text": "._pending",
    "find_pending": "._pending",
    "open_pending": "._batch",
}

__all__ = [
    "PendingTape",
    "Saved",
    "StalePending",
    "decide",
    "entry_text",
    "find_pending",
    "open_pending",
]

if not TYPE_CHECKING:  # mypy sees the imports above, and no catch-all __getattr__
    __getattr__, __dir__ = exports(__name__, _EXPORTS)
