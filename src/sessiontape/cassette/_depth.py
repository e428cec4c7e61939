"""How deep a loaded value may be nested: the same limit on every Python.

msgspec refuses nesting past the interpreter's recursion budget while it decodes, and the
loader turns that into a :class:`~sessiontape.CassetteError`. That budget is not the same
everywhere: up to CPython 3.11 it is the recursion limit (about 1,000 levels), from 3.12
it is the C stack's, and CPython 3.13 decodes a value nested 2,000 or 8,000 levels deep.
Such a value then loads, and the first recursive walk over it (the scrubber that
``sessiontape validate`` runs, the report's diffs) raises ``RecursionError``. So the
loader holds every value to :data:`MAX_DEPTH` levels itself, whatever the interpreter
decodes, and names the line of one that goes deeper.

Only the fields that hold arbitrary data (a call's arguments and result, a snapshot's
data, the session's config and outcome) can nest; the walk visits their containers
only, a level at a time, and stops at the limit, so a tape of flat values pays a few
attribute reads per entry.
"""

from __future__ import annotations

from typing import Any, Final

from ._entries import Entry

__all__ = ["MAX_DEPTH", "too_deep"]

#: The deepest nesting a loaded value may have (a list or dict inside one is a level).
#: Far past any value a program records, and far below what the recursive walks over a
#: loaded tape can take on any supported Python.
MAX_DEPTH: Final = 200

#: The fields of each entry type that hold arbitrary (JSON) data, by type; filled in as
#: types are met.
_FIELDS: dict[type, tuple[str, ...]] = {}
_FREE: Final = ("args", "kwargs", "result", "data", "config", "outcome")


def _fields(cls: type) -> tuple[str, ...]:
    found = _FIELDS.get(cls)
    if found is None:
        names = getattr(cls, "__struct_fields__", ())
        found = _FIELDS[cls] = tuple(name for name in _FREE if name in names)
    return found


def _depth_past(values: list[Any], limit: int) -> bool:
    """Whether any of ``values`` nests deeper than ``limit`` levels (breadth first, no
    recursion: it cannot itself run out of stack)."""
    level = [v for v in values if type(v) is list or type(v) is dict]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for container in level:
            items = container.values() if type(container) is dict else container
            below += [v for v in items if type(v) is list or type(v) is dict]
        level = below
    return False


def too_deep(entries: list[Entry]) -> Entry | None:
    """The first entry holding a value nested deeper than :data:`MAX_DEPTH`, if any."""
    for entry in entries:
        names = _fields(type(entry))
        if not names:
            continue
        values = [getattr(entry, name) for name in names]
        # (args is a list and kwargs a dict: they are a level themselves.)
        if any(type(v) is list or type(v) is dict for v in values) and _depth_past(
            values, MAX_DEPTH
        ):
            return entry
    return None
