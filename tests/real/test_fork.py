"""Fork on the gardener: what if the agent had answered otherwise at one step?

Each test records a real gardener session (real git, the scripted agent, two worker
threads) in one temporary directory and forks it in another: everything before the fork's
seq replays as recorded, the call at it gets another answer, and the calls after it are
answered by the tape where a recorded call asked the same, or run live. The branch tape
replays green in plain mode, its lines before the fork are the original's byte for byte,
and no call the tape answered started a process.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import (
    AgentTurn,
    CassetteError,
    ProcessCall,
    ReplayReport,
    StoreMutation,
    UsageError,
)
from sessiontape.examples.gardener import WORK_ROOT, GitError, record_scenario, run_session

from .conftest import Spawns

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

#: The edit answer of the fork: the agent gives up on the task.
GAVE_UP: dict[str, Any] = {
    "state": "failed",
    "terminal": True,
    "payload": {"reason": "what if the agent had given up"},
}
#: The review answer of the fork: the reviewer asks for another round.
ONE_MORE_ROUND: dict[str, Any] = {
    "state": "needs_changes",
    "terminal": False,
    "payload": {"feedback": "more tulips"},
}
#: The git calls a task makes after its edit when it is approved (none when it fails), in
#: its worktree or naming its branch; then ``git rev-parse HEAD`` in the repository.
AFTER_EDIT: tuple[tuple[str, ...], ...] = (
    ("git", "add"),
    ("git", "commit"),
    ("git", "diff"),
    ("git", "merge"),
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real gardener session (happy scenario, two workers), recorded once."""
    folder = tmp_path_factory.mktemp("recorded")
    tape = folder / "happy.jsonl"
    record_scenario(tape, folder / "work", scenario="happy", workers=2)
    return tape


@pytest.fixture
def tape(recorded: Path, tmp_path: Path) -> Path:
    """A copy of the recording in this test's own directory (forks are written beside)."""
    copy = tmp_path / "tapes" / recorded.name
    copy.parent.mkdir()
    shutil.copy(recorded, copy)
    return copy


def _turns(tape: Path, step: str) -> list[AgentTurn]:
    return [
        e
        for e in sessiontape.load(tape).calls
        if isinstance(e, AgentTurn) and e.args[0]["step"] == step
    ]


def _fork(tape: Path, work: Path, fork: sessiontape.Fork) -> sessiontape.ReplayTape:
    with sessiontape.replay(tape, roots={WORK_ROOT: str(work)}, fork=fork) as player:
        run_session(player, work)
    return player


def _replay(tape: Path, work: Path) -> ReplayReport:
    with sessiontape.replay(tape, roots={WORK_ROOT: str(work)}) as player:
        run_session(player, work)
    assert player.report is not None
    return player.report


def _lines_before(tape: Path, seq: int) -> list[bytes]:
    return [
        line
        for line in tape.read_bytes().splitlines()[1:]
        if json.loads(line)["seq"] < seq and json.loads(line)["kind"] != "session_end"
    ]


def test_an_agent_that_gives_up_gives_a_branch_that_replays_green(
    tape: Path, tmp_path: Path, spawns: Spawns
) -> None:
    edit = _turns(tape, "edit")[0]
    task = edit.args[0]["task"]
    recording = sessiontape.load(tape)
    hidden = {e.seq for e in recording.calls if e.parent is not None}
    after = [
        e
        for e in recording.calls
        if e.seq > edit.seq and e.seq not in hidden and not isinstance(e, StoreMutation)
    ]
    # The calls the task no longer makes once its agent gave up: its review, the git calls
    # of its commit and merge (in its worktree, or naming its branch), and one of the
    # `git rev-parse HEAD` after a merge (they ask the same: any one of them).
    not_made = [
        e
        for e in after
        if (isinstance(e, AgentTurn) and e.args[0]["task"] == task)
        or (
            isinstance(e, ProcessCall)
            and tuple(e.argv[:2]) in AFTER_EDIT
            and (str(e.cwd).endswith(f"/{task}") or f"task/{task}" in e.argv)
        )
    ]
    assert len(not_made) == 5

    with spawns.counting():
        player = _fork(tape, tmp_path / "fork", sessiontape.Fork(seq=edit.seq, answer=GAVE_UP))
    fork = player.fork
    assert fork is not None
    assert player.report is not None
    assert player.report.ok, player.report.render()
    branch = tape.with_name(f"happy.fork-{edit.seq}.jsonl")
    assert fork.written == str(branch)
    assert (fork.from_tape, fork.live, fork.stopped) == (len(after) - len(not_made) - 1, 0, None)
    assert spawns.started == []  # every call after the fork came from the tape
    assert player.report.render().count(f"written to {branch}") == 1

    header = sessiontape.load(branch).header
    assert header.forked_from == sessiontape.ForkedFrom(
        tape="happy.jsonl",
        sha256=hashlib.sha256(tape.read_bytes()).hexdigest(),
        seq=edit.seq,
        answer=GAVE_UP,
    )
    assert _lines_before(branch, edit.seq) == _lines_before(tape, edit.seq)
    given = sessiontape.load(branch).by_seq(edit.seq)
    assert isinstance(given, AgentTurn)
    assert given.result == GAVE_UP

    report = _replay(branch, tmp_path / "replay")
    assert report.ok, report.render()
    assert report.consumed == report.loaded
    end = sessiontape.load(branch).end
    assert end is not None
    assert task in end.outcome["failed"]


