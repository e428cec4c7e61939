"""The project's ``sessiontape_*`` hooks, mirrored from pytest into sessiontape's manager.

pytest registers only ``pytest_*`` implementations in its own plugin manager, so the
``sessiontape_*`` hooks live in sessiontape's (``_hooks``): the mirror, registered in every
run, hands it each conftest and plugin pytest registers that implements one, so that
``sessiontape.record()`` and ``replay()`` see the project's scrubbers, noise and matchers
whoever calls them in the run. A plugin with none costs one look at its names; the
sessiontape manager (which loads the ``sessiontape`` entry points) is created only for a
plugin that has one.

Runs nest (pytester runs pytest inside a test) while sessiontape's manager is process-wide:
an inner run takes the outer run's conftest hooks out while it runs, and puts them back
when it ends.
"""

from __future__ import annotations

from typing import Final

import pluggy
import pytest

from .. import _hooks

__all__ = ["Mirror"]


class Mirror:
    """One run's mirror: registered in ``pytest_configure``, removed at unconfigure."""

    NAME: Final = "sessiontape-mirror"
    #: The runs configured in this process, innermost last.
    _active: list[Mirror] = []  # noqa: RUF012 - shared on purpose, see the module

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._mirrored: list[tuple[object, str | None]] = []
        #: Set once registered: the plugins registered before are all replayed by then.
        self.configured = False
        if self._active:
            self._active[-1]._suspend()
        self._active.append(self)

    @property
    def found(self) -> bool:
        """Whether a plugin or conftest of this run implements a ``sessiontape_*`` hook."""
        return bool(self._mirrored)

    @classmethod
    def install(cls, config: pytest.Config) -> Mirror:
        """Register a mirror for ``config`` (it sees every plugin registered before too)."""
        mirror = cls(config)
        # A cleanup runs even when configuring fails later (a conftest with a bad hook
        # signature): the outer run's hooks must come back whatever happens here.
        config.add_cleanup(mirror.teardown)
        config.pluginmanager.register(mirror, cls.NAME)
        mirror.configured = True
        return mirror

    def pytest_plugin_registered(self, plugin: object, plugin_name: str | None) -> None:
        # pytest calls this for every plugin and conftest, the earlier ones included (the
        # hook is historic), so the project's `sessiontape_*` functions reach our manager.
        if not _hooks.implements_hooks(plugin):
            return
        pm = _hooks.get_plugin_manager()
        if pm.is_registered(plugin):
            return
        try:
            _hooks.register(plugin, plugin_name)
        except pluggy.PluginValidationError as exc:
            # pluggy names the file and shows the bad definition; pytest shows a usage
            # error, or a collection error (conftests found while collecting), as bare text.
            message = f"sessiontape: {exc}"
            if self.configured:
                raise pytest.Collector.CollectError(message) from None
            raise pytest.UsageError(message) from None
        if pm.is_registered(plugin):
            self._mirrored.append((plugin, plugin_name))

    def _suspend(self) -> None:
        for plugin, _ in self._mirrored:
            _hooks.unregister(plugin)

    def _resume(self) -> None:
        # pytest has no "plugin unregistered" hook: skip what left pytest meanwhile.
        self._mirrored = [
            (plugin, name)
            for plugin, name in self._mirrored
            if self.config.pluginmanager.is_registered(plugin)
        ]
        for plugin, name in self._mirrored:
            _hooks.register(plugin, name)

    def teardown(self) -> None:
        """Take this run's hooks out and give the outer run its own back (idempotent)."""
        if self not in self._active:
            return
        self._suspend()
        self._mirrored.clear()
        innermost = self._active[-1] is self
        self._active.remove(self)
        if innermost and self._active:
            self._active[-1]._resume()
        if self.config.pluginmanager.is_registered(self):
            self.config.pluginmanager.unregister(self)
