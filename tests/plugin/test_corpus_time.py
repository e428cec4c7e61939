"""Virtual time across a corpus: set up once for a run of cassette items, real between.

Consecutive cassette items keep the fake clock's process patch applied and only point it
at each tape's clock; a plain test between them, or after them, sees the real ``time``
and ``datetime`` again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import Project, Run

CHECK_REAL = """
import datetime
import time
import types


def test_time_is_real_here():
    assert isinstance(time.sleep, types.BuiltinFunctionType)
    assert isinstance(time.time, types.BuiltinFunctionType)
    assert type(datetime.datetime.now()) is datetime.datetime
    assert time.time() > 1_700_000_000
"""

VIRTUAL_HOOK = """
import time

import app


def sessiontape_replay(tape, recording):
    # Each tape runs on its own clock: the recorded start, not the machine's time.
    assert time.time_ns() == recording.header.ts_ns
    return app.main(tape)
"""


def test_a_plain_test_between_and_after_cassettes_sees_real_time(
    project: Project, run: Run
) -> None:
    project.pytester.makeconftest(VIRTUAL_HOOK)
    project.record("corpus/a.jsonl")
    project.record("corpus/b.jsonl")
    project.record("corpus/d.jsonl")
    project.path.joinpath("corpus/c_test.py").write_text(CHECK_REAL, encoding="utf-8")
    project.path.joinpath("corpus/e_test.py").write_text(CHECK_REAL, encoding="utf-8")
    result = run("corpus", "-v")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        [
            "corpus/a.jsonl::a PASSED*",
            "corpus/b.jsonl::b PASSED*",
            "corpus/c_test.py::test_time_is_real_here PASSED*",
            "corpus/d.jsonl::d PASSED*",
            "corpus/e_test.py::test_time_is_real_here PASSED*",
        ]
    )


SET_UP_SEEN = """
import sys

import app


def pytest_runtest_setup(item):
    # What the first cassette item finds when it starts: the one-time set-up done.
    if not hasattr(sys, "_first_item_saw"):
        sys._first_item_saw = "freezegun.api" in sys.modules
        print(f"\\nfirst item found freezegun imported: {sys._first_item_saw}")


def sessiontape_replay(tape, recording):
    return app.main(tape)
"""


def test_the_one_time_set_up_happens_before_the_first_cassette(project: Project, run: Run) -> None:
    project.pytester.makeconftest(SET_UP_SEEN)
    project.record("corpus/a.jsonl")
    project.record("corpus/b.jsonl")
    # A fresh interpreter: in this one, some earlier replay may have imported freezegun.
    result = project.pytester.runpytest_subprocess("-p", "no:randomly", "corpus", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*first item found freezegun imported: True*"])


FREEZEGUN_AT_THE_END = """
import sys

import app


def pytest_sessionfinish(session):
    print(f"\\nfreezegun imported at the end: {'freezegun.api' in sys.modules}")


def sessiontape_replay(tape, recording):
    return app.main(tape)
"""


def test_collecting_only_sets_nothing_up(project: Project) -> None:
    project.pytester.makeconftest(FREEZEGUN_AT_THE_END)
    project.record("corpus/a.jsonl")
    fresh = project.pytester.runpytest_subprocess  # in this interpreter freezegun may be in
    result = fresh("-p", "no:randomly", "corpus", "--collect-only", "-q", "-s")
    result.stdout.fnmatch_lines(["*a.jsonl::a*", "*freezegun imported at the end: False*"])
    # The same session run for real does set it up (the check above can fail).
    result = fresh("-p", "no:randomly", "corpus", "-q", "-s")
    result.stdout.fnmatch_lines(["*freezegun imported at the end: True*"])
