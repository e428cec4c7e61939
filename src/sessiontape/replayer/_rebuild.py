"""Recorded errors and result types rebuilt as Python objects on replay, from data only.

A tape is data, not code: a recorded type name is looked up, never imported. Replay
rebuilds a recorded exception only when its type is one of

* the builtin ``Exception`` family (``ValueError``, ``OSError`` and its subclasses...),
* the :mod:`subprocess` exceptions (``CalledProcessError``, ``TimeoutExpired``,
  ``SubprocessError``),
* a type the application registered with :func:`register_type`;

anything else becomes a :class:`~sessiontape.ReplayedError` carrying the recorded type
name and message. Nothing that is not an ``Exception`` (``SystemExit``,
``KeyboardInterrupt``, ``GeneratorExit``) is ever rebuilt. A recorded result type is
used only when the application registered it (or passes ``result_type`` itself).
"""

from __future__ import annotations

import builtins
import re
import subprocess
import threading
from typing import Any, Final, TypeVar

from .._errors import ReplayedError, UsageError
from ..cassette import ErrorInfo
from ..scrub import qualname

__all__ = [
    "rebuild_error",
    "register_type",
    "registered_type",
    "resolve_result_type",
    "unregister_type",
]

T = TypeVar("T", bound=type)

_ERRNO_MESSAGE: Final = re.compile(r"^\[Errno (\d+)\] (.*?)(?:: '(.*)')?$", re.S)
_CALLED: Final = re.compile(
    r"^Command '(.*)' (?:returned non-zero exit status (-?\d+)|died with <Signals\.\w+: (\d+)>)\.$",
    re.S,
)
_TIMEOUT: Final = re.compile(r"^Command '(.*)' timed out after (\d+(?:\.\d+)?) seconds$", re.S)

#: The subprocess exceptions replay rebuilds, by their recorded names.
_SUBPROCESS: Final[dict[str, type[Exception]]] = {
    qualname(cls): cls
    for cls in (
        subprocess.SubprocessError,
        subprocess.CalledProcessError,
        subprocess.TimeoutExpired,
    )
}

_registry: dict[str, type] = {}
_lock = threading.Lock()


def register_type(cls: T) -> T:
    """Let replay rebuild recorded values of ``cls``: errors and agent result types.

    A tape names types by their qualified name (``app.errors.MergeConflict``) and replay
    never imports what a tape names; register the application's own exception and result
    types once (at import time, or in ``conftest.py``) to get them back as themselves.
    Returns ``cls``, so it also works as a class decorator.
    """
    if not isinstance(cls, type):
        raise UsageError(f"register_type() takes a class, got {cls!r}.")
    with _lock:
        _registry[qualname(cls)] = cls
    return cls


def unregister_type(cls: type) -> None:
    """Forget a type given to :func:`register_type` (a no-op for one never registered)."""
    with _lock:
        if _registry.get(qualname(cls)) is cls:
            del _registry[qualname(cls)]


def registered_type(name: str) -> type | None:
    """The registered type a recorded qualified name stands for, if any."""
    return _registry.get(name)


def _error_type(name: str) -> type[Exception] | None:
    """The exception type a recorded name may be rebuilt as (see the module docstring)."""
    if "." not in name:
        found = getattr(builtins, name, None)
    else:
        found = _SUBPROCESS.get(name) or _registry.get(name)
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return None


def _subprocess_error(cls: type[Exception], message: str) -> Exception | None:
    """``CalledProcessError``/``TimeoutExpired`` from their messages (the command as text)."""
    if issubclass(cls, subprocess.CalledProcessError):
        m = _CALLED.match(message)
        if m is None:
            return None
        code = int(m.group(2)) if m.group(2) is not None else -int(m.group(3))
        return cls(code, m.group(1))
    if issubclass(cls, subprocess.TimeoutExpired):
        m = _TIMEOUT.match(message)
        return cls(m.group(1), float(m.group(2))) if m is not None else None
    return cls(message)


def rebuild_error(info: ErrorInfo) -> Exception:
    """The recorded exception, rebuilt as well as its (allowed) type allows.

    Anything that cannot be rebuilt faithfully is a :class:`~sessiontape.ReplayedError`
    with the recorded type name and message: never an error of another type, and never
    anything that is not an ``Exception``.
    """
    cls = _error_type(info.type)
    if cls is None:
        return ReplayedError(info.type, info.message)
    try:
        if issubclass(cls, subprocess.SubprocessError):
            rebuilt = _subprocess_error(cls, info.message)
            return rebuilt if rebuilt is not None else ReplayedError(info.type, info.message)
        if issubclass(cls, OSError):
            m = _ERRNO_MESSAGE.match(info.message)
            if m is not None:
                errno_, text, filename = m.groups()
                if filename is not None:
                    return cls(int(errno_), text, filename)
                return cls(int(errno_), text)
        if issubclass(cls, KeyError) and info.message.startswith("'"):
            return cls(info.message[1:-1])
        return cls(info.message)
    except Exception:
        return ReplayedError(info.type, info.message)


def resolve_result_type(name: str) -> Any:
    """The class a recorded ``result_type`` names, if the application registered it.

    Nothing is imported: an unregistered name gives ``None`` and the result is served as
    plain data (pass ``result_type`` when wiring the agent, or register the type).
    """
    return _registry.get(name)
