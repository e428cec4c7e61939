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
"""

from __future__ import annotations

from ._fixture import pytest_runtest_call, pytest_runtest_makereport, tape
from ._items import (
    CassetteFile,
    CassetteItem,
    pytest_collect_file,
    pytest_collection_finish,
    pytest_runtest_teardown,
)
from ._options import REPORT_PROPERTY, RecordMode, pytest_addoption
from ._run import pytest_configure, pytest_report_header
from ._sources import pytest_ignore_collect

__all__ = [
    "REPORT_PROPERTY",
    "CassetteFile",
    "CassetteItem",
    "RecordMode",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_collection_finish",
    "pytest_configure",
    "pytest_ignore_collect",
    "pytest_report_header",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_runtest_teardown",
    "tape",
]
