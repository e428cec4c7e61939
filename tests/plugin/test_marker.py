"""``@pytest.mark.sessiontape(...)``: per-test cassette, mode, strictness, noise and roots."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Project, Run


def marked(pytester: pytest.Pytester, marker: str, body: str = "app.main(tape)") -> None:
    pytester.makepyfile(
        test_app=f"""
        import os
        import pytest
        import app

        @pytest.mark.sessiontape({marker})
        def test_one(tape):
            expected = os.environ.get("EXPECT_MODE")
            if expected:
                assert tape.mode.value == expected
            {body}
        """
    )


def test_is_registered(project: Project, run: Run) -> None:
    result = run("--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.sessiontape(cassette=None, mode=None, strict=None, noise=None,"
            " roots=None):*"
        ]
    )


def test_strict_markers_accept_it(project: Project, run: Run, pytester: pytest.Pytester) -> None:
    marked(pytester, "strict=False")
    run("--strict-markers").assert_outcomes(passed=1)


def test_relative_cassette(
    project: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    marked(pytester, "cassette='shared/one.jsonl'")
    run().assert_outcomes(passed=1)
    assert (project.path / "cassettes/shared/one.jsonl").is_file()
    assert not project.cassette().exists()
    monkeypatch.setenv("EXPECT_MODE", "replay")
    run().assert_outcomes(passed=1)


def test_absolute_cassette(
    project: Project, run: Run, pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "prod.jsonl"
    marked(pytester, f"cassette={str(elsewhere)!r}")
    run().assert_outcomes(passed=1)
    assert elsewhere.is_file()


def test_production_cassette_replays(
    project: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tape recorded outside pytest, pinned with mode="none"."""
    project.record("cassettes/incidents/42.jsonl")
    marked(pytester, "cassette='incidents/42.jsonl', mode='none'")
    monkeypatch.setenv("EXPECT_MODE", "replay")
    run("test_app.py").assert_outcomes(passed=1)
    # --record-session does not overwrite a pinned tape.
    before = (project.path / "cassettes/incidents/42.jsonl").read_bytes()
    run("test_app.py", "--record-session").assert_outcomes(passed=1)
    assert (project.path / "cassettes/incidents/42.jsonl").read_bytes() == before


def test_pinned_cassette_missing(project: Project, run: Run, pytester: pytest.Pytester) -> None:
    marked(pytester, "cassette='incidents/43.jsonl', mode='none'")
    result = run("--record-session")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*no cassette at cassettes/incidents/43.jsonl and record mode 'none' replays only;"
            " the sessiontape marker pins it (mode='none'): put the tape there*"
        ]
    )


def test_mode_all(
    project: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    marked(pytester, "mode='all'")
    run().assert_outcomes(passed=1)
    monkeypatch.setenv("EXPECT_MODE", "record")
    run("--sessiontape-mode=none").assert_outcomes(passed=1)


def test_strict_and_noise(
    project: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    marked(pytester, "strict=True")
    run().assert_outcomes(passed=1)
    monkeypatch.setenv("APP_WORD", "bye")
    result = run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E   *ReplayMismatch: replay of * diverged at seq 1 (w1, process)*"]
    )
    marked(pytester, "strict=True, noise=['process.argv[1]']")
    run().assert_outcomes(passed=1)


def test_class_and_function_markers_merge(
    project: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_app="""
        import pytest
        import app

        @pytest.mark.sessiontape(cassette="class.jsonl", strict=True)
        class TestApp:
            @pytest.mark.sessiontape(cassette="method.jsonl")
            def test_one(self, tape):
                app.main(tape)
        """
    )
    run().assert_outcomes(passed=1)
    assert (project.path / "cassettes/method.jsonl").is_file()
    assert not (project.path / "cassettes/class.jsonl").exists()
    monkeypatch.setenv("APP_WORD", "bye")
    result = run()
    result.assert_outcomes(failed=1)  # strict from the class
    result.stdout.fnmatch_lines(["E   *ReplayMismatch*"])


def test_roots(project: Project, run: Run, pytester: pytest.Pytester) -> None:
    data = project.path / "data"
    data.mkdir()
    pytester.makepyfile(
        test_app=f"""
        import pytest
        import app

        @pytest.mark.sessiontape(roots={{"data": {str(data)!r}}})
        def test_one(tape):
            runner = tape.process_runner(app.EchoRunner())
            runner.run(["ls", {str(data / "x")!r}], text=True)
        """
    )
    run().assert_outcomes(passed=1)
    calls = project.cassette().read_text(encoding="utf-8").splitlines()
    assert '"argv":["ls","{data}/x"]' in calls[1]
    assert str(data) not in calls[1]
    run().assert_outcomes(passed=1)  # and replays


@pytest.mark.parametrize(
    ("marker", "problem"),
    [
        (
            "cassete='x.jsonl', moed='all'",
            "got unknown keyword(s) cassete, moed; it takes cassette, mode, noise, roots, strict.",
        ),
        ("'x.jsonl'", "takes keyword arguments only, got ('x.jsonl',)."),
        (
            "mode='sometimes'",
            "mode: unknown record mode 'sometimes'; use one of once, none, all, new.",
        ),
        ("strict='yes'", "strict must be True or False, got 'yes'."),
        ("cassette=3", "cassette must be a path, got 3."),
        ("roots=['a']", "roots must map placeholder names to directories, got ['a']."),
        ("noise=['process.argv[']", "noise: noise mask 'process.argv[': *"),
    ],
)
def test_usage_errors(
    project: Project, run: Run, pytester: pytest.Pytester, marker: str, problem: str
) -> None:
    marked(pytester, marker)
    result = run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*_ ERROR at setup of test_one _*",
            f"@pytest.mark.sessiontape on test_app.py::test_one: {problem}",
        ]
    )
    result.stdout.no_fnmatch_line("*During handling*")
    assert not (project.path / "cassettes").exists()
