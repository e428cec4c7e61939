"""The run: the plugin configured for one pytest run, its header line, and the reports.

The ``sessiontape_*`` hooks live in sessiontape's own plugin manager (pytest only registers
``pytest_*`` implementations), so the run mirrors every conftest and plugin pytest
registers into it, and writes ``--sessiontape-report`` at the end, merged across xdist.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pluggy
import pytest

from .. import _hooks
from .._errors import StoreWarning
from ._chaos import chaos_header, configure_chaos
from ._options import (
    MARKER,
    REPORT_PROPERTY,
    REWRITES_PROPERTY,
    SETTINGS,
    Settings,
    read_header,
    recorded_by_fixture,
    run_settings,
    shown_path,
)
from ._sources import RESOLVED, resolve_replay

if TYPE_CHECKING:
    from ..report import ReplayReport, Rewrite

__all__ = ["attach_report", "pytest_configure", "pytest_report_header"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(cassette=None, mode=None, strict=None, noise=None, roots=None): "
        "settings of the `tape` fixture for this test: cassette path (relative to the "
        "cassette dir), record mode (once, none, all, new), strict replay, noise masks, "
        "path roots.",
    )
    settings = Settings.from_config(config)
    config.stash[SETTINGS] = settings
    if settings.replay:
        resolved = resolve_replay(settings)
        config.stash[RESOLVED] = resolved
        if not hasattr(config, "workerinput"):  # once per run: xdist's workers resolve too
            for message in resolved.warnings:
                config.issue_config_time_warning(StoreWarning(message), stacklevel=2)
        # Collect exactly the cassettes asked for, not the testpaths; paths given as
        # arguments as well are kept.
        if config.args_source is pytest.Config.ArgsSource.ARGS:
            config.args = [*config.args, *resolved.paths]
        else:
            config.args = list(resolved.paths)
    configure_chaos(config)
    run = _RunPlugin(config, settings)
    # A cleanup runs even when configuring fails later (a conftest with a bad hook
    # signature): the outer run's hooks must come back whatever happens here.
    config.add_cleanup(run.teardown)
    config.pluginmanager.register(run, _RunPlugin.NAME)
    if settings.unused:
        from ._unused import UnusedPlugin  # loads the cassette format: only when asked

        config.pluginmanager.register(UnusedPlugin(config), UnusedPlugin.NAME)
    run.configured = True


def pytest_report_header(config: pytest.Config) -> list[str]:
    settings = run_settings(config)
    mode = "all (--record-session)" if settings.record_session else settings.mode.value
    cassettes = shown_path(settings.cassette_dir, config).replace(os.sep, "/").rstrip("/") + "/"
    lines = [f"sessiontape: mode={mode}, cassettes={cassettes}, strict={settings.strict}"]
    chaos = chaos_header(config)
    if chaos is not None:
        lines.append(chaos)
    resolved = config.stash.get(RESOLVED, None)
    if resolved is not None and resolved.header:
        return lines + list(resolved.header)
    for value in settings.replay:
        path = Path(value)
        if path.is_dir():
            from ..cassette import is_cassette

            count = sum(
                1 for p in path.rglob("*.jsonl") if is_cassette(p) and not recorded_by_fixture(p)
            )
            lines.append(f"replay: {value} ({count} cassettes)")
        else:
            header = read_header(path)
            run = header.run_id if header is not None else "?"
            lines.append(f"replay: {value} (run {run})")
    return lines


class _RunPlugin:
    """Per-run state: the ``sessiontape_*`` hooks mirrored from pytest, and the reports.

    Registered in ``pytest_configure`` and removed in ``pytest_unconfigure``, so nothing
    outlives its run. Runs nest (pytester runs pytest inside a test), and the sessiontape
    plugin manager is process-wide: an inner run takes the outer run's conftest hooks out
    of it while it runs and puts them back when it ends.
    """

    NAME: Final = "sessiontape-run"
    #: The runs configured in this process, innermost last.
    _active: list[_RunPlugin] = []  # noqa: RUF012 - shared on purpose, see above

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.reports: list[dict[str, Any]] = []
        #: What updates and live re-records changed, one dict per replayed tape.
        self.rewrites: list[dict[str, Any]] = []
        #: The end-of-run line about tapes with pending changes (``None``: none).
        self.pending_line: str | None = None
        self._mirrored: list[tuple[object, str | None]] = []
        #: Set once registered: the plugins registered before are all replayed by then.
        self.configured = False
        if self._active:
            self._active[-1]._suspend()
        self._active.append(self)

    def pytest_plugin_registered(self, plugin: object, plugin_name: str | None) -> None:
        # pytest calls this for every plugin and conftest, the earlier ones included (the
        # hook is historic), so the project's `sessiontape_*` functions reach our manager.
        # Most plugins have none: they do not create the manager (which loads the
        # `sessiontape` entry points), so a run that never uses a tape does not pay for it.
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

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Workers attach each replay's report to the item; on the xdist controller (or in
        # a plain run) the teardown report carries all of them exactly once.
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if not isinstance(value, dict):
                continue
            if name == REPORT_PROPERTY and self.settings.report is not None:
                self.reports.append(value)
            elif name == REWRITES_PROPERTY:
                self.rewrites.append(value)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """List what updates changed, the way ``syrupy --snapshot-update`` does: the
        counts first, then each change (on the xdist controller, from every worker)."""
        if hasattr(self.config, "workerinput") or not self.rewrites:
            return
        import msgspec

        from ..report import render_rewrites

        done = sorted(self.rewrites, key=lambda r: str(r.get("tape", "")))
        written = [r for r in done if r.get("written")]
        pending = [r for r in done if r.get("pending")]
        changes = sum(len(r["rewrites"]) for r in done)
        terminalreporter.section("sessiontape update")
        unwritten = len(done) - len(written) - len(pending)
        waiting = f"{len(pending)} with changes pending, " if pending else ""
        terminalreporter.write_line(
            f"{len(written)} tape(s) rewritten, {waiting}{unwritten} not written; "
            f"{changes} change(s)"
        )
        if pending:
            # One line at the end of the run: how many tapes wait for a reviewer, and
            # the command that reviews them (every pending file under this folder).
            self.pending_line = (
                f"sessiontape: {len(pending)} tape(s) with pending changes; review them: "
                "sessiontape review"
            )
        for r in done:
            tape = shown_path(Path(str(r["tape"])), self.config)
            rewrites = [
                msgspec.structs.replace(msgspec_convert(x), tape=tape) for x in r["rewrites"]
            ]
            target = r.get("written")
            shown = shown_path(Path(str(target)), self.config) if target else None
            proposed = r.get("pending")
            beside = shown_path(Path(str(proposed)), self.config) if proposed else None
            for line in render_rewrites(rewrites, shown, beside):
                terminalreporter.write_line(line)
        if self.pending_line is not None:
            terminalreporter.write_line(self.pending_line, yellow=True, bold=True)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        target = self.settings.report
        if target is None or hasattr(self.config, "workerinput"):
            return
        reports = sorted(self.reports, key=lambda r: str(r.get("nodeid", "")))
        from ..cassette import write_private_file

        target.parent.mkdir(parents=True, exist_ok=True)
        # Recorded production data: 0600 like every file sessiontape writes, and whole
        # (a temporary file renamed over the old receipt) for the tools that read it back.
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        write_private_file(temporary, (json.dumps(reports, indent=2) + "\n").encode())
        os.replace(temporary, target)

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


def msgspec_convert(value: Any) -> Rewrite:
    """A rewrite as it came back through a user property (plain data)."""
    import msgspec

    from ..report import Rewrite

    return msgspec.convert(value, type=Rewrite)


def attach_report(
    item: pytest.Item, report: ReplayReport, *, chaos: dict[str, Any] | None = None
) -> None:
    """Hand the report to the run that writes ``--sessiontape-report`` (maybe over xdist);
    a chaos schedule's result goes with it as ``chaos``, and what an update changed to
    the run that lists it."""
    if run_settings(item.config).unused:
        from ._unused import UNCONSUMED_PROPERTY, unconsumed_property

        unconsumed = unconsumed_property(report)
        if unconsumed is not None:
            item.user_properties.append((UNCONSUMED_PROPERTY, unconsumed))
    if report.rewrites:
        from ..report import jsonable

        item.user_properties.append(
            (
                REWRITES_PROPERTY,
                {
                    "nodeid": item.nodeid,
                    "tape": report.cassette,
                    "written": report.rewritten_to,
                    "pending": report.pending_to,
                    "rewrites": [jsonable(r) for r in report.rewrites],
                },
            )
        )
    if run_settings(item.config).report is None:
        return
    receipt = {"nodeid": item.nodeid, **report.to_dict()}
    if chaos is not None:
        receipt["chaos"] = chaos
    item.user_properties.append((REPORT_PROPERTY, receipt))
