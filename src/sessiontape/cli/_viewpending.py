"""A tape's pending changes as the viewer shows them: read-only, each with the commands
that decide it.

``serve`` and ``report`` put them in the cassette's data (``pending``): per change its id,
category, the call it touches, each field old and new side by side, the entries old and
new (their cassette lines, clipped), and the ``sessiontape accept``/``reject`` commands.
A pending file whose tape changed since shows as such, with what to do.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Final

from .._errors import SessiontapeError
from ..cassette import is_pending_file, pending_path
from ..report import summarize_value

__all__ = ["pending_data"]

#: Characters of an entry's line shown (the rest is in the tape).
_ENTRY_CHARS: Final = 4000


def _clip(text: str) -> str:
    return text if len(text) <= _ENTRY_CHARS else text[:_ENTRY_CHARS] + " …"


def pending_data(tape: str | Path) -> dict[str, Any] | None:
    """The pending changes of ``tape`` as JSON builtins (``None``: it has none)."""
    path = pending_path(tape)
    if not is_pending_file(path):
        return None
    from ..review import PendingTape, entry_text  # the replay engine: only for a pending file

    try:
        pending = PendingTape(path)
    except SessiontapeError as exc:
        return {"path": str(path), "error": str(exc), "changes": []}
    where = shlex.quote(str(tape))
    changes = []
    for c in pending.changes:
        changes.append(
            {
                "id": c.id,
                "category": c.category,
                "change": c.change,
                "seq": c.seq,
                "worker": c.worker,
                "boundary": c.boundary,
                "decision": c.decision,
                "seqs": sorted({*c.changed, *c.dropped}),
                "fields": [
                    {
                        "field": f.field,
                        "old": None if f.old is None else summarize_value(f.old, 400),
                        "new": None if f.new is None else summarize_value(f.new, 400),
                    }
                    for f in c.fields
                ],
                "old": [_clip(entry_text(e)) for e in pending.old_entries(c)],
                "new": [_clip(entry_text(e)) for e in pending.new_entries(c)],
                "accept": f"sessiontape accept {c.id} --path {where}",
                "reject": f"sessiontape reject {c.id} --path {where}",
            }
        )
    return {
        "path": str(path),
        "error": None,
        "changes": changes,
        "review": f"sessiontape review {where}",
    }
