"""How a replay fails a test: in the call phase, the report as the message, sessiontape's
own frames out of the traceback, more with ``-v``, and nothing at all on a clean pass.

Every behaviour is checked serially and over two pytest-xdist workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Project, Run

#: A test whose store answers differently on replay: five store mismatches of eight
#: differing fields each, and the test itself passes.
MANY = """
import os

import pytest


class Store:
    def __init__(self, snapshot=None):
        self.tag = os.environ.get("TAG", "a")

    def snapshot(self):
        return {}

    def put(self, n):
        return {f"k{i}": f"{self.tag}{n}{i}" for i in range(8)}


def test_many(tape):
    store = tape.store(Store(), mutations=["put"], snapshot=Store.snapshot, factory=Store)
    for n in range(5):
        store.put(n)
"""

#: Lines that only a traceback through sessiontape's own modules shows.
OWN_FRAMES = ("*boundaries/_*.py:*", "*replayer/_*.py:*", "*plugin/_*.py:*", "*pluggy/*")


def no_own_frames(result: pytest.RunResult) -> None:
    for pattern in OWN_FRAMES:
        result.stdout.no_fnmatch_line(pattern)


@pytest.fixture
def recorded(project: Project, run: Run) -> Project:
    """The project with its test's cassette recorded."""
    run().assert_outcomes(passed=1)
    return project


def test_a_lenient_divergence_fails_the_test_itself(
    recorded: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    monkeypatch.setenv("APP_SHORT", "1")
    result = run("-rA", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_one _*",
            "replay of cassettes/test_app/test_one.jsonl diverged at seq 2 (w1, process):"
            " unconsumed",
            "calls: 2 loaded, 1 consumed, 1 unconsumed, 0 extra; 1 mismatch; lenient; *",
            "workers: w1",
            "context before the divergence:",
            "  seq 1 w1 process: echo hello -> exit 0 *",
            "",
            "mismatch: unconsumed at seq 2 (w1, process)",
            "  the recorded call seq 2 w1 process: echo done -> exit 0 * was never made.",
            "  expected: {'argv': ['echo', 'done'], 'cwd': None, 'env': None, 'input': None}",
            "  next: The code stopped calling 'process' in worker 'w1' *",
            "",
            "if today's behaviour is right, record the cassette again:"
            " pytest test_app.py::test_one --record-session",
            "*short test summary info*",
            "FAILED test_app.py::test_one - Failed: replay of cassettes/test_app/test_one*",
        ]
    )
    result.stdout.no_fnmatch_line("*teardown*")
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("ERROR *")


def test_a_strict_replay_fails_where_it_diverges(
    recorded: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    monkeypatch.setenv("APP_WORD", "bye")
    result = run("--sessiontape-strict", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            ">       app.main(tape)",
            "test_app.py:*: ",
            '>           out = *runner.run(*"echo", word*, text=True).stdout*',
            "E           sessiontape.ReplayMismatch: replay of *test_one.jsonl diverged at seq 1"
            " (w1, process): unexpected_call",
            "E             argv[1]: expected 'hello' got 'bye'",
            "app.py:22: ReplayMismatch",
            "FAILED test_app.py::test_one - sessiontape.ReplayMismatch: replay of *",
        ]
    )
    no_own_frames(result)
    # The report is the failure's message already: not repeated as a section.
    result.stdout.no_fnmatch_line("*Captured sessiontape*")


def test_a_strict_replay_that_misses_calls_fails_when_the_test_returns(
    recorded: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    monkeypatch.setenv("APP_SHORT", "1")
    result = run("--sessiontape-strict", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "replay of cassettes/test_app/test_one.jsonl diverged at seq 2 (w1, process):"
            " unconsumed",
            "calls: 2 loaded, 1 consumed, 1 unconsumed, 0 extra; 1 mismatch; strict; *",
        ]
    )
    result.stdout.no_fnmatch_line("*teardown*")


def test_an_unrecorded_call_names_the_public_error_and_the_callers_frames(
    recorded: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    monkeypatch.setenv("APP_WORD", "bye")
    result = run(*xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            ">       app.main(tape)",
            "test_app.py:*: ",
            "    def main(tape):",
            '>           out = *runner.run(*"echo", word*, text=True).stdout*',
            "E           sessiontape.UnrecordedCallError: sessiontape: worker 'w1': the process"
            " call [[]'echo', 'bye'[]] has no recorded answer on *test_one.jsonl; see the replay"
            " report.",
            "app.py:22: UnrecordedCallError",
            "*- Captured sessiontape call -*",
            "replay of cassettes/test_app/test_one.jsonl diverged at seq 1 (w1, process):"
            " unexpected_call",
            "FAILED test_app.py::test_one - sessiontape.UnrecordedCallError: sessiontape: *",
        ]
    )
    no_own_frames(result)


