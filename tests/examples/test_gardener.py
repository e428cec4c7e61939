"""The bundled example orchestrator: its store, its scripted agent, live runs of each scenario."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from sessiontape import (
    AgentTurn,
    MismatchKind,
    ProcessCall,
    ProcessResult,
    ProcessStream,
    SubprocessRunner,
    current_worker,
    load,
    record,
    replay,
)
from sessiontape.examples.gardener import (
    GIT_CONFIG,
    MODEL,
    MODEL_ARGV,
    PROVIDER,
    SCENARIOS,
    BacklogError,
    BacklogStore,
    Gardener,
    GardenerCrash,
    RunSummary,
    ScriptedAgent,
    StepResult,
    TaskScript,
    get_scenario,
    init_repository,
    merge_versions,
    record_scenario,
    replay_hook,
    replay_scenario,
    run_session,
    session_config,
)
from sessiontape.examples.gardener._agent import DRAFT_MARKER

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


# -- test doubles -------------------------------------------------------------------------


class CountingClock:
    """A clock that records every sleep and returns at once (a live run stays fast)."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
        # Let the thread holding the merge lock run, as a real sleep would.
        threading.Event().wait(0.001)


class SpyRunner:
    """A real runner that keeps every call it made, with the worker that made it."""

    def __init__(self) -> None:
        self.inner = SubprocessRunner()
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        call = {"argv": list(argv), "cwd": cwd, "env": env, "text": text}
        with self._lock:
            self.calls.append({**call, "worker": current_worker()})
        return self.inner.run(argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text)

    def stream(self, argv: Sequence[str], **kwargs: Any) -> ProcessStream:
        raise AssertionError("the gardener does not stream")


class SpyAgent:
    """A scripted agent that keeps every request, with the worker that sent it."""

    def __init__(self, script: Mapping[str, TaskScript]) -> None:
        self.inner = ScriptedAgent(script)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def execute(self, request: dict[str, Any]) -> StepResult:
        with self._lock:
            self.requests.append((current_worker(), request))
        return self.inner.execute(request)


@dataclasses.dataclass
class LiveRun:
    workdir: Path
    store: BacklogStore
    runner: SpyRunner
    agent: SpyAgent
    clock: CountingClock

    def git(self, *args: str) -> str:
        result = SubprocessRunner().run(["git", *args], cwd=str(self.workdir / "repo"), text=True)
        result.check_returncode()
        return str(result.stdout)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Any]:
    """Run a scenario live (real git, real SQLite) in ``tmp_path``; yields the runner function."""
    stores: list[BacklogStore] = []

    def run(name: str, workers: int = 3) -> tuple[LiveRun, RunSummary | BaseException]:
        spec = get_scenario(name)
        workdir = tmp_path / name
        setup = LiveRun(
            workdir,
            BacklogStore.create(workdir / "backlog.db", spec.backlog(workers)),
            SpyRunner(),
            SpyAgent(spec.script),
            CountingClock(),
        )
        stores.append(setup.store)
        init_repository(setup.runner, workdir / "repo", spec.files)
        gardener = Gardener(
            runner=setup.runner,
            agent=setup.agent,
            store=setup.store,
            clock=setup.clock,
            workdir=workdir,
            workers=workers,
        )
        try:
            return setup, gardener.run()
        except Exception as exc:
            return setup, exc

    yield run
    for store in stores:
        store.close()


# -- the backlog store --------------------------------------------------------------------


def test_create_fills_defaults_and_snapshot_is_json(tmp_path: Path) -> None:
    with BacklogStore.create(tmp_path / "b.db", [{"id": "a", "payload": {"x": [1]}}]) as store:
        snapshot = store.snapshot()
    assert snapshot == [
        {
            "id": "a",
            "title": "a",
            "priority": 0,
            "affinity": None,
            "status": "pending",
            "worker": None,
            "claims": 0,
            "attempt": 0,
            "commit": None,
            "reason": None,
            "payload": {"x": [1]},
        }
    ]
    assert json.loads(json.dumps(snapshot)) == snapshot


