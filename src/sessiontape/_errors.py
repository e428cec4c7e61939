"""sessiontape's exception and warning hierarchy.

Every error carries its data as attributes, so a caller (or the pytest plugin) can act on
it without parsing the message; every message says what went wrong, where, and what to do.
:class:`~sessiontape.ReplayMismatch` lives beside the report it carries
(``sessiontape.report``); every other error is here, at the bottom of the layers.

Each class says it lives in ``sessiontape`` (its ``__module__``), where users import it
from: tracebacks and pytest's summary then name ``sessiontape.UnrecordedCallError``, not
the private module, and pickle (which pytest-xdist relies on) finds the class by that name.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "PUBLIC_MODULE",
    "CassetteError",
    "RecordingWarning",
    "ReplayedError",
    "SessiontapeError",
    "StoreWarning",
    "TruncatedPayloadError",
    "UnrecordedCallError",
    "UsageError",
]


#: Where the public errors are imported from; their ``__module__``.
PUBLIC_MODULE = "sessiontape"


def _rebuild(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """Unpickle an error without calling its ``__init__`` (whose arguments may differ
    from ``args``, the formatted message)."""
    exc = cls.__new__(cls, *args)  # sets exc.args
    exc.__dict__.update(state)
    return exc


class SessiontapeError(Exception):
    """Base class of every error sessiontape raises.

    Errors carry their data as attributes and pickle with them, whatever their
    ``__init__`` takes (pytest-xdist ships errors between processes).
    """

    __module__ = PUBLIC_MODULE

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


class UsageError(SessiontapeError, ValueError):
    """The API was called in a way that cannot work (wrong mode, bad option value)."""

    __module__ = PUBLIC_MODULE


class CassetteError(SessiontapeError):
    """A cassette file cannot be read: it names the file, the line and what was wrong."""

    __module__ = PUBLIC_MODULE

    def __init__(self, message: str, *, path: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
        self.reason = message


class TruncatedPayloadError(SessiontapeError):
    """Replay needed a payload the cassette only holds as a digest."""

    __module__ = PUBLIC_MODULE

    def __init__(self, *, seq: int, field: str, digest: str) -> None:
        super().__init__(
            f"seq {seq}: the recorded {field} was stored only as a digest ({digest}) because it "
            "was larger than max_inline_bytes or the level was not 'full'; re-record with "
            "level='full' and a larger max_inline_bytes to replay it."
        )
        self.seq = seq
        self.field = field
        self.digest = digest


class UnrecordedCallError(SessiontapeError):
    """A call had no recorded answer (lenient replay goes on; the report says where)."""

    __module__ = PUBLIC_MODULE

    def __init__(self, message: str, *, boundary: str, worker: str) -> None:
        super().__init__(message)
        self.boundary = boundary
        self.worker = worker


class ReplayedError(SessiontapeError):
    """Stands in for a recorded exception whose type cannot be imported or rebuilt."""

    __module__ = PUBLIC_MODULE

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


class RecordingWarning(UserWarning):
    """Recording failed; the application goes on and the cassette keeps what was written."""

    __module__ = PUBLIC_MODULE


class StoreWarning(UserWarning):
    """A store of tapes could not be read, and its tapes were replayed from the local
    cache as the store was last listed (``-W error::sessiontape.StoreWarning`` makes
    that fail the run instead)."""

    __module__ = PUBLIC_MODULE
