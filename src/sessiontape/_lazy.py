"""Lazy re-exports: a package front whose names are imported on first access.

A front (``sessiontape/__init__.py``, ``tape/__init__.py``) keeps a plain table, each public
name and the module (relative to the package) that defines it, and hands it to
:func:`exports`, which returns the module's ``__getattr__`` and ``__dir__`` (PEP 562). A
name is imported the first time it is read and then stored in the package, so the next
read is a plain attribute. The front's ``TYPE_CHECKING`` block imports the same names for
mypy and IDEs; ``tests/test_architecture.py`` checks that the two agree and that the
table follows the layering rules like any import.

First use may come from many threads at once (worker threads entering
``sessiontape.worker(...)`` together). A module another thread is still importing is
already in ``sys.modules``, half made, so the name is never looked up there: it is
always imported through the import system (``__import__``), which waits on the module's
import lock until the other thread has finished it, and only then read
(``tests/test_first_use.py``).

Like ``_time.py``, this module imports nothing that a bare interpreter has not loaded.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["exports"]


def _resolve(package: str, relative: str) -> str:
    """``relative`` (``"._api"``, ``"..cassette"``) as an absolute module name."""
    name = relative.lstrip(".")
    parts = package.split(".")
    base = parts[: len(parts) - (len(relative) - len(name) - 1)]
    return ".".join([*base, name]) if name else ".".join(base)


def exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the front ``package``, which re-exports ``table``.

    ``table`` maps each name to the module defining it, relative to ``package`` as in a
    ``from`` import (``"._api"``, ``".cassette"``, ``"..cassette"``).
    """

    def __getattr__(name: str) -> object:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        qualified = _resolve(package, where)
        # Never sys.modules.get(): it hands out a module another thread is still
        # importing. __import__ returns once the module is complete (it waits on the
        # module's import lock), and costs one lookup when it already was.
        __import__(qualified)
        value = getattr(sys.modules[qualified], name)
        # Stored in the package: from now on the name is found without this function.
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__
