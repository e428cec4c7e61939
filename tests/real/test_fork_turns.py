"""Fork at one turn of a conversation: what if the process had answered otherwise there?

A program speaks to one long process over its pipes (a conversation: each line written is
answered before the next is written), recorded once with a real child. A fork at the
conversation's seq answers one of its turns: the turns before it replay as recorded, the
ones after it are the tape's while the program writes what it wrote then, and a write the
tape has no answer for stops the fork there (a conversation cannot go live from its
middle), naming the turn and what was written.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import ProcessCall, UsageError

from .conftest import PY, Spawns

#: A child that answers each line with the line reversed, and "?" to a line it finds empty.
CHILD = "import sys\nfor line in sys.stdin:\n    print(line.strip()[::-1] or '?', flush=True)\n"
WORDS = ("one", "two", "three")


def chat(tape: sessiontape.Tape, first: str = "one", *, strict: bool = False) -> list[str]:
    """Say each word; a word answered with "?" is said again (once). ``strict``: an
    output that ends in the middle of the chat is an error."""
    heard: list[str] = []
    with tape.patch_subprocess():
        pipe = subprocess.PIPE
        proc = subprocess.Popen([PY, "-c", CHILD], stdin=pipe, stdout=pipe, text=True)
        assert proc.stdin is not None
        assert proc.stdout is not None
        for word in (first, *WORDS[1:]):
            for _ in range(2):
                proc.stdin.write(word + "\n")
                proc.stdin.flush()
                heard.append(proc.stdout.readline())
                if strict and not heard[-1]:
                    raise RuntimeError(f"the child stopped answering after {word!r}")
                if heard[-1] != "?\n":
                    break
        proc.stdin.close()
        proc.wait()
    return heard


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    with sessiontape.record(path) as recording:
        assert chat(recording) == ["eno\n", "owt\n", "eerht\n"]
    return path


def _conversation(tape: Path) -> ProcessCall:
    (entry,) = sessiontape.load(tape).calls
    assert isinstance(entry, ProcessCall)
    assert entry.chunks is not None
    return entry


def _fork(tape: Path, fork: sessiontape.Fork, **options: Any) -> sessiontape.ReplayTape:
    with sessiontape.replay(tape, fork=fork) as player:
        chat(player, **options)
    assert player.fork is not None
    return player


def test_a_turn_answered_otherwise_gives_a_branch_with_the_later_turns_from_the_tape(
    tape: Path, spawns: Spawns
) -> None:
    seq = _conversation(tape).seq
    with spawns.counting():
        player = _fork(tape, sessiontape.Fork(seq=seq, answer={"turn": 2, "stdout": "2\n"}))
        fork = player.fork
        assert fork is not None
        assert fork.written == str(tape.with_name(f"chat.fork-{seq}.jsonl"))
        assert (fork.from_tape, fork.live, fork.stopped) == (0, 0, None)
        branch = Path(fork.written)
        with sessiontape.replay(branch) as replaying:
            assert chat(replaying) == ["eno\n", "2\n", "eerht\n"]
        assert replaying.report is not None
        assert replaying.report.ok, replaying.report.render()
    assert spawns.started == []
    # The turns before and after the answered one are the original's.
    original, forked = _conversation(tape), _conversation(branch)
    assert forked.chunks is not None
    assert original.chunks is not None
    assert [(c.stream, c.data) for c in forked.chunks] == [
        ("stdin", "one\n"),
        ("stdout", "eno\n"),
        ("stdin", "two\n"),
        ("stdout", "2\n"),
        ("stdin", "three\n"),
        ("stdout", "eerht\n"),
    ]
    assert forked.chunks[4:] == original.chunks[4:]
    header = sessiontape.load(branch).header
    assert header.forked_from is not None
    assert header.forked_from.answer == {"turn": 2, "stdout": "2\n"}


@pytest.mark.parametrize("live", [False, True], ids=["no-live", "live"])
def test_an_answer_that_changes_the_next_write_stops_the_fork_at_that_turn(
    tape: Path, spawns: Spawns, live: bool
) -> None:
    """Answered "?" at turn 2, the program says "two" again where the tape has "three":
    no recorded turn answers it, and the rest of a conversation cannot run live."""
    entry = _conversation(tape)
    fork = sessiontape.Fork(seq=entry.seq, answer={"turn": 2, "stdout": "?\n"}, live=live)
    with spawns.counting():
        player = _fork(tape, fork)
    assert spawns.started == []
    result = player.fork
    assert result is not None
    assert player.report is not None
    assert not player.report.ok
    assert result.written is None
    assert list(tape.parent.iterdir()) == [tape]
    assert result.stopped is not None
    # The program read the end of the output there, and wrote again to a process gone.
    assert result.stopped == (
        f"worker 'main', process: the process call {entry.argv!r}, turn 3: the program "
        "wrote 'two\\n'; the program then ended with BrokenPipeError: [Errno 32] Broken pipe"
    )
    assert result.line().endswith(
        "nothing written. A conversation cannot go live from its middle: run all of it "
        f"live, --sessiontape-fork={entry.seq} with no --sessiontape-fork-answer "
        f"(Fork(seq={entry.seq}))."
    ), result.line()


def test_what_ends_the_program_after_the_stop_is_named_with_it(tape: Path) -> None:
    """Its output ended at the stop, the program raises its own error: the fork ends as
    stopped (the error does not leave the replay), naming what the program then raised."""
    entry = _conversation(tape)
    fork = sessiontape.Fork(seq=entry.seq, answer={"turn": 2, "stdout": "?\n"}, live=False)
    player = _fork(tape, fork, strict=True)
    assert player.fork is not None
    assert player.fork.written is None
    assert player.fork.stopped == (
        f"worker 'main', process: the process call {entry.argv!r}, turn 3: the program "
        "wrote 'two\\n'; the program then ended with RuntimeError: the child stopped "
        "answering after 'two'"
    )


def test_a_write_before_the_answered_turn_that_differs_is_a_divergence(tape: Path) -> None:
    """The turns before the answer replay as recorded: another first word fails the
    fork as a plain replay fails (a mismatch, not a stop), and nothing is written."""
    seq = _conversation(tape).seq
    player = _fork(
        tape, sessiontape.Fork(seq=seq, answer={"turn": 2, "stdout": "2\n"}), first="uno"
    )
    assert player.fork is not None
    assert player.fork.stopped is None
    assert player.fork.written is None
    assert player.report is not None
    assert [m.kind.value for m in player.report.mismatches] == ["argument_mismatch"]
    assert "stdin chunk 0" in player.report.mismatches[0].message
    assert list(tape.parent.iterdir()) == [tape]


def test_a_conversation_is_answered_one_turn_at_a_time(tape: Path) -> None:
    seq = _conversation(tape).seq
    shape = r'\{"turn": N, "stdout": \.\.\., "stderr": \.\.\.\} \(N from 0, .* to 3, '
    for answer in ({"stdout": "x\n"}, {"turn": 4, "stdout": "x\n"}, {"turn": 1}):
        with pytest.raises(UsageError, match=shape):
            sessiontape.replay(tape, fork=sessiontape.Fork(seq=seq, answer=answer))
    with pytest.raises(UsageError, match="stdout is not text"):
        sessiontape.replay(tape, fork=sessiontape.Fork(seq=seq, answer={"turn": 1, "stdout": 1}))
    assert list(tape.parent.iterdir()) == [tape]
    assert json.loads(tape.read_text(encoding="utf-8").splitlines()[0])["kind"] == "session_start"