def test_another_round_of_review_runs_the_new_steps_live_and_nothing_else(
    tape: Path, tmp_path: Path, spawns: Spawns
) -> None:
    review = _turns(tape, "review")[0]
    work = tmp_path / "fork"
    fork_at = sessiontape.Fork(seq=review.seq, answer=ONE_MORE_ROUND)
    # The branch ends with the exception it raised: the application sees it, as it would.
    with (
        spawns.counting(),
        pytest.raises(GitError, match="not a git repository"),
        sessiontape.replay(tape, roots={WORK_ROOT: str(work)}, fork=fork_at) as player,
    ):
        run_session(player, work)
    fork = player.fork
    assert fork is not None
    assert fork.written is not None, player.report
    branch = Path(fork.written)
    written = sessiontape.load(branch)
    ran = [written.by_seq(seq) for seq in fork.ran_live]
    processes = [e for e in ran if isinstance(e, ProcessCall)]
    # Only the calls the tape could not answer ran: the second round's read of the file
    # (the tape had it once, for the first round), the second edit (the agent, and its
    # model process inside it), then git in the worktree, which a replay never made: it
    # fails, and that ends the branch.
    assert fork.live == len(ran) == 4
    assert [e.argv[:2] for e in processes] == [["git", "show"], ["sh", "-c"], ["git", "add"]]
    assert isinstance(ran[1], AgentTurn)
    assert ran[1].args[0]["attempt"] == 2
    assert len(spawns.started) == len(processes)
    report = player.report
    assert report is not None
    assert report.ok, report.render()
    assert sessiontape.load(branch).error is not None  # the branch ended with git's error
    replayed = _replay_crashed(branch, tmp_path / "replay")
    assert replayed.ok, replayed.render()


def _replay_crashed(tape: Path, work: Path) -> ReplayReport:
    """Replay a branch that ended with an exception: the tape swallows it when it is the
    recorded one."""
    with sessiontape.replay(tape, roots={WORK_ROOT: str(work)}) as player:
        run_session(player, work)
    assert player.report is not None
    return player.report


def test_no_live_stops_at_the_first_call_the_tape_cannot_answer_and_names_it(
    tape: Path, tmp_path: Path, spawns: Spawns
) -> None:
    review = _turns(tape, "review")[0]
    task = review.args[0]["task"]
    with spawns.counting():
        player = _fork(
            tape,
            tmp_path / "fork",
            sessiontape.Fork(seq=review.seq, answer=ONE_MORE_ROUND, live=False),
        )
    fork = player.fork
    assert fork is not None
    assert player.report is not None
    assert not player.report.ok
    assert spawns.started == []
    assert fork.written is None
    assert not tape.with_name(f"happy.fork-{review.seq}.jsonl").exists()
    # The second round starts by reading the task's file in its worktree: the tape has
    # that call once, used by the first round.
    path = next(iter(_turns(tape, "edit")[0].args[0]["files"]))
    for e in _turns(tape, "edit"):
        if e.args[0]["task"] == task:
            path = next(iter(e.args[0]["files"]))
    argv = ["git", "show", f"HEAD:{path}"]
    assert fork.stopped is not None
    assert fork.stopped.startswith(
        f"worker {review.worker!r}, process: the process call {argv!r} asking "
        f"{{'argv': {argv!r}, 'cwd': '{{work}}/worktrees/{task}'"
    ), fork.stopped
    assert "stopped at a call the tape cannot answer" in player.report.render()


