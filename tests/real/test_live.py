"""Live re-record on the gardener: a new git call re-recorded for real, the agent from the tape.

The gardener gets a ``git fetch`` before each merge (``_changes.py``, unguarded). No tape of
the corpus can answer it; ``live=["process"]`` runs every process call for real (real
git), serves every agent turn from the tape (the agent is never asked), and writes the
new tape beside the old one; that tape then replays green with no real process at all.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import shutil
import time
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
    tmp_path: Path, asked: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tape = tmp_path / "gardener-happy.jsonl"
    shutil.copy(CORPUS / tape.name, tape)
    old = sessiontape.load(tape)
    # Today's model counts one more input token per answer: every live turn (and the
    # model process inside it, which prints the answer) answers otherwise.
    real = ScriptedAgent._answer

    def answer(self: ScriptedAgent, request: dict[str, Any]) -> Any:
        result = real(self, request)
        usage = {**(result.usage or {}), "input_tokens": (result.usage or {})["input_tokens"] + 1}
        return dataclasses.replace(result, usage=usage)

    monkeypatch.setattr(ScriptedAgent, "_answer", answer)
    report = _replay(tape, tmp_path / "live", live=["agent@worker-1"])
    assert report.ok, report.render()
    assert asked
    assert all(r.get("task") for r in asked)
    new = sessiontape.load(tmp_path / "gardener-happy.rerecorded.jsonl")
    # Re-recorded in place: the same calls under the same seqs, nothing added or dropped.
    assert [e.seq for e in new.entries] == [e.seq for e in old.entries]
    turns = [t for t in new.entries_for("agent") if t.worker == "worker-1"]
    assert {r.seq for r in report.rewrites if r.boundary == "agent"} == {t.seq for t in turns}
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


#: Commit dates fixed: the gardener's commit shas are the same every run.
FIXED_DATE = "2024-05-01T12:00:00+00:00"
#: A commit sha, whole or abbreviated, as git prints them.
_SHA = re.compile(r"\b[0-9a-f]{7,40}\b")


def _live_fetch(tape: Path, work: Path) -> ReplayReport:
    return _replay(tape, work, live=["process"], update=True)


@pytest.mark.parametrize("dates", ["fixed", "real"])
def test_live_twice_on_the_gardener_changes_only_what_the_world_changed(
    dates: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if dates == "fixed":
        monkeypatch.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
        monkeypatch.setenv("GIT_COMMITTER_DATE", FIXED_DATE)
    tape = tmp_path / "gardener-happy.jsonl"
    shutil.copy(CORPUS / tape.name, tape)
    changed_gardener(monkeypatch, (FETCH,), guarded=False)
    first = _live_fetch(tape, tmp_path / "w1")
    assert first.ok, first.render()
    before = tape.read_bytes()
    again = _live_fetch(tape, tmp_path / "w2")
    assert again.ok, again.render()
    after = tape.read_bytes()
    if dates == "fixed":
        # Nothing changed in the world: no write at all.
        assert (again.rewrites, again.rewritten_to) == ([], None)
        assert after == before
        return
    # New commits, new shas: what shows them changed, nothing else (the header's note
    # of the re-record aside), and every line stayed where it was.
    old, new = before.splitlines(), after.splitlines()
    assert len(old) == len(new)
    for a, b in zip(old[1:], new[1:], strict=True):
        assert _SHA.sub("<sha>", a.decode()) == _SHA.sub("<sha>", b.decode())
    assert {r.change for r in again.rewrites} <= {Change.ANSWER, Change.REQUEST, Change.RESULT}


def test_live_calls_on_the_gardener_sit_on_the_tapes_time_axis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tape = tmp_path / "gardener-full.jsonl"
    shutil.copy(CORPUS / tape.name, tape)
    changed_gardener(monkeypatch, (FETCH,), guarded=False)
    started = time.monotonic_ns()
    report = _live_fetch(tape, tmp_path / "w")
    took = time.monotonic_ns() - started
    assert report.ok, report.render()
    recording = sessiontape.load(tape)
    for fetch in _fetches(tape):  # each new call: its real duration
        assert 0 < fetch.duration_ns < took
    for worker in recording.worker_ids():
        calls = [c for c in recording.calls if c.worker == worker]
        for before, after in itertools.pairwise(calls):
            if after.parent == before.seq:  # a model process inside its agent turn
                continue
            assert after.ts_ns >= before.ts_ns + before.duration_ns, (before, after)
    capsys.readouterr()
    assert main(["stats", "--json", str(tape)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert all(0 < w["busy_percent"] <= 100 for w in stats["workers"].values()), stats
    assert main(["validate", str(tape)]) == 0
    assert capsys.readouterr().out == f"{tape}: valid ({len(recording)} entries)\n"
