"""Cassettes for the command-line tests, recorded with the real API on a controlled clock.

The recorder reads the time through ``_time_ns`` (``_clock_time_ns`` while time-machine is
not imported) and ``_mono_ns`` in ``sessiontape.recorder._recorder``; the ``clock`` fixture
replaces them so that every start time and duration is exact and the commands' output
can be asserted line by line. The fake runner, agent and store advance that clock by the
time each call "takes".
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import ProcessResult, ProcessStream
from sessiontape.cli import main
from sessiontape.recorder import _recorder

WALL0 = 1_700_000_000_000_000_000
MONO0 = 50_000_000_000
MS = 1_000_000

#: No path roots: paths stay as written, whatever the machine running the tests.
NO_ROOTS = {"repo": "", "home": "", "tmp": ""}


class Clock:
    """The recorder's time, moved by hand (ns since the session started)."""

    def __init__(self) -> None:
        self.now = 0

    def advance(self, ms: float) -> None:
        self.now += int(ms * MS)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(_recorder, "_time_ns", lambda: WALL0 + c.now)
    monkeypatch.setattr(_recorder, "_clock_time_ns", lambda: WALL0 + c.now)
    monkeypatch.setattr(_recorder, "_mono_ns", lambda: MONO0 + c.now)
    return c


class FakeRunner:
    """A process runner answering from a table: ``"git merge x": (returncode, stdout, ms)``."""

    def __init__(self, clock: Clock, table: Mapping[str, tuple[int, str, float]] | None = None):
        self.clock = clock
        self.table = dict(table or {})
        self.calls: list[list[str]] = []

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
        self.calls.append(list(argv))
        code, out, ms = self.table.get(" ".join(argv), (0, "ok\n", 2))
        self.clock.advance(ms)
        return ProcessResult(argv, code, out if text else out.encode(), "" if text else b"")

    def stream(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = True,
    ) -> ProcessStream:
        raise AssertionError("the application under test never streams a process")


class Agent:
    """An agent that spawns ``claude`` through the (recorded) runner and reports usage."""

    def __init__(self, clock: Clock, runner: Any) -> None:
        self.clock = clock
        self.runner = runner

    def execute(self, request: dict[str, Any]) -> dict[str, Any]:
        self.clock.advance(3)
        self.runner.run(["claude", "-p", f"work on {request['task']}"], text=True)
        self.clock.advance(5)
        return {
            "state": "done",
            "usage": {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.01},
        }


class Backlog:
    """A tiny task store; each mutation takes 1 ms."""

    def __init__(self, clock: Clock, tasks: Sequence[str] = ("t1", "t2")) -> None:
        self.clock = clock
        self.tasks = dict.fromkeys(tasks, "ready")

    def list_tasks(self) -> list[dict[str, str]]:
        return [{"id": k, "state": v} for k, v in self.tasks.items()]

    def claim(self, task: str, worker: str) -> dict[str, str]:
        self.clock.advance(1)
        self.tasks[task] = worker
        return {"id": task, "state": worker}

    def complete(self, task: str, commit: str) -> dict[str, str]:
        self.clock.advance(1)
        self.tasks[task] = "done"
        return {"id": task, "state": "done", "commit": commit}


MUTATIONS = ["claim", "complete"]


def run_app(
    tape: sessiontape.Tape,
    clock: Clock,
    *,
    table: Mapping[str, tuple[int, str, float]] | None = None,
    plan: Sequence[tuple[str, str]] = (("worker-1", "t1"), ("worker-2", "t2")),
    crash_after: int | None = None,
    store: Backlog | None = None,
) -> dict[str, Any]:
    """The application under record (and replay): each worker handles one task.

    ``crash_after`` raises after that many tasks, so the session ends without session_end.
    """
    inner = FakeRunner(clock, table)
    runner = tape.process_runner(inner)
    backlog = tape.store(
        store if store is not None else Backlog(clock),
        mutations=MUTATIONS,
        snapshot=Backlog.list_tasks,
        factory=lambda snapshot: Backlog(clock, [t["id"] for t in snapshot]),
    )
    agent = tape.agent(Agent(clock, runner), result_type=dict)
    done = 0
    for worker, task in plan:
        if crash_after is not None and done == crash_after:
            raise RuntimeError(f"worker {worker} lost its worktree")
        with sessiontape.worker(worker):
            backlog.claim(task, worker)
            runner.run(["git", "-C", "/srv/repo", "checkout", "-b", f"task/{task}"])
            agent.execute({"task": task})
            runner.run(["git", "merge", f"task/{task}"])
            backlog.complete(task, "abc123")
        done += 1
    return {"done": done}


App = Callable[..., dict[str, Any]]


@pytest.fixture
def app() -> App:
    """The application, for tests that replay a tape through it."""
    return run_app


Recorder = Callable[..., Path]


@pytest.fixture
def record_session(tmp_path: Path, clock: Clock) -> Recorder:
    """Record ``run_app`` to ``tmp_path / name`` and return the cassette's path."""

    def record(name: str = "run.jsonl", *, crash_after: int | None = None, **options: Any) -> Path:
        path = tmp_path / name
        record_options = {
            key: options.pop(key)
            for key in ("level", "redact", "max_inline_bytes")
            if key in options
        }
        clock.now = 0
        tape = sessiontape.record(
            path,
            config={"workers": 2},
            app_version="1.0",
            entrypoint="app run",
            roots=NO_ROOTS,
            **record_options,
        )
        try:
            with tape:
                outcome = run_app(tape, clock, crash_after=crash_after, **options)
                clock.advance(1)
                tape.finish(outcome=outcome)
        except RuntimeError:
            if crash_after is None:
                raise
        return path

    return record


@pytest.fixture
def cassette(record_session: Recorder) -> Path:
    """The standard two-worker session."""
    return record_session()


class Result:
    """What a command printed and returned."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        self.err = err

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


Cli = Callable[..., Result]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """Run ``sessiontape ARGS...`` in-process; paths may be given as ``Path``."""

    def run(*args: str | Path) -> Result:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


class Editor:
    """Hand edits of a cassette file, to make the damage the commands must notice."""

    @staticmethod
    def set(path: Path, seq: int, **changes: Any) -> None:
        """Change fields of the entry with ``seq``."""
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            entry = json.loads(line)
            if entry["seq"] == seq:
                entry.update(changes)
                lines[i] = json.dumps(entry)
        path.write_text("\n".join(lines) + "\n")

    @staticmethod
    def drop(path: Path, seq: int) -> None:
        """Delete the line of the entry with ``seq``."""
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(line for line in lines if json.loads(line)["seq"] != seq))


@pytest.fixture
def edit() -> Editor:
    return Editor()


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, so progress lines are written to it."""

    def isatty(self) -> bool:
        return True
