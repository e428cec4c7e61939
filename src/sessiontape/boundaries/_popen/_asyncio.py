"""asyncio's subprocesses under ``patch_subprocess()``.

asyncio's unix transport starts its process with ``subprocess.Popen`` (intercepted like
any other), then learns of its exit from a child watcher (``waitpid`` in a thread, or a
pidfd) rather than from ``Popen``. Recording, the transport's exit path tells the record
side the status, and the watcher's thread is kept out of the derived worker names. On
replay there is no process to watch: the watcher is answered by the replayed process
itself when it ends. Both hook the watcher classes asyncio has, whichever the Python
version (3.10 to 3.13) installs.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ..._context import internal_threads

__all__ = ["recording_asyncio", "replaying_asyncio"]

#: Tells the record side a process's exit status: ``(popen, returncode)``.
Exited = Callable[[Any, "int | None"], None]
#: Finds the replayed process of a pid and registers an exit callback; False if none.
OnExit = Callable[[int, Callable[[int], None]], bool]


def _watcher_classes() -> list[type]:
    if sys.platform == "win32":  # pragma: no cover
        return []
    from asyncio import unix_events

    return [
        cls
        for name, cls in vars(unix_events).items()
        if isinstance(cls, type)
        and name.endswith("ChildWatcher")
        and not name.startswith("Abstract")
        and "add_child_handler" in cls.__dict__
    ]


@contextlib.contextmanager
def _patched(patches: list[tuple[type, str, Any]]) -> Iterator[None]:
    saved = [(cls, name, cls.__dict__[name]) for cls, name, _ in patches]
    for cls, name, value in patches:
        setattr(cls, name, value)
    try:
        yield
    finally:
        for cls, name, value in saved:
            setattr(cls, name, value)


def _quiet_add_child_handler(original: Any) -> Any:
    def add_child_handler(self: Any, pid: int, callback: Any, *args: Any) -> Any:
        with internal_threads():  # the watcher's waitpid thread exists only when recording
            return original(self, pid, callback, *args)

    return add_child_handler


@contextlib.contextmanager
def recording_asyncio(exited: Exited) -> Iterator[None]:
    """For the block, asyncio's transports report their processes' exit to ``exited``."""
    from asyncio import base_subprocess

    transport = base_subprocess.BaseSubprocessTransport
    original = transport.__dict__["_process_exited"]

    def _process_exited(self: Any, returncode: int) -> None:
        original(self, returncode)
        exited(self._proc, returncode)

    patches: list[tuple[type, str, Any]] = [(transport, "_process_exited", _process_exited)]
    for cls in _watcher_classes():
        patches.append(
            (cls, "add_child_handler", _quiet_add_child_handler(cls.__dict__["add_child_handler"]))
        )
    with _patched(patches):
        yield


def _replay_add_child_handler(original: Any, on_exit: OnExit) -> Any:
    def add_child_handler(self: Any, pid: int, callback: Any, *args: Any) -> Any:
        if on_exit(pid, lambda code: callback(pid, code, *args)):
            return None
        return original(self, pid, callback, *args)

    return add_child_handler


@contextlib.contextmanager
def replaying_asyncio(on_exit: OnExit) -> Iterator[None]:
    """For the block, a child watcher asked to watch a replayed pid is answered by it."""
    patches = [
        (
            cls,
            "add_child_handler",
            _replay_add_child_handler(cls.__dict__["add_child_handler"], on_exit),
        )
        for cls in _watcher_classes()
    ]
    with _patched(patches):
        yield
