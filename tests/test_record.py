"""Recording: the three boundaries, policy (levels, digests, secrets, paths) and failures."""

from __future__ import annotations

import argparse
import dataclasses
import stat
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import msgspec
import pytest

import sessiontape
from sessiontape import (
    AgentTurn,
    Blob,
    CassetteError,
    Error,
    ProcessCall,
    RecordingWarning,
    SessionEnd,
    StoreMutation,
    StoreSnapshot,
    Usage,
)

PY = sys.executable


@dataclasses.dataclass(frozen=True)
class StepResult:
    state: str
    terminal: bool
    payload: dict[str, Any]
    usage: dict[str, int] | None = None


class Agent:
    def __init__(self) -> None:
        self.calls = 0

    def execute(self, request: dict[str, Any]) -> StepResult:
        self.calls += 1
        return StepResult(
            "done", True, {"echo": request["task"]}, {"input_tokens": 7, "output_tokens": 3}
        )

    def name(self) -> str:
        return "scripted"


class Store:
    def __init__(self) -> None:
        self.tasks = {"t1": "ready", "t2": "ready"}

    def list_tasks(self) -> list[dict[str, str]]:
        return [{"id": k, "state": v} for k, v in sorted(self.tasks.items())]

    def claim(self, worker: str) -> str | None:
        for key, state in sorted(self.tasks.items()):
            if state == "ready":
                self.tasks[key] = worker
                return key
        return None

    def release(self, task: str) -> None:
        if task not in self.tasks:
            raise KeyError(task)
        self.tasks[task] = "ready"


