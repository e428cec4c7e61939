"""Replay: round trips with real subprocesses, and one test per way a tape can diverge."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sessiontape
import sessiontape.cassette
from sessiontape import MismatchKind, ReplayMismatch, ReplayReport

PY = sys.executable


@dataclasses.dataclass(frozen=True)
class StepResult:
    state: str
    terminal: bool
    payload: dict[str, Any]


class ReviewAgent:
    """Needs changes on the first review, approves the second."""

    def __init__(self) -> None:
        self.reviews = 0

    def execute(self, request: dict[str, Any]) -> StepResult:
        if request["step"] == "review":
            self.reviews += 1
            verdict = "needs_changes" if self.reviews == 1 else "approve"
            return StepResult(verdict, verdict == "approve", {"round": self.reviews})
        return StepResult("edited", False, {"file": "a.txt", "content": "v2"})


class Backlog:
    """A tiny in-memory store seeded from a snapshot."""

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.tasks = {t["id"]: dict(t) for t in tasks}
        self.lock = threading.Lock()

    def snapshot(self) -> list[dict[str, Any]]:
        return [dict(t) for _, t in sorted(self.tasks.items())]

    def claim_next(self, worker: str) -> dict[str, Any] | None:
        with self.lock:
            for tid in sorted(self.tasks):
                task = self.tasks[tid]
                if task["state"] == "ready":
                    task["state"] = "claimed"
                    task["worker"] = worker
                    return dict(task)
        return None

    def complete(self, task_id: str, note: str) -> bool:
        with self.lock:
            self.tasks[task_id]["state"] = "done"
            self.tasks[task_id]["note"] = note
        return True


TASKS = [{"id": f"t{i}", "state": "ready"} for i in range(1, 5)]


def app(
    tape: sessiontape.Tape, *, workers: int = 1, crash_on: str | None = None, finish: bool = True
) -> Any:
    """A small orchestrator wired once for both modes (``finish=False`` leaves the tape open)."""
    runner = tape.process_runner()
    agent = tape.agent(ReviewAgent(), result_type=StepResult)
    store = tape.store(
        Backlog(TASKS) if tape.mode is sessiontape.Mode.RECORD else None,
        mutations=["claim_next", "complete"],
        snapshot=Backlog.snapshot,
        factory=Backlog,
    )
    clock = tape.clock
    done: list[str] = []

    def work(i: int) -> None:
        with sessiontape.worker(f"worker-{i}"):
            while (task := store.claim_next(f"worker-{i}")) is not None:
                out = runner.run([PY, "-c", f"print('building {task['id']}')"], text=True)
                if crash_on is not None and task["id"] == crash_on:
                    raise RuntimeError(f"corrupt task {task['id']}")
                step = agent.execute({"step": "edit", "task": task["id"]})
                clock.sleep(0.05)
                store.complete(task["id"], f"{step.state}:{out.stdout.strip()}")
                done.append(task["id"])

    if workers == 1:
        work(1)
    else:
        errors: list[BaseException] = []

        def guarded(i: int) -> None:
            try:
                work(i)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=guarded, args=(i,)) for i in range(1, workers + 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    outcome = {"done": sorted(done)}
    if finish:
        tape.finish(outcome=outcome)
    return outcome


def record(path: Path, **kwargs: Any) -> None:
    with sessiontape.record(path) as tape:
        app(tape, **kwargs)


def replay(path: Path, **kwargs: Any) -> ReplayReport:
    with sessiontape.replay(path) as tape:
        app(tape, **kwargs)
    assert tape.report is not None
    return tape.report


def edit_lines(path: Path, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
    """Rewrite a cassette: ``change`` returns the new entry, or None to delete it."""
    out = []
    for line in path.read_text().splitlines():
        entry = change(json.loads(line))
        if entry is not None:
            out.append(json.dumps(entry))
    path.write_text("\n".join(out) + "\n")


@pytest.fixture
def single(tmp_path: Path) -> Path:
    path = tmp_path / "single.jsonl"
    record(path)
    return path


def test_single_worker_round_trip(single: Path) -> None:
    report = replay(single)
    assert report.ok, report.render()
    rec = sessiontape.load(single)
    assert report.loaded == len(rec.calls)
    assert report.consumed == report.loaded == 4 * 4 + 1  # + the claim that found none
    assert report.mismatches == []


def test_four_threaded_workers_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "four.jsonl"
    record(path, workers=4)
    rec = sessiontape.load(path)
    assert len(rec.worker_ids()) >= 2
    for _ in range(3):  # the sequencer makes every interleaving replay the same way
        report = replay(path, workers=4)
        assert report.ok, report.render()
        assert report.consumed == report.loaded


def test_review_loop_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "review.jsonl"

    def loop(tape: sessiontape.Tape) -> list[str]:
        agent = tape.agent(ReviewAgent(), result_type=StepResult)
        verdicts = []
        while True:
            step = agent.execute({"step": "review", "task": "t1"})
            verdicts.append(step.state)
            if step.terminal:
                break
            agent.execute({"step": "edit", "task": "t1"})
        tape.finish(outcome=verdicts)
        return verdicts

    with sessiontape.record(path) as tape:
        assert loop(tape) == ["needs_changes", "approve"]
    with sessiontape.replay(path) as tape:
        assert loop(tape) == ["needs_changes", "approve"]
    assert tape.report is not None
    assert tape.report.ok, tape.report.render()
    assert tape.report.consumed == 3


def test_store_snapshot_seeds_the_replay(single: Path) -> None:
    seen: list[list[dict[str, Any]]] = []

    def factory(snapshot: list[dict[str, Any]]) -> Backlog:
        seen.append(snapshot)
        return Backlog(snapshot)

    with sessiontape.replay(single) as tape:
        store = tape.store(mutations=["claim_next"], factory=factory)
        assert store.claim_next("worker-1") == {"id": "t1", "state": "claimed",
                                                "worker": "worker-1"}  # fmt: skip
    assert seen == [TASKS]


def test_crashed_session_replays_to_the_same_exception(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    with pytest.raises(RuntimeError, match="corrupt task t3"):
        record(path, crash_on="t3")
    rec = sessiontape.load(path)
    assert rec.crashed
    report = replay(path, crash_on="t3")  # the exception is the recorded one: swallowed
    assert report.ok, report.render()
    assert report.crashed


def test_recorded_crash_not_reproduced_is_an_error_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    with pytest.raises(RuntimeError):
        record(path, crash_on="t2")
    # Today's code does not crash: it runs past the end of the tape.
    with pytest.raises(sessiontape.UnrecordedCallError), sessiontape.replay(path) as tape:
        app(tape)
    report = tape.report
    assert report is not None
    assert not report.ok
    kinds = [m.kind for m in report.mismatches]
    assert kinds == [MismatchKind.EXHAUSTED, MismatchKind.ERROR_MISMATCH]
    error = report.mismatches[1]
    assert "ran past that point" in error.message
    assert error.expected == {"type": "RuntimeError", "message": "corrupt task t2"}


def test_different_crash_propagates_and_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    with pytest.raises(RuntimeError):
        record(path, crash_on="t2")
    with pytest.raises(RuntimeError, match="corrupt task t1"), \
            sessiontape.replay(path) as tape:  # fmt: skip
        app(tape, crash_on="t1")
    assert tape.report is not None
    assert tape.report.first is not None


# -- mutations: each yields exactly the expected kind at the right seq and worker ----------


def _first_process_seq(path: Path, index: int) -> int:
    return sessiontape.load(path).entries_for("process")[index].seq


def test_changed_argv_is_an_argument_mismatch(single: Path) -> None:
    seq = _first_process_seq(single, 1)

    def change(e: dict[str, Any]) -> dict[str, Any]:
        if e["seq"] == seq:
            e["argv"][2] = "print('building t9')"
        return e

    edit_lines(single, change)
    report = replay(single)
    assert not report.ok
    first = report.first
    assert first is not None
    assert (first.kind, first.seq, first.worker) == (MismatchKind.ARGUMENT_MISMATCH, seq,
                                                     "worker-1")  # fmt: skip
    assert [d.path for d in first.diffs] == ["argv[2]"]
    assert "process.argv[2]" in first.next_step
    assert len(report.mismatches) == 1


def test_changed_stdout_that_steers_the_app_is_caught_where_it_lands(single: Path) -> None:
    seq = _first_process_seq(single, 0)
    complete = sessiontape.load(single).entries_for("store")[1]
    assert complete.operation == "complete"

    def change(e: dict[str, Any]) -> dict[str, Any]:
        if e["seq"] == seq:
            e["stdout"] = "building tX\n"
        return e

    edit_lines(single, change)
    report = replay(single)
    assert [m.kind for m in report.mismatches] == [MismatchKind.ARGUMENT_MISMATCH]
    first = report.mismatches[0]
    assert (first.seq, first.worker, first.boundary) == (complete.seq, "worker-1", "store")
    assert [(d.path, d.expected, d.actual) for d in first.diffs] == [
        ("args[1]", "edited:building t1", "edited:building tX")
    ]


def test_changed_step_result_is_caught_downstream(single: Path) -> None:
    turn = sessiontape.load(single).entries_for("agent")[0]

    def change(e: dict[str, Any]) -> dict[str, Any]:
        if e["seq"] == turn.seq:
            e["result"]["state"] = "rejected"
        return e

    edit_lines(single, change)
    report = replay(single)
    first = report.first
    assert first is not None
    assert first.kind is MismatchKind.ARGUMENT_MISMATCH
    assert first.boundary == "store"
    assert first.worker == "worker-1"
    assert [d.path for d in first.diffs] == ["args[1]"]
    assert first.diffs[0].expected.startswith("edited:")
    assert first.diffs[0].actual.startswith("rejected:")


def test_changed_store_result_is_a_store_mismatch(single: Path) -> None:
    mutation = sessiontape.load(single).entries_for("store")[2]  # the second claim_next

    def change(e: dict[str, Any]) -> dict[str, Any]:
        if e["seq"] == mutation.seq:
            e["result"]["id"] = "t7"
        return e

    edit_lines(single, change)
    report = replay(single)
    first = report.first
    assert first is not None
    assert (first.kind, first.seq, first.worker) == (MismatchKind.STORE_MISMATCH,
                                                     mutation.seq, "worker-1")  # fmt: skip
    assert [(d.path, d.expected, d.actual) for d in first.diffs] == [("result.id", "t7", "t2")]


@pytest.mark.writes_invalid_tapes
def test_deleted_entry_is_caught_at_its_place(single: Path) -> None:
    calls = sessiontape.load(single).entries_for("process")
    deleted, successor = calls[1], calls[2]
    edit_lines(single, lambda e: None if e["seq"] == deleted.seq else e)
    # The tape now has one process answer too few: the run ends without an answer.
    with pytest.raises(sessiontape.UnrecordedCallError), sessiontape.replay(single) as tape:
        app(tape)
    report = tape.report
    assert report is not None
    first = report.first
    assert first is not None
    assert (first.kind, first.seq, first.worker) == (
        MismatchKind.ARGUMENT_MISMATCH, successor.seq, "worker-1",
    )  # fmt: skip
    assert [d.path for d in first.diffs] == ["argv[2]"]
    assert MismatchKind.EXHAUSTED in [m.kind for m in report.mismatches]


def test_extra_recorded_call_is_unconsumed(single: Path) -> None:
    rec = sessiontape.load(single)
    last = rec.entries_for("process")[-1]
    extra = json.loads(sessiontape.cassette.encode_entry(last))
    extra["seq"] = rec.end.seq + 1 if rec.end else 999  # type: ignore[union-attr]
    with single.open("a") as fh:
        fh.write(json.dumps(extra) + "\n")
    report = replay(single)
    assert [m.kind for m in report.mismatches] == [MismatchKind.UNCONSUMED]
    assert report.mismatches[0].seq == extra["seq"]
    assert report.unconsumed == 1


def test_more_calls_than_recorded_is_exhausted_never_a_wrap_around(tmp_path: Path) -> None:
    path = tmp_path / "ex.jsonl"
    with sessiontape.record(path) as tape:
        tape.process_runner().run([PY, "-c", "print(1)"])
    with sessiontape.replay(path) as tape:
        runner = tape.process_runner()
        assert runner.run([PY, "-c", "print(1)"]).stdout == b"1\n"
        with pytest.raises(sessiontape.UnrecordedCallError):
            runner.run([PY, "-c", "print(1)"])
        report = tape.finish()
    assert [m.kind for m in report.mismatches] == [MismatchKind.EXHAUSTED]
    assert report.extra == 1


def test_the_outcome_is_scrubbed_only_when_it_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scrubber compiles its rules on first use (tens of ms, once per process: the first
    # cassette of a corpus paid it); an outcome equal to the recorded one, which is
    # scrubbed, needs none of it. One that differs is scrubbed before it is reported.
    from sessiontape.scrub import Scrubber

    token = "ghp_" + "x7Kq2mZ9vB4nR8tY1wL5pD3sF6hJ0cA2eG9u"
    path = tmp_path / "outcome.jsonl"
    with sessiontape.record(path) as tape:
        tape.process_runner().run([PY, "-c", "print(1)"])
        tape.finish(outcome={"done": ["t1"]})
    asked: list[object] = []
    real = Scrubber.data

    def counted(self: Scrubber, value: object) -> object:
        asked.append(value)
        return real(self, value)

    monkeypatch.setattr(Scrubber, "data", counted)
    with sessiontape.replay(path) as tape:
        tape.process_runner().run([PY, "-c", "print(1)"])
        report = tape.finish(outcome={"done": ["t1"]})
    assert report.ok, report.render()
    assert asked == []
    with sessiontape.replay(path) as tape:
        tape.process_runner().run([PY, "-c", "print(1)"])
        report = tape.finish(outcome={"done": ["t2"], "token": token})
    (mismatch,) = report.mismatches
    assert mismatch.kind is MismatchKind.OUTCOME_MISMATCH
    assert token not in report.render()
    assert len(asked) == 1


def test_outcome_mismatch(single: Path) -> None:
    with sessiontape.replay(single) as tape:
        assert app(tape, finish=False) != {"done": ["t1"]}
        report = tape.finish(outcome={"done": ["t1"]})
    kinds = [m.kind for m in report.mismatches]
    assert MismatchKind.OUTCOME_MISMATCH in kinds


def test_strict_mode_raises_at_the_first_divergence(single: Path) -> None:
    seq = _first_process_seq(single, 0)

    def change(e: dict[str, Any]) -> dict[str, Any]:
        if e["seq"] == seq:
            e["argv"][1] = "-S"
        return e

    edit_lines(single, change)
    with pytest.raises(ReplayMismatch) as info, sessiontape.replay(single, strict=True) as tape:
        app(tape)
    first = info.value.report.first
    assert first is not None
    assert first.seq == seq
    assert f"seq {seq}" in str(info.value)


def test_noise_mask_accepts_a_legitimate_difference(single: Path) -> None:
    seq = _first_process_seq(single, 1)

    def change(e: dict[str, Any]) -> dict[str, Any]:
        if e["seq"] == seq:
            e["argv"][2] = "print('building t9')"
        return e

    edit_lines(single, change)
    with sessiontape.replay(single, noise=["process.argv[2]"]) as tape:
        app(tape)
    assert tape.report is not None
    assert tape.report.ok, tape.report.render()


def test_replay_that_consumed_nothing_is_not_ok(single: Path) -> None:
    with sessiontape.replay(single) as tape:
        report = tape.finish()
    assert not report.ok
    assert report.consumed == 0


def test_nested_calls_inside_a_substituted_agent_turn_are_not_expected(tmp_path: Path) -> None:
    path = tmp_path / "nested.jsonl"

    def wire(tape: sessiontape.Tape) -> str:
        runner = tape.process_runner()

        class ClaudeAgent:
            def execute(self, prompt: str) -> str:
                return runner.run([PY, "-c", "print('claude says hi')"], text=True).stdout

        agent = tape.agent(ClaudeAgent())
        answer: str = agent.execute("hello")
        runner.run([PY, "-c", "print('after')"])
        tape.finish(outcome=answer)
        return answer

    with sessiontape.record(path) as tape:
        assert wire(tape) == "claude says hi\n"
    with sessiontape.replay(path) as tape:
        assert wire(tape) == "claude says hi\n"
    assert tape.report is not None
    assert tape.report.ok, tape.report.render()
    assert tape.report.loaded == 2  # the agent turn and the outer process call


def test_timeouts_and_spawn_failures_are_raised_again(tmp_path: Path) -> None:
    path = tmp_path / "errs.jsonl"

    def wire(tape: sessiontape.Tape) -> list[str]:
        runner = tape.process_runner()
        seen = []
        try:
            runner.run(["sessiontape-no-such-program-xyz"])
        except FileNotFoundError as exc:
            seen.append(f"missing:{exc.filename}")
        try:
            runner.run([PY, "-c", "import time; time.sleep(5)"], timeout=0.2)
        except subprocess.TimeoutExpired as exc:
            seen.append(f"timeout:{exc.timeout}")
        return seen

    with sessiontape.record(path) as tape:
        recorded = wire(tape)
    with sessiontape.replay(path) as tape:
        assert wire(tape) == recorded == ["missing:sessiontape-no-such-program-xyz",
                                          "timeout:0.2"]  # fmt: skip
        assert tape.finish().ok


def test_streaming_replays_the_recorded_lines(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    code = "for i in range(3): print(i, flush=True)"
    with sessiontape.record(path) as tape, tape.process_runner().stream([PY, "-c", code]) as s:
        assert list(s) == ["0\n", "1\n", "2\n"]
    with sessiontape.replay(path) as tape:
        with tape.process_runner().stream([PY, "-c", code]) as s:
            assert list(s) == ["0\n", "1\n", "2\n"]
        assert s.returncode == 0
        assert tape.finish().ok


def test_patch_subprocess_replays_unmodified_code(tmp_path: Path) -> None:
    path = tmp_path / "patched.jsonl"

    def unmodified() -> tuple[str, bytes, int]:
        a = subprocess.run([PY, "-c", "print('run')"], capture_output=True, text=True).stdout
        b = subprocess.check_output([PY, "-c", "print('check')"])
        c = subprocess.call([PY, "-c", "import sys; sys.exit(4)"])
        return a, b, c

    with sessiontape.record(path) as tape, tape.patch_subprocess():
        recorded = unmodified()
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            assert unmodified() == recorded == ("run\n", b"check\n", 4)
        assert tape.finish().ok


def test_paths_replay_under_todays_roots(tmp_path: Path) -> None:
    then, now = tmp_path / "then", tmp_path / "now"
    then.mkdir()
    now.mkdir()
    path = tmp_path / "p.jsonl"

    def wire(tape: sessiontape.Tape, root: Path) -> str:
        out: str = (
            tape.process_runner()
            .run([PY, "-c", "import os; print(os.getcwd())"], cwd=str(root), text=True)
            .stdout
        )
        return out

    with sessiontape.record(path, roots={"repo": str(then)}) as tape:
        assert wire(tape, then) == f"{then}\n"
    with sessiontape.replay(path, roots={"repo": str(now)}) as tape:
        assert wire(tape, now) == f"{now}\n"  # the recorded output, in today's paths
        assert tape.finish().ok


class _Planner:
    """An agent whose request holds a path, nested: it answers with the path it saw."""

    def plan(self, request: dict[str, Any], attempt: int) -> dict[str, Any]:
        return {"worktree": request["where"]["worktree"], "files": request["files"]}


def _plan(tape: sessiontape.Tape, root: Path, files: list[str]) -> Any:
    agent = tape.boundary("planner", _Planner(), methods=["plan"])
    request = {"task": "t1", "where": {"worktree": str(root / "wt")}, "files": files}
    result = agent.plan(request, attempt=1)
    tape.finish()
    return result


def test_method_calls_made_with_todays_paths_are_the_recorded_ones(tmp_path: Path) -> None:
    then, now = tmp_path / "then", tmp_path / "now"
    path = tmp_path / "m.jsonl"
    with sessiontape.record(path, roots={"repo": str(then)}) as tape:
        _plan(tape, then, [str(then / "a.py"), "b.py"])
    with sessiontape.replay(path, roots={"repo": str(now)}) as tape:
        result = _plan(tape, now, [str(now / "a.py"), "b.py"])
    assert tape.report.ok, tape.report.render()
    # The recorded result, with today's paths.
    assert result == {"worktree": str(now / "wt"), "files": [str(now / "a.py"), "b.py"]}


def test_a_difference_beside_todays_paths_is_still_a_mismatch(tmp_path: Path) -> None:
    then, now = tmp_path / "then", tmp_path / "now"
    path = tmp_path / "m.jsonl"
    with sessiontape.record(path, roots={"repo": str(then)}) as tape:
        _plan(tape, then, [str(then / "a.py"), "b.py"])
    with sessiontape.replay(path, roots={"repo": str(now)}) as tape:
        _plan(tape, now, [str(now / "a.py"), "c.py"])
    (mismatch,) = tape.report.mismatches
    assert mismatch.kind is sessiontape.MismatchKind.ARGUMENT_MISMATCH
    assert [(d.path, d.expected, d.actual) for d in mismatch.diffs] == [
        ("args[0].files[1]", "b.py", "c.py")
    ]


def test_ten_minutes_of_sleeps_replay_instantly_reading_recorded_times(tmp_path: Path) -> None:
    path = tmp_path / "sleepy.jsonl"
    # A recording made "ten minutes" long by fast-forwarding the recorded timestamps.
    with sessiontape.record(path) as tape:
        runner = tape.process_runner()
        for _ in range(10):
            runner.run([PY, "-c", "pass"])
    minute = 60_000_000_000

    def stretch(e: dict[str, Any]) -> dict[str, Any]:
        e["ts_ns"] += e["seq"] * minute
        e["mono_ns"] += e["seq"] * minute
        return e

    edit_lines(path, stretch)
    rec = sessiontape.load(path)
    stamps: list[tuple[float, dt.datetime]] = []
    with sessiontape.replay(path) as tape:
        runner = tape.process_runner()
        for _ in range(10):
            runner.run([PY, "-c", "pass"])
            stamps.append((time.time(), dt.datetime.now(dt.timezone.utc)))
            time.sleep(60)  # the back-off: returns at once
        report = tape.finish()
    assert report.ok, report.render()
    calls = rec.entries_for("process")
    for (wall, now), call in zip(stamps, calls, strict=True):
        recorded_end = (call.ts_ns + call.duration_ns) / 1e9
        assert wall == pytest.approx(recorded_end, abs=1e-3)
        assert now.timestamp() == pytest.approx(recorded_end, abs=1e-3)
    # The 600 s of back-off went to the virtual clock (whose sleep returns at once), not
    # to the machine's.
    assert (tape.clock.sleeps, tape.clock.slept_ns) == (10, 600_000_000_000)


def test_recorded_types_are_resolved_only_when_registered(tmp_path: Path) -> None:
    from sessiontape.examples.gardener import StepResult as GardenerStep

    path = tmp_path / "types.jsonl"

    class Adapter:
        def execute(self, request: str) -> GardenerStep:
            if request == "boom":
                raise sessiontape.UsageError("bad request")
            return GardenerStep(state="edited", terminal=False, payload={"n": 1}, usage=None)

    def wire(tape: sessiontape.Tape) -> list[Any]:
        agent = tape.agent(Adapter())
        seen: list[Any] = [agent.execute("go")]
        try:
            agent.execute("boom")
        except sessiontape.SessiontapeError as exc:
            seen.append(("raised", type(exc), str(exc)))
        return seen

    with sessiontape.record(path) as tape:
        recorded = wire(tape)
    # A tape names types; replay never imports them: plain data and a ReplayedError.
    with sessiontape.replay(path) as tape:
        assert wire(tape) == [
            {
                "state": "edited",
                "terminal": False,
                "payload": {"n": 1},
                "usage": None,
                "model": None,
                "provider": None,
            },
            ("raised", sessiontape.ReplayedError, "sessiontape.UsageError: bad request"),
        ]
        assert tape.finish().ok
    # Registered, both come back as themselves.
    sessiontape.register_type(GardenerStep)
    sessiontape.register_type(sessiontape.UsageError)
    try:
        with sessiontape.replay(path) as tape:
            assert wire(tape) == recorded
            assert type(recorded[0]) is GardenerStep
            assert tape.finish().ok
    finally:
        sessiontape.unregister_type(GardenerStep)
        sessiontape.unregister_type(sessiontape.UsageError)


def test_an_unimportable_recorded_error_is_replayed_as_replayed_error() -> None:
    from sessiontape.replayer import rebuild_error

    error = rebuild_error(sessiontape.ErrorInfo(type="nowhere.mod.Gone", message="lost"))
    assert isinstance(error, sessiontape.ReplayedError)
    assert str(error) == "nowhere.mod.Gone: lost"
    missing = rebuild_error(
        sessiontape.ErrorInfo(type="FileNotFoundError", message="[Errno 2] No such file: 'x'")
    )
    assert isinstance(missing, FileNotFoundError)
    assert (missing.errno, missing.filename) == (2, "x")


def test_a_store_error_holding_a_secret_replays_without_a_mismatch(tmp_path: Path) -> None:
    # The recorded message is redacted; today's must be too before they are compared.
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

    class Queue:
        def __init__(self, items: list[str]) -> None:
            self.items = list(items)

        def snapshot(self) -> list[str]:
            return list(self.items)

        def push(self, item: str) -> str:
            raise ValueError(f"push refused for token {token}")

    def wire(tape: sessiontape.Tape) -> str:
        store = tape.store(Queue([]), mutations=["push"], snapshot=Queue.snapshot, factory=Queue)
        try:
            store.push("x")
        except ValueError as exc:
            return str(exc)
        return "no error"

    path = tmp_path / "store-error.jsonl"
    with sessiontape.record(path) as tape:
        wire(tape)
    assert token not in path.read_text(encoding="utf-8")
    with sessiontape.replay(path) as tape:
        assert wire(tape) == f"push refused for token {token}"
        report = tape.finish()
    assert report.ok, report.render()


def test_a_replay_that_fails_to_enter_is_closed_not_left_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The with-block's __exit__ never runs when __enter__ raises: the tape must close
    # itself, or it stays the active tape of every thread after it (CI, CPython 3.10: a
    # failed clock install left a replay open, and the next test's patched() answered it).
    from sessiontape.replayer import _timepatch
    from sessiontape.tape import active_tape

    path = tmp_path / "t.jsonl"
    with sessiontape.record(path) as tape:
        tape.finish()

    def broken(clock: object) -> None:
        raise RuntimeError("dictionary changed size during iteration")

    monkeypatch.setattr(_timepatch, "install", broken)
    replay = sessiontape.replay(path)
    with pytest.raises(RuntimeError, match="changed size"), replay:
        pass  # never reached
    assert active_tape() is None
    assert sessiontape.patched("something-new") is True  # outside any tape again
