"""``--replay PATH``: the given cassettes (files or folders) are the tests of the run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Project, Run


@pytest.fixture
def corpus(project: Project) -> Project:
    project.record("corpus/a.jsonl")
    project.record("corpus/b.jsonl")
    project.record("more/c.jsonl")
    return project


def test_replays_one_file_instead_of_the_tests(corpus: Project, run: Run) -> None:
    result = run("--replay", "corpus/a.jsonl", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["corpus/a.jsonl::a PASSED*"])
    result.stdout.no_fnmatch_line("*test_app.py*")


def test_replays_a_folder(corpus: Project, run: Run) -> None:
    result = run("--replay", "corpus", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["corpus/a.jsonl::a PASSED*", "corpus/b.jsonl::b PASSED*"])


def test_repeated(corpus: Project, run: Run) -> None:
    result = run("--replay", "corpus/b.jsonl", "--replay=more", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["corpus/b.jsonl::b PASSED*", "more/c.jsonl::c PASSED*"])


def test_with_explicit_tests_runs_both(corpus: Project, run: Run) -> None:
    result = run("test_app.py", "--replay", "more/c.jsonl", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["test_app.py::test_one PASSED*", "more/c.jsonl::c PASSED*"])


def test_a_diverging_cassette_fails(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_SHORT", "1")
    result = run("--replay", "corpus/a.jsonl")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*diverged at seq 2 (w1, process): unconsumed*"])


def test_missing_path_is_a_usage_error(project: Project, run: Run) -> None:
    result = run("--replay", "nowhere.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*argument --replay: 'nowhere.jsonl': no such cassette file or folder."]
    )


def test_not_a_cassette_is_a_usage_error(project: Project, run: Run) -> None:
    (project.path / "notes.jsonl").write_text('{"kind": "note"}\n', encoding="utf-8")
    result = run("--replay", "notes.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*argument --replay: 'notes.jsonl' is not a sessiontape cassette (its first line"
            " is not a session_start entry)."
        ]
    )


def test_a_fixture_cassette_points_to_its_test(project: Project, run: Run) -> None:
    run().assert_outcomes(passed=1)
    result = run("--replay", "cassettes/test_app/test_one.jsonl")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "cassettes/test_app/test_one.jsonl was recorded by the `tape` fixture of"
            " test_app.py::test_one; that test replays it: pytest test_app.py::test_one"
        ]
    )
    # ...and a folder of them holds nothing to replay.
    result = run("--replay", "cassettes")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_last_failed(corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    (corpus.path / "corpus/b.jsonl").write_text(
        (corpus.path / "corpus/b.jsonl").read_text(encoding="utf-8").replace("hello", "hullo"),
        encoding="utf-8",
    )
    run("--replay", "corpus").assert_outcomes(passed=1, failed=1)
    result = run("--replay", "corpus", "--lf", "-v")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["run-last-failure: rerun previous 1 failure (skipped 1 file)", "corpus/b.jsonl::b FAILED*"]
    )