def test_snapshot_round_trip_rebuilds_the_same_store(tmp_path: Path) -> None:
    tasks = [{"id": "a", "title": "A"}, {"id": "b", "affinity": "w"}, {"id": "c", "priority": 2}]
    with BacklogStore.create(tmp_path / "one.db", tasks) as store:
        store.claim_next("w")
        store.mark_in_progress("a", "w")
        store.record_attempt("a", 2)
        store.mark_complete("a", "abc123")
        store.claim_next("w")
        store.mark_failed("b", "no")
        snapshot = store.snapshot()
    with BacklogStore.from_snapshot(tmp_path / "two.db", snapshot) as copy:
        assert copy.snapshot() == snapshot
        assert copy.claim_next("v") == {
            **snapshot[2],
            "status": "claimed",
            "worker": "v",
            "claims": 1,
        }


def test_from_snapshot_replaces_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    BacklogStore.create(path, [{"id": "old"}]).close()
    with BacklogStore.from_snapshot(path, [{"id": "new"}]) as store:
        assert [t["id"] for t in store.snapshot()] == ["new"]


def test_claim_next_follows_priority_then_id_and_affinity(tmp_path: Path) -> None:
    tasks = [
        {"id": "z", "priority": 0, "affinity": "worker-2"},
        {"id": "b", "priority": 1},
        {"id": "a", "priority": 1},
    ]
    with BacklogStore.create(tmp_path / "b.db", tasks) as store:
        assert [t["id"] for t in store.list_tasks()] == ["z", "a", "b"]
        claimed = [store.claim_next("worker-1"), store.claim_next("worker-1")]
        assert [t["id"] for t in claimed if t] == ["a", "b"]
        assert store.claim_next("worker-1") is None
        assert store.claim_next("worker-2") == {**store.get("z"), "claims": 1}


def test_release_makes_a_task_claimable_again(tmp_path: Path) -> None:
    with BacklogStore.create(tmp_path / "b.db", [{"id": "a"}]) as store:
        store.claim_next("w")
        store.mark_in_progress("a", "w")
        store.record_attempt("a", 3)
        released = store.release("a")
        assert (released["status"], released["worker"], released["attempt"]) == ("pending", None, 0)
        again = store.claim_next("v")
        assert again is not None
        assert (again["worker"], again["claims"]) == ("v", 2)


@pytest.mark.parametrize(
    ("prepare", "call", "message"),
    [
        ([], lambda s: s.mark_in_progress("a", "w"), "'a' is 'pending'"),
        ([("claim_next", "w")], lambda s: s.mark_in_progress("a", "v"), "claimed by 'w', not 'v'"),
        ([("claim_next", "w")], lambda s: s.mark_complete("a", "sha"), "'a' is 'claimed'"),
        ([], lambda s: s.release("a"), "'a' is 'pending'"),
        ([], lambda s: s.mark_failed("nope", "x"), "no task 'nope'"),
    ],
)
def test_a_mutation_the_state_forbids_raises_and_changes_nothing(
    tmp_path: Path, prepare: list[tuple[str, str]], call: Any, message: str
) -> None:
    with BacklogStore.create(tmp_path / "b.db", [{"id": "a"}]) as store:
        for method, arg in prepare:
            getattr(store, method)(arg)
        before = store.snapshot()
        with pytest.raises(BacklogError, match=message):
            call(store)
        assert store.snapshot() == before


