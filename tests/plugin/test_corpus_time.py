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
