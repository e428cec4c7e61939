"""A run that uses sessiontape: the plugin brought in, its header line, and the reports.

The entry point registers next to nothing (see ``__init__``); :func:`activate` brings in
the rest, once per run: in ``pytest_configure`` when an option, an ini setting or a
project hook asks for sessiontape, or else the first time a ``tape`` fixture or a collected
cassette needs the run's settings. It resolves the settings and ``--replay``, and
registers what the options ask for: the reports (``--sessiontape-report``, the update
summary), the header line, chaos, ``--sessiontape-unused``, the folders' filter of a shard
or a store.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from .._errors import StoreWarning
from ._chaos import chaos_header, configure_chaos
from ._options import (
    FORK_PROPERTY,
    REPORT_PROPERTY,
    REWRITES_PROPERTY,
    read_header,
    recorded_by_fixture,
    shown_path,
)
from ._settings import SETTINGS, Settings
from ._sources import RESOLVED, configure_sources, resolve_replay

if TYPE_CHECKING:
    from ..report import ReplayReport, Rewrite

__all__ = ["activate", "attach_report", "run_settings"]


def run_settings(config: pytest.Config) -> Settings:
    """The run's settings; the first call of a run that did not ask for sessiontape by
    an option (a ``tape`` fixture, a cassette collected) brings the plugin in now."""
    settings = config.stash.get(SETTINGS, None)
    return activate(config) if settings is None else settings


def activate(config: pytest.Config) -> Settings:
    """Bring sessiontape into this run (once); the run's settings."""
    settings = config.stash.get(SETTINGS, None)
    if settings is not None:
        return settings
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
        configure_sources(config, resolved)
    configure_chaos(config)
    run = _RunPlugin(config, settings)
    config.add_cleanup(run.teardown)
    config.pluginmanager.register(run, _RunPlugin.NAME)
    if settings.unused:
        from ._unused import UnusedPlugin  # loads the cassette format: only when asked

        config.pluginmanager.register(UnusedPlugin(config), UnusedPlugin.NAME)
    return settings


class _RunPlugin:
    """Per-run state of a run that uses sessiontape: its header line, and the reports
    and rewrites the replays hand over (from every xdist worker, on the controller).

    Registered by :func:`activate`, removed when the run ends, so nothing outlives it.
    """

    NAME: Final = "sessiontape-run"

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.reports: list[dict[str, Any]] = []
        #: What updates and live re-records changed, one dict per replayed tape.
        self.rewrites: list[dict[str, Any]] = []
        #: What each fork did, one summary line per forked tape.
        self.forks: list[str] = []
        #: The end-of-run line about tapes with pending changes (``None``: none).
        self.pending_line: str | None = None

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        settings = self.settings
        mode = "all (--record-session)" if settings.record_session else settings.mode.value
        shown = shown_path(settings.cassette_dir, config).replace(os.sep, "/").rstrip("/")
        lines = [f"sessiontape: mode={mode}, cassettes={shown}/, strict={settings.strict}"]
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
                    1
                    for p in path.rglob("*.jsonl")
                    if is_cassette(p) and not recorded_by_fixture(p)
                )
                lines.append(f"replay: {value} ({count} cassettes)")
            else:
                header = read_header(path)
                run = header.run_id if header is not None else "?"
                lines.append(f"replay: {value} (run {run})")
        return lines

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
            elif name == FORK_PROPERTY:
                self.forks.append(str(value["line"]))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """List what updates changed, the way ``syrupy --snapshot-update`` does: the
        counts first, then each change (on the xdist controller, from every worker); and
        what each fork did, one line each."""
        if hasattr(self.config, "workerinput"):
            return
        if self.forks:
            terminalreporter.section("sessiontape fork")
            for line in sorted(self.forks):
                terminalreporter.write_line(line)
        if not self.rewrites:
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
        """Leave the run (idempotent)."""
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
    if report.fork is not None:
        import msgspec

        fork = report.fork
        shown = msgspec.structs.replace(
            fork,
            tape=shown_path(Path(fork.tape), item.config),
            written=shown_path(Path(fork.written), item.config) if fork.written else None,
        )
        item.user_properties.append((FORK_PROPERTY, {"line": shown.line()}))
    if run_settings(item.config).report is None:
        return
    receipt = {"nodeid": item.nodeid, **report.to_dict()}
    if chaos is not None:
        receipt["chaos"] = chaos
    item.user_properties.append((REPORT_PROPERTY, receipt))
