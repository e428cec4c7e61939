"""The `tape` fixture in a test with a fresh work directory: ``tape.set_roots`` names it
while recording as on replay, so nothing hard-codes a path (issue 29, defect 12)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sessiontape

if TYPE_CHECKING:
    from conftest import Project, Run


def test_the_tape_fixture_calls_set_roots_with_a_fresh_tmp_path(project: Project, run: Run) -> None:
    project.pytester.makepyfile(
        test_work="""
        import sys

        import sessiontape


        def test_work(tape, tmp_path):
            tape.set_roots({"work": str(tmp_path)})
            (tmp_path / "note.txt").write_text("hi")
            runner = tape.process_runner()
            with sessiontape.worker("w1"):
                out = runner.run(
                    [sys.executable, "-c", "import os; print(sorted(os.listdir()))"],
                    cwd=str(tmp_path),
                    text=True,
                ).stdout
            assert out == "['note.txt']\\n"
        """
    )
    run("test_work.py").assert_outcomes(passed=1)
    cassette = project.path / "cassettes" / "test_work" / "test_work.jsonl"
    (call,) = sessiontape.load(cassette).calls
    assert isinstance(call, sessiontape.ProcessCall)
    assert call.cwd == "{work}"
    run("test_work.py").assert_outcomes(passed=1)  # replayed in another tmp_path
