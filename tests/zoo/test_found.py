"""The smallest reproductions of the defects the zoo found beyond issues 29 and 30.

Each is a whole program, recorded and replayed; each is ``xfail(strict=True)`` until its
fix lands, when it fails and the mark goes. The zoo's cells that meet the same defect
name it in ``matrix.KNOWN``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape.cli import main

TOKEN = "ghp_" + "Found1Token2" * 3


class Counter:
    """A store whose method does its work (a query, a round trip) before it takes its
    lock and writes: its effect happens some time after the call starts."""

    def __init__(self, value: int = 0) -> None:
        self.value = value
        self._lock = threading.Lock()

    def snapshot(self) -> int:
        return self.value

    def take(self, delay: float) -> int:
        time.sleep(delay)
        with self._lock:
            self.value += 1
            return self.value


def counting(tape: sessiontape.Tape) -> int:
    live = Counter() if tape.mode is not sessiontape.Mode.REPLAY else None
    counter = tape.store(live, mutations=["take"], snapshot=Counter.snapshot, factory=Counter)

    def work(name: str, start: float, delay: float) -> None:
        with sessiontape.worker(name):
            time.sleep(start)
            counter.take(delay)

    # "slow" starts first and writes last; "quick" starts 0.1 s later and writes first.
    threads = [
        threading.Thread(target=work, args=("slow", 0.0, 0.4)),
        threading.Thread(target=work, args=("quick", 0.1, 0.0)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    tape.finish(outcome=counter.value)
    return int(counter.value)


def piped(tape: sessiontape.Tape, code: str, data: str) -> str:
    """Run ``code`` in a child Python under ``tape.patch_subprocess()`` with ``data`` as its
    stdin (``subprocess.run(input=...)``), finish the tape with what it printed, return it."""
    with tape.patch_subprocess():
        out = subprocess.run(
            [sys.executable, "-c", code], input=data, capture_output=True, text=True, check=True
        ).stdout
    tape.finish(outcome=out)
    return out


def test_store_calls_replay_in_the_order_they_took_effect(tmp_path: Path) -> None:
    # Zoo found: a store call's seq was taken when the call started, so two workers' store
    # calls were recorded in the order they started, not the order they took effect, and
    # replay, running them in seq order, got other results. A verify call's seq is now
    # reserved when it ends (or when a call made inside it needs it as its parent).
    tape = tmp_path / "counter.jsonl"
    with sessiontape.record(tape) as recording:
        counting(recording)
    with sessiontape.replay(tape) as replaying:
        counting(replaying)
    assert replaying.report is not None
    assert replaying.report.ok, replaying.report.render()


def test_asyncio_tasks_sharing_a_store_replay(tmp_path: Path) -> None:
    """Two tasks start a job each and finish it when its process ends; the first
    started, "slow", ends last.

    Zoo defect B: replayed processes ended at once, so "slow"'s task reached the store
    first and, ahead of its recorded turn, blocked the event loop "quick" needed (an
    order_mismatch after 2 s). A replayed process now ends for asyncio at its recorded end
    on the loop's virtual clock.
    """

    class Jobs:
        def __init__(self, done: list[str] | None = None) -> None:
            self.done = list(done or [])

        def snapshot(self) -> list[str]:
            return list(self.done)

        def finish(self, name: str) -> int:
            self.done.append(name)
            return len(self.done)

    async def job(jobs: Any, name: str, seconds: float) -> None:
        with sessiontape.worker(name):
            code = f"import time; time.sleep({seconds})"
            process = await asyncio.create_subprocess_exec(sys.executable, "-c", code)
            await process.wait()
            jobs.finish(name)

    def program(tape: sessiontape.Tape) -> None:
        live = Jobs() if tape.mode is not sessiontape.Mode.REPLAY else None
        jobs = tape.store(live, mutations=["finish"], snapshot=Jobs.snapshot, factory=Jobs)

        async def both() -> None:
            await asyncio.gather(job(jobs, "slow", 0.5), job(jobs, "quick", 0.0))

        with tape.patch_subprocess():
            asyncio.run(both())
        tape.finish(outcome=jobs.done)

    cassette = tmp_path / "jobs.jsonl"
    with sessiontape.record(cassette) as recording:
        program(recording)
    with sessiontape.replay(cassette) as replaying:
        program(replaying)
    assert replaying.report is not None
    assert replaying.report.ok, replaying.report.render()


def test_a_secret_read_from_an_output_and_sent_again_replays(tmp_path: Path) -> None:
    def program(tape: sessiontape.Tape) -> str:
        with tape.patch_subprocess():
            token = subprocess.run(
                [sys.executable, "-c", f"print('{TOKEN}')"], capture_output=True, text=True
            ).stdout.strip()
            header = f"Authorization: token {token}"
            sent = subprocess.run(
                [sys.executable, "-c", "import sys; print(len(sys.argv))", "-H", header],
                capture_output=True,
                text=True,
            ).stdout
        tape.finish(outcome=sent)
        return sent

    cassette = tmp_path / "token.jsonl"
    with sessiontape.record(cassette) as recording:
        program(recording)
    assert TOKEN.encode() not in cassette.read_bytes()
    with sessiontape.replay(cassette) as replaying:
        program(replaying)
    assert replaying.report is not None
    assert replaying.report.ok, replaying.report.render()


def test_a_tape_recorded_from_its_work_directory_replays_from_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def program(tape: sessiontape.Tape, workdir: Path) -> None:
        with tape.patch_subprocess():
            subprocess.run([sys.executable, "-c", "pass"], cwd=workdir, check=True)
        tape.finish(outcome="done")

    then, now, elsewhere = tmp_path / "then", tmp_path / "now", tmp_path / "elsewhere"
    for folder in (then, now, elsewhere):
        folder.mkdir()
    cassette = tmp_path / "work.jsonl"
    monkeypatch.chdir(then)  # `tool --workdir .`, run in its work directory
    with sessiontape.record(cassette, roots={"work": str(then)}) as recording:
        program(recording, then)
    monkeypatch.chdir(elsewhere)
    with sessiontape.replay(cassette, roots={"work": str(now)}) as replaying:
        program(replaying, now)
    assert replaying.report is not None
    assert replaying.report.ok, replaying.report.render()


def test_update_rewrites_what_a_program_writes_to_stdin(tmp_path: Path) -> None:
    echo = "import sys\nfor line in sys.stdin:\n    print('ack', line.strip(), flush=True)"

    def program(tape: sessiontape.Tape, word: str) -> str:
        with tape.patch_subprocess():
            child = subprocess.Popen(
                [sys.executable, "-c", echo],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert child.stdin is not None
            assert child.stdout is not None
            child.stdin.write(f"{word}\n")
            child.stdin.flush()
            answer = child.stdout.readline()
            child.stdin.close()
            child.wait()
        tape.finish(outcome=answer)
        return answer

    cassette = tmp_path / "chat.jsonl"
    with sessiontape.record(cassette) as recording:
        program(recording, "hello")
    with sessiontape.replay(cassette, update=True) as updating:
        program(updating, "hi")
    assert updating.report is not None
    assert updating.report.ok, updating.report.render()
    with sessiontape.replay(cassette) as replaying:
        program(replaying, "hi")
    assert replaying.report is not None
    assert replaying.report.ok, replaying.report.render()


def test_update_rewrites_the_input_a_program_passes(tmp_path: Path) -> None:
    def program(tape: sessiontape.Tape, word: str) -> str:
        return piped(tape, "import sys; print(sys.stdin.read().upper())", word)

    cassette = tmp_path / "input.jsonl"
    with sessiontape.record(cassette) as recording:
        program(recording, "hello")
    with sessiontape.replay(cassette) as replaying:
        program(replaying, "hi")
    assert replaying.report is not None
    assert [m.kind.value for m in replaying.report.mismatches] == ["argument_mismatch"]
    with sessiontape.replay(cassette, update=True) as updating:
        program(updating, "hi")
    assert updating.report is not None
    assert updating.report.ok, updating.report.render()
    assert [(r.field, r.old, r.new) for r in updating.report.rewrites] == [("input", "hello", "hi")]
    (call,) = sessiontape.load(cassette).calls
    assert isinstance(call, sessiontape.ProcessCall)
    assert (call.input, call.stdout) == ("hi", "HELLO\n")  # the recorded answer is kept
    with sessiontape.replay(cassette) as replaying:
        program(replaying, "hi")
    assert replaying.report is not None
    assert replaying.report.ok, replaying.report.render()


def test_stdin_kept_in_the_sidecar_replays(tmp_path: Path) -> None:
    data = "x" * 2_000

    def program(tape: sessiontape.Tape) -> str:
        return piped(tape, "import sys; print(len(sys.stdin.read()))", data)

    cassette = tmp_path / "stdin.jsonl"
    with sessiontape.record(cassette, max_inline_bytes=1024) as recording:
        program(recording)
    with sessiontape.replay(cassette) as replaying:
        program(replaying)
    assert replaying.report is not None
    assert replaying.report.ok, replaying.report.render()


def test_live_asyncio_process_with_a_timeout(tmp_path: Path) -> None:
    # Zoo defect I: re-recording an asyncio program live, asyncio.wait_for(...) around a
    # live process timed out at once: the loop, finding nothing ready, jumped the virtual
    # clock to the timeout while the process ran for real.
    code = "import time; time.sleep(0.3); print('done')"

    async def ask() -> bytes:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await asyncio.wait_for(process.communicate(), 30)
        return out

    def program(tape: sessiontape.Tape) -> str:
        with tape.patch_subprocess():
            out = asyncio.run(ask()).decode()
        tape.finish(outcome=out)
        return out

    cassette = tmp_path / "live.jsonl"
    with sessiontape.record(cassette) as recording:
        program(recording)
    with sessiontape.replay(cassette, live=["process"], update=True) as replaying:
        program(replaying)
    assert replaying.report is not None
    assert replaying.report.ok, replaying.report.render()


def test_stdin_in_the_sidecar_changed_is_taken_by_an_update(tmp_path: Path) -> None:
    # stdin the sidecar keeps is compared as text (as stdin kept in the line is), so an
    # update takes a change to it as it takes any request's: the new stdin written (in
    # the line), the recorded answer kept; a live re-record then records the new answer.
    def program(tape: sessiontape.Tape, char: str) -> str:
        return piped(tape, "import sys; print(sys.stdin.read()[:3])", char * 2_000)

    cassette = tmp_path / "stdin.jsonl"
    with sessiontape.record(cassette, max_inline_bytes=1024) as recording:
        program(recording, "x")
    with sessiontape.replay(cassette, update=True) as updating:
        assert program(updating, "y") == "xxx\n"
    report = updating.report
    assert report is not None
    assert report.ok, report.render()
    assert [(r.field, r.old, r.new) for r in report.rewrites] == [
        ("input", "x" * 2_000, "y" * 2_000)
    ]
    assert main(["validate", str(cassette)]) == 0
    with sessiontape.replay(cassette) as replaying:
        assert program(replaying, "y") == "xxx\n"  # the recorded answer
    assert replaying.report is not None
    assert replaying.report.ok, replaying.report.render()
    with sessiontape.replay(cassette, live=["process@main"], update=True) as live:
        program(live, "y")
    assert live.report is not None
    assert live.report.ok, live.report.render()
    with sessiontape.replay(cassette) as replaying:
        assert program(replaying, "y") == "yyy\n"
    assert replaying.report is not None
    assert replaying.report.ok, replaying.report.render()
    assert main(["validate", str(cassette)]) == 0
