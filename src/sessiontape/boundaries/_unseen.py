"""Processes that start outside the interception: seen through the interpreter's audit events.

``patch_subprocess()`` and the runners see every process started through
``subprocess.Popen``; a program (or a library such as ``sh``) may also start one with
``os.fork`` and ``os.exec*``, ``os.system``, ``os.posix_spawn`` or a pty. Such a process
is missing from the tape, and on replay it runs for real. The interpreter raises an
audit event for each of those calls (``os.fork``, ``os.forkpty``, ``os.exec``,
``os.system``, ``os.posix_spawn``, and ``subprocess.Popen`` from the real spawn), so one
audit hook sees them all, from every thread, and says where each was started:

- recording: one :class:`~sessiontape.RecordingWarning` per place (the tape missed it);
- replay: a warning in the report (lenient), or a mismatch (strict: raised from the hook,
  so the process is not started at all).

A process the interception started is not reported: its spawn runs under
:func:`intercepted` (the record side of ``patch_subprocess()``) or inside a recorded
runner call (``IN_PROCESS_CALL``).

Audit hooks cannot be removed. The hook is added once, when the first tape opens, and
does nothing but test a module-level list while no tape is open; a child made by
``fork()`` starts with that list empty.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any, Final, Protocol

from ._process import IN_PROCESS_CALL
from ._protocols import RecordSide

__all__ = [
    "SPAWN_EVENTS",
    "Watcher",
    "intercepted",
    "recording_notice",
    "started_at",
    "watching_processes",
]

#: The audit events of a process being started.
SPAWN_EVENTS: Final = frozenset(
    {"os.system", "os.posix_spawn", "os.fork", "os.forkpty", "os.exec", "subprocess.Popen"}
)


class Watcher(Protocol):
    """What is told of a process started outside the interception."""

    def unseen_process(self, event: str, command: str, where: str) -> None:
        """``event`` started ``command`` at ``where`` (``file:line``) unseen."""


#: The open tapes' watchers, newest last. Read without the lock by the hook: a list
#: replaced whole, never changed in place.
_watchers: tuple[Watcher, ...] = ()
_lock = threading.Lock()
_installed = False
_local = threading.local()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Called for every audit event of the interpreter (imports, opens, ...): the first
    # test is all it costs while no tape is open.
    if not _watchers or event not in SPAWN_EVENTS:
        return
    if getattr(_local, "depth", 0) or IN_PROCESS_CALL.get():
        return  # the interception's own spawn
    watchers = _watchers
    where = started_at(sys._getframe(1))
    command = _command(event, args)
    for watcher in watchers:
        watcher.unseen_process(event, command, where)


def _command(event: str, args: tuple[Any, ...]) -> str:
    """What was started, in a few words."""
    try:
        if event == "os.system":
            return os.fsdecode(args[0])
        if event in ("os.posix_spawn", "os.exec", "subprocess.Popen"):
            argv = args[1]
            if isinstance(argv, (str, bytes)):
                return os.fsdecode(argv)
            return " ".join(os.fsdecode(a) for a in argv)
    except Exception:  # a description must never break the call
        return repr(args)[:200]
    return "a copy of this process" if event in ("os.fork", "os.forkpty") else repr(args)


def _skipped_dirs() -> tuple[str, ...]:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    stdlib = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
    return (here, stdlib)


def started_at(frame: FrameType | None) -> str:
    """``file:line`` of the caller that started the process: the innermost frame outside
    sessiontape and the standard library; when that is inside an installed library (the
    ``sh`` package), the program's own frame that called it follows (``via``)."""
    skipped = _skipped_dirs()
    first: str | None = None
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        library = "site-packages" in path or "dist-packages" in path
        if not path.startswith(skipped) or library:
            here = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            if not library:
                return here if first is None else f"{here} (via {first})"
            if first is None:
                first = here
        frame = frame.f_back
    return first or "<unknown>"


def _after_fork_in_child() -> None:
    # The child's copy of the tapes is not the parent's: it reports nothing.
    global _watchers
    _watchers = ()


def _install() -> None:
    global _installed
    if _installed:
        return
    sys.addaudithook(_audit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
    _installed = True


@contextlib.contextmanager
def watching_processes(watcher: Watcher) -> Iterator[None]:
    """Tell ``watcher`` of every process started outside the interception in the block."""
    global _watchers
    with _lock:
        _install()
        _watchers = (*_watchers, watcher)
    try:
        yield
    finally:
        with _lock:
            kept = list(_watchers)
            if watcher in kept:
                kept.remove(watcher)
            _watchers = tuple(kept)


class _RecordingNotice:
    """The record side's watcher: one RecordingWarning per place a process started unseen."""

    def __init__(self, rec: RecordSide) -> None:
        self._rec = rec

    def unseen_process(self, event: str, command: str, where: str) -> None:
        if not self._rec.active:
            return
        # Recording never changes what the program sees: a warning turned into an error
        # (-W error) must not abort the program's call from inside the audit hook.
        with contextlib.suppress(Exception):
            self._rec.warn_once(
                f"unseen process: {event} at {where}",
                f"a process was started outside the interception at {where} ({event}: "
                f"{command}); the tape does not hold it, so a replay will start it for real. "
                "Start it through subprocess under tape.patch_subprocess() (or a runner from "
                "tape.process_runner()) to record it.",
            )


def recording_notice(rec: RecordSide) -> Watcher:
    """The watcher of a recording: warns once per place (see the module's docstring)."""
    return _RecordingNotice(rec)


@contextlib.contextmanager
def intercepted() -> Iterator[None]:
    """The interception itself starts a process in the block: not reported."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1
