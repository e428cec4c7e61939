"""The matrix's machinery: record a zoo program, replay it elsewhere, and check what was written.

Every recording runs in one directory (its work directory and cwd) and every replay in
another, with ``PATH`` emptied and :func:`zoo_hook.no_processes` counting: a replay that
starts a process, or that could only work by finding a program, fails. Recordings run with
``ZOO_TOKEN`` set (:data:`matrix.TOKEN`); :meth:`Cell.check_written` then validates every
tape the cell wrote and looks for the token in every file sessiontape wrote.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import sessiontape
from sessiontape.cli import main as cli

from .matrix import HERE, TOKEN, ZooProgram
from .zoo_hook import no_processes

#: What stands for "nothing on the PATH" in a replay: no program can be found.
EMPTY_PATH = ""
#: GitPython runs ``git version`` when it is imported; with no git on the PATH that import
#: fails unless told to stay quiet (a replay needs no git).
QUIET_GIT = {"GIT_PYTHON_REFRESH": "quiet"}


def program_module(program: ZooProgram) -> ModuleType:
    return importlib.import_module(f"{__package__}.{program.module}")


def cli_json(*argv: str) -> tuple[int, Any]:
    """Run ``sessiontape ARGV --json`` in this process; its exit code and its JSON."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli([*argv, "--json"])
    text = out.getvalue()
    return code, json.loads(text) if text.strip() else None


def tapes_under(*roots: Path) -> list[Path]:
    """Every cassette under ``roots`` (not the sidecar payloads, not the fake world)."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if ".blobs" in path.parts or "world" in path.parts:
                continue
            if path.is_file() and sessiontape.is_cassette(path):
                found.append(path)
    return found


def written_by_sessiontape(*roots: Path) -> list[Path]:
    """The files sessiontape (and the matrix's pytest runs) wrote: tapes, their sidecars and
    moved-aside copies, receipts, pages, exports. Not the programs' own work (a git
    repository's config holds the remote URL with the token: that is the program's)."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or "world" in path.parts:
                continue
            if ".jsonl" in path.name or ".blobs" in str(path) or path.suffix in {".json", ".html"}:
                found.append(path)
    return found


@dataclass
class Replayed:
    """A replay run in this process: the tape after its block, and what the program returned."""

    tape: sessiontape.ReplayTape
    outcome: Any
    spawned: list[str]

    @property
    def report(self) -> sessiontape.ReplayReport:
        assert self.tape.report is not None
        return self.tape.report


