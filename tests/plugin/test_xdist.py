"""The same corpus gets the same verdicts serially, over pytest-xdist, and shuffled."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Project, Run

TESTS = """
import os
import pytest
import app

@pytest.mark.parametrize("n", [1, 2, 3])
def test_app(tape, n):
    if n == 3 and os.environ.get("BREAK_THREE"):
        os.environ["APP_WORD"] = "bye"
    try:
        app.main(tape)
    finally:
        os.environ.pop("APP_WORD", None)
"""


def verdicts(result: pytest.RunResult) -> dict[str, str]:
    """nodeid -> PASSED/FAILED/ERROR, from the ``-rA`` short summary."""
    found: dict[str, str] = {}
    for line in result.outlines:
        match = re.match(r"(PASSED|FAILED|ERROR) (\S+)", line)
        if match:
            found[match.group(2)] = match.group(1)
    return found


def damage(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8").replace('"done"', '"gone"'), encoding="utf-8")


@pytest.fixture
def corpus(project: Project, pytester: pytest.Pytester) -> Project:
    pytester.makepyfile(test_app=TESTS)
    for name in ("a", "b", "c", "d"):
        project.record(f"corpus/{name}.jsonl")
    damage(project.path / "corpus/c.jsonl")
    return project


EXPECTED = {
    "corpus/a.jsonl::a": "PASSED",
    "corpus/b.jsonl::b": "PASSED",
    "corpus/c.jsonl::c": "FAILED",
    "corpus/d.jsonl::d": "PASSED",
    "test_app.py::test_app[1]": "PASSED",
    "test_app.py::test_app[2]": "PASSED",
    "test_app.py::test_app[3]": "FAILED",
}


def test_same_verdicts(corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    # Recording over two workers: each test writes its own cassette.
    run("test_app.py", "-n", "2").assert_outcomes(passed=3)
    assert sorted(p.name for p in (corpus.path / "cassettes/test_app").iterdir()) == [
        "test_app[1].jsonl",
        "test_app[2].jsonl",
        "test_app[3].jsonl",
    ]
    monkeypatch.setenv("BREAK_THREE", "1")
    serial = run("-rA")
    serial.assert_outcomes(passed=5, failed=2)
    assert verdicts(serial) == EXPECTED
    parallel = run("-rA", "-n", "2")
    parallel.assert_outcomes(passed=5, failed=2)
    assert verdicts(parallel) == EXPECTED
    parallel.stdout.fnmatch_lines(["*diverged at seq 2 (w1, process)*"])


@pytest.mark.parametrize("xdist_args", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_shuffled(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist_args: tuple[str, ...]
) -> None:
    run("test_app.py").assert_outcomes(passed=3)
    monkeypatch.setenv("BREAK_THREE", "1")
    result = run("-rA", "-p", "randomly", "--randomly-seed=2", *xdist_args)
    result.assert_outcomes(passed=5, failed=2)
    assert verdicts(result) == EXPECTED
    result.stdout.fnmatch_lines(["Using --randomly-seed=2"])
