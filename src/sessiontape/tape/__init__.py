"""The tape front: what the application's wiring receives in each mode.

:class:`Tape` is the interface; :class:`RecordTape` wires the boundaries' record sides to
the recording engine, :class:`ReplayTape` their replay sides to the replay engine, and
:class:`DisabledTape` passes everything through. ``sessiontape.record()`` and
``sessiontape.replay()`` (``_api.py``) build them.
"""

from __future__ import annotations

from ..cassette import BoundaryKind
from ._active import active_tape, patched
from ._base import Mode, Tape
from ._record import DisabledTape, RecordTape
from ._replay import ReplayTape

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
