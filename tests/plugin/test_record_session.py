"""``--record-session [DIR]``: every `tape` test records, to DIR/<module>/<test>.jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Project, Run


def files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def entrypoint(path: Path) -> str:
    header: dict[str, str] = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    return header["entrypoint"]


def test_records_to_the_cassette_dir(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    run().assert_outcomes(passed=1)
    first = project.cassette().read_text(encoding="utf-8")
    monkeypatch.setenv("EXPECT_MODE", "record")
    run(*xdist, "--record-session").assert_outcomes(passed=1)
    again = project.cassette().read_text(encoding="utf-8")
    assert again != first  # a new run id: recorded again, not replayed
    assert files(project.path / "cassettes") == ["test_app/test_one.jsonl"]


@pytest.mark.parametrize("form", ["separate", "equals"])
def test_records_to_dir(project: Project, run: Run, form: str) -> None:
    args = (
        ["--record-session", "tapes/new"] if form == "separate" else ["--record-session=tapes/new"]
    )
    run(*args).assert_outcomes(passed=1)
    assert files(project.path / "tapes") == ["new/test_app/test_one.jsonl"]
    assert not (project.path / "cassettes").exists()


def test_dir_is_also_read_from(project: Project, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recorded DIR replays when given as the cassette dir of a later run."""
    run("--record-session=tapes").assert_outcomes(passed=1)
    monkeypatch.setenv("EXPECT_MODE", "replay")
    run("-o", "sessiontape_cassette_dir=tapes").assert_outcomes(passed=1)


def test_parametrized_and_nested_names(
    project: Project, run: Run, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        **{
            "tests/unit/test_names": """
            import pytest
            import app

            @pytest.mark.parametrize(
                "value", ["plain", "a/b", "a_b", "with space", "x" * 200, "é:*?"]
            )
            def test_param(tape, value):
                app.main(tape)

            class TestGroup:
                def test_method(self, tape):
                    app.main(tape)
            """
        }
    )
    run("tests", "--record-session").assert_outcomes(passed=7)
    recorded = files(project.path / "cassettes")
    assert len(recorded) == 7
    names = [Path(p).name for p in recorded]
    assert all(p.startswith("tests/unit/test_names/") for p in recorded)
    assert "test_param[plain].jsonl" in names
    assert "TestGroup.test_method.jsonl" in names
    # Unsafe characters are replaced and a digest of the id keeps clashing ids apart.
    for name in names:
        assert all(c.isascii() and (c.isalnum() or c in "_.,=+-[]") for c in name), name
        assert len(name) < 150
    assert len({n.lower() for n in names}) == 7
    sample = next(
        p
        for p in (project.path / "cassettes").rglob("*.jsonl")
        if "a_b" in p.name and "-" in p.name
    )
    assert entrypoint(sample) == "tests/unit/test_names.py::test_param[a/b]"
    # Each test replays its own cassette.
    monkeypatch.setenv("EXPECT_MODE", "replay")
    run("tests").assert_outcomes(passed=7)


def test_a_test_path_is_not_taken_as_dir(project: Project, run: Run) -> None:
    result = run("--record-session", "test_app.py::test_one")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*argument --record-session: 'test_app.py::test_one' looks like a test, not a "
            "cassette directory. Put the flag after the tests (pytest test_app.py::test_one "
            "--record-session), or name the directory with --record-session=DIR."
        ]
    )
    assert not (project.path / "test_app.py::test_one").exists()


def test_flag_after_the_tests_selects_them(
    project: Project, run: Run, pytester: pytest.Pytester
) -> None:
    pytester.makepyfile(
        test_other="""
        import app

        def test_two(tape):
            app.main(tape)
        """
    )
    run("test_app.py::test_one", "--record-session").assert_outcomes(passed=1)
    assert files(project.path / "cassettes") == ["test_app/test_one.jsonl"]
