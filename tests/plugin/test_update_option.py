"""``--sessiontape-update``: replays rewrite their tapes to match today's code and say how.

Run as users run it, through pytester, serially and over pytest-xdist (``-n 2``, where
each tape is rewritten by the worker that replayed it).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

import sessiontape

if TYPE_CHECKING:
    from conftest import Project, Run

XDIST = [pytest.param((), id="serial"), pytest.param(("-n", "2"), id="xdist")]


@pytest.fixture
def corpus(project: Project) -> Project:
    """Three cassettes of the app with its word as the second argument (``echo -n WORD``):
    a changed word is the same call with other arguments, not another program."""
    app = project.path / "app.py"
    app.write_text(
        app.read_text(encoding="utf-8").replace('["echo", word]', '["echo", "-n", word]'),
        encoding="utf-8",
    )
    for name in ("a", "b", "c"):
        project.record(f"corpus/{name}.jsonl")
    return project


@pytest.mark.parametrize("xdist", XDIST)
def test_changed_requests_are_rewritten_listed_and_then_green(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    before = {n: (corpus.path / f"corpus/{n}.jsonl").read_bytes() for n in "abc"}
    monkeypatch.setenv("APP_WORD", "bonjour")
    failing = run("--replay", "corpus", *xdist)
    failing.assert_outcomes(failed=3)

    result = run("--replay", "corpus", "--sessiontape-update", *xdist)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*= sessiontape update =*",
            "3 tape(s) rewritten, 0 not written; 3 change(s)",
            "tape updated: 1 field(s) of requests rewritten; wrote corpus/a.jsonl",
            "  corpus/a.jsonl seq 1 (w1, process) request rewritten: argv[2]: 'hello' -> 'bonjour'",
        ]
    )
    for name in "abc":
        after = (corpus.path / f"corpus/{name}.jsonl").read_bytes()
        old_lines, new_lines = before[name].splitlines(), after.splitlines()
        assert len(old_lines) == len(new_lines)
        changed = [i for i, (x, y) in enumerate(zip(old_lines, new_lines, strict=True)) if x != y]
        assert len(changed) == 1  # one line per entry: the diff is the review
        assert b'"argv":["echo","-n","bonjour"]' in new_lines[changed[0]]
        assert oct(os.stat(corpus.path / f"corpus/{name}.jsonl").st_mode & 0o777) == "0o600"

    run("--replay", "corpus", *xdist).assert_outcomes(passed=3)
    updated = {n: (corpus.path / f"corpus/{n}.jsonl").read_bytes() for n in "abc"}
    again = run("--replay", "corpus", "--sessiontape-update", *xdist)
    again.assert_outcomes(passed=3)
    again.stdout.no_fnmatch_line("*sessiontape update*")
    assert {n: (corpus.path / f"corpus/{n}.jsonl").read_bytes() for n in "abc"} == updated


def test_calls_no_longer_made_are_dropped(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_SHORT", "1")
    result = run("--replay", "corpus/a.jsonl", "--sessiontape-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "  corpus/a.jsonl seq 2 (w1, process) dropped: {'argv': ?'echo', 'done'?, *",
            "  corpus/a.jsonl seq 3 (main, session) outcome rewritten: out?1?: *",
        ]
    )
    recording = sessiontape.load(corpus.path / "corpus/a.jsonl")
    assert [c.argv for c in recording.calls] == [["echo", "-n", "hello"]]  # type: ignore[union-attr]
    assert recording.end is not None
    assert recording.end.counts["process"] == 1
    assert recording.end.outcome == {"out": ["-n hello\n"]}
    run("--replay", "corpus/a.jsonl").assert_outcomes(passed=1)


def test_the_tape_fixture_updates_its_cassette(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    run("test_app.py").assert_outcomes(passed=1)  # records
    monkeypatch.setenv("APP_WORD", "hola")
    run("test_app.py").assert_outcomes(failed=1)
    result = run("test_app.py", "--sessiontape-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["  cassettes/test_app/test_one.jsonl seq 1 (w1, process) request rewritten: *hola*"]
    )
    run("test_app.py").assert_outcomes(passed=1)


def test_a_symlinked_tape_is_refused_and_left_alone(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = corpus.path / "corpus/a.jsonl"
    link = corpus.path / "linked.jsonl"
    link.symlink_to(real)
    before = real.read_bytes()
    monkeypatch.setenv("APP_WORD", "bonjour")
    result = run("--replay", "linked.jsonl", "--sessiontape-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*linked.jsonl: is a symlink; sessiontape updates only*"])
    assert real.read_bytes() == before
    assert link.is_symlink()


def test_strict_mode_lets_an_answerable_mismatch_through(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_WORD", "bonjour")
    result = run("--replay", "corpus/a.jsonl", "--sessiontape-update", "--sessiontape-strict")
    result.assert_outcomes(passed=1)
    run("--replay", "corpus/a.jsonl", "--sessiontape-strict").assert_outcomes(passed=1)


def test_the_receipt_lists_the_rewrites(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.setenv("APP_WORD", "bonjour")
    run(
        "--replay", "corpus/b.jsonl", "--sessiontape-update", "--sessiontape-report=r.json"
    ).assert_outcomes(passed=1)
    [receipt] = json.loads((corpus.path / "r.json").read_text(encoding="utf-8"))
    assert receipt["rewritten_to"] == str(corpus.path / "corpus/b.jsonl")
    assert [
        (r["seq"], r["change"], r["field"], r["old"], r["new"]) for r in receipt["rewrites"]
    ] == [(1, "request", "argv[2]", "hello", "bonjour")]


def test_nothing_is_written_when_nothing_changed(corpus: Project, run: Run) -> None:
    path = corpus.path / "corpus/c.jsonl"
    stamp = path.stat().st_mtime_ns
    inode = path.stat().st_ino
    run("--replay", "corpus/c.jsonl", "--sessiontape-update").assert_outcomes(passed=1)
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == (stamp, inode)