def test_create_rejects_bad_tasks(tmp_path: Path) -> None:
    with pytest.raises(BacklogError, match=r"repeated: \['a'\]"):
        BacklogStore.create(tmp_path / "1.db", [{"id": "a"}, {"id": "a"}])
    with pytest.raises(BacklogError, match=r"unknown fields \['status'\]"):
        BacklogStore.create(tmp_path / "2.db", [{"id": "a", "status": "complete"}])
    with pytest.raises(BacklogError, match="non-empty str 'id'"):
        BacklogStore.create(tmp_path / "3.db", [{"title": "no id"}])
    with pytest.raises(FileNotFoundError, match=r"BacklogStore\.create\(\)"):
        BacklogStore(tmp_path / "missing.db")


def test_claim_next_never_hands_a_task_out_twice(tmp_path: Path) -> None:
    ids = [f"t{i:03}" for i in range(200)]
    claimed: dict[str, list[str]] = {f"w{i}": [] for i in range(8)}
    barrier = threading.Barrier(len(claimed))
    with BacklogStore.create(tmp_path / "b.db", [{"id": i} for i in ids]) as store:

        def work(name: str) -> None:
            barrier.wait()
            while (task := store.claim_next(name)) is not None:
                claimed[name].append(task["id"])

        threads = [threading.Thread(target=work, args=(name,)) for name in claimed]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        snapshot = store.snapshot()
    assert sorted(t for got in claimed.values() for t in got) == ids
    assert {(t["status"], t["claims"]) for t in snapshot} == {("claimed", 1)}
    assert all(store_task["worker"] in claimed for store_task in snapshot)


# -- the scripted agent -------------------------------------------------------------------


def _agent() -> ScriptedAgent:
    return ScriptedAgent(
        {
            "t": TaskScript({"f.txt": "done\n"}, review_rounds=1),
            "flaky": TaskScript({"f.txt": "x\n"}, transient_errors=1, outcome="fail"),
            "odd": TaskScript({"f.txt": "x\n"}, outcome="crash"),
        }
    )


def test_scripted_agent_runs_the_review_loop() -> None:
    agent = _agent()
    first = agent.execute({"step": "edit", "task": "t", "attempt": 1, "claim": 1})
    assert (first.state, first.terminal) == ("edited", False)
    assert first.payload["files"] == {"f.txt": DRAFT_MARKER + "done\n"}
    assert agent.execute({"step": "review", "task": "t", "attempt": 1}).state == "needs_changes"
    second = agent.execute({"step": "edit", "task": "t", "attempt": 2, "claim": 1})
    assert second.payload["files"] == {"f.txt": "done\n"}
    approved = agent.execute({"step": "review", "task": "t", "attempt": 2})
    assert (approved.state, approved.terminal) == ("approve", True)
    assert approved.usage is not None
    assert set(approved.usage) == {"input_tokens", "output_tokens"}


def test_scripted_agent_errors_fails_and_escalates() -> None:
    agent = _agent()
    transient = agent.execute({"step": "edit", "task": "flaky", "attempt": 1, "claim": 1})
    assert (transient.state, transient.terminal, transient.payload["retryable"]) == (
        "error",
        False,
        True,
    )
    final = agent.execute({"step": "edit", "task": "flaky", "attempt": 1, "claim": 2})
    assert (final.state, final.terminal) == ("failed", True)
    assert agent.execute({"step": "review", "task": "odd", "attempt": 1}).state == "escalate"
    unknown = agent.execute({"step": "edit", "task": "nobody", "attempt": 1})
    assert (unknown.state, unknown.terminal) == ("failed", True)
    with pytest.raises(ValueError, match="cannot answer step 'dance'"):
        agent.execute({"step": "dance", "task": "t"})


def test_scripted_agent_answers_depend_on_the_request_only() -> None:
    requests = [
        {"step": step, "task": task, "attempt": attempt, "claim": claim}
        for step in ("edit", "review")
        for task in ("t", "flaky", "odd")
        for attempt in (1, 2)
        for claim in (1, 2)
    ]
    expected = [_agent().execute(r) for r in requests]
    shuffled = list(range(len(requests)))
    random.Random(4).shuffle(shuffled)
    agent = _agent()
    answers = {i: agent.execute(requests[i]) for i in shuffled}
    assert [answers[i] for i in range(len(requests))] == expected


