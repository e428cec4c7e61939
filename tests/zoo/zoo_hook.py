"""The zoo project's ``conftest.py``: the ``sessiontape_replay`` hook for every zoo program.

The matrix copies this file, as ``conftest.py``, into each pytester project beside the
program modules (``zoo_*.py``), as a user's project would hold its hook. It finds the
program by the tape's entrypoint and runs it, wired through the tape, in a fresh work
directory (under ``ZOO_REPLAY_DIR``), with ``ZOO_VARIANT`` as the code of today and the
tape's recorded ``config`` as the program's options.

``no_processes()`` is the strongest check this suite has that nothing ran for real: it
counts every way CPython starts a process (``_posixsubprocess.fork_exec``,
``os.posix_spawn``/``posix_spawnp``, ``os.fork``, ``os.system``, ``os.exec*``, and their
audit events). The hook counts while the program replays and writes what it saw to
``ZOO_SPAWN_LOG``; the matrix's in-process replays use the same guard.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.fork", "os.forkpty"}
)
_seen: list[list[str]] = []
_hooked = False
_guard = threading.Lock()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _seen and event in _EVENTS:
        _seen[-1].append(f"audit {event}: {args[:2]!r}")


@contextmanager
def no_processes() -> Iterator[list[str]]:
    """Count the processes started in the block; the list of what was started."""
    global _hooked
    import _posixsubprocess
    import subprocess

    started: list[str] = []
    patched: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str) -> None:
        real = getattr(owner, name, None)
        if real is None:
            return

        def counted(*args: Any, **kwargs: Any) -> Any:
            started.append(f"{name}: {args[:1]!r}")
            return real(*args, **kwargs)

        patched.append((owner, name, real))
        setattr(owner, name, counted)

    with _guard:
        if not _hooked:
            sys.addaudithook(_audit)
            _hooked = True
        _seen.append(started)
        wrap(_posixsubprocess, "fork_exec")
        wrap(subprocess, "_fork_exec")
        for name in ("posix_spawn", "posix_spawnp", "fork", "system", "execv", "execve"):
            wrap(os, name)
    try:
        yield started
    finally:
        with _guard:
            for owner, name, real in reversed(patched):
                setattr(owner, name, real)
            _seen.remove(started)


def programs() -> dict[str, ModuleType]:
    """The zoo's program modules beside this file, by entrypoint."""
    found: dict[str, ModuleType] = {}
    for path in sorted(HERE.glob("zoo_*.py")):
        if path.stem == "zoo_hook":
            continue
        module = importlib.import_module(path.stem)
        found[module.ENTRYPOINT] = module
    return found


#: The programs by entrypoint, imported when pytest configures the project, before any
#: tape opens: GitPython runs ``git version`` when it is imported, which is not the
#: replayed program's doing.
PROGRAMS: dict[str, ModuleType] = {}


def pytest_configure(config: Any) -> None:
    PROGRAMS.update(programs())


def sessiontape_replay(tape: Any, recording: Any) -> bool | None:
    program = PROGRAMS.get(recording.header.entrypoint)
    if program is None:
        return None
    base = os.environ.get("ZOO_REPLAY_DIR") or None
    workdir = Path(tempfile.mkdtemp(prefix="zoo-replay-", dir=base))
    tape.set_roots({"work": str(workdir)})
    options = recording.header.config if isinstance(recording.header.config, dict) else {}
    variant = os.environ.get("ZOO_VARIANT", "default")
    log = os.environ.get("ZOO_SPAWN_LOG")
    with no_processes() as started:
        try:
            program.run(tape, workdir, variant, **options)
        finally:
            if log:
                with open(log, "a", encoding="utf-8") as out:
                    out.write(f"ran {recording.header.entrypoint} {variant}\n")
                    out.writelines(f"spawned {what}\n" for what in started)
    return True