def test_full_trace_shows_sessiontapes_frames(
    recorded: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_WORD", "bye")
    result = run("--full-trace")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*sessiontape/boundaries/_process.py:*: "])


MANY_SHORT = [
    "replay of cassettes/test_many/test_many.jsonl diverged at seq 2 (main, store): store_mismatch",
    "calls: 5 loaded, 5 consumed, 0 unconsumed, 0 extra; 5 mismatches; lenient; *",
    "mismatch 1 of 5: store_mismatch at seq 2 (main, store)",
    "  result.k0: expected 'a00' got 'b00'",
    "  result.k4: expected 'a04' got 'b04'",
    "  ... and 3 more differing fields",
    "mismatch 3 of 5: store_mismatch at seq 4 (main, store)",
    "and 2 more mismatches (see the JSON report)",
    "(pytest -v shows all 5 mismatches and every differing field)",
]


def test_the_first_mismatches_by_default(
    project: Project,
    run: Run,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    xdist: tuple[str, ...],
) -> None:
    pytester.makepyfile(test_many=MANY)
    run("test_many.py").assert_outcomes(passed=1)
    monkeypatch.setenv("TAG", "b")
    result = run("test_many.py", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(MANY_SHORT)
    result.stdout.no_fnmatch_line("*result.k5*")
    result.stdout.no_fnmatch_line("mismatch 4 of 5*")


def test_verbose_shows_every_mismatch_and_field(
    project: Project,
    run: Run,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    xdist: tuple[str, ...],
) -> None:
    pytester.makepyfile(test_many=MANY)
    run("test_many.py").assert_outcomes(passed=1)
    monkeypatch.setenv("TAG", "b")
    result = run("test_many.py", "-v", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "mismatch 1 of 5: store_mismatch at seq 2 (main, store)",
            *(f"  result.k{i}: expected 'a0{i}' got 'b0{i}'" for i in range(8)),
            "mismatch 5 of 5: store_mismatch at seq 6 (main, store)",
            "  result.k7: expected 'a47' got 'b47'",
        ]
    )
    result.stdout.no_fnmatch_line("*more differing field*")
    result.stdout.no_fnmatch_line("*more mismatches*")
    result.stdout.no_fnmatch_line("*pytest -v shows*")


def test_a_clean_replay_is_quiet(recorded: Project, run: Run, xdist: tuple[str, ...]) -> None:
    result = run("-rA", "-v", *xdist)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASSED test_app.py::test_one"])
    for pattern in ("*sessiontape call*", "*replay of*", "*mismatch*", "*record the cassette*"):
        result.stdout.no_fnmatch_line(pattern)


def test_a_divergence_under_xfail_is_an_expected_failure(
    recorded: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure belongs to the test's call, so xfail applies to it."""
    pytester.makepyfile(
        test_app="""
        import pytest
        import app

        @pytest.mark.xfail(reason="the app skips its last call")
        def test_one(tape):
            app.main(tape)
        """
    )
    monkeypatch.setenv("APP_SHORT", "1")
    run().assert_outcomes(xfailed=1)


def test_an_unreadable_cassette_fails_with_one_line(
    recorded: Project, run: Run, xdist: tuple[str, ...]
) -> None:
    recorded.cassette().write_text('{"kind": "note"}\n', encoding="utf-8")
    result = run(*xdist)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*cassettes/test_app/test_one.jsonl:1: the first line has kind 'note'; a sessiontape"
            " cassette starts with a session_start entry. Record it again:"
            " pytest test_app.py::test_one --record-session"
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


# -- cassette items ------------------------------------------------------------------


@pytest.fixture
def corpus(project: Project) -> Project:
    project.record("corpus/a.jsonl")
    return project


def test_a_cassette_item_fails_the_same_way(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    monkeypatch.setenv("APP_SHORT", "1")
    result = run("--replay", "corpus/a.jsonl", "-rA", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "replay of corpus/a.jsonl diverged at seq 2 (w1, process): unconsumed",
            "calls: 2 loaded, 1 consumed, 1 unconsumed, 0 extra; 2 mismatches; lenient; *",
            "mismatch 1 of 2: unconsumed at seq 2 (w1, process)",
            "mismatch 2 of 2: outcome_mismatch at seq 3 (main, session)",
            "FAILED corpus/a.jsonl::a - Failed: replay of corpus/a.jsonl diverged at seq 2*",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_a_cassette_item_stopped_by_an_unrecorded_call(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    monkeypatch.setenv("APP_WORD", "bye")
    result = run("--replay", "corpus/a.jsonl", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "replay of corpus/a.jsonl diverged at seq 1 (w1, process): unexpected_call",
            "the replay stopped with: sessiontape: worker 'w1': the process call"
            " [[]'echo', 'bye'[]] has no recorded answer on *a.jsonl; see the replay report.",
        ]
    )
    no_own_frames(result)


def test_an_application_crash_in_a_cassette_item_shows_the_applications_frames(
    corpus: Project, run: Run, pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    pytester.makeconftest(
        """
        import app


        def sessiontape_replay(tape, recording):
            app.main(tape)
            return {}["missing"]
        """
    )
    result = run("--replay", "corpus/a.jsonl", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "    def sessiontape_replay(tape, recording):",
            "        app.main(tape)",
            '>       return {}*"missing"*',
            "E       KeyError: 'missing'",
            "conftest.py:6: KeyError",
        ]
    )
    no_own_frames(result)


def test_a_cassette_item_shows_every_mismatch_with_verbose(
    project: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_many=MANY)
    pytester.makeconftest(
        """
        import test_many


        def sessiontape_replay(tape, recording):
            test_many.test_many(tape)
            return True
        """
    )
    run("test_many.py").assert_outcomes(passed=1)
    cassette = "cassettes/test_many/test_many.jsonl"
    # A production tape rather than a fixture's: drop the entrypoint that ties it to its test.
    corpus = project.path / "corpus"
    corpus.mkdir()
    text = (project.path / cassette).read_text(encoding="utf-8")
    (corpus / "many.jsonl").write_text(
        text.replace('"entrypoint":"test_many.py::test_many"', '"entrypoint":"many"'),
        encoding="utf-8",
    )
    monkeypatch.setenv("TAG", "b")
    short = run("--replay", "corpus/many.jsonl")
    short.assert_outcomes(failed=1)
    short.stdout.fnmatch_lines(["(pytest -v shows all 5 mismatches and every differing field)"])
    verbose = run("--replay", "corpus/many.jsonl", "-v")
    verbose.assert_outcomes(failed=1)
    verbose.stdout.fnmatch_lines(
        ["mismatch 5 of 5: store_mismatch at seq 6 (main, store)", "  result.k7: *"]
    )
