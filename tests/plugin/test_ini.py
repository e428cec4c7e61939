"""The ``[tool.pytest.ini_options]`` settings, and the command line winning over them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Project, Run


def ini(pytester: pytest.Pytester, **settings: str) -> None:
    lines = "\n".join(f"{key} = {value}" for key, value in settings.items())
    pytester.makeini(f"[pytest]\n{lines}\n")


def test_cassette_dir(project: Project, run: Run, pytester: pytest.Pytester) -> None:
    ini(pytester, sessiontape_cassette_dir="tests/tapes")
    run().assert_outcomes(passed=1)
    assert (project.path / "tests/tapes/test_app/test_one.jsonl").is_file()
    assert not (project.path / "cassettes").exists()


def test_cassette_dir_is_relative_to_the_ini_file(
    project: Project, run: Run, pytester: pytest.Pytester
) -> None:
    ini(pytester, sessiontape_cassette_dir="tapes")
    sub = project.path / "sub"
    sub.mkdir()
    pytester.chdir()
    run("--rootdir", str(project.path), str(project.path / "test_app.py")).assert_outcomes(passed=1)
    assert (project.path / "tapes/test_app/test_one.jsonl").is_file()


def test_record_mode(project: Project, run: Run, pytester: pytest.Pytester) -> None:
    ini(pytester, sessiontape_record_mode="none")
    result = run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*record mode 'none' replays only*"])


def test_command_line_mode_wins(
    project: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    ini(pytester, sessiontape_record_mode="none")
    run("--sessiontape-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("EXPECT_MODE", "record")
    run("--sessiontape-mode=all").assert_outcomes(passed=1)


def test_bad_record_mode(project: Project, run: Run, pytester: pytest.Pytester) -> None:
    ini(pytester, sessiontape_record_mode="sometimes")
    result = run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: sessiontape_record_mode: unknown record mode 'sometimes'; use one of "
            "once, none, all, new."
        ]
    )


@pytest.mark.parametrize(("setting", "args"), [("true", ()), ("false", ("--sessiontape-strict",))])
def test_strict(
    project: Project,
    run: Run,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    setting: str,
    args: tuple[str, ...],
) -> None:
    ini(pytester, sessiontape_strict=setting)
    run().assert_outcomes(passed=1)
    monkeypatch.setenv("APP_WORD", "bye")
    result = run(*args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E   *ReplayMismatch: replay of * diverged at seq 1 (w1, process)*"]
    )


def test_lenient_by_default(project: Project, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    run().assert_outcomes(passed=1)
    monkeypatch.setenv("APP_WORD", "bye")
    result = run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E   *UnrecordedCallError*"])


def test_noise(
    project: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nsessiontape_noise =\n    process.argv[1]\n    agent.args\n")
    project.record("corpus/a.jsonl")
    run("test_app.py").assert_outcomes(passed=1)
    monkeypatch.setenv("APP_WORD", "bye")
    # Both the fixture's replay and the cassette items mask the field.
    run("corpus", "test_app.py").assert_outcomes(passed=2)
    pytester.makeini("[pytest]\n")
    run("corpus", "test_app.py").assert_outcomes(failed=2)


def test_bad_noise(project: Project, run: Run, pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nsessiontape_noise = process.argv[\n")
    result = run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: sessiontape_noise: *process.argv[*"])


def test_pyproject(project: Project, run: Run, pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        """
        [tool.pytest.ini_options]
        sessiontape_cassette_dir = "recorded"
        sessiontape_record_mode = "none"
        sessiontape_strict = true
        sessiontape_noise = ["process.env.HOME"]
        """
    )
    result = run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "sessiontape: mode=none, cassettes=recorded/, strict=True",
            "*no cassette at recorded/test_app/test_one.jsonl*",
        ]
    )
