"""``--sessiontape-unused``: the fixture cassettes no collected test owns any more, and the
recorded calls each test left unconsumed. It lists; it never deletes.

A ``tape`` fixture's cassette names the test that recorded it (its header's entrypoint is
the test's node id), so a cassette whose test is not among the collected items is owned by
no test: renamed, moved or deleted. Collection is exact under pytest-xdist too: every
worker collects every item, and each hands its node ids to the controller
(``workeroutput``), which lists the cassettes once, at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

from ..cassette import is_cassette
from ..report import MismatchKind, ReplayReport
from ._options import fixture_nodeid, read_header, shown_path
from ._settings import SETTINGS

__all__ = ["UNCONSUMED_PROPERTY", "UnusedPlugin", "unconsumed_property"]

UNCONSUMED_PROPERTY: Final = "sessiontape_unconsumed"
_WORKER_KEY: Final = "sessiontape_collected"


def unconsumed_property(report: ReplayReport) -> dict[str, Any] | None:
    """The recorded calls a replay left unconsumed, as a user property's value."""
    calls = [
        {"seq": m.seq, "worker": m.worker, "boundary": m.boundary, "message": m.message}
        for m in report.mismatches
        if m.kind is MismatchKind.UNCONSUMED
    ]
    return {"tape": report.cassette, "calls": calls} if calls else None


class UnusedPlugin:
    """Gathers the collected node ids and the unconsumed calls; lists what nobody uses."""

    NAME: Final = "sessiontape-unused"

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.collected: set[str] = set()
        self.workers_reported = False
        self.unconsumed: list[tuple[str, dict[str, Any]]] = []
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(_XdistHandoff(self), f"{self.NAME}-xdist")

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        self.collected.add(item.nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == UNCONSUMED_PROPERTY and isinstance(value, dict):
                self.unconsumed.append((report.nodeid, value))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_WORKER_KEY] = sorted(self.collected)

    def unowned(self) -> list[Path]:
        """The fixture cassettes under the cassette directory no collected test owns."""
        root = self.config.stash[SETTINGS].cassette_dir  # set: the run registered this
        if not root.is_dir():
            return []
        found = []
        for path in sorted(root.rglob("*.jsonl")):
            if not path.is_file() or not is_cassette(path):
                continue
            owner = fixture_nodeid(read_header(path))
            if owner is not None and owner not in self.collected:
                found.append(path)
        return found

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        unowned = self.unowned()
        terminalreporter.section("sessiontape unused")
        terminalreporter.write_line(
            f"{len(unowned)} fixture cassette(s) no collected test owns; "
            f"{len(self.unconsumed)} test(s) left recorded calls unconsumed "
            "(listed, nothing deleted)"
        )
        for path in unowned:
            owner = fixture_nodeid(read_header(path))
            terminalreporter.write_line(
                f"  {shown_path(path, self.config)} (recorded by {owner}, not collected)"
            )
        for nodeid, value in sorted(self.unconsumed, key=lambda pair: pair[0]):
            for call in value["calls"]:
                terminalreporter.write_line(
                    f"  {nodeid}: seq {call['seq']} ({call['worker']}, {call['boundary']}) "
                    f"unconsumed: {call['message']}"
                )


class _XdistHandoff:
    """The controller's side of the handoff (registered only when xdist is present)."""

    def __init__(self, unused: UnusedPlugin) -> None:
        self._unused = unused

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        collected = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
        if collected:
            self._unused.collected.update(collected)
            self._unused.workers_reported = True
