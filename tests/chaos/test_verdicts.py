"""What a schedule's verdict rests on: inadmissible calls, deadlocks, worker exceptions,
outcomes; and that a chaos replay leaves a plain replay as it was."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import ProcessResult, Schedule
from tally import Tally

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


class Echo:
    """Answers like ``echo`` without starting a process."""

    def run(self, argv: list[str], **kwargs: Any) -> ProcessResult:
        return ProcessResult(argv, 0, " ".join(argv[1:]) + "\n")

    def stream(self, argv: list[str], **kwargs: Any) -> Any:
        raise NotImplementedError


def two_workers(tape: sessiontape.Tape, body: Any) -> dict[str, Any]:
    """Run ``body(runner, name, shared)`` on two named worker threads; finish the tape."""
    runner = tape.process_runner(Echo())  # type: ignore[arg-type]
    shared: dict[str, Any] = {"lock": threading.Lock(), "next": 0, "log": []}

    def work(name: str) -> None:
        with sessiontape.worker(name):
            body(runner, name, shared)

    threads = [threading.Thread(target=work, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcome = {"log": sorted(shared["log"])}
    tape.finish(outcome=outcome)
    return outcome


def record(path: Path, body: Any) -> None:
    with sessiontape.record(path, entrypoint="verdicts") as tape:
        two_workers(tape, body)


def chaos(path: Path, body: Any, seed: int, **options: Any) -> sessiontape.ChaosResult:
    tape = sessiontape.replay(path, schedule=Schedule(seed=seed, **options))
    with tape:
        two_workers(tape, body)
    assert tape.chaos is not None
    return tape.chaos


def numbered(runner: Any, name: str, shared: dict[str, Any]) -> None:
    """Each worker asks for the next ticket: which worker gets which depends on the order,
    and so does the request (a call the tape may not have: it names the worker in capitals,
    which is not the worker's own name)."""
    for _ in range(2):
        with shared["lock"]:
            ticket = shared["next"]
            shared["next"] += 1
        runner.run(["echo", name.upper(), str(ticket)], text=True)
        shared["log"].append(ticket)


def named(runner: Any, name: str, shared: dict[str, Any]) -> None:
    """As ``numbered``, but each request names the worker that asks, by its own name."""
    for _ in range(2):
        with shared["lock"]:
            ticket = shared["next"]
            shared["next"] += 1
        runner.run(["echo", f"ticket {ticket} for {name}"], text=True)
        shared["log"].append(ticket)


def test_a_call_the_tape_cannot_answer_makes_the_schedule_inadmissible(tmp_path: Path) -> None:
    record(tmp_path / "t.jsonl", numbered)
    verdicts = {chaos(tmp_path / "t.jsonl", numbered, seed).verdict.value for seed in range(30)}
    assert "inadmissible" in verdicts
    assert "passed" in verdicts
    assert "failed" not in verdicts
    result = next(
        r
        for r in (chaos(tmp_path / "t.jsonl", numbered, seed) for seed in range(30))
        if r.verdict.value == "inadmissible"
    )
    assert result.inadmissible is not None
    assert "no recorded call answers: echo" in result.inadmissible
    assert "inadmissible (not a failure)" in result.render()


def test_the_asking_workers_own_name_is_read_as_the_recording_workers(tmp_path: Path) -> None:
    """A request naming the worker that asks is answered by another worker's recorded
    call that asked the same in its own name: every schedule is admissible, and the
    calls that swapped workers say so in today's names."""
    record(tmp_path / "t.jsonl", named)
    recorded = {e.seq: e.worker for e in sessiontape.load(tmp_path / "t.jsonl").calls}
    swapped = 0
    for seed in range(30):
        result = chaos(tmp_path / "t.jsonl", named, seed)
        assert result.verdict.value == "passed", result.render()
        for call in result.calls:
            assert call.call == "" or call.call.endswith(f" for {call.worker}"), call
            swapped += call.seq is not None and recorded[call.seq] != call.worker
    assert swapped > 0


def locked_across_a_call(runner: Any, name: str, shared: dict[str, Any]) -> None:
    """A lock held across a boundary call: a worker waiting on it never reaches a
    scheduling point while the holder waits at one."""
    with shared["lock"]:
        runner.run(["echo", name], text=True)
    shared["log"].append(name)


def test_a_worker_blocked_outside_a_boundary_call_is_a_possible_deadlock(tmp_path: Path) -> None:
    record(tmp_path / "t.jsonl", locked_across_a_call)
    results = [
        chaos(tmp_path / "t.jsonl", locked_across_a_call, seed, stall_limit=0.3)
        for seed in range(12)
    ]
    deadlocks = [r for r in results if r.failure is not None and r.failure.kind.value == "deadlock"]
    assert deadlocks, [r.verdict for r in results]
    assert "did not reach its next scheduling point within 0.3s" in deadlocks[0].failure.message  # type: ignore[union-attr]
    assert all(r.verdict.value in ("passed", "failed") for r in results)


def dies(runner: Any, name: str, shared: dict[str, Any]) -> None:
    runner.run(["echo", name], text=True)
    if name == "b" and shared["log"] == []:
        raise RuntimeError("b ran first")
    shared["log"].append(name)


def test_an_exception_in_a_worker_fails_the_schedule_where_it_happened(tmp_path: Path) -> None:
    # Recorded with a running first, so b did not die.
    path = tmp_path / "t.jsonl"
    with sessiontape.record(path, entrypoint="verdicts") as tape:
        runner = tape.process_runner(Echo())  # type: ignore[arg-type]
        shared: dict[str, Any] = {"log": []}
        for name in ("a", "b"):
            thread = threading.Thread(target=_as, args=(name, runner, shared))
            thread.start()
            thread.join()
        tape.finish(outcome={"log": sorted(shared["log"])})
    failures = []
    for seed in range(20):
        tape = sessiontape.replay(path, schedule=Schedule(seed=seed, strategy="random"))
        with tape:
            runner = tape.process_runner(Echo())  # type: ignore[arg-type]
            shared = {"log": []}
            threads = [threading.Thread(target=_as, args=(n, runner, shared)) for n in "ab"]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            tape.finish(outcome={"log": sorted(shared["log"])})
        assert tape.chaos is not None
        if tape.chaos.failed:
            failures.append(tape.chaos.failure)
    assert failures
    assert {f.kind.value for f in failures} == {"exception"}
    assert {f.worker for f in failures} == {"b"}
    assert {f.message for f in failures} == {"RuntimeError: b ran first"}


def _as(name: str, runner: Any, shared: dict[str, Any]) -> None:
    with sessiontape.worker(name):
        dies(runner, name, shared)


def test_a_plain_replay_builds_no_scheduler(tmp_path: Path) -> None:
    record(tmp_path / "t.jsonl", locked_across_a_call)
    start, join = threading.Thread.start, threading.Thread.join
    tape = sessiontape.replay(tmp_path / "t.jsonl")
    with tape:
        assert threading.Thread.join is join
        assert type(tape.clock) is sessiontape.FakeClock
        two_workers(tape, locked_across_a_call)
    assert tape.chaos is None
    assert tape.report is not None
    assert tape.report.ok
    assert threading.Thread.start is start
    with pytest.raises(sessiontape.UsageError, match="needs a replay under a schedule"):
        tape.save_chaos(tmp_path / "x.jsonl")


def test_a_plain_replay_checks_declared_invariants(tmp_path: Path) -> None:
    record(tmp_path / "t.jsonl", locked_across_a_call)
    tape = sessiontape.replay(tmp_path / "t.jsonl")
    with tape:
        tape.invariant(lambda: "never holds")
        two_workers(tape, locked_across_a_call)
    assert tape.report is not None
    kinds = [m.kind.value for m in tape.report.mismatches]
    assert kinds == ["invariant_violated"]
    assert "never holds" in tape.report.mismatches[0].message


class _ClaimsHook:
    """A project's ``sessiontape_invariant`` hook: the log never holds a worker twice."""

    def sessiontape_invariant(self, tape: Any, stores: Any) -> str | None:
        return "the hook objects" if tape.recording.header.entrypoint == "verdicts" else None


def one_call(runner: Any, name: str, shared: dict[str, Any]) -> None:
    runner.run(["echo", name], text=True)
    shared["log"].append(name)


def test_the_invariant_hook_is_checked_in_plain_and_chaos_replay(tmp_path: Path) -> None:
    record(tmp_path / "t.jsonl", one_call)
    hook = _ClaimsHook()
    manager = sessiontape.get_plugin_manager()
    manager.register(hook)
    try:
        tape = sessiontape.replay(tmp_path / "t.jsonl")
        with tape:
            two_workers(tape, one_call)
        assert tape.report is not None
        assert [m.kind.value for m in tape.report.mismatches] == ["invariant_violated"]
        result = chaos(tmp_path / "t.jsonl", one_call, 0)
        assert result.failure is not None
        assert result.failure.kind.value == "invariant"
        assert result.failure.message == "at the end: the hook objects"
    finally:
        manager.unregister(hook)


def tallied(tape: sessiontape.Tape) -> None:
    live = Tally() if tape.mode is not sessiontape.Mode.REPLAY else None
    store = tape.store(
        live, mutations=["bump"], snapshot=Tally.snapshot, factory=Tally, name="tally"
    )
    tape.invariant(lambda: None if sum(store.counts.values()) <= 4 else "too many bumps")

    def work(name: str) -> None:
        with sessiontape.worker(name):
            for _ in range(2):
                store.bump(name)

    threads = [threading.Thread(target=work, args=(n,)) for n in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    tape.finish(outcome=dict(sorted(store.counts.items())))


def test_a_store_under_its_own_name_runs_for_real_and_saves(tmp_path: Path) -> None:
    with sessiontape.record(tmp_path / "t.jsonl", entrypoint="tally") as tape:
        tallied(tape)
    for seed in range(6):
        tape = sessiontape.replay(tmp_path / "t.jsonl", schedule=Schedule(seed=seed))
        with tape:
            tallied(tape)
        assert tape.chaos is not None
        assert tape.chaos.verdict.value == "passed", tape.chaos.render()
        assert [c.boundary for c in tape.chaos.calls] == ["store"] * 4
    saved = tape.save_chaos(tmp_path / "saved.jsonl")
    plain = sessiontape.replay(saved)
    with plain:
        tallied(plain)
    assert plain.report is not None
    assert plain.report.ok, plain.report.render()


@pytest.mark.parametrize("options", [{"update": True}, {"live": ["process"]}])
def test_a_schedule_with_update_or_live_is_refused(tmp_path: Path, options: dict[str, Any]) -> None:
    path = tmp_path / "t.jsonl"
    record(path, numbered)
    before = path.read_bytes()
    with pytest.raises(sessiontape.UsageError, match="never rewrites it"):
        sessiontape.replay(path, schedule=Schedule(seed=1), **options)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]
