"""The tape front: what the application's wiring receives in each mode.

:class:`Tape` is the interface; :class:`RecordTape` wires the boundaries' record sides to
the recording engine, :class:`ReplayTape` their replay sides to the replay engine, and
:class:`DisabledTape` passes everything through. ``sessiontape.record()`` and
``sessiontape.replay()`` (``_api.py``) build them.

Names are imported on first use (``sessiontape._lazy``): the disabled tape, which every
application with recording off gets, loads neither the engines nor the cassette format.
"""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ..cassette import BoundaryKind
    from ._active import active_tape, patched
    from ._base import Mode, Tape
    from ._disabled import DisabledTape
    from ._record import RecordTape
    from ._replay import ReplayTape

#: Each name and the module that defines it, imported on first access.
_EXPORTS: dict[str, str] = {
    "BoundaryKind": "..cassette",
    "DisabledTape": "._disabled",
    "Mode": "._base",
    "RecordTape": "._record",
    "ReplayTape": "._replay",
    "Tape": "._base",
    "active_tape": "._active",
    "patched": "._active",
}

__all__ = [
    "BoundaryKind",
    "DisabledTape",
    "Mode",
    "RecordTape",
    "ReplayTape",
    "Tape",
    "active_tape",
    "patched",
]

if not TYPE_CHECKING:  # mypy sees the imports above, and no catch-all __getattr__
    __getattr__, __dir__ = exports(__name__, _EXPORTS)