def test_scripted_agent_answers_through_a_model_process() -> None:
    """Given a runner, the answer is what the model process printed: the request and the
    scripted answer went in on stdin and came back on stdout."""
    runner = SubprocessRunner()
    calls: list[tuple[list[str], Any]] = []

    class Spy:
        def run(self, argv: Sequence[str], **kwargs: Any) -> ProcessResult:
            calls.append((list(argv), kwargs))
            return runner.run(argv, **kwargs)

    script = {"t": TaskScript({"f.txt": "done\n"}, review_rounds=1)}
    request = {"step": "edit", "task": "t", "attempt": 1, "claim": 1}
    direct = ScriptedAgent(script).execute(request)
    through = ScriptedAgent(script, Spy()).execute(dict(request))  # type: ignore[arg-type]
    assert through == direct
    assert (through.model, through.provider) == (MODEL, PROVIDER)
    [(argv, kwargs)] = calls
    assert argv == list(MODEL_ARGV)
    assert kwargs["text"] is True
    assert json.loads(kwargs["input"]) == {
        "request": request,
        "answer": dataclasses.asdict(direct),
    }


def test_a_failing_model_process_says_what_failed() -> None:
    class Broken:
        def run(self, argv: Sequence[str], **kwargs: Any) -> ProcessResult:
            return ProcessResult(argv, 127, "", "sh: cat: not found\n")

    agent = ScriptedAgent({}, Broken())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError) as caught:
        agent.execute({"step": "edit", "task": "t"})
    assert str(caught.value) == (
        "the model process ['sh', '-c', 'cat'] failed with exit code 127: sh: cat: not found; "
        "check that 'sh' and 'cat' are on PATH"
    )


def test_merge_versions_is_symmetric() -> None:
    base = "[g]\ncolor = red\nsize = small\n"
    green = "[g]\ncolor = green\nsize = small\n"
    blue = "[g]\ncolor = blue\nsize = large\n"
    merged = "[g]\ncolor = blue, green\nsize = large\n"
    assert merge_versions(base, green, blue) == merge_versions(base, blue, green) == merged
    assert merge_versions(base, "a\n", "b\nc\n") == merge_versions(base, "b\nc\n", "a\n")


# -- live runs ----------------------------------------------------------------------------

EXPECTED: dict[str, RunSummary] = {
    "happy": RunSummary(
        completed=["readme", "roses", "tulips"],
        failed=[],
        merged_commits=3,
        conflicts_recovered=0,
        changes_requested=0,
        retries=0,
        per_worker={"worker-1": ["roses"], "worker-2": ["tulips"], "worker-3": ["readme"]},
    ),
    "review": RunSummary(
        completed=["readme", "roses", "tulips"],
        failed=[],
        merged_commits=3,
        conflicts_recovered=0,
        changes_requested=3,
        retries=0,
        per_worker={"worker-1": ["roses"], "worker-2": ["tulips"], "worker-3": ["readme"]},
    ),
    "conflict": RunSummary(
        completed=["paint-blue", "paint-green", "roses"],
        failed=[],
        merged_commits=3,
        conflicts_recovered=1,
        changes_requested=0,
        retries=0,
        per_worker={
            "worker-1": ["paint-green"],
            "worker-2": ["paint-blue"],
            "worker-3": ["roses"],
        },
    ),
    "full": RunSummary(
        completed=["paint-blue", "paint-green", "readme", "roses", "tulips"],
        failed=["compost"],
        merged_commits=5,
        conflicts_recovered=1,
        changes_requested=2,
        retries=1,
        per_worker={
            "worker-1": ["roses", "tulips"],
            "worker-2": ["compost", "paint-green"],
            "worker-3": ["paint-blue", "readme"],
        },
    ),
}


