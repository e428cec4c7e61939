"""``pytest cassettes/``: each cassette is a test item replayed through the project's hook."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

import sessiontape

if TYPE_CHECKING:
    from conftest import Project, Run


@pytest.fixture
def corpus(project: Project) -> Project:
    project.record("corpus/a.jsonl")
    project.record("corpus/nested/b.jsonl")
    return project


def test_collects_cassettes_only(corpus: Project, run: Run) -> None:
    corpus.path.joinpath("corpus/notes.jsonl").write_text('{"note": 1}\n', encoding="utf-8")
    corpus.path.joinpath("corpus/empty.jsonl").write_text("", encoding="utf-8")
    corpus.path.joinpath("corpus/text.jsonl").write_text("not json\n", encoding="utf-8")
    result = run("corpus", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["corpus/a.jsonl::a PASSED*", "corpus/nested/b.jsonl::b PASSED*"])


def test_fixture_cassettes_are_left_to_their_tests(corpus: Project, run: Run) -> None:
    run("test_app.py", "--record-session=corpus").assert_outcomes(passed=1)
    assert corpus.path.joinpath("corpus/test_app/test_one.jsonl").is_file()
    result = run("corpus", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.no_fnmatch_line("*test_one.jsonl*")


def test_failure_shows_the_report_without_traceback(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_SHORT", "1")
    result = run("corpus/a.jsonl")
    result.assert_outcomes(failed=1)
    header = sessiontape.load(corpus.path / "corpus/a.jsonl").header
    result.stdout.fnmatch_lines(
        [
            f"*_ cassette: a run {header.run_id} _*",
            "replay of corpus/a.jsonl diverged at seq 2 (w1, process): unconsumed",
            "calls: 2 loaded, 1 consumed, 1 unconsumed, 0 extra; 2 mismatches; lenient*",
            "workers: w1",
            "context before the divergence:",
            "  seq 1 w1 process: echo hello*",
            "",
            "mismatch 1 of 2: unconsumed at seq 2 (w1, process)",
            "*",
            "mismatch 2 of 2: outcome_mismatch at seq 3 (main, session)",
            "FAILED corpus/a.jsonl::a - Failed: replay of corpus/a.jsonl diverged at seq 2*",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*_plugin.py*")


def test_strict_stops_at_the_first_divergence(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_WORD", "bye")
    result = run("corpus/a.jsonl", "--sessiontape-strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "replay of */a.jsonl diverged at seq 1 (w1, process): unexpected_call",
            "calls: 2 loaded, 0 consumed, 0 unconsumed, 0 extra; 1 mismatch; strict*",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_missing_hook(corpus: Project, run: Run, pytester: pytest.Pytester) -> None:
    pytester.makeconftest("")
    result = run("corpus/a.jsonl")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "no sessiontape_replay hook handled corpus/a.jsonl: implement"
            " sessiontape_replay(tape, recording) in conftest.py (wire the application through"
            " the tape, run it, and return its outcome, or anything but None)"
        ]
    )


def test_hooks_do_not_leak_between_runs(
    corpus: Project, run: Run, pytester: pytest.Pytester
) -> None:
    hook = sessiontape.get_plugin_manager().hook.sessiontape_replay
    before = [impl.plugin for impl in hook.get_hookimpls()]
    run("corpus").assert_outcomes(passed=2)
    assert [impl.plugin for impl in hook.get_hookimpls()] == before
    pytester.makeconftest("")
    result = run("corpus")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["no sessiontape_replay hook handled *"])


@pytest.fixture
def outer_hook(request: pytest.FixtureRequest) -> Iterator[types.ModuleType]:
    """A ``sessiontape_replay`` implementation registered in the outer pytest run.

    Its ``calls`` list the cassettes it was called for.
    """
    module = types.ModuleType("outer_sessiontape_hooks")
    module.calls = calls = []  # type: ignore[attr-defined]

    def sessiontape_replay(tape: sessiontape.Tape, recording: sessiontape.Recording) -> bool:
        calls.append(recording.path)
        return True

    module.sessiontape_replay = sessiontape_replay  # type: ignore[attr-defined]
    request.config.pluginmanager.register(module, "outer-sessiontape-hooks")
    yield module
    request.config.pluginmanager.unregister(module)
    sessiontape._hooks.unregister(module)


def test_an_outer_run_hooks_are_hidden_from_an_inner_run(
    corpus: Project, run: Run, pytester: pytest.Pytester, outer_hook: types.ModuleType
) -> None:
    pm = sessiontape.get_plugin_manager()
    assert pm.is_registered(outer_hook)  # mirrored from the outer run's pytest
    pytester.makeconftest("")
    result = run("corpus/a.jsonl")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["no sessiontape_replay hook handled corpus/a.jsonl: *"])
    assert outer_hook.calls == []  # type: ignore[attr-defined]
    assert pm.is_registered(outer_hook)  # back once the inner run ended


@pytest.mark.parametrize(
    ("hook", "outcome"),
    [
        pytest.param("app.main(tape)\n    tape.finish(app.main.__name__)", "failed", id="finish"),
        pytest.param("tape.finish(app.main(tape))", "passed", id="finish-no-return"),
        pytest.param("app.main(tape)\n    return True", "passed", id="true-is-handled"),
        pytest.param("return app.main(tape)", "passed", id="return-outcome"),
        pytest.param("app.main(tape)\n    return {'out': []}", "failed", id="wrong-outcome"),
    ],
)
def test_outcome(
    corpus: Project, run: Run, pytester: pytest.Pytester, hook: str, outcome: str
) -> None:
    pytester.makeconftest(f"import app\n\ndef sessiontape_replay(tape, recording):\n    {hook}\n")
    result = run("corpus/a.jsonl")
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        result.stdout.fnmatch_lines(["*outcome_mismatch at seq 3 (main, session)*"])


def test_app_crash_shows_traceback_and_report(
    corpus: Project, run: Run, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(
        """
        import app

        def sessiontape_replay(tape, recording):
            app.main(tape)
            raise KeyError("boom")
        """
    )
    result = run("corpus/a.jsonl")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "    def sessiontape_replay(tape, recording):",
            "        app.main(tape)",
            '>       raise KeyError("boom")',
            "E       KeyError: 'boom'",
            "",
            "conftest.py:5: KeyError",
            "*- Captured sessiontape call -*",
            "replay of */a.jsonl diverged at an unrecorded call (main, session): error_mismatch",
        ]
    )
    result.stdout.no_fnmatch_line("*/pluggy/*")
    result.stdout.no_fnmatch_line("*/_pytest/*")


@pytest.mark.writes_invalid_tapes
def test_broken_cassette(corpus: Project, run: Run) -> None:
    path = corpus.path / "corpus/a.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = '{"kind": "process", "seq": "x"}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run("corpus/a.jsonl")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*/corpus/a.jsonl:2: not a valid sessiontape entry*"])
    result.stdout.no_fnmatch_line("*Traceback*")


BAD_HOOK = "def sessiontape_replay(tape, recording, extra):\n    return True\n"
BAD_HOOK_LINES = [
    "hookimpl definition: sessiontape_replay(tape, recording, extra)",
    "Argument(s) {'extra'} are declared in the hookimpl but can not be found in the hookspec",
]


def test_bad_hook_signature_in_an_initial_conftest(corpus: Project, run: Run) -> None:
    (corpus.path / "conftest.py").write_text(BAD_HOOK, encoding="utf-8")
    result = run("corpus")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: sessiontape: Plugin '*/conftest.py' for hook 'sessiontape_replay'",
            *BAD_HOOK_LINES,
        ]
    )


def test_bad_hook_signature_found_while_collecting(corpus: Project, run: Run) -> None:
    (corpus.path / "corpus/nested/conftest.py").write_text(BAD_HOOK, encoding="utf-8")
    result = run("corpus")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*_ ERROR collecting corpus/nested _*",
            "sessiontape: Plugin '*/corpus/nested/conftest.py' for hook 'sessiontape_replay'",
            *BAD_HOOK_LINES,
        ]
    )
    result.stdout.no_fnmatch_line("*/pluggy/*")


def test_a_failed_inner_configure_gives_the_outer_run_its_hooks_back(
    corpus: Project, run: Run, outer_hook: types.ModuleType
) -> None:
    # The inner run dies in pytest_configure (its conftest's hook has a bad signature),
    # so its pytest_unconfigure never runs; the outer run's hooks must come back anyway.
    pm = sessiontape.get_plugin_manager()
    (corpus.path / "conftest.py").write_text(BAD_HOOK, encoding="utf-8")
    result = run("corpus")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert pm.is_registered(outer_hook)
