"""The ``sessiontape`` pluggy plugin manager, inside pytest and outside it.

pytest registers only hook implementations named ``pytest_*`` in its own manager, so the
``sessiontape_*`` hooks live in this separate manager. The pytest plugin mirrors every
module pytest registers (conftest files, plugins) into it; outside pytest, plugins come
from the ``sessiontape`` entry-point group.
"""

from __future__ import annotations

import inspect
import threading
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import pluggy

if TYPE_CHECKING:
    from .replayer import Matcher, Noise

__all__ = [
    "PROJECT",
    "custom_matcher",
    "error_classifier",
    "get_plugin_manager",
    "hookimpl",
    "implements_hooks",
    "invariant_hook",
    "noise",
    "register",
    "scrub_functions",
    "unregister",
]

PROJECT: Final = "sessiontape"
hookimpl = pluggy.HookimplMarker(PROJECT)


class _PluginManager(pluggy.PluginManager):
    """Accepts unmarked ``sessiontape_*`` functions, as pytest does for ``pytest_*``."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> pluggy.HookimplOpts | None:
        if not name.startswith("sessiontape_"):
            return None
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is not None:
            return opts
        if not inspect.isroutine(getattr(plugin, name, None)):
            return None
        return {
            "wrapper": False,
            "hookwrapper": False,
            "optionalhook": False,
            "tryfirst": False,
            "trylast": False,
            "specname": None,
        }


_lock = threading.Lock()
_manager: _PluginManager | None = None


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide manager, created on first use with entry-point plugins loaded."""
    global _manager
    with _lock:
        if _manager is None:
            # Imported with the manager: the pytest plugin's mirror imports this module in
            # every run, and most runs never create it.
            from . import _hookspecs

            pm = _PluginManager(PROJECT)
            pm.add_hookspecs(_hookspecs)
            pm.load_setuptools_entrypoints(PROJECT)
            _manager = pm
        return _manager


def implements_hooks(plugin: Any) -> bool:
    """Whether ``plugin`` (a module or object) has anything named like a ``sessiontape_*``
    hook. Cheap: it does not create the plugin manager, and the names are searched at C
    speed (pytest registers dozens of plugins on every run, each with dozens of names)."""
    names = vars(plugin) if isinstance(plugin, types.ModuleType) else dir(plugin)
    try:
        joined = "\0".join(names)
    except TypeError:  # a name that is not a str (a module's dict may hold anything)
        return any(isinstance(n, str) and n.startswith(_PREFIX) for n in names)
    return joined.startswith(_PREFIX) or "\0" + _PREFIX in joined


#: What every hook's name starts with.
_PREFIX: Final = "sessiontape_"


def register(plugin: Any, name: str | None = None) -> None:
    """Register ``plugin`` (a module or object) if it implements any hook and is new."""
    if not implements_hooks(plugin):
        return
    pm = get_plugin_manager()
    if pm.is_registered(plugin):
        return
    if name is not None and pm.get_plugin(name) is not None:
        return
    pm.register(plugin, name)


def unregister(plugin: Any) -> None:
    """Unregister ``plugin`` if registered."""
    pm = get_plugin_manager()
    if pm.is_registered(plugin):
        pm.unregister(plugin)


def scrub_functions() -> list[Callable[[str], str]]:
    """Every function returned by ``sessiontape_scrubbers`` implementations."""
    out: list[Callable[[str], str]] = []
    for result in get_plugin_manager().hook.sessiontape_scrubbers():
        out.extend(result or ())
    return out


def noise() -> Noise:
    """The noise masks and patterns every ``sessiontape_noise`` implementation returns."""
    from .replayer import Noise  # the replay engine, imported when a replay needs it

    out = Noise()
    for value in get_plugin_manager().hook.sessiontape_noise():
        if value is not None:
            out = out | Noise.coerce(value)
    return out


def custom_matcher() -> Matcher | None:
    """The ``sessiontape_match`` hook, or ``None`` when nothing implements it (fast path)."""
    hook = get_plugin_manager().hook.sessiontape_match
    if not hook.get_hookimpls():
        return None

    def match(boundary: str, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool | None:
        result: bool | None = hook(boundary=boundary, expected=expected, actual=actual)
        return result

    return match


def error_classifier() -> Callable[[Any], str | None] | None:
    """The ``sessiontape_classify_error`` hook, or ``None`` when nothing implements it."""
    hook = get_plugin_manager().hook.sessiontape_classify_error
    if not hook.get_hookimpls():
        return None

    def classify(entry: Any) -> str | None:
        answer: str | None = hook(entry=entry)
        return answer

    return classify


def invariant_hook(tape: Any) -> Callable[[], Any] | None:
    """The ``sessiontape_invariant`` hook bound to ``tape`` and its replayed stores, or
    ``None`` when nothing implements it (then nothing is checked)."""
    hook = get_plugin_manager().hook.sessiontape_invariant
    if not hook.get_hookimpls():
        return None

    def sessiontape_invariant() -> Any:
        return hook(tape=tape, stores=tape.stores)

    return sessiontape_invariant