def test_every_scenario_has_an_expected_outcome() -> None:
    assert set(SCENARIOS) == {*EXPECTED, "crash"}


@needs_git
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_live_scenario_summary_and_repository(live: Any, name: str) -> None:
    run, summary = live(name)
    assert summary == EXPECTED[name]
    merges = run.git("log", "--first-parent", "--format=%s", "main").splitlines()
    assert merges[-1] == "Plant the garden"
    assert sorted(merges[:-1]) == [f"Merge task/{t}" for t in EXPECTED[name].completed]
    # Every worktree was removed; the repository's own checkout is the only one left.
    assert len(run.git("worktree", "list").splitlines()) == 1
    assert run.git("status", "--porcelain") == ""
    by_id = {t["id"]: t for t in run.store.snapshot()}
    for task_id in EXPECTED[name].completed:
        commit = by_id[task_id]["commit"]
        assert by_id[task_id]["status"] == "complete"
        assert run.git("log", "-1", "--format=%s", commit).strip() == f"Merge task/{task_id}"
    for task_id in EXPECTED[name].failed:
        assert by_id[task_id]["status"] == "failed"
        assert by_id[task_id]["reason"] == "the requested change contradicts the garden plan"


@needs_git
@pytest.mark.parametrize("name", ["conflict", "full"])
def test_conflict_is_resolved_with_both_edits(live: Any, name: str) -> None:
    run, summary = live(name)
    assert summary == EXPECTED[name]
    assert run.git("show", "main:settings.ini") == (
        "[garden]\ncolor = blue, green\nsize = small\nwater = weekly\n"
    )
    resolutions = [r for _, r in run.agent.requests if r["step"] == "resolve_conflict"]
    assert len(resolutions) == 1
    sides = resolutions[0]["files"]["settings.ini"]
    assert sides["base"] == get_scenario(name).files["settings.ini"]
    assert {sides["ours"], sides["theirs"]} == {
        "[garden]\ncolor = green\nsize = small\nwater = weekly\n",
        "[garden]\ncolor = blue\nsize = small\nwater = weekly\n",
    }


@needs_git
def test_review_loop_commits_each_round(live: Any) -> None:
    run, summary = live("review")
    assert summary == EXPECTED["review"]
    subjects = run.git("log", "--format=%s", "main").splitlines()
    assert [s for s in subjects if s.startswith("tulips:")] == [
        "tulips: Plant tulips by the gate (round 3)",
        "tulips: Plant tulips by the gate (round 2)",
        "tulips: Plant tulips by the gate (round 1)",
    ]
    assert "draft" not in run.git("show", "main:beds/tulips.txt")
    feedback = [
        r["feedback"]
        for _, r in run.agent.requests
        if r["task"] == "tulips" and r["step"] == "edit"
    ]
    assert feedback == [
        None,
        "round 1: remove the draft marker and tidy up",
        "round 2: remove the draft marker and tidy up",
    ]


@needs_git
def test_full_run_retries_then_fails_and_backs_off_through_the_clock(live: Any) -> None:
    run, summary = live("full")
    assert summary == EXPECTED["full"]
    compost = run.store.get("compost")
    assert (compost["status"], compost["claims"], compost["worker"]) == ("failed", 2, "worker-2")
    # One back-off after the release, one after the failure; merge-lock waits are shorter.
    assert sorted(s for s in run.clock.sleeps if s == 0.2) == [0.2, 0.2]
    assert set(run.clock.sleeps) <= {0.2, 0.05}


@needs_git
def test_crash_escapes_after_the_other_workers_finish(live: Any) -> None:
    run, error = live("crash")
    assert isinstance(error, GardenerCrash)
    assert (error.task_id, error.worker) == ("hedge", "worker-2")
    assert "no transition from 'reviewing' on agent state 'escalate'" in str(error)
    states = {t["id"]: t["status"] for t in run.store.snapshot()}
    assert states == {"roses": "complete", "hedge": "in_progress", "tulips": "complete"}


