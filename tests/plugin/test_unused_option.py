"""``--sessiontape-unused``: cassettes no collected test owns, calls a test left unconsumed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Project, Run

XDIST = [pytest.param((), id="serial"), pytest.param(("-n", "2"), id="xdist")]

OTHER = """
import app


def test_two(tape):
    app.main(tape)


def test_three(tape):
    app.main(tape)
"""


@pytest.mark.parametrize("xdist", XDIST)
def test_lists_cassettes_whose_test_is_gone_and_deletes_nothing(
    project: Project, run: Run, pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    pytester.makepyfile(test_other=OTHER)
    run().assert_outcomes(passed=3)  # records three fixture cassettes
    pytester.makepyfile(test_other=OTHER.split("def test_three")[0])  # test_three is gone
    gone = project.cassette("test_three", "test_other")
    assert gone.exists()
    result = run("--sessiontape-unused", *xdist)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*= sessiontape unused =*",
            "1 fixture cassette(s) no collected test owns; 0 test(s) left recorded calls "
            "unconsumed (listed, nothing deleted)",
            "  cassettes/test_other/test_three.jsonl (recorded by "
            "test_other.py::test_three, not collected)",
        ]
    )
    assert gone.exists()


def test_a_deselected_test_still_owns_its_cassette(project: Project, run: Run) -> None:
    run().assert_outcomes(passed=1)
    result = run("--sessiontape-unused", "-k", "nothing_matches")
    result.stdout.fnmatch_lines(["0 fixture cassette(s) no collected test owns; *"])


@pytest.mark.parametrize("xdist", XDIST)
def test_lists_the_calls_a_test_left_unconsumed(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    run().assert_outcomes(passed=1)
    monkeypatch.setenv("APP_SHORT", "1")
    result = run("--sessiontape-unused", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "0 fixture cassette(s) no collected test owns; 1 test(s) left recorded calls "
            "unconsumed (listed, nothing deleted)",
            "  test_app.py::test_one: seq 2 (w1, process) unconsumed: the recorded call *echo "
            "done* was never made.",
        ]
    )
