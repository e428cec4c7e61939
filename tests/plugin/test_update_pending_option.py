"""``--sessiontape-update=pending``: the tapes stay as they are, their changes wait beside
them; each test fails with one line and the command to review, and the run ends with one
line. In CI (``CI`` set, no terminal) plain ``--sessiontape-update`` means pending.

Run as users run it, through pytester, serially and over pytest-xdist (the pending files
written by the workers, the end-of-run line merged in the controller).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from sessiontape.cassette import load_pending, pending_path
from sessiontape.cli import main

if TYPE_CHECKING:
    from conftest import Project, Run


@pytest.fixture
def corpus(project: Project) -> Project:
    """Three cassettes of the app with its word as the second argument."""
    app = project.path / "app.py"
    app.write_text(
        app.read_text(encoding="utf-8").replace('["echo", word]', '["echo", "-n", word]'),
        encoding="utf-8",
    )
    for name in ("a", "b", "c"):
        project.record(f"corpus/{name}.jsonl")
    return project


def test_pending_changes_wait_beside_the_tapes_then_are_accepted(
    corpus: Project,
    run: Run,
    monkeypatch: pytest.MonkeyPatch,
    xdist: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
) -> None:
    tapes = {n: corpus.path / f"corpus/{n}.jsonl" for n in "abc"}
    before = {n: p.read_bytes() for n, p in tapes.items()}
    monkeypatch.setenv("APP_WORD", "bonjour")
    result = run("--replay", "corpus", "--sessiontape-update=pending", *xdist)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*corpus/a.jsonl: 1 change(s) pending (1 fix), the tape is unchanged; "
            "review them: sessiontape review *corpus/a.jsonl",
            "0 tape(s) rewritten, 3 with changes pending, 0 not written; 3 change(s)",
            "tape updated: 1 field(s) of requests rewritten; pending in "
            "corpus/a.jsonl.pending, the tape is unchanged",
            "sessiontape: 3 tape(s) with pending changes; review them: sessiontape review",
        ]
    )
    assert {n: p.read_bytes() for n, p in tapes.items()} == before
    for path in tapes.values():
        [change] = load_pending(pending_path(path)).changes
        assert (change.category, change.seq, change.fields[0].field) == ("fix", 1, "argv[2]")

    monkeypatch.chdir(corpus.path)
    capsys.readouterr()
    assert main(["accept", "--all"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sorted(out) == [
        f"corpus/{n}.jsonl: 1 change accepted; wrote corpus/{n}.jsonl; nothing pending"
        for n in "abc"
    ]
    assert not any(pending_path(p).exists() for p in tapes.values())
    run("--replay", "corpus", *xdist).assert_outcomes(passed=3)


@pytest.mark.parametrize(
    ("ci", "flag", "pending"),
    [
        ("true", "--sessiontape-update", True),
        ("", "--sessiontape-update", False),
        ("true", "--sessiontape-update=write", False),
        ("0", "--sessiontape-update", False),
    ],
)
def test_in_ci_plain_update_is_pending(
    corpus: Project,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    ci: str,
    flag: str,
    pending: bool,
) -> None:
    if ci:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("APP_WORD", "bonjour")
    tape = corpus.path / "corpus/a.jsonl"
    before = tape.read_bytes()
    # A subprocess whose standard input is not a terminal, as a CI job's.
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--replay", str(tape), flag)
    if pending:
        result.assert_outcomes(failed=1)
        assert tape.read_bytes() == before
        assert pending_path(tape).exists()
    else:
        result.assert_outcomes(passed=1)
        assert tape.read_bytes() != before
        assert not pending_path(tape).exists()


def test_a_flag_followed_by_a_path_is_still_a_flag(
    corpus: Project, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_WORD", "bonjour")
    run("--sessiontape-update", "--replay", "corpus/a.jsonl").assert_outcomes(passed=1)
    run("--replay", "corpus/b.jsonl", "--sessiontape-update", "corpus/c.jsonl")
    assert b"bonjour" in (corpus.path / "corpus/b.jsonl").read_bytes()


def test_a_tape_fixture_test_leaves_its_changes_pending(
    project: Project, run: Run, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    run(*xdist).assert_outcomes(passed=1)  # records the fixture's cassette
    cassette = project.cassette()
    before = cassette.read_bytes()
    monkeypatch.setenv("APP_SHORT", "1")  # today's code no longer makes the last call
    result = run("--sessiontape-update=pending", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*cassettes/test_app/test_one.jsonl: 1 change(s) pending (1 trim), the tape is "
            "unchanged; review them: sessiontape review *test_one.jsonl",
            "sessiontape: 1 tape(s) with pending changes; review them: sessiontape review",
        ]
    )
    assert cassette.read_bytes() == before
    [change] = load_pending(pending_path(cassette)).changes
    assert (change.category, change.seq) == ("trim", 2)