@needs_git
def test_one_worker_does_everything_in_order(live: Any) -> None:
    run, summary = live("full", workers=1)
    assert summary == dataclasses.replace(
        EXPECTED["full"], per_worker={"worker-1": sorted([*EXPECTED["full"].completed, "compost"])}
    )
    claims = [r["task"] for _, r in run.agent.requests if r["step"] == "edit" and r["attempt"] == 1]
    assert claims == [
        "roses",
        "paint-green",
        "paint-blue",
        "tulips",
        "compost",
        "compost",
        "readme",
    ]


@needs_git
def test_boundary_calls_are_replayable(live: Any) -> None:
    run, _ = live("full")
    workdir = str(run.workdir)
    assert run.runner.calls
    for call in run.runner.calls:
        assert call["argv"][0] == "git"
        assert call["env"] is None
        assert call["text"] is True
        assert call["cwd"].startswith(workdir)
        assert not any(workdir in arg for arg in call["argv"])
    # The repository's config makes git independent of the host's.
    config = [c["argv"][2:] for c in run.runner.calls if c["argv"][1] == "config"]
    assert config == [list(pair) for pair in GIT_CONFIG]
    assert set(run.git("log", "--format=%an <%ae>", "main").splitlines()) == {
        "gardener <gardener@example.invalid>"
    }
    # Set-up runs on the main thread, the rest on the worker that owns the task.
    assert {c["worker"] for c in run.runner.calls} == {"main", "worker-1", "worker-2", "worker-3"}
    affinity = {t["id"]: t["affinity"] for t in run.store.snapshot()}
    for worker, request in run.agent.requests:
        assert worker == affinity[request["task"]]
        assert workdir not in json.dumps(request)


@needs_git
def test_a_task_path_outside_the_worktree_is_a_crash(tmp_path: Path) -> None:
    runner = SubprocessRunner()
    init_repository(runner, tmp_path / "repo", {"a.txt": "a\n"})
    task = {"id": "evil", "payload": {"files": ["../../etc/passwd"]}}
    with BacklogStore.create(tmp_path / "b.db", [task]) as store:
        gardener = Gardener(
            runner=runner,
            agent=ScriptedAgent({}),
            store=store,
            clock=CountingClock(),
            workdir=tmp_path,
            workers=1,
        )
        with pytest.raises(GardenerCrash, match=r"refusing to edit '\.\./\.\./etc/passwd'"):
            gardener.run()
        assert store.get("evil")["status"] == "claimed"


def test_workers_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="workers must be at least 1, got 0"):
        Gardener(
            runner=SubprocessRunner(),
            agent=ScriptedAgent({}),
            store=BacklogStore.create(tmp_path / "b.db", []),
            clock=CountingClock(),
            workdir=tmp_path,
            workers=0,
        )


def test_unknown_scenario_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown gardener scenario 'nope'; use one of 'happy'"):
        get_scenario("nope")


# -- record and replay --------------------------------------------------------------------


def _record(tmp_path: Path, name: str) -> Path:
    cassette = tmp_path / f"{name}.jsonl"
    if name == "crash":
        with pytest.raises(GardenerCrash, match="'escalate'"):
            record_scenario(cassette, tmp_path / "recorded", name)
    else:
        assert record_scenario(cassette, tmp_path / "recorded", name) == EXPECTED[name]
    return cassette


