"""The pytest plugin: the ``tape`` fixture, cassettes as test items, and the options.

Registered through the ``pytest11`` entry point. Everything it adds lives in one option
group, ``sessiontape``: the two headline flags ``--record-session [DIR]`` and
``--replay PATH``, and ``--sessiontape-*`` for the rest; each has an ini twin in
``[tool.pytest.ini_options]`` (the command line wins).

Three ways in:

* the ``tape`` fixture records a test's session to ``DIR/<module>/<test>.jsonl`` the first
  time and replays it afterwards (record modes ``once``, ``none``, ``all``, ``new``);
* ``pytest cassettes/`` or ``pytest --replay PATH`` turns every cassette into a test item,
  replayed through the project's ``sessiontape_replay`` hook (in ``conftest.py``);
* ``--sessiontape-report PATH`` writes the JSON report of every replay, merged across
  pytest-xdist workers.

Every pytest run of everyone who has sessiontape installed imports this module, so it
holds only what such a run needs: the options (``_options``), the ``sessiontape`` marker,
the ``tape`` fixture's declaration, the mirror of the project's ``sessiontape_*`` hooks
(``_mirror``), a look at each collected file's suffix, and a look at each failure. The
rest (``_run.activate``) comes in when the run uses sessiontape: an option or ini setting,
a project hook, a ``tape`` fixture, a cassette collected. A run that uses none of them
imports no other module of sessiontape and has none of its per-test hooks.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._mirror import Mirror
from ._options import (
    ACTIVE_TAPE,
    MARKER_LINE,
    REPORT_PROPERTY,
    in_use,
    pytest_addoption,
)

if TYPE_CHECKING:
    from ..tape import Tape
    from ._items import CassetteFile

__all__ = [
    "REPORT_PROPERTY",
    "CassetteFile",
    "CassetteItem",
    "RecordMode",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_configure",
    "pytest_runtest_makereport",
    "tape",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_LINE)
    mirror = Mirror.install(config)
    if mirror.found or in_use(config):
        from ._run import activate

        activate(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> CassetteFile | None:
    # A `.jsonl` file may be a cassette; so may a path named on the command line (whatever
    # its suffix) or chosen by a shard or a store. Anything else is not looked at.
    if (
        file_path.suffix == ".jsonl"
        or parent.session.isinitpath(file_path)
        or bool(parent.config.getoption("sessiontape_replay", None))
    ):
        from ._items import collect_cassette

        return collect_cassette(file_path, parent)
    return None


@pytest.fixture
def tape(request: pytest.FixtureRequest) -> Iterator[Tape]:
    """A :class:`sessiontape.Tape` for this test: replaying its cassette, or recording it.

    The cassette is ``<cassette dir>/<module>/<test>.jsonl`` or the marker's ``cassette=``.
    Record mode ``once`` (the default) replays an existing cassette and records a missing
    one; under CI a missing cassette fails instead. Wire the code under test through the
    tape; a replay that diverged fails the test, when its function returns, with the
    report as the message.
    """
    from ._fixture import tape_fixture

    yield from tape_fixture(request)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A failure that concerns sessiontape (a test with a tape, or a sessiontape error)
    gets sessiontape's frames hidden and the replay's report added (``_fixture``)."""
    excinfo = call.excinfo
    if excinfo is None:
        return
    if ACTIVE_TAPE not in item.stash:
        # Without a tape, only a sessiontape error concerns us; a run that never imported
        # sessiontape's errors cannot have raised one.
        errors = sys.modules.get("sessiontape._errors")
        if errors is None or not excinfo.errisinstance(errors.SessiontapeError):
            return
    from ._fixture import report_failure

    report_failure(item, call)


def __getattr__(name: str) -> Any:
    # The classes are imported when named, not by every pytest run (PEP 562).
    if name in ("CassetteFile", "CassetteItem"):
        from . import _items

        return getattr(_items, name)
    if name == "RecordMode":
        from ._settings import RecordMode

        return RecordMode
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
