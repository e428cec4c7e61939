"""``pytest_report_header``: mode, cassette dir, strictness, and the run ids replayed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import sessiontape

if TYPE_CHECKING:
    from conftest import Project, Run


def test_defaults(project: Project, run: Run) -> None:
    result = run()
    result.stdout.fnmatch_lines(["sessiontape: mode=once, cassettes=cassettes/, strict=False"])


def test_options(project: Project, run: Run) -> None:
    result = run("--sessiontape-mode", "NEW", "--sessiontape-strict")
    result.stdout.fnmatch_lines(["sessiontape: mode=new, cassettes=cassettes/, strict=True"])


def test_record_session(project: Project, run: Run) -> None:
    result = run("--record-session=tapes/today")
    result.stdout.fnmatch_lines(
        ["sessiontape: mode=all (--record-session), cassettes=tapes/today/, strict=False"]
    )


def test_replay_shows_run_ids(project: Project, run: Run) -> None:
    a = project.record("corpus/a.jsonl")
    project.record("corpus/b.jsonl")
    # A tape fixture's cassette is its test's business: neither counted nor collected.
    run("test_app.py", "--record-session=corpus").assert_outcomes(passed=1)
    run_id = sessiontape.load(a).header.run_id
    result = run("--replay", "corpus/a.jsonl", "--replay", "corpus")
    result.stdout.fnmatch_lines(
        [
            "sessiontape: mode=once, cassettes=cassettes/, strict=False",
            f"replay: corpus/a.jsonl (run {run_id})",
            "replay: corpus (2 cassettes)",
        ]
    )
    result.assert_outcomes(passed=2)


def test_bad_mode_option(project: Project, run: Run) -> None:
    result = run("--sessiontape-mode", "maybe")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*argument --sessiontape-mode: unknown record mode 'maybe'; use one of once, none,"
            " all, new."
        ]
    )