@needs_git
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_recorded_scenario_replays_clean_without_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    cassette = _record(tmp_path, name)
    recording = load(cassette)
    assert recording.header.config == {"scenario": name, "workers": 3}
    assert recording.header.entrypoint == "gardener"
    assert recording.crashed is (name == "crash")
    if name != "crash":
        assert recording.end is not None
        assert recording.end.outcome == dataclasses.asdict(EXPECTED[name])

    def no_processes(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"replay started a process: {args!r}")

    # Each agent turn ran its model process through the tape: recorded inside the turn.
    turns = {c.seq: c for c in recording.calls if isinstance(c, AgentTurn)}
    models = [c for c in recording.calls if isinstance(c, ProcessCall) and c.parent is not None]
    assert len(models) == len(turns) > 0
    for model in models:
        assert model.argv == list(MODEL_ARGV)
        assert model.parent in turns
        assert model.worker == turns[model.parent].worker

    monkeypatch.setattr(subprocess, "Popen", no_processes)
    report = replay_scenario(cassette, tmp_path / "replayed")
    assert report.mismatches == []
    assert report.ok
    # The model processes are not expected on replay: their turns are answered whole.
    assert report.consumed == report.loaded == len(recording.calls) - len(models)
    # The store ran for real from the recorded snapshot and ended where the recording did.
    with (
        BacklogStore(tmp_path / "recorded" / "backlog.db") as recorded,
        BacklogStore(tmp_path / "replayed" / "backlog.db") as replayed,
    ):
        assert replayed.snapshot() == recorded.snapshot()


@needs_git
def test_replay_reports_where_the_code_diverges(tmp_path: Path) -> None:
    cassette = _record(tmp_path, "happy")
    lines = cassette.read_text().splitlines()
    # Tamper with what git answered for one merge: the commit the worker then hands to
    # mark_complete is no longer the one recorded.
    index = next(i for i, line in enumerate(lines) if '"rev-parse","HEAD"' in line)
    entry = json.loads(lines[index])
    entry["stdout"] = "0" * 40 + "\n"
    lines[index] = json.dumps(entry)
    cassette.write_text("\n".join(lines) + "\n")

    report = replay_scenario(cassette, tmp_path / "replayed")
    assert not report.ok
    # The call's arguments differ, and so does what the real store then returned.
    assert [(m.kind, m.boundary, m.worker) for m in report.mismatches] == [
        (MismatchKind.ARGUMENT_MISMATCH, "store", entry["worker"]),
        (MismatchKind.STORE_MISMATCH, "store", entry["worker"]),
    ]
    assert report.mismatches[0].actual["method"] == "mark_complete"
    assert report.mismatches[0].actual["args"][1] == "0" * 40


@needs_git
def test_the_replay_hook_replays_a_gardener_tape_and_declines_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = _record(tmp_path, "review")
    other = tmp_path / "other.jsonl"
    with record(other, entrypoint="someone-else") as tape:
        tape.finish()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # a temp dir nobody else uses

    def no_processes(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"replay started a process: {args!r}")

    monkeypatch.setattr(subprocess, "Popen", no_processes)
    with replay(other) as tape:
        assert replay_hook(tape, tape.recording) is None
        tape.finish()
    with replay(cassette) as tape:
        assert replay_hook(tape, tape.recording) is True
    assert tape.report is not None
    assert tape.report.ok
    assert tape.report.consumed == tape.report.loaded > 0
    # Its work directory was a temporary one, named in the tape's roots, and is gone.
    assert tape.roots.as_dict()["work"].startswith(str(scratch / "gardener-replay-"))
    assert list(scratch.iterdir()) == []


def test_run_session_refuses_a_cassette_it_did_not_record(tmp_path: Path) -> None:
    cassette = tmp_path / "other.jsonl"
    with record(cassette, config={"something": "else"}) as tape:
        tape.finish()
    with (
        replay(cassette) as tape,
        pytest.raises(ValueError, match="not a gardener config"),
    ):
        run_session(tape, tmp_path / "work")


def test_session_config_validates() -> None:
    assert session_config("review", 2) == {"scenario": "review", "workers": 2}
    with pytest.raises(ValueError, match="unknown gardener scenario"):
        session_config("nope")
    with pytest.raises(ValueError, match="workers must be at least 1"):
        session_config("full", 0)
