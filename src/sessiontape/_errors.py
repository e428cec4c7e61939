"""sessiontape's exception and warning hierarchy.

Every error carries its data as attributes, so a caller (or the pytest plugin) can act on
it without parsing the message; every message says what went wrong, where, and what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._report import ReplayReport

__all__ = [
    "CassetteError",
    "RecordingWarning",
    "ReplayMismatch",
    "SessiontapeError",
    "TruncatedPayloadError",
    "UsageError",
]


class SessiontapeError(Exception):
    """Base class of every error sessiontape raises."""


class UsageError(SessiontapeError, ValueError):
    """The API was called in a way that cannot work (wrong mode, bad option value)."""


class CassetteError(SessiontapeError):
    """A cassette file cannot be read: it names the file, the line and what was wrong."""

    def __init__(self, message: str, *, path: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
        self.reason = message


class TruncatedPayloadError(SessiontapeError):
    """Replay needed a payload the cassette only holds as a digest."""

    def __init__(self, *, seq: int, field: str, digest: str) -> None:
        super().__init__(
            f"seq {seq}: the recorded {field} was stored only as a digest ({digest}) because it "
            "was larger than max_inline_bytes or the level was not 'full'; re-record with "
            "level='full' and a larger max_inline_bytes to replay it."
        )
        self.seq = seq
        self.field = field
        self.digest = digest


class ReplayMismatch(SessiontapeError, AssertionError):
    """Strict replay stopped at the first divergence; ``report`` holds the details."""

    def __init__(self, report: ReplayReport) -> None:
        super().__init__(report.render())
        self.report = report


class RecordingWarning(UserWarning):
    """Recording failed; the application goes on and the cassette keeps what was written."""
