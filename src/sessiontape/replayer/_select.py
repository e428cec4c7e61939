"""Which calls a live re-record runs for real: selectors over boundary, worker and program.

A selector is one of ``BOUNDARY`` (``process``, ``agent``, ``store``, a user boundary's
name), ``WORKER`` (``worker-2``), ``BOUNDARY@WORKER`` (``process@worker-2``) or
``process:PROGRAM[@WORKER]`` (``process:git``, the basename of ``argv[0]``). A bare name
is a boundary when it is a preset's or one the tape has, and a worker otherwise.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Final

from .._errors import UsageError
from ..cassette import (
    BOUNDARY_PROCESS,
    PRESET_BOUNDARIES,
    CallEntry,
    ProcessCall,
    Recording,
    boundary_of,
)

__all__ = ["Selector", "Selectors"]

_FORM: Final = re.compile(r"^(?P<what>[\w.-]+)(?::(?P<program>[^@\s]+))?(?:@(?P<worker>\S+))?$")
_PRESETS: Final = frozenset(PRESET_BOUNDARIES.values())


class Selector:
    """One selector, parsed against a tape (which knows its boundaries' names)."""

    __slots__ = ("boundary", "program", "text", "worker")

    def __init__(self, text: str, boundaries: Iterable[str]) -> None:
        found = _FORM.match(text.strip())
        if found is None:
            raise UsageError(
                f"live selector {text!r}: write a boundary (process, agent, store or a user "
                "boundary's name), a worker (worker-2), both (process@worker-2) or a "
                "program (process:git)."
            )
        what, program, worker = found.group("what", "program", "worker")
        self.text = text.strip()
        known = _PRESETS | set(boundaries)
        if worker is None and program is None and what not in known:
            self.boundary: str | None = None
            self.worker: str | None = what
        else:
            self.boundary = what
            self.worker = worker
        if program is not None and self.boundary != BOUNDARY_PROCESS:
            raise UsageError(
                f"live selector {text!r}: a program is chosen on the process boundary only "
                f"(process:{program})."
            )
        self.program: str | None = program

    def picks(self, boundary: str, worker: str, argv: Sequence[str] | None = None) -> bool:
        """Whether a call through ``boundary`` by ``worker`` (running ``argv``) is live."""
        if self.boundary is not None and self.boundary != boundary:
            return False
        if self.worker is not None and self.worker != worker:
            return False
        if self.program is not None:
            return bool(argv) and os.path.basename(str(argv[0])) == self.program  # type: ignore[index]
        return True

    def __repr__(self) -> str:
        return f"Selector({self.text!r})"


class Selectors:
    """The selectors of one live re-record: a call is live when any of them picks it."""

    def __init__(self, texts: Sequence[str], recording: Recording) -> None:
        names = {b for b in (boundary_of(e) for e in recording.calls) if b is not None}
        self.items = [Selector(t, names) for t in texts if t.strip()]
        if not self.items:
            raise UsageError("live=[...] names no selector; pass e.g. live=['process'].")
        self.boundaries = frozenset(s.boundary for s in self.items if s.boundary is not None)

    @property
    def texts(self) -> list[str]:
        """The selectors as written."""
        return [s.text for s in self.items]

    def picks(self, boundary: str, worker: str, argv: Sequence[str] | None = None) -> bool:
        """Whether any selector picks the call."""
        return any(s.picks(boundary, worker, argv) for s in self.items)

    def picks_entry(self, entry: CallEntry) -> bool:
        """Whether a recorded call is in the re-recorded segment."""
        argv = entry.argv if isinstance(entry, ProcessCall) else None
        return self.picks(boundary_of(entry) or "", entry.worker, argv)