class Shelf:
    """Recordings of each program, made once per test process (from outside: a fresh
    interpreter with ``SESSIONTAPE_RECORD``) and copied into each cell that needs one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._made: dict[tuple[str, str], Path] = {}

    def tape(self, program: ZooProgram, variant: str = "default") -> Path:
        key = (program.name, variant)
        if key not in self._made:
            where = Path(tempfile.mkdtemp(prefix=f"{program.name}-{variant}-", dir=self.root))
            tape = where / f"{program.name}.jsonl"
            record_outside(program, tape, where / "then", how="env", variant=variant)
            self._made[key] = tape
        return self._made[key]


def world_env(program: ZooProgram, workdir: Path) -> dict[str, str]:
    """The fake programs ``program`` runs (a ``gh``, a ``claude``), made in ``workdir``."""
    if not program.world:
        return {}
    made: dict[str, str] = program_module(program).install_world(workdir, TOKEN)
    return made


def record_outside(
    program: ZooProgram,
    tape: Path,
    workdir: Path,
    *,
    how: str,
    variant: str = "default",
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the program's ``main`` in a fresh interpreter, recording switched on from
    outside (``how``: ``"env"`` for ``SESSIONTAPE_RECORD``, ``"flag"`` for
    ``--record-session``), with ``workdir`` as its work directory, from ``cwd`` (default:
    the directory above ``workdir``, as a user runs ``tool --workdir run-1``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **program.environment, **world_env(program, workdir)}
    env.pop(sessiontape.ENV_VAR, None)
    argv = [sys.executable, str(program.path), "--workdir", str(workdir), "--variant", variant]
    argv += program.argv
    if how == "env":
        env[sessiontape.ENV_VAR] = str(tape)
    else:
        argv += ["--record-session", str(tape)]
    done = subprocess.run(
        argv,
        cwd=cwd or workdir.parent,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, f"{program.name} failed while recording:\n{done.stderr}"
    return done


class Cell:
    """One (program, capability) cell: its directories, its recordings and its replays."""

    def __init__(
        self,
        program: ZooProgram,
        root: Path,
        monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest,
        shelf: Shelf,
    ) -> None:
        self.program = program
        self.root = root
        self.monkeypatch = monkeypatch
        self.request = request
        self.shelf = shelf
        self.module = program_module(program)
        self._pytester: pytest.Pytester | None = None
        for key, value in program.environment.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv(sessiontape.ENV_VAR, raising=False)

    # -- directories and tapes ------------------------------------------------------------

    def fresh(self, name: str) -> Path:
        """A new directory of the cell (``name`` made unique)."""
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.root))

    def recorded(self, variant: str = "default", *, into: Path | None = None) -> Path:
        """A copy of the shelf's recording of ``variant``, in a directory of its own."""
        source = self.shelf.tape(self.program, variant)
        target = (into or self.fresh("tape")) / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        return target

    # -- in this process ------------------------------------------------------------------

    @contextlib.contextmanager
    def live_world(self, workdir: Path) -> Iterator[None]:
        """The program's fake world (made in ``workdir``) on the PATH, and a cwd of its own."""
        with self.monkeypatch.context() as patch:
            for key, value in world_env(self.program, workdir).items():
                patch.setenv(key, value)
            patch.chdir(self.fresh("cwd"))
            yield

    def record_api(self, tape: Path, *, variant: str = "default", **kwargs: Any) -> Any:
        """Record in this process through ``sessiontape.record()``, in a fresh directory."""
        workdir = self.fresh("then")
        with self.live_world(workdir):
            roots = {"work": str(workdir)}
            config = dict(self.program.options) or None
            entry = self.module.ENTRYPOINT
            with sessiontape.record(
                tape, entrypoint=entry, roots=roots, config=config, **kwargs
            ) as recording:
                return self.module.run(recording, workdir, variant, **self.program.options)

    def replay_api(
        self, tape: Path, *, variant: str = "default", world: bool = False, **kwargs: Any
    ) -> Replayed:
        """Replay ``tape`` in a fresh work directory, from a cwd of its own, with today's
        code ``variant`` (``kwargs`` go to ``sessiontape.replay``).

        Without ``world``: ``PATH`` emptied and no process may start. With ``world``: the
        program's fake world on the PATH, for the calls that run for real (live).
        """
        workdir = self.fresh("now")
        options = dict(sessiontape.load(tape).header.config or {})
        with contextlib.ExitStack() as stack:
            if world:
                stack.enter_context(self.live_world(workdir))
                started: list[str] = []
            else:
                patch = stack.enter_context(self.monkeypatch.context())
                patch.setenv("PATH", EMPTY_PATH)
                patch.chdir(self.fresh("cwd"))
                started = stack.enter_context(no_processes())
            replaying = sessiontape.replay(tape, roots={"work": str(workdir)}, **kwargs)
            outcome = None  # stays None when the tape swallows what ended the program
            with replaying:
                outcome = self.module.run(replaying, workdir, variant, **options)
        assert started == [], f"a process ran during the replay of {tape}: {started}"
        return Replayed(replaying, outcome, started)

    # -- through pytest, as a user's project --------------------------------------------------

    @property
    def project(self) -> pytest.Pytester:
        """A pytester project holding the zoo's programs and their hook as ``conftest.py``."""
        if self._pytester is None:
            pytester: pytest.Pytester = self.request.getfixturevalue("pytester")
            for path in sorted(HERE.glob("zoo_*.py")):
                if path.stem != "zoo_hook":
                    shutil.copy(path, pytester.path / path.name)
            shutil.copy(HERE / "zoo_hook.py", pytester.path / "conftest.py")
            self._pytester = pytester
        return self._pytester

    @contextlib.contextmanager
    def replay_env(self, variant: str, *, world: bool) -> Iterator[Path]:
        """The environment of a replay run in another process (pytest, the command line):
        today's ``variant``, a fresh folder for its work directories, and the hook's log;
        ``PATH`` emptied unless ``world``. Yields the log's path."""
        log = self.fresh("log") / "spawns.log"
        replays = self.fresh("replays")
        with self.monkeypatch.context() as patch:
            patch.setenv("ZOO_VARIANT", variant)
            patch.setenv("ZOO_SPAWN_LOG", str(log))
            patch.setenv("ZOO_REPLAY_DIR", str(replays))
            for key, value in QUIET_GIT.items():
                patch.setenv(key, value)
            if world:
                for key, value in world_env(self.program, replays).items():
                    patch.setenv(key, value)
            else:
                patch.setenv("PATH", EMPTY_PATH)
            yield log

    @staticmethod
    def hook_log(log: Path, *, world: bool) -> list[str]:
        """The lines the hook logged; without ``world``, none may say a process started."""
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        if not world:
            spawned = [line for line in lines if line.startswith("spawned")]
            assert spawned == [], f"a process ran during a replay: {spawned}"
        return lines

    def pytest(
        self, *args: str, variant: str = "default", world: bool = False
    ) -> tuple[pytest.RunResult, list[str]]:
        """``pytest ARGS`` in a fresh interpreter in the project; its result and the lines
        of the hook's log (``ran ...`` per replay, ``spawned ...`` per process started).

        Without ``world``: ``PATH`` is empty and the log must show no process started.
        """
        project = self.project
        with self.replay_env(variant, world=world) as log:
            result = project.runpytest_subprocess(
                "-p", "no:randomly", "-p", "no:cacheprovider", *args, timeout=600
            )
        return result, self.hook_log(log, world=world)

    def command(
        self, *args: str, variant: str = "default"
    ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
        """``sessiontape ARGS`` in a fresh interpreter, from the project (where the command
        finds its ``conftest.py``), nothing on the PATH; its result and the hook's log."""
        project = self.project
        with self.replay_env(variant, world=False) as log:
            done = subprocess.run(
                [sys.executable, "-m", "sessiontape", *args],
                cwd=project.path,
                capture_output=True,
                text=True,
                check=False,
                timeout=900,
            )
        return done, self.hook_log(log, world=False)

    # -- what the cell wrote ---------------------------------------------------------------

    def check_written(self) -> None:
        """Every tape the cell wrote passes ``sessiontape validate``; no file sessiontape
        wrote holds the token (nor the stream program's API key)."""
        roots = [self.root] + ([self._pytester.path] if self._pytester else [])
        tapes = tapes_under(*roots)
        if tapes:
            code, verdicts = cli_json("validate", *map(str, tapes))
            bad = [v for v in verdicts if not v.get("valid")]
            assert not bad, f"tapes that validate rejects: {bad}"
            assert code == 0, f"sessiontape validate exited with {code}"
        secrets = [TOKEN.encode(), b"Zoo0Key1Zoo0Key1"]
        leaked = [
            str(path)
            for path in written_by_sessiontape(*roots)
            if any(secret in path.read_bytes() for secret in secrets)
        ]
        assert leaked == [], f"the token reached disk in {leaked}"
