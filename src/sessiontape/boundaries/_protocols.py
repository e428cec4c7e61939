"""What a boundary needs from the engines: one small protocol per side.

A boundary module holds its record side and its replay side together. The record side
talks to a :class:`RecordSide` (the recording engine), the replay side to a
:class:`ReplaySide` (the replay engine); nothing else of the engines is used, so a new
boundary is written against these two protocols alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections import deque

    import msgspec

    from .._context import LateSeq
    from .._errors import UnrecordedCallError
    from ..cassette import (
        CallEntry,
        Entry,
        ErrorOrigin,
        Level,
        Payload,
        PayloadCodec,
        Recording,
    )
    from ..recorder import Opened
    from ..replayer import Correlations, Normalize, Path
    from ..report import FieldDiff, MismatchKind
    from ..scrub import PathRoots, Scrubber

__all__ = ["RecordSide", "ReplaySide"]


class RecordSide(Protocol):
    """The recording engine as a boundary's record side sees it (the recorder, or a
    live re-record's side, whose scrubber follows the replay's roots)."""

    level: Level

    @property
    def scrubber(self) -> Scrubber:
        """What every recorded value goes through."""

    @property
    def codec(self) -> PayloadCodec:
        """How payloads are stored."""

    @property
    def active(self) -> bool:
        """Whether calls are still being recorded; when not, pass calls straight through."""

    def open(self) -> Opened:
        """Start a call: reserve its seq; the result goes into the call's entry."""

    def open_late(self) -> tuple[Opened, LateSeq] | None:
        """Start a verify call whose seq is reserved when it ends, or when a call made
        inside it asks (``None``: this side numbers every call when it opens)."""

    def elapsed(self, opened: Opened) -> int:
        """ns since the call ``opened`` started."""

    def write(self, entry: Entry) -> None:
        """Append the call's entry to the cassette."""

    def data(self, value: Any, what: str) -> Any:
        """``value`` as scrubbed JSON data (``what`` names it in a warning)."""

    def warn_once(self, key: str, message: str) -> None:
        """Emit ``message`` as a :class:`~sessiontape.RecordingWarning`, once per ``key``."""

    def convert_call(
        self, label: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> tuple[list[Any], dict[str, Any], Any]:
        """A method call's arguments and result as JSON data, scrubbed on the write path."""


class ReplaySide(Protocol):
    """The replay engine as a boundary's replay side sees it."""

    recording: Recording
    roots: PathRoots
    scrubber: Scrubber
    codec: PayloadCodec
    #: Whether the replay rewrites its tape (update mode or a live re-record): a verify
    #: call the tape lacks is then run and handed to :meth:`add_call`.
    updating: bool
    #: The values the program made up today in place of recorded ones (see ``check``).
    correlations: Correlations

    def head(self, boundary: str) -> CallEntry | None:
        """The next recorded call of ``boundary`` for the calling worker, if any."""

    def take_head(self, boundary: str) -> CallEntry:
        """Take the head of the calling worker's queue (the request matched it exactly)."""

    def take(
        self, boundary: str, actual: Mapping[str, Any], normalize: Normalize | None = None
    ) -> CallEntry | None:
        """The entry answering ``actual``, or ``None`` (the report says why)."""

    def check(
        self, entry: CallEntry, path: Path, expected: Any, actual: Any
    ) -> tuple[list[FieldDiff], int]:
        """Compare the part at ``path`` of ``entry``'s request that the program sent after
        its call was matched (a process's stdin), as every request is compared: the
        values it made up correlated, times read between calls matched, noise applied.
        Returns the field diffs (none: it matches) and their total."""

    def take_before_stdin(self, boundary: str, actual: Mapping[str, Any]) -> CallEntry | None:
        """``take()`` for a process started before its stdin is written (``actual``'s
        ``input`` is the head's); :meth:`stdin_differs` follows once it is."""

    def stdin_differs(self, entry: CallEntry, written: bytes) -> CallEntry | None:
        """A process taken before its stdin was written wrote another stdin than
        ``entry``'s: the recorded call to answer it instead, or ``None`` (the difference
        is the boundary's to report)."""

    def served(self, entry: CallEntry) -> None:
        """Count ``entry`` as served; virtual time moves to the end of its call."""

    def clock_at(self, entry: CallEntry) -> None:
        """Move virtual time to the start of a recorded call."""

    def queue(self, boundary: str) -> deque[CallEntry] | None:
        """The calling worker's queue of recorded calls of ``boundary``."""

    def serve_head(self, queue: deque[CallEntry], head: CallEntry) -> None:
        """Take ``head`` off ``queue`` and count it served (see ``ReplayEngine``)."""

    def took(self, entry: CallEntry) -> None:
        """Note that the calling worker took ``entry``, the head of its queue."""

    def payload(
        self, entry: CallEntry, stored: Payload | msgspec.Raw, field: str, *, text: bool
    ) -> Any:
        """A recorded payload as served today."""

    def stored(self, entry: CallEntry, value: Payload | msgspec.Raw, field: str) -> Payload:
        """A process call's output as stored, for either form of the entry."""

    def unanswered(self, boundary: str, what: str) -> UnrecordedCallError:
        """The error to raise for a call with no recorded answer."""

    def mismatch(self, kind: MismatchKind, **fields: Any) -> None:
        """Report a mismatch found by the boundary."""

    def wait_turn(self, name: str, boundary: str, seq: int) -> None:
        """Wait for the recorded turn of verify-boundary call ``seq``."""

    def wait_order_end(self, name: str) -> None:
        """Wait until every recorded call of verify boundary ``name`` has run."""

    def turn_done(self, name: str, seq: int) -> None:
        """Verify-boundary call ``seq`` has run."""

    def raw(self, value: Any) -> Any:
        """``value`` as JSON data, not scrubbed."""

    def data(self, value: Any) -> Any:
        """``value`` as JSON data scrubbed as at record time."""

    def verifies(self, boundary: str) -> None:
        """Note that ``boundary`` runs for real (a verify boundary)."""

    def add_call(self, entry: CallEntry) -> None:
        """Update mode: add a verify call the tape did not have, made for real just now."""

    def worker_crashed(
        self, exc: BaseException, frame: str | None = None, origin: ErrorOrigin = "thread"
    ) -> None:
        """Report an exception that ended the calling worker (its thread, or a future or
        task nobody read): the worker's recorded crash reproduced, or a mismatch."""

    def unseen_process(self, event: str, command: str, where: str) -> None:
        """Report a process started outside the interception (audit ``event``) at
        ``where``: a warning, or in strict mode a mismatch (raised)."""
