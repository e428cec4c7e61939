"""The review engine: pending changes, their decisions, and the tapes they make.

An update or a live re-record run with ``update="pending"`` leaves its tape as it is
and writes its changes beside it (``NAME.pending``). This layer is what decides them:
:class:`PendingTape` loads one tape's pending changes (refused when the tape changed
since), takes decisions and writes the tape the accepted ones make (always valid,
whatever subset); :func:`decide` accepts or rejects by id across tapes. The command line
(``sessiontape review``, ``pending``, ``accept``, ``reject``) and the viewer are clients.
"""

from __future__ import annotations

from ._batch import decide, open_pending
from ._pending import PendingTape, Saved, StalePending, entry_text, find_pending

__all__ = [
    "PendingTape",
    "Saved",
    "StalePending",
    "decide",
    "entry_text",
    "find_pending",
    "open_pending",
]
