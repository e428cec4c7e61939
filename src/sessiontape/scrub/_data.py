"""Values made JSON-ready for the tape: user data, type names and exceptions.

:func:`to_data` turns what an application passes through a boundary (dataclasses, attrs
classes, msgspec Structs, enums, datetimes...) into JSON builtins; :func:`qualname` and
:func:`error_info` give the recorded names of types and exceptions.
"""

from __future__ import annotations

import datetime as _dt
import traceback as _traceback
from types import TracebackType
from typing import Any

import msgspec

from ..cassette import ErrorInfo

__all__ = ["Unencodable", "encodes_as", "error_info", "format_traceback", "qualname", "to_data"]


def qualname(obj_type: type) -> str:
    """``module.QualName`` of a type, the form recorded in ``result_type`` and errors."""
    module = obj_type.__module__
    if module == "builtins":
        return obj_type.__qualname__
    return f"{module}.{obj_type.__qualname__}"


def error_info(exc: BaseException, *, with_traceback: bool = True) -> ErrorInfo:
    """An :class:`ErrorInfo` for an exception."""
    tb: str | None = None
    if with_traceback and exc.__traceback__ is not None:
        tb = "".join(_traceback.format_exception(type(exc), exc, exc.__traceback__))
    return ErrorInfo(type=qualname(type(exc)), message=str(exc), traceback=tb)


def format_traceback(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> str:
    """The formatted traceback of an exception."""
    return "".join(_traceback.format_exception(exc_type, exc, tb))


class Unencodable(Exception):
    """A value has no JSON form; ``to_data`` records its repr instead."""


def _enc_hook(obj: Any) -> Any:
    # datetime subclasses (freezegun's FakeDatetime) and other oddities.
    if isinstance(obj, _dt.datetime):
        return _dt.datetime.fromisoformat(obj.isoformat())
    if isinstance(obj, _dt.date):
        return _dt.date.fromisoformat(obj.isoformat())
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    raise Unencodable(type(obj).__name__)


def to_data(obj: Any) -> Any:
    """``obj`` as JSON-ready builtins (dataclasses, attrs, Structs, enums, datetimes...).

    Raises :class:`Unencodable` naming the first type that has no JSON form.
    """
    try:
        return msgspec.to_builtins(obj, enc_hook=_enc_hook, str_keys=True)
    except Unencodable:
        raise
    except (TypeError, ValueError) as exc:
        raise Unencodable(str(exc)) from None


_ENCODER = msgspec.json.Encoder(enc_hook=_enc_hook)


def encodes_as(obj: Any, stored: Any) -> bool:
    """Whether ``obj``'s JSON form is exactly the JSON text ``stored`` (bytes-like).

    Cheaper than :func:`to_data` and a comparison: no builtins are made. Equal texts are
    equal data; unequal texts, or an ``obj`` with no JSON form, mean nothing (False), and
    the caller compares the data.
    """
    try:
        return memoryview(stored) == _ENCODER.encode(obj)
    except (Unencodable, TypeError, ValueError, OverflowError, msgspec.EncodeError):
        return False
