"""The zoo matrix's fixtures, its selection and its summary line.

The whole matrix runs with ``SESSIONTAPE_ZOO=full`` (``nox -s zoo``); otherwise only the
fast slice (``matrix.FAST``, marked ``zoo_fast``) is collected and the other cells are
deselected, so the normal suite stays quick.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .harness import Shelf
from .matrix import counts

FULL = os.environ.get("SESSIONTAPE_ZOO") == "full"
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if FULL:
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        is_slow = item.get_closest_marker("zoo") and not item.get_closest_marker("zoo_fast")
        (drop if is_slow and item.path.is_relative_to(HERE) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    size = counts()
    terminalreporter.write_line(
        f"zoo matrix: {size['programs']} programs x {size['capabilities']} capabilities = "
        f"{size['cells']} cells ({size['not_applicable']} not applicable; {size['xfail']} "
        f"fail today for a known defect, {size['flaky']} some of the time; {size['fast']} in "
        "the fast slice); "
        + ("the whole matrix ran" if FULL else "SESSIONTAPE_ZOO=full (nox -s zoo) runs all")
    )


@pytest.fixture(scope="session")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Shelf:
    return Shelf(tmp_path_factory.mktemp("zoo-shelf"))
