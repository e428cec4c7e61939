"""The error of the reduction engines: what they cannot do, and what to do instead."""

from __future__ import annotations

from .._errors import SessiontapeError

__all__ = ["ReduceError"]


class ReduceError(SessiontapeError):
    """``shrink`` or a corpus survey cannot go on: an input it must refuse (a tape whose
    replay passes, an output that is not a cassette), or replay workers that could not
    start. The message says which, and what to do."""