def test_record_real_process_agent_and_store(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    agent, store = Agent(), Store()
    with sessiontape.record(path, config={"workers": 1}, app_version="9.9",
                            entrypoint="app run") as tape:  # fmt: skip
        runner = tape.process_runner()
        result = runner.run([PY, "-c", "print('hi')"], text=True)
        assert result.stdout == "hi\n"
        wrapped_agent = tape.agent(agent)
        step = wrapped_agent.execute({"task": "t1"})
        assert step == StepResult(
            "done", True, {"echo": "t1"}, {"input_tokens": 7, "output_tokens": 3}
        )
        assert wrapped_agent.name() == "scripted"  # other methods pass through
        backlog = tape.store(store, mutations=["claim", "release"], snapshot=store.list_tasks)
        assert backlog.claim("main") == "t1"
        with pytest.raises(KeyError):
            backlog.release("nope")
        tape.finish(outcome={"completed": 1})

    rec = sessiontape.load(path)
    assert rec.header.config == {"workers": 1}
    assert rec.header.app_version == "9.9"
    assert rec.header.entrypoint == "app run"
    kinds = [type(e) for e in rec.entries]
    assert kinds == [
        sessiontape.SessionStart, ProcessCall, AgentTurn, StoreSnapshot, StoreMutation,
        StoreMutation, SessionEnd,
    ]  # fmt: skip
    proc = rec.entries[1]
    assert isinstance(proc, ProcessCall)
    assert proc.returncode == 0
    assert proc.stdout == "hi\n"
    assert proc.text is True
    assert proc.duration_ns > 0
    turn = rec.entries[2]
    assert isinstance(turn, AgentTurn)
    assert turn.args == [{"task": "t1"}]
    assert turn.result == {"state": "done", "terminal": True, "payload": {"echo": "t1"},
                           "usage": {"input_tokens": 7, "output_tokens": 3}}  # fmt: skip
    assert turn.result_type == f"{__name__}.StepResult"
    assert turn.usage == Usage(input_tokens=7, output_tokens=3)
    snap = rec.entries[3]
    assert isinstance(snap, StoreSnapshot)
    assert snap.data == [{"id": "t1", "state": "ready"}, {"id": "t2", "state": "ready"}]
    claim, release = rec.entries[4], rec.entries[5]
    assert isinstance(claim, StoreMutation)
    assert isinstance(release, StoreMutation)
    assert (claim.operation, claim.args, claim.result) == ("claim", ["main"], "t1")
    assert release.error is not None
    assert release.error.type == "KeyError"
    assert rec.end is not None
    assert rec.end.outcome == {"completed": 1}
    assert rec.end.counts == {
        "session_start": 1,
        "process": 1,
        "agent_turn": 1,
        "store_snapshot": 1,
        "store_mutation": 2,
        "session_end": 1,
    }


def test_process_errors_are_recorded_as_such(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with sessiontape.record(path) as tape:
        runner = tape.process_runner()
        with pytest.raises(FileNotFoundError):
            runner.run(["sessiontape-no-such-program-xyz"])
        with pytest.raises(subprocess.TimeoutExpired):
            runner.run([PY, "-c", "import time; time.sleep(5)"], timeout=0.2)
        failing = runner.run([PY, "-c", "import sys; sys.exit(3)"])
        assert failing.returncode == 3
    calls = sessiontape.load(path).entries_for("process")
    assert calls[0].spawn_error is not None
    assert calls[0].spawn_error.type == "FileNotFoundError"
    assert calls[1].timed_out
    assert calls[1].timeout == 0.2
    assert calls[2].returncode == 3


def test_streaming_call_is_one_process_call(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    code = "import sys\nfor i in range(3): print('{\"n\": %d}' % i, flush=True)\nsys.exit(0)"
    with sessiontape.record(path) as tape:
        runner = tape.process_runner()
        with runner.stream([PY, "-c", code]) as stream:
            lines = list(stream)
        assert lines == ['{"n": 0}\n', '{"n": 1}\n', '{"n": 2}\n']
        assert stream.returncode == 0
    (call,) = sessiontape.load(path).entries_for("process")
    assert call.streamed
    assert call.stdout == '{"n": 0}\n{"n": 1}\n{"n": 2}\n'
    assert call.returncode == 0


def test_exception_escaping_the_block_writes_error_and_no_end(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    with pytest.raises(ValueError, match="broken backlog"), sessiontape.record(path):
        raise ValueError("broken backlog")
    rec = sessiontape.load(path)
    assert rec.crashed
    assert isinstance(rec.entries[-1], Error)
    assert rec.error is not None
    assert rec.error.type == "ValueError"
    assert rec.error.message == "broken backlog"
    assert rec.error.traceback is not None
    assert "raise ValueError" in rec.error.traceback


def test_secrets_never_reach_the_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.jsonl"
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    api = "sk-ant-api03-" + "x" * 40
    env = {"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": token, "MY_PASSWORD": "hunter2hunter2"}
    with sessiontape.record(path) as tape:
        runner = tape.process_runner()
        runner.run(
            [PY, "-c", f"print('token is {token}'); print('{api}')", "--token", "hunter3pass"],
            env=env,
        )
    raw = path.read_text()
    for secret in (token, api, "hunter2hunter2", "hunter3pass"):
        assert secret not in raw
    (call,) = sessiontape.load(path).entries_for("process")
    assert call.env is not None
    assert call.env["GITHUB_TOKEN"] == "[REDACTED]"
    assert call.env["PATH"] == "/usr/bin:/bin"
    assert "[REDACTED" in str(call.stdout)


def test_big_stdout_goes_to_the_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    with sessiontape.record(path) as tape:
        out = tape.process_runner().run([PY, "-c", "print('x' * 200_000, end='')"]).stdout
    assert len(out) == 200_000
    (call,) = sessiontape.load(path).entries_for("process")
    assert isinstance(call.stdout, Blob)
    assert not call.stdout.truncated
    assert call.stdout.sidecar
    assert call.stdout.size == 200_000
    assert call.stdout.sha256.startswith("sha256:")
    assert path.stat().st_size < 10_000
    blob = tmp_path / "big.jsonl.blobs" / call.stdout.sha256.replace(":", "-")
    assert blob.read_bytes() == b"x" * 200_000
    assert blob.stat().st_mode & 0o777 == 0o600
    assert blob.parent.stat().st_mode & 0o777 == 0o700
    with sessiontape.replay(path) as tape:
        again = tape.process_runner().run([PY, "-c", "print('x' * 200_000, end='')"])
        assert again.stdout == b"x" * 200_000
        assert tape.finish().ok


def test_non_utf8_output_is_kept_exactly(tmp_path: Path) -> None:
    path = tmp_path / "bin.jsonl"
    code = "import sys; sys.stdout.buffer.write(bytes([0, 255, 254, 10]))"
    with sessiontape.record(path) as tape:
        tape.process_runner().run([PY, "-c", code])
    (call,) = sessiontape.load(path).entries_for("process")
    assert isinstance(call.stdout, Blob)
    assert call.stdout.b64 == "AP/+Cg=="
    assert not call.stdout.truncated


@pytest.mark.parametrize(("level", "has_payload", "has_digest"),
                         [("minimal", False, False), ("standard", False, True),
                          ("full", True, False)])  # fmt: skip
def test_levels(tmp_path: Path, level: str, has_payload: bool, has_digest: bool) -> None:
    path = tmp_path / "lvl.jsonl"
    with sessiontape.record(path, level=level) as tape:
        tape.process_runner().run([PY, "-c", "print('payload')"], text=True)
    (call,) = sessiontape.load(path).entries_for("process")
    assert call.duration_ns > 0
    assert call.returncode == 0
    assert (call.stdout == "payload\n") is has_payload
    assert isinstance(call.stdout, Blob) is has_digest


def test_paths_under_roots_become_placeholders(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    path = tmp_path / "paths.jsonl"
    with sessiontape.record(path, roots={"repo": str(repo)}) as tape:
        tape.process_runner().run(
            [PY, "-c", "import os; print(os.getcwd())"], cwd=str(repo / "src"), text=True
        )
    (call,) = sessiontape.load(path).entries_for("process")
    assert call.cwd == "{repo}/src"
    assert call.stdout == "{repo}/src\n"
    assert str(repo) not in path.read_text().split("\n", 1)[1]


def test_file_mode_is_0600(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    with sessiontape.record(path):
        pass
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_unwritable_cassette_path_warns_once_and_app_goes_on(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    path = blocker / "sub" / "run.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sessiontape.record(path) as tape:
            runner = tape.process_runner()
            for _ in range(3):
                assert runner.run([PY, "-c", "print(1)"], text=True).stdout == "1\n"
            assert tape.agent(Agent()).execute({"task": "x"}).state == "done"
    recording = [w for w in caught if issubclass(w.category, RecordingWarning)]
    assert len(recording) == 1
    assert "cannot open the cassette" in str(recording[0].message)
    assert not path.exists()


def test_write_failure_midway_keeps_what_was_written(tmp_path: Path) -> None:
    path = tmp_path / "mid.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sessiontape.record(path) as tape:
            runner = tape.process_runner()
            runner.run([PY, "-c", "print(1)"])
            # Simulate the disk going away: the descriptor is closed under the writer.
            import os

            os.close(tape._recorder._writer._fd)  # type: ignore[attr-defined]
            assert runner.run([PY, "-c", "print(2)"], text=True).stdout == "2\n"
            assert runner.run([PY, "-c", "print(3)"], text=True).stdout == "3\n"
    assert sum(issubclass(w.category, RecordingWarning) for w in caught) == 1
    rec = sessiontape.load(path)
    assert rec.crashed
    assert [e.stdout for e in rec.entries_for("process")] == [b"1\n".decode()]


def test_unencodable_result_is_recorded_as_repr_with_one_warning(tmp_path: Path) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque>"

    class Weird:
        def execute(self, request: object) -> object:
            return Opaque()

    path = tmp_path / "w.jsonl"
    with sessiontape.record(path) as tape:
        agent = tape.agent(Weird())
        with pytest.warns(RecordingWarning, match="has no JSON form"):
            agent.execute(1)
        agent.execute(2)  # warned once: a second warning would fail the suite
    turns = sessiontape.load(path).entries_for("agent")
    assert [t.result for t in turns] == [{"$repr": "<Opaque>"}] * 2


def test_force_moves_old_cassette_aside(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with sessiontape.record(path) as tape:
        first_run = tape.run_id  # type: ignore[attr-defined]
    with sessiontape.record(path, if_exists="force") as tape:
        second_run = tape.run_id  # type: ignore[attr-defined]
    olds = list(tmp_path.glob("c.jsonl.old.*"))
    assert len(olds) == 1
    assert tape.moved_to == olds[0]  # type: ignore[attr-defined]
    assert sessiontape.load(olds[0]).header.run_id == first_run
    assert sessiontape.load(path).header.run_id == second_run


def test_append_resumes_seq_after_a_torn_crash(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with sessiontape.record(path) as tape:
        tape.process_runner().run([PY, "-c", "print(1)"])
    # Simulate a crash mid-write: drop SessionEnd, leave half a line.
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:10])
    with sessiontape.record(path, if_exists="append") as tape:
        tape.process_runner().run([PY, "-c", "print(2)"])
    rec = sessiontape.load(path)
    # The torn line is set aside beside the tape; the resumed run starts with a marker.
    (aside,) = tmp_path.glob("c.jsonl.torn.*")
    assert aside.read_bytes() == lines[-1][:10]
    assert [(e.seq, type(e).__name__) for e in rec.entries] == [
        (0, "SessionStart"), (1, "ProcessCall"), (2, "SessionResume"), (3, "ProcessCall"),
        (4, "SessionEnd"),
    ]  # fmt: skip
    assert not rec.crashed
    assert [e.stdout for e in rec.entries_for("process")] == ["1\n", "2\n"]


def test_append_refuses_a_corrupt_cassette_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"garbage\nmore\n")
    with pytest.raises(CassetteError, match="cannot append to it"):
        sessiontape.record(path, if_exists="append")
    assert path.read_bytes() == b"garbage\nmore\n"


def test_parent_links_nested_calls(tmp_path: Path) -> None:
    path = tmp_path / "nest.jsonl"

    with sessiontape.record(path) as tape:
        runner = tape.process_runner()

        class Spawning:
            def execute(self, request: str) -> str:
                return runner.run([PY, "-c", "print('inner')"], text=True).stdout

        assert tape.agent(Spawning()).execute("go") == "inner\n"
    rec = sessiontape.load(path)
    (turn,) = rec.entries_for("agent")
    (proc,) = rec.entries_for("process")
    assert proc.parent == turn.seq
    assert turn.parent is None
    assert turn.seq < proc.seq


def test_worker_ids_and_threads_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    with sessiontape.record(path) as tape:
        runner = tape.process_runner()
        with sessiontape.worker("worker-7"):
            runner.run([PY, "-c", "pass"])
        runner.run([PY, "-c", "pass"])
    calls = sessiontape.load(path).entries_for("process")
    assert [c.worker for c in calls] == ["worker-7", "main"]
    assert all(c.thread == "MainThread" for c in calls)


def test_patch_subprocess_records_unmodified_code(tmp_path: Path) -> None:
    path = tmp_path / "patched.jsonl"
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        done = subprocess.run([PY, "-c", "print('run')"], capture_output=True, text=True)
        out = subprocess.check_output([PY, "-c", "print('check')"])
        proc = subprocess.Popen(
            [PY, "-c", "import sys; print(sys.stdin.read().upper())"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        comm_out, _ = proc.communicate(b"piped")
    assert subprocess.Popen is not None
    assert done.stdout == "run\n"
    assert out == b"check\n"
    assert comm_out == b"PIPED\n"
    calls = sessiontape.load(path).entries_for("process")
    assert [c.stdout for c in calls] == ["run\n", "check\n", "PIPED\n"]
    assert calls[2].input == "piped"
    assert [c.text for c in calls] == [True, False, False]


def test_patch_subprocess_is_restored(tmp_path: Path) -> None:
    real = subprocess.Popen
    spawn = real.__dict__["_execute_child"]
    with sessiontape.record(tmp_path / "r.jsonl") as tape:
        with tape.patch_subprocess():
            assert subprocess.Popen is real  # the name is left alone: its methods are patched
            assert real.__dict__["_execute_child"] is not spawn
        assert real.__dict__["_execute_child"] is spawn


def test_disabled_recording_returns_the_objects_themselves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(sessiontape.ENV_VAR, raising=False)
    agent, store, runner = Agent(), Store(), sessiontape.SubprocessRunner()
    with sessiontape.record() as tape:
        assert tape.mode is sessiontape.Mode.DISABLED
        assert tape.process_runner(runner) is runner
        assert tape.agent(agent) is agent
        assert tape.store(store, mutations=["claim"]) is store
        assert tape.finish() is None


def test_env_var_turns_recording_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env.jsonl"
    monkeypatch.setenv(sessiontape.ENV_VAR, str(path))
    with sessiontape.record() as tape:
        assert tape.mode is sessiontape.Mode.RECORD
    assert sessiontape.load(path).end is not None


def test_record_session_argparse_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sessiontape.ENV_VAR, raising=False)
    parser = argparse.ArgumentParser()
    sessiontape.add_record_argument(parser)
    assert sessiontape.record_path(parser.parse_args(["--record-session", "x.jsonl"])) == (
        "x.jsonl"
    )
    assert sessiontape.record_path(parser.parse_args([])) is None
    monkeypatch.setenv(sessiontape.ENV_VAR, "y.jsonl")
    assert sessiontape.record_path(parser.parse_args([])) == "y.jsonl"


def test_wrapping_a_missing_method_is_a_usage_error(tmp_path: Path) -> None:
    with (
        sessiontape.record(tmp_path / "u.jsonl") as tape,
        pytest.raises(sessiontape.UsageError, match="has no method 'nope'"),
    ):
        tape.store(Store(), mutations=["nope"])


def test_bad_level_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(sessiontape.UsageError, match="unknown recording level 'loud'"):
        sessiontape.record(tmp_path / "x.jsonl", level="loud")


def test_struct_results_round_trip(tmp_path: Path) -> None:
    class Step(msgspec.Struct, frozen=True):
        state: str
        items: tuple[int, ...]

    class A:
        def execute(self) -> Step:
            return Step("ok", (1, 2))

    path = tmp_path / "s.jsonl"
    with sessiontape.record(path) as tape:
        tape.agent(A()).execute()
    (turn,) = sessiontape.load(path).entries_for("agent")
    assert msgspec.convert(turn.result, Step) == Step("ok", (1, 2))


@pytest.mark.writes_invalid_tapes  # the entry that could not be scrubbed leaves a seq gap
def test_an_entry_that_cannot_be_scrubbed_is_one_warning_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A scrubber that fails on one kind of entry (seen: a rule compiled lazily by two
    # threads at once) must cost that entry and one warning, never the program's run,
    # and never write the entry unscrubbed.
    from sessiontape.recorder import _recorder

    real = _recorder.scrub_entry

    def failing(entry: Any, scrubber: Any) -> Any:
        if isinstance(entry, ProcessCall):
            raise AssertionError("a broken rule")
        return real(entry, scrubber)

    monkeypatch.setattr(_recorder, "scrub_entry", failing)
    cassette = tmp_path / "t.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sessiontape.record(cassette) as tape:
            runner = tape.process_runner()
            first = runner.run([sys.executable, "-c", "print('one')"], text=True)
            second = runner.run([sys.executable, "-c", "print('two')"], text=True)
    assert (first.stdout, second.stdout) == ("one\n", "two\n")
    [warning] = [w for w in caught if issubclass(w.category, RecordingWarning)]
    assert "could not be scrubbed (AssertionError: a broken rule)" in str(warning.message)
    assert "seq 1, ProcessCall" in str(warning.message)
    lines = cassette.read_bytes().splitlines()
    assert [msgspec.json.decode(line)["kind"] for line in lines] == ["session_start", "session_end"]
