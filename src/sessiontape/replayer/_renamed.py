"""A worker's own name in a request, read as another worker's (chaos replay only).

Requests often name the worker that makes them (``{"worker": "worker-2", "task": "t1"}``
to an agent, ``claim('t1', 'worker-2')``, ``git commit -m "t1 by worker-2"``). Under a
schedule, worker-2 may ask about the task worker-1 had in production; the recorded call
that answers it then names worker-1. So, when a request is matched against another
worker's recorded calls, the asking worker's name is read as the recording worker's:
each whole occurrence of it in a string of the request (not inside a longer name:
``worker-1`` is not in ``worker-10``) is replaced by the recording worker's name before
the comparison. A saved schedule writes such a call back with the asking worker's name
(the reverse replacement on the recorded request), so that a plain replay of it matches.

Nothing else is renamed: a request that differs in anything but the worker's name still
matches nothing, and a plain replay never renames.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["REQUEST_FIELDS", "renamed"]

#: The fields of a recorded call's line that hold its request (``request_of``'s keys, as
#: stored): what a saved schedule renames.
REQUEST_FIELDS: Final = ("args", "kwargs", "argv", "cwd", "env", "input")


@functools.lru_cache(maxsize=256)
def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")


def renamed(value: Any, old: str, new: str) -> Any:
    """``value`` (JSON data: dicts, lists, strings...) with each whole occurrence of the
    worker name ``old`` in its strings (keys included) written ``new``; ``value`` itself
    when nothing changed."""
    if old == new:
        return value
    return _walk(value, _pattern(old), new)


def _walk(value: Any, pattern: re.Pattern[str], new: str) -> Any:
    if isinstance(value, str):
        # A replacement function: ``new`` is taken literally (no group references).
        return pattern.sub(lambda _: new, value) if pattern.search(value) else value
    if isinstance(value, Mapping):
        items = {_walk(k, pattern, new): _walk(v, pattern, new) for k, v in value.items()}
        return value if items == value else items
    if isinstance(value, (list, tuple)):
        walked = [_walk(v, pattern, new) for v in value]
        return value if walked == list(value) else walked
    return value
