"""``--sessiontape-live=SELECTOR``: a segment re-recorded for real, the rest from the tape."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

import sessiontape

if TYPE_CHECKING:
    from conftest import Project, Run


@pytest.fixture
def corpus(project: Project) -> Project:
    for name in ("a", "b"):
        project.record(f"corpus/{name}.jsonl")
    return project


@pytest.mark.parametrize(
    "xdist", [pytest.param((), id="serial"), pytest.param(("-n", "2"), id="xdist")]
)
def test_live_process_writes_a_rerecorded_tape_beside(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    monkeypatch.setenv("APP_WORD", "bonjour")
    before = (corpus.path / "corpus/a.jsonl").read_bytes()
    result = run("--replay", "corpus", "--sessiontape-live=process", *xdist)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*= sessiontape update =*",
            "2 tape(s) rewritten, 0 not written; 6 change(s)",
            "tape updated: 1 field(s) of answers rewritten, 1 field(s) of outcomes rewritten, "
            "1 field(s) of requests rewritten; wrote corpus/a.rerecorded.jsonl",
            "  corpus/a.jsonl seq 1 (w1, process) request rewritten: argv[1]: 'hello' -> 'bonjour'",
            "  corpus/a.jsonl seq 1 (w1, process) re-recorded live: stdout: 'hello\\n' -> "
            "'bonjour\\n'",
        ]
    )

    # The call whose answer did not change (echo done) is kept as recorded, all but its
    # place on the time axis: it moves by as much as the live call before it took longer
    # than recorded (on the tape's time axis, nothing overlaps).
    def done_calls(tape: str) -> list[dict[str, object]]:
        lines = (corpus.path / tape).read_bytes().splitlines()
        return [
            {k: v for k, v in json.loads(line).items() if k not in ("ts_ns", "mono_ns")}
            for line in lines
            if b'"done"' in line and b'"process"' in line
        ]

    assert done_calls("corpus/a.rerecorded.jsonl") == done_calls("corpus/a.jsonl") != []
    assert (corpus.path / "corpus/a.jsonl").read_bytes() == before
    new = sessiontape.load(corpus.path / "corpus/a.rerecorded.jsonl")
    assert [c.argv for c in new.calls] == [["echo", "bonjour"], ["echo", "done"]]  # type: ignore[union-attr]
    assert new.header.rerecorded is not None
    assert new.header.rerecorded[0].segments == ["process"]
    run(
        "--replay", "corpus/a.rerecorded.jsonl", "--replay", "corpus/b.rerecorded.jsonl"
    ).assert_outcomes(passed=2)


def test_live_with_update_replaces_the_tape(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_WORD", "bonjour")
    run(
        "--replay", "corpus/a.jsonl", "--sessiontape-live", "process@w1", "--sessiontape-update"
    ).assert_outcomes(passed=1)
    assert not (corpus.path / "corpus/a.rerecorded.jsonl").exists()
    run("--replay", "corpus/a.jsonl").assert_outcomes(passed=1)


def test_a_malformed_selector_is_a_usage_error(corpus: Project, run: Run) -> None:
    result = run("--replay", "corpus", "--sessiontape-live=process@")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*argument --sessiontape-live: 'process@': write a boundary*"])
