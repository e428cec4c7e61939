"""A fork's branch from the lines the replay loaded, and the lookup of the calls after it.

A small program of two workers, each making process calls through a runner that answers
like ``echo`` and a store call now and then, is recorded once; it is forked at one of its
process calls with another stdout that the program does not read, so every call after the
fork asks what a recorded call asked. The branch's lines before the fork are the
original's, byte for byte, whether the tape was given by path (its lines copied from the
bytes the replay loaded) or as a loaded recording (read again), and when the recording
crashed mid-write (a torn last line, which the load leaves out).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import ProcessCall, ProcessResult
from sessiontape.cassette import CallEntry, request_of
from sessiontape.replayer._asked import Asked
from tally import Tally

WORKERS = 2
CALLS = 12
EVERY = 4


class Echo:
    """Answers like ``echo`` without starting a process."""

    def run(self, argv: list[str], **kwargs: Any) -> ProcessResult:
        return ProcessResult(argv, 0, " ".join(argv[1:]) + "\n")


def program(tape: sessiontape.Tape) -> None:
    runner = tape.process_runner(Echo())  # type: ignore[arg-type]
    live = Tally() if tape.mode is not sessiontape.Mode.REPLAY else None
    store = tape.store(live, mutations=["bump"], snapshot=Tally.snapshot, factory=Tally)

    def work(index: int) -> None:
        name = f"w{index}"
        with sessiontape.worker(name):
            for i in range(CALLS):
                runner.run(["echo", name, str(i)], text=True)
                if i % EVERY == 0:
                    store.bump(name)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    tape.finish(outcome=dict(sorted(store.snapshot().items())))


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    tape = tmp_path / "two-workers.jsonl"
    with sessiontape.record(tape, entrypoint="fork lines") as recording:
        program(recording)
    return tape


def _fork_at(tape: Path) -> sessiontape.Fork:
    """At the first worker's process call nearest the middle, another stdout."""
    calls = sessiontape.load(tape).calls
    processes = [c for c in calls if isinstance(c, ProcessCall) and c.worker == "w0"]
    seq = min(processes, key=lambda c: abs(c.seq - len(calls) // 2)).seq
    return sessiontape.Fork(seq=seq, answer={"stdout": "another answer\n"}, live=False)


def _lines_before(tape: Path, seq: int) -> list[bytes]:
    """The lines of ``tape`` after its header with a seq below ``seq``, in file order."""
    found = []
    for line in tape.read_bytes().split(b"\n")[1:]:
        at = line.find(b',"ts_ns"')  # none in a torn line cut before it
        if at >= 0 and int(line[:at].rsplit(b":", 1)[1]) < seq:
            found.append(line)
    return found


def _fork(source: Path | sessiontape.Recording, fork: sessiontape.Fork) -> Path:
    with sessiontape.replay(source, fork=fork) as tape:
        program(tape)
    result = tape.fork
    assert result is not None
    assert result.stopped is None
    assert result.live == 0
    assert result.written is not None
    return Path(result.written)


@pytest.mark.parametrize("given", ["path", "recording"])
def test_the_lines_before_the_fork_are_the_originals(recorded: Path, given: str) -> None:
    fork = _fork_at(recorded)
    source = recorded if given == "path" else sessiontape.load(recorded)
    branch = _fork(source, fork)
    assert _lines_before(branch, fork.seq) == _lines_before(recorded, fork.seq)
    assert len(_lines_before(branch, fork.seq)) == fork.seq - 1  # every call before it
    loaded = sessiontape.load(branch)
    assert loaded.header.forked_from is not None
    assert loaded.header.forked_from.seq == fork.seq
    assert loaded.end is not None
    assert loaded.end.counts["process"] == WORKERS * CALLS
    with sessiontape.replay(branch) as again:
        program(again)
    assert again.report is not None
    assert again.report.ok


def test_a_fork_of_a_tape_whose_last_line_is_torn(recorded: Path) -> None:
    """The recording crashed mid-write: the load leaves the torn line out, and so does the
    branch (it was not a line of the tape the replay served)."""
    fork = _fork_at(recorded)
    lines = recorded.read_bytes().split(b"\n")
    end = lines[-2]
    assert end.startswith(b'{"kind":"session_end"')
    recorded.write_bytes(b"\n".join(lines[:-2]) + b"\n" + end[:30])
    assert sessiontape.load(recorded).torn
    branch = _fork(recorded, fork)
    assert _lines_before(branch, fork.seq) == _lines_before(recorded, fork.seq)
    written = sessiontape.load(branch)
    assert not written.torn
    assert written.end is not None


# -- the lookup of the calls after the fork (``_asked.py``) ------------------------------


def _call(seq: int, worker: str, word: str) -> ProcessCall:
    return ProcessCall(
        seq=seq,
        ts_ns=seq,
        mono_ns=seq,
        worker=worker,
        thread=worker,
        argv=["echo", word],
        returncode=0,
        stdout=f"{word}\n",
    )


class _Lookup:
    """An :class:`Asked` over two workers' queues, counting the times it indexed them."""

    def __init__(self, w0: str = "ab", w1: str = "ba") -> None:
        """``w0`` and ``w1``: the words each worker's calls echo, in its order (seqs 1,
        3, 5... for w0, 2, 4, 6... for w1)."""
        self.queues = {
            "w0": deque(_call(1 + 2 * i, "w0", word) for i, word in enumerate(w0)),
            "w1": deque(_call(2 + 2 * i, "w1", word) for i, word in enumerate(w1)),
        }
        self.indexed = 0
        self.used: set[int] = set()
        self.asked = Asked(self._entries, self.used, self._matches, self._next_of)

    def _entries(self) -> list[CallEntry]:
        self.indexed += 1
        return [e for q in self.queues.values() for e in q]

    def _next_of(self, boundary: str, worker: str) -> CallEntry | None:
        queue = self.queues[worker]
        while queue and queue[0].seq in self.used:
            queue.popleft()
        return queue[0] if queue else None

    @staticmethod
    def _matches(boundary: str, entry: CallEntry, request: Mapping[str, Any]) -> bool:
        return dict(request_of(entry)) == dict(request)

    def take(self, worker: str, word: str) -> int | None:
        asked = dict(request_of(_call(0, worker, word)))
        found = self.asked.take("process", asked, worker)
        return None if found is None else found.seq


def test_a_call_that_is_its_workers_next_is_answered_without_the_index() -> None:
    lookup = _Lookup()
    assert lookup.take("w0", "a") == 1
    assert lookup.take("w1", "b") == 2
    assert lookup.indexed == 0


def test_any_other_call_is_looked_up_in_the_index_made_once() -> None:
    lookup = _Lookup()
    assert lookup.take("w0", "b") == 3  # its own call, after its next one
    assert lookup.take("w0", "a") == 1
    assert lookup.take("w1", "a") == 4
    assert lookup.take("w0", "b") == 2  # another worker's: its own are used
    assert lookup.take("w1", "b") is None
    assert lookup.indexed == 1


def test_a_call_put_back_comes_before_its_workers_next() -> None:
    """A process call taken before its stdin was written goes back when the stdin was
    another's (``Branching.stdin_differs``): it is its worker's first unused call again."""
    lookup = _Lookup(w0="aa")
    assert lookup.take("w0", "a") == 1
    lookup.used.discard(1)
    lookup.asked.add(_call(1, "w0", "a"), first=True)
    assert lookup.take("w0", "a") == 1  # not the worker's next in its queue, seq 3
    assert lookup.take("w0", "a") == 3
    assert lookup.indexed == 1
