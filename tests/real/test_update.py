"""Update mode on the gardener: deliberate, unguarded request changes over the shipped corpus.

Each tape of ``cassettes/`` is copied into the test's directory and replayed with the
changed gardener (``_changes.py``): it fails as it is, ``update=True`` turns it green and
lists every change, the updated tape replays green without the flag, and a second update
changes no byte. A new process call is not invented: the update fails, names the call and
the command that re-records it, and writes nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import sessiontape
from sessiontape import Change, ReplayReport
from sessiontape.cassette import replace_cassette
from sessiontape.examples.gardener import WORK_ROOT, run_session

from ._changes import FETCH, REWORD, STORE, changed_gardener

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CORPUS = Path(__file__).resolve().parents[2] / "cassettes"
#: The whole shipped corpus, the tape of a crashed session included.
TAPES = sorted(CORPUS.glob("*.jsonl"))


def _replay(tape: Path, work: Path, **options: object) -> ReplayReport:
    with sessiontape.replay(tape, roots={WORK_ROOT: str(work)}, **options) as player:  # type: ignore[arg-type]
        run_session(player, work)
    assert player.report is not None
    return player.report


@pytest.mark.parametrize("tape", TAPES, ids=lambda p: p.stem)
@pytest.mark.parametrize("change", [REWORD, STORE])
def test_update_turns_the_corpus_green_and_a_second_run_changes_nothing(
    tape: Path, change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / tape.name
    shutil.copy(tape, copy)
    changed_gardener(monkeypatch, (change,), guarded=False)
    assert not _replay(copy, tmp_path / "w0").ok

    report = _replay(copy, tmp_path / "w1", update=True)
    assert report.ok, report.render()
    assert report.rewritten_to == str(copy)
    kinds = {r.change for r in report.rewrites}
    if change == REWORD:  # the edit requests, each answered as recorded
        assert kinds == {Change.REQUEST}
        assert {r.field for r in report.rewrites} == {"args[0].title"}
        assert all(r.new == f"Tend: {r.old}" for r in report.rewrites)
    else:  # a mutation added after each merge; the completions see its effect
        assert kinds == {Change.ADDED, Change.RESULT}
        added = [r for r in report.rewrites if r.change is Change.ADDED]
        assert all(r.new["method"] == "record_attempt" for r in added)
        assert {r.field for r in report.rewrites if r.change is Change.RESULT} == {"result.attempt"}
    text = report.render()
    assert "tape updated: " in text
    assert len([line for line in text.splitlines() if line.startswith(f"  {copy}")]) == len(
        report.rewrites
    )

    updated = copy.read_bytes()
    plain = _replay(copy, tmp_path / "w2")
    assert plain.ok, plain.render()
    again = _replay(copy, tmp_path / "w3", update=True)
    assert again.ok
    assert (again.rewrites, again.rewritten_to) == ([], None)
    assert copy.read_bytes() == updated
    assert sessiontape.load(copy).header == sessiontape.load(tape).header


def test_one_entry_per_line_and_only_the_changed_lines_differ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tape = CORPUS / "gardener-review.jsonl"
    copy = tmp_path / tape.name
    shutil.copy(tape, copy)
    changed_gardener(monkeypatch, (REWORD,), guarded=False)
    report = _replay(copy, tmp_path / "w", update=True)
    old, new = tape.read_bytes().splitlines(), copy.read_bytes().splitlines()
    assert len(old) == len(new)
    differing = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    assert len(differing) == len({r.seq for r in report.rewrites}) > 0
    for i in differing:
        assert old[i].replace(b'"title":"', b'"title":"Tend: ') == new[i]


def test_a_new_process_call_is_not_invented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tape = CORPUS / "gardener-happy.jsonl"
    copy = tmp_path / tape.name
    shutil.copy(tape, copy)
    changed_gardener(monkeypatch, (FETCH,), guarded=False)
    with pytest.raises(sessiontape.UnrecordedCallError):
        _replay(copy, tmp_path / "w", update=True)
    assert copy.read_bytes() == tape.read_bytes()


def test_masked_noise_is_not_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tape = CORPUS / "gardener-happy.jsonl"
    copy = tmp_path / tape.name
    shutil.copy(tape, copy)
    changed_gardener(monkeypatch, (REWORD,), guarded=False)
    report = _replay(copy, tmp_path / "w", update=True, noise=["agent.args[0].title"])
    assert report.ok
    assert report.rewrites == []
    assert copy.read_bytes() == tape.read_bytes()


@pytest.mark.parametrize("why", ["symlink", "not-a-cassette", "read-only-dir"])
def test_update_refuses_what_it_may_not_replace(why: str, tmp_path: Path) -> None:
    folder = tmp_path / "tapes"
    folder.mkdir()
    target = folder / "t.jsonl"
    if why == "symlink":
        real = tmp_path / "real.jsonl"
        shutil.copy(CORPUS / "gardener-happy.jsonl", real)
        target.symlink_to(real)
        message = "is a symlink"
    elif why == "not-a-cassette":
        target.write_text('{"kind": "note"}\n', encoding="utf-8")
        message = "is not a sessiontape cassette"
    else:
        shutil.copy(CORPUS / "gardener-happy.jsonl", target)
        folder.chmod(0o500)
        message = "is read-only"
    before = sorted(p.name for p in folder.iterdir())
    content = target.read_bytes()
    try:
        update = (
            (lambda: replace_cassette(target, [b"{}"]))
            if why == "not-a-cassette"
            else (lambda: sessiontape.replay(target, update=True))
        )
        with pytest.raises(sessiontape.SessiontapeError, match=message) as raised:
            update()
        assert str(target) in str(raised.value)
        assert sorted(p.name for p in folder.iterdir()) == before
        assert target.read_bytes() == content
    finally:
        folder.chmod(0o700)