def test_a_path_beside_the_tape_that_is_not_its_fork_is_never_written_over(
    tape: Path, tmp_path: Path
) -> None:
    edit = _turns(tape, "edit")[0]
    target = tape.with_name(f"happy.fork-{edit.seq}.jsonl")
    target.write_text("my notes\n", encoding="utf-8")
    with pytest.raises(CassetteError, match="not a fork sessiontape wrote"):
        sessiontape.replay(tape, fork=sessiontape.Fork(seq=edit.seq, answer=GAVE_UP))
    assert target.read_text(encoding="utf-8") == "my notes\n"
    # A fork of another tape is not this tape's either.
    target.unlink()
    other = tmp_path / "other.jsonl"
    shutil.copy(tape, other)
    _fork(other, tmp_path / "w1", sessiontape.Fork(seq=edit.seq, answer=GAVE_UP))
    shutil.copy(other.with_name(f"other.fork-{edit.seq}.jsonl"), target)
    before = target.read_bytes()
    with pytest.raises(CassetteError, match="a fork of another tape"):
        sessiontape.replay(tape, fork=sessiontape.Fork(seq=edit.seq, answer=GAVE_UP))
    assert target.read_bytes() == before
    # Its own fork is replaced.
    target.unlink()
    first = _fork(tape, tmp_path / "w2", sessiontape.Fork(seq=edit.seq, answer=GAVE_UP))
    again = _fork(tape, tmp_path / "w3", sessiontape.Fork(seq=edit.seq, answer=GAVE_UP))
    assert first.fork is not None
    assert again.fork is not None
    assert again.fork.written == str(target)


def test_a_fork_is_refused_where_it_cannot_part(tape: Path) -> None:
    recording = sessiontape.load(tape)
    inner = next(e for e in recording.calls if e.parent is not None)
    with pytest.raises(UsageError, match=f"fork at seq {inner.parent}"):
        sessiontape.replay(tape, fork=sessiontape.Fork(seq=inner.seq, answer=GAVE_UP))
    store = next(e for e in recording.calls if isinstance(e, StoreMutation))
    with pytest.raises(UsageError, match="verify boundary"):
        sessiontape.replay(tape, fork=sessiontape.Fork(seq=store.seq, answer={"x": 1}))
    process = next(e for e in recording.calls if isinstance(e, ProcessCall))
    with pytest.raises(UsageError, match="returncode, stdout and stderr"):
        sessiontape.replay(tape, fork=sessiontape.Fork(seq=process.seq, answer={"code": 1}))
    with pytest.raises(UsageError, match="give the answer"):
        sessiontape.replay(tape, fork=sessiontape.Fork(seq=process.seq, live=False))
    assert list(tape.parent.iterdir()) == [tape]


def test_tapes_without_a_fork_note_load_as_before(recorded: Path) -> None:
    corpus = Path(__file__).resolve().parents[2] / "cassettes"
    for path in sorted(corpus.glob("*.jsonl")):
        assert sessiontape.load(path).header.forked_from is None
    assert sessiontape.load(recorded).header.forked_from is None


class _Weather:
    def today(self, city: str) -> str:
        return f"sunny in {city}"


#: A token the program puts in a command's argv (GitHub's shape: the scrubber knows it).
TOKEN = "ghp_" + "Fork1Token2" * 3 + "Fork1T"


def _forecast(tape: sessiontape.Tape) -> str:
    weather = tape.boundary("weather", _Weather(), methods=["today"])
    with tape.patch_subprocess():
        said = weather.today("Lyon")
        done = subprocess.run(["echo", said, "--token", TOKEN], capture_output=True, text=True)
    return done.stdout


def test_a_stop_names_the_call_with_its_secrets_redacted(tmp_path: Path) -> None:
    """The call a fork with live calls forbidden stops at is named as today's program
    asks it, a secret in it redacted as in every report (and receipt) of a replay."""
    tape = tmp_path / "forecast.jsonl"
    with sessiontape.record(tape) as recording:
        assert _forecast(recording) == f"sunny in Lyon --token {TOKEN}\n"
    assert TOKEN not in tape.read_text(encoding="utf-8")
    asked = next(e for e in sessiontape.load(tape).calls if not isinstance(e, ProcessCall))
    fork = sessiontape.Fork(seq=asked.seq, answer="rain in Lyon", live=False)
    with sessiontape.replay(tape, fork=fork) as player:
        _forecast(player)
    assert player.fork is not None
    assert player.fork.stopped is not None
    assert player.fork.stopped.startswith(
        "worker 'main', process: the process call ['echo', 'rain in Lyon', '--token', '[REDACTED"
    ), player.fork.stopped
    assert TOKEN not in player.fork.stopped
    assert player.report is not None
    assert TOKEN not in player.report.render()
