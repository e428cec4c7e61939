"""Recorded errors and result types rebuilt as Python objects on replay."""

from __future__ import annotations

import builtins
import importlib
import re
from typing import Any

from .._errors import ReplayedError
from ..cassette import ErrorInfo

__all__ = ["rebuild_error", "resolve_result_type"]

_ERRNO_MESSAGE = re.compile(r"^\[Errno (\d+)\] (.*?)(?:: '(.*)')?$", re.S)


def _import_qualname(name: str) -> Any:
    """The object a recorded ``module.QualName`` names (nested classes too), or ``None``.

    A bare name is a builtin. The module part is found by walking back from the longest
    prefix that imports, since ``pkg.mod.Outer.Inner`` does not say where the module ends.
    """
    if "." not in name:
        return getattr(builtins, name, None)
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:
            continue
        try:
            for piece in parts[cut:]:
                obj = getattr(obj, piece)
        except AttributeError:
            return None
        return obj
    return None


def _resolve_type(name: str) -> type[BaseException] | None:
    found = _import_qualname(name)
    if isinstance(found, type) and issubclass(found, BaseException):
        return found
    return None


def rebuild_error(info: ErrorInfo) -> BaseException:
    """The recorded exception, rebuilt as well as its type allows."""
    cls = _resolve_type(info.type)
    if cls is None:
        return ReplayedError(info.type, info.message)
    if issubclass(cls, OSError):
        m = _ERRNO_MESSAGE.match(info.message)
        if m is not None:
            errno_, text, filename = m.groups()
            if filename is not None:
                return cls(int(errno_), text, filename)
            return cls(int(errno_), text)
    try:
        if issubclass(cls, KeyError) and info.message.startswith("'"):
            return cls(info.message[1:-1])
        return cls(info.message)
    except Exception:
        return ReplayedError(info.type, info.message)


def resolve_result_type(name: str) -> Any:
    """The class a recorded ``result_type`` names, when importable (builtins excluded)."""
    if "." not in name:
        return None
    found = _import_qualname(name)
    return found if isinstance(found, type) else None
