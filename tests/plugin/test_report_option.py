"""``--sessiontape-report PATH``: one JSON list of every replay's report, xdist merged."""

from __future__ import annotations

import json
import stat
from typing import TYPE_CHECKING, Any

import pytest

import sessiontape

if TYPE_CHECKING:
    from conftest import Project, Run


def load_reports(project: Project, name: str = "out/replays.json") -> list[dict[str, Any]]:
    reports: list[dict[str, Any]] = json.loads((project.path / name).read_text(encoding="utf-8"))
    return reports


def test_reports_every_replay(project: Project, run: Run, xdist: tuple[str, ...]) -> None:
    project.record("corpus/good.jsonl")
    project.record("corpus/bad.jsonl")
    bad = project.path / "corpus/bad.jsonl"
    bad.write_text(bad.read_text(encoding="utf-8").replace('"done"', '"dome"'), encoding="utf-8")
    run("test_app.py").assert_outcomes(passed=1)  # records the fixture's cassette

    result = run(*xdist, "--sessiontape-report=out/replays.json")
    result.assert_outcomes(passed=2, failed=1)
    # Recorded data: readable by its owner only, whatever the umask.
    assert stat.S_IMODE((project.path / "out/replays.json").stat().st_mode) == 0o600
    reports = load_reports(project)
    assert [r["nodeid"] for r in reports] == [
        "corpus/bad.jsonl::bad",
        "corpus/good.jsonl::good",
        "test_app.py::test_one",
    ]
    by_id = {r["nodeid"]: r for r in reports}
    assert [by_id[n]["ok"] for n in sorted(by_id)] == [False, True, True]
    bad_report = by_id["corpus/bad.jsonl::bad"]
    assert bad_report["cassette"].endswith("corpus/bad.jsonl")
    assert bad_report["run_id"] == sessiontape.load(bad).header.run_id
    first = bad_report["mismatches"][0]
    assert (first["kind"], first["seq"], first["worker"]) == ("unexpected_call", 2, "w1")
    # The receipt reads back as a report.
    assert not sessiontape.ReplayReport.from_json(json.dumps(bad_report)).ok
    assert by_id["test_app.py::test_one"]["consumed"] == 2


def test_empty_run_writes_an_empty_list(project: Project, run: Run) -> None:
    run("test_app.py", "--sessiontape-report", "out/replays.json").assert_outcomes(passed=1)
    assert load_reports(project) == []  # the first run recorded: nothing was replayed


def test_without_the_option_nothing_is_written(project: Project, run: Run) -> None:
    project.record("corpus/good.jsonl")
    result = run("corpus", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1)
    assert sorted(p.name for p in project.path.iterdir() if p.suffix == ".json") == []
    # No report rides along on user_properties, so junit XML stays lean.
    assert "sessiontape_report" not in (project.path / "junit.xml").read_text(encoding="utf-8")


def test_a_directory_is_refused(project: Project, run: Run) -> None:
    (project.path / "out").mkdir()
    result = run("--sessiontape-report", "out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*argument --sessiontape-report: 'out' is a directory; name a .json file."]
    )
