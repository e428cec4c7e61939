"""``--sessiontape-fork=SEQ``: a replay that parts from its tape at a call, and its branch."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import pytest

import sessiontape

if TYPE_CHECKING:
    from conftest import Project, Run

XDIST = [pytest.param((), id="serial"), pytest.param(("-n", "2"), id="xdist")]


@pytest.mark.parametrize("xdist", XDIST)
def test_an_answer_given_at_a_call_writes_the_branch_beside_the_tape(
    project: Project, run: Run, xdist: tuple[str, ...]
) -> None:
    tape = project.record("corpus/a.jsonl")
    before = tape.read_bytes()
    (project.path / "answer.json").write_text('{"stdout": "bonjour\\n"}', encoding="utf-8")
    result = run(
        "--replay",
        "corpus/a.jsonl",
        "--sessiontape-fork=1",
        "--sessiontape-fork-answer=answer.json",
        *xdist,
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*= sessiontape fork =*",
            "forked corpus/a.jsonl at seq 1 (answer given): 1 call(s) after it answered by "
            "the tape, 0 ran live; written to corpus/a.fork-1.jsonl",
        ]
    )
    assert tape.read_bytes() == before
    branch = sessiontape.load(project.path / "corpus/a.fork-1.jsonl")
    assert branch.header.forked_from == sessiontape.ForkedFrom(
        tape="a.jsonl",
        sha256=hashlib.sha256(before).hexdigest(),
        seq=1,
        answer={"stdout": "bonjour\n"},
    )
    assert branch.end is not None
    assert branch.end.outcome == {"out": ["bonjour\n", "done\n"]}
    replayed = run("--replay", "corpus/a.fork-1.jsonl")
    replayed.assert_outcomes(passed=1)


def test_with_no_answer_the_call_runs_live_through_the_wiring(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.record("corpus/a.jsonl")
    monkeypatch.setenv("APP_WORD", "bonjour")
    result = run("--replay", "corpus/a.jsonl", "--sessiontape-fork=1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "forked corpus/a.jsonl at seq 1 (ran live): 1 call(s) after it answered by the "
            "tape, 0 ran live; written to corpus/a.fork-1.jsonl",
        ]
    )
    branch = sessiontape.load(project.path / "corpus/a.fork-1.jsonl")
    assert [c.argv for c in branch.calls] == [["echo", "bonjour"], ["echo", "done"]]  # type: ignore[union-attr]
    assert branch.header.forked_from is not None
    assert branch.header.forked_from.answer is None


def test_no_live_fails_the_tape_naming_the_call_it_cannot_answer(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_SHORT", "1")
    project.record("corpus/a.jsonl")  # one call: `echo hello`
    monkeypatch.delenv("APP_SHORT")
    (project.path / "answer.json").write_text('{"stdout": "hi\\n"}', encoding="utf-8")
    result = run(
        "--replay",
        "corpus/a.jsonl",
        "--sessiontape-fork=1",
        "--sessiontape-fork-answer=answer.json",
        "--sessiontape-fork-no-live",
    )
    result.assert_outcomes(failed=1)
    assert (
        "\nforked corpus/a.jsonl at seq 1 (answer given): stopped at a call the tape cannot "
        "answer (worker 'w1', process: the process call ['echo', 'done'] asking "
        "{'argv': ['echo', 'done'], 'cwd': None, 'env': None, 'input': None}); 0 call(s) after "
        "the fork answered by the tape, nothing written. Run it live: leave out "
        "--sessiontape-fork-no-live.\n"
    ) in result.stdout.str()
    assert not (project.path / "corpus/a.fork-1.jsonl").exists()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--sessiontape-fork-answer=x.json",), "*go with --sessiontape-fork=SEQ*"),
        (("--sessiontape-fork-no-live",), "*go with --sessiontape-fork=SEQ*"),
        (("--sessiontape-fork=0",), "*give the seq of a recorded call*"),
        (("--sessiontape-fork=1", "--sessiontape-update"), "*in a pytest run of its own*"),
        (("--sessiontape-fork=1", "--sessiontape-fork-answer=missing.json"), "*cannot read*"),
    ],
)
def test_options_that_cannot_fork_are_refused(
    project: Project, run: Run, args: tuple[str, ...], error: str
) -> None:
    project.record("corpus/a.jsonl")
    result = run("--replay", "corpus/a.jsonl", *args)
    assert result.ret != 0
    result.stderr.fnmatch_lines([error])
    assert not (project.path / "corpus/a.fork-1.jsonl").exists()
