"""The `tape` fixture: record on the first run, replay after, per record mode."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Project, Run


def run_id(path: object) -> str:
    with open(str(path), encoding="utf-8") as fh:
        header: dict[str, str] = json.loads(fh.readline())
    return header["run_id"]


def test_records_then_replays(project: Project, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPECT_MODE", "record")
    run().assert_outcomes(passed=1)
    cassette = project.cassette()
    assert cassette.is_file()
    recorded = cassette.read_bytes()
    header = json.loads(recorded.splitlines()[0])
    assert header["entrypoint"] == "test_app.py::test_one"

    monkeypatch.setenv("EXPECT_MODE", "replay")
    run().assert_outcomes(passed=1)
    assert cassette.read_bytes() == recorded


@pytest.mark.parametrize(
    ("mode", "first", "second"),
    [
        ("once", "record", "replay"),
        ("new", "record", "replay"),
        ("all", "record", "record"),
    ],
)
def test_record_modes(
    project: Project,
    run: Run,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    first: str,
    second: str,
) -> None:
    monkeypatch.setenv("EXPECT_MODE", first)
    run(f"--sessiontape-mode={mode}").assert_outcomes(passed=1)
    before = run_id(project.cassette())
    monkeypatch.setenv("EXPECT_MODE", second)
    run(f"--sessiontape-mode={mode}").assert_outcomes(passed=1)
    assert (run_id(project.cassette()) != before) == (second == "record")
    # Re-recording replaces the cassette; nothing is left beside it.
    assert sorted(p.name for p in project.cassette().parent.iterdir()) == ["test_one.jsonl"]


def test_mode_none_replays_an_existing_cassette(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    run().assert_outcomes(passed=1)
    monkeypatch.setenv("EXPECT_MODE", "replay")
    run("--sessiontape-mode", "none").assert_outcomes(passed=1)


def test_mode_none_fails_without_a_cassette(project: Project, run: Run) -> None:
    result = run("--sessiontape-mode", "none")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*no cassette at cassettes/test_app/test_one.jsonl and record mode 'none' replays"
            " only; record it with: pytest test_app.py::test_one --record-session*"
        ]
    )
    assert not project.cassette().exists()


@pytest.mark.parametrize("value", ["true", "1", "yes"])
def test_ci_fails_a_missing_cassette(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    result = run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*no cassette at cassettes/test_app/test_one.jsonl, and CI is set, so sessiontape"
            " does not record one here. Record it locally and commit it:"
            " pytest test_app.py::test_one --record-session"
        ]
    )
    assert not project.cassette().exists()


@pytest.mark.parametrize("value", ["", "false", "0", "FALSE"])
def test_ci_off_values_record(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    run().assert_outcomes(passed=1)
    assert project.cassette().is_file()


def test_ci_replays_and_records_when_asked(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    run("--record-session").assert_outcomes(passed=1)
    monkeypatch.setenv("EXPECT_MODE", "replay")
    run().assert_outcomes(passed=1)


def test_divergence_fails_the_test_with_seq_and_worker(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    run().assert_outcomes(passed=1)
    monkeypatch.setenv("APP_WORD", "bye")
    result = run()
    # The app's call had no answer: one failure, carrying the report, no teardown error.
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * sessiontape.UnrecordedCallError: sessiontape: worker 'w1': the process call"
            " *'bye'* has no recorded answer*",
            "*- Captured sessiontape call -*",
            "replay of cassettes/test_app/test_one.jsonl diverged at seq 1 (w1, process):"
            " unexpected_call",
            "mismatch 1 of 3: unexpected_call at seq 1 (w1, process)",
            "  argv[1]: expected 'hello' got 'bye'",
        ]
    )


def test_quiet_divergence_fails_the_test(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that passes although the app skipped a recorded call still fails, itself."""
    run().assert_outcomes(passed=1)
    monkeypatch.setenv("APP_SHORT", "1")
    result = run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_one _*",
            "replay of cassettes/test_app/test_one.jsonl diverged at seq 2 (w1, process):"
            " unconsumed",
            "mismatch: unconsumed at seq 2 (w1, process)",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*teardown*")


def test_strict_replay_stops_at_the_first_divergence(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    run().assert_outcomes(passed=1)
    monkeypatch.setenv("APP_WORD", "bye")
    result = run("--sessiontape-strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E * sessiontape.ReplayMismatch: replay of * diverged at seq 1 (w1, process)*"]
    )
    # The report is the failure's message already: not repeated as a section.
    result.stdout.no_fnmatch_line("*Captured sessiontape*")


def test_a_failing_test_keeps_no_cassette(
    project: Project, run: Run, pytester: pytest.Pytester
) -> None:
    pytester.makepyfile(
        test_app="""
        import app

        def test_one(tape):
            app.main(tape)
            assert False, "broken test"
        """
    )
    run().assert_outcomes(failed=1)
    assert not project.cassette().exists()
    assert not project.cassette().parent.exists() or not any(project.cassette().parent.iterdir())


def test_tape_outcome_is_compared_when_the_test_finishes(
    project: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_app="""
        import os
        import app

        def test_one(tape):
            out = app.main(tape)
            tape.finish({"out": out, "flag": os.environ.get("FLAG", "a")})
        """
    )
    run().assert_outcomes(passed=1)
    run().assert_outcomes(passed=1)
    monkeypatch.setenv("FLAG", "b")
    result = run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*outcome_mismatch*", "  flag: expected 'a' got 'b'"])
