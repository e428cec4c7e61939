"""Live re-record on the gardener: a new git call re-recorded for real, the agent from the tape.

The gardener gets a ``git fetch`` before each merge (``_changes.py``, unguarded). No tape of
the corpus can answer it; ``live=["process"]`` runs every process call for real (real
git), serves every agent turn from the tape (the agent is never asked), and writes the
new tape beside the old one; that tape then replays green with no real process at all.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import Change, ProcessCall, ReplayReport
from sessiontape.cli import main
from sessiontape.examples.gardener import WORK_ROOT, ScriptedAgent, run_session

from ._changes import FETCH, changed_gardener
from .conftest import Spawns

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CORPUS = Path(__file__).resolve().parents[2] / "cassettes"


def _replay(tape: Path, work: Path, **options: Any) -> ReplayReport:
    with sessiontape.replay(tape, roots={WORK_ROOT: str(work)}, **options) as player:
        run_session(player, work)
    assert player.report is not None
    return player.report


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every request the real (scripted) agent was asked."""
    requests: list[Any] = []
    real = ScriptedAgent.execute

    def execute(self: ScriptedAgent, request: Any) -> Any:
        requests.append(request)
        return real(self, request)

    monkeypatch.setattr(ScriptedAgent, "execute", execute)
    return requests


def _fetches(tape: Path) -> list[ProcessCall]:
    return [
        c
        for c in sessiontape.load(tape).calls
        if isinstance(c, ProcessCall) and c.argv[:2] == ["git", "fetch"]
    ]


@pytest.mark.parametrize("name", ["gardener-happy", "gardener-conflict", "gardener-full"])
def test_live_process_rerecords_the_new_git_call_and_no_agent_is_asked(
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    asked: list[Any],
    spawns: Spawns,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tape = tmp_path / f"{name}.jsonl"
    shutil.copy(CORPUS / tape.name, tape)
    fetched = changed_gardener(monkeypatch, (FETCH,), guarded=False)
    report = _replay(tape, tmp_path / "live", live=["process"], app_version="2.0")
    assert report.ok, report.render()
    assert asked == []  # every agent turn came from the tape
    new = tmp_path / f"{name}.rerecorded.jsonl"
    assert report.rewritten_to == str(new)
    assert tape.read_bytes() == (CORPUS / tape.name).read_bytes()  # beside, not over
    merges = len(fetched)
    assert merges > 0
    assert len(_fetches(new)) == merges
    added = [r for r in report.rewrites if r.change is Change.ADDED]
    dropped = [r for r in report.rewrites if r.change is Change.DROPPED]
    assert {r.boundary for r in added + dropped} == {"process"}
    assert len(added) == len(dropped) + merges
    recording = sessiontape.load(new)
    [note] = recording.header.rerecorded or []
    assert (note.segments, note.app_version, note.added, note.dropped) == (
        ["process"],
        "2.0",
        len(added),
        len(dropped),
    )
    # A valid tape: gapless seqs, parents that exist, the agents' model processes kept.
    seqs = [e.seq for e in recording.entries]
    assert seqs == list(range(len(seqs)))
    assert all(e.parent is None or recording.by_seq(e.parent) is not None for e in recording)
    old = sessiontape.load(CORPUS / tape.name)
    assert len(recording.entries_for("agent")) == len(old.entries_for("agent"))
    capsys.readouterr()
    assert main(["validate", str(new)]) == 0
    assert capsys.readouterr().out == f"{new}: valid ({len(recording.entries)} entries)\n"

    fetched.clear()
    with spawns.counting():
        plain = _replay(new, tmp_path / "again")
    assert plain.ok, plain.render()
    assert spawns.started == []  # nothing real ran: every git call came from the tape
    assert len(fetched) == merges


def test_live_with_update_replaces_the_tape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: list[Any]
) -> None:
    tape = tmp_path / "gardener-happy.jsonl"
    shutil.copy(CORPUS / tape.name, tape)
    changed_gardener(monkeypatch, (FETCH,), guarded=False)
    report = _replay(tape, tmp_path / "live", live=["process:git"], update=True)
    assert report.ok, report.render()
    assert report.rewritten_to == str(tape)
    assert not (tmp_path / "gardener-happy.rerecorded.jsonl").exists()
    assert len(_fetches(tape)) == 3
    assert asked == []
    assert _replay(tape, tmp_path / "again").ok


def test_a_live_agent_runs_the_real_adapter_and_its_model_process(
    tmp_path: Path, asked: list[Any]
) -> None:
    tape = tmp_path / "gardener-happy.jsonl"
    shutil.copy(CORPUS / tape.name, tape)
    report = _replay(tape, tmp_path / "live", live=["agent@worker-1"])
    assert report.ok, report.render()
    assert asked
    assert all(r.get("task") for r in asked)
    new = sessiontape.load(tmp_path / "gardener-happy.rerecorded.jsonl")
    turns = [t for t in new.entries_for("agent") if t.worker == "worker-1"]
    # Each live turn's model process is recorded inside it, parent linked.
    children = [c for c in new.calls if c.parent in {t.seq for t in turns}]
    assert len(children) == len(turns) > 0
    assert _replay(tmp_path / "gardener-happy.rerecorded.jsonl", tmp_path / "again").ok


def test_a_bad_selector_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(sessiontape.UsageError, match="process:git"):
        sessiontape.replay(CORPUS / "gardener-happy.jsonl", live=["agent:git"])


def test_a_live_segment_missing_its_world_says_how_to_grow_it(tmp_path: Path) -> None:
    # Live git in worker-2 alone: the repository it works in was made by main's calls,
    # served from the tape, so it does not exist. The replay fails, writes nothing, and
    # its next step says to re-record the boundary for every worker.
    tape = tmp_path / "gardener-happy.jsonl"
    shutil.copy(CORPUS / tape.name, tape)
    work = tmp_path / "live"
    with (
        pytest.raises(Exception, match="not a git repository"),
        sessiontape.replay(tape, roots={WORK_ROOT: str(work)}, live=["process@worker-2"]) as player,
    ):
        run_session(player, work)
    report = player.report
    assert report is not None
    assert not report.ok
    assert report.rewritten_to is None
    assert not (tmp_path / "gardener-happy.rerecorded.jsonl").exists()
    failures = [m for m in report.mismatches if m.kind.value == "error_mismatch"]
    assert failures
    for m in failures:
        assert "live re-record of process@worker-2" in m.next_step
        assert "(--sessiontape-live=process)" in m.next_step
