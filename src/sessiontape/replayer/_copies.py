"""Finding the copies of the time functions that modules hold (``from time import sleep``).

Patching the ``time`` module does not reach them, so every loaded module is searched; this
module keeps that search cheap on every replay after the first (see :class:`Copies`).
"""

from __future__ import annotations

import sys
import types
from typing import Any, Final

__all__ = ["COPIES", "Copies"]


class Copies:
    """Where each loaded module holds a real time object, remembered per module.

    A module's findings are kept with the size of its namespace and reused while that
    size is unchanged; imports (``from time import sleep``) add names, so a module that
    gains a copy is read again. Reassigning an existing name to a time function keeps
    the size and is missed, as it is by freezegun's own cache.

    When no module was imported or removed and no namespace changed size since the last
    look (checked at C speed: one list comparison and a ``map(len, ...)``), the copies
    found then are the answer, which keeps a replay's fixed cost to a few microseconds.
    """

    def __init__(self) -> None:
        self._cache: dict[str, tuple[object, int, tuple[tuple[str, object], ...]]] = {}
        self._key: tuple[frozenset[int], tuple[str, ...]] = (frozenset(), ())
        # The last look: sys.modules' values, their namespaces and sizes, what was found.
        self._modules: list[object] = []
        self._namespaces: list[dict[str, Any]] = []
        self._sizes: list[int] = []
        self._found: list[tuple[types.ModuleType, str, object]] = []

    def find(
        self, reals: dict[int, object], ignore: tuple[str, ...]
    ) -> list[tuple[types.ModuleType, str, object]]:
        """``(module, attribute, real object)`` for every copy in a module whose name does
        not start with one of ``ignore``."""
        key = (frozenset(reals), ignore)
        if key != self._key:  # other real objects or another ignore list: start afresh
            self._cache.clear()
            self._modules = []
            self._key = key
        # One copy, taken in C without running Python code: iterating sys.modules itself,
        # a finalizer the garbage collector runs meanwhile (an asyncio transport's
        # __del__) may import a module, and the iteration fails ("dictionary changed size
        # during iteration", seen on CPython 3.10 in CI).
        loaded = sys.modules.copy()
        modules: list[object] = list(loaded.values())
        if modules == self._modules and list(map(len, self._namespaces)) == self._sizes:
            return [c for c in self._found if c[0].__dict__.get(c[1]) is c[2]]
        namespaces: list[dict[str, Any]] = []
        found: list[tuple[types.ModuleType, str, object]] = []
        cache = self._cache
        for name, module in loaded.items():
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict):
                namespaces.append(_NO_NAMESPACE)
                continue
            namespaces.append(namespace)
            size = len(namespace)
            known = cache.get(name)
            if known is not None and known[0] is module and known[1] == size:
                copies = known[2]
            else:
                copies = self._read(name, namespace, reals, ignore)
                cache[name] = (module, size, copies)
            found.extend(
                (module, attribute, real)
                for attribute, real in copies
                if namespace.get(attribute) is real
            )
        self._modules, self._namespaces = modules, namespaces
        self._sizes = list(map(len, namespaces))
        self._found = found
        return found

    @staticmethod
    def _read(
        name: str, namespace: dict[str, Any], reals: dict[int, object], ignore: tuple[str, ...]
    ) -> tuple[tuple[str, object], ...]:
        # freezegun keeps the real objects as real_time, real_datetime...: its fakes call
        # them to answer ignored callers, so they must stay real (or the fakes recurse).
        if (
            name.startswith(ignore)
            or name.startswith("freezegun")
            or name in ("time", "datetime")
            or name.endswith(".six.moves")
        ):
            return ()
        # A snapshot: another thread may be importing into this module meanwhile.
        items = list(namespace.items())
        return tuple((attr, value) for attr, value in items if id(value) in reals)

    def forget(self, names: set[str]) -> None:
        """Drop what is known of ``names`` (modules imported while patched)."""
        for name in names:
            self._cache.pop(name, None)
        self._modules = []


_NO_NAMESPACE: Final[dict[str, Any]] = {}
#: The process-wide finder (its cache is what makes later replays cheap).
COPIES: Final = Copies()
