"""asyncio's subprocesses under ``patch_subprocess()``.

asyncio's unix transport starts its process with ``subprocess.Popen`` (intercepted like
any other), then learns of its exit from a child watcher (``waitpid`` in a thread, or a
pidfd) rather than from ``Popen``. Recording, the transport's exit path tells the record
side the status, and the watcher's thread is kept out of the derived worker names. On
replay there is no process to watch: the watcher is answered by the replayed process
itself when it ends. Both hook the watcher classes asyncio has, whichever the Python
version (3.10 to 3.13) installs.

From CPython 3.13 the transport signals its process with ``os.kill`` rather than through
``Popen.send_signal``: recording then notes the signal itself, and on replay the signal
goes to the replayed process (which has no pid to kill).

On replay, ``Process.wait()`` and ``Process.communicate()`` of a replayed process are
bounded as ``Popen``'s are: if the process has not ended as the tape says it did
``GUARD_SECONDS`` of real time later, the replay side reports it and the call raises
(rather than wait for an exit that will not come).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from ..._context import internal_threads
from . import _fake
from ._pipes import TRACKER

__all__ = ["recording_asyncio", "replaying_asyncio"]

#: Tells the record side a process's exit status: ``(popen, returncode)``.
Exited = Callable[[Any, "int | None"], None]
#: Tells the record side the program signalled a running process: ``(popen, signal)``.
Signaled = Callable[[Any, int], None]
#: Finds the replayed process of a pid and registers an exit callback; False if none.
OnExit = Callable[[int, Callable[[int], None]], bool]
#: For a pid, what reports and raises that a wait on its replayed process would block
#: (given the call's name); ``None`` for a pid replay does not serve.
Guard = Callable[[int], "Callable[[str], NoReturn] | None"]


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


def _signals_itself(transport: type) -> bool:
    """Whether the transport's ``send_signal`` calls ``os.kill`` itself (3.13 on POSIX)
    instead of the ``Popen``'s ``send_signal``."""
    method = transport.__dict__.get("send_signal")
    return method is not None and "kill" in method.__code__.co_names


def _quiet_add_child_handler(original: Any) -> Any:
    def add_child_handler(self: Any, pid: int, callback: Any, *args: Any) -> Any:
        with internal_threads():  # the watcher's waitpid thread exists only when recording
            return original(self, pid, callback, *args)

    return add_child_handler


@contextlib.contextmanager
def recording_asyncio(exited: Exited, signaled: Signaled | None = None) -> Iterator[None]:
    """For the block, asyncio's transports report their processes' exit to ``exited``
    (and, where they signal a process themselves, the signals to ``signaled``)."""
    from asyncio import base_subprocess

    transport = base_subprocess.BaseSubprocessTransport
    original = transport.__dict__["_process_exited"]

    def _process_exited(self: Any, returncode: int) -> None:
        original(self, returncode)
        exited(self._proc, returncode)

    patches: list[tuple[type, str, Any]] = [(transport, "_process_exited", _process_exited)]
    if signaled is not None and _signals_itself(transport):
        send = transport.__dict__["send_signal"]

        def send_signal(self: Any, sig: int) -> None:
            send(self, sig)
            proc = self._proc
            if proc is not None and proc.returncode is None:  # it was running: sent
                signaled(proc, int(sig))

        patches.append((transport, "send_signal", send_signal))
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


def _guarded(original: Any, name: str, guard: Guard) -> Any:
    """``Process.wait``/``communicate`` bounded by the guard for a replayed process: the
    call runs as a task that a real-time timer cancels if it has not ended by then."""
    import asyncio

    @functools.wraps(original)
    async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        blocked = guard(self.pid) if self.returncode is None else None
        if blocked is None:
            return await original(self, *args, **kwargs)
        loop = asyncio.get_running_loop()
        inner = asyncio.ensure_future(original(self, *args, **kwargs))
        expired = False

        def expire() -> None:
            nonlocal expired
            if not inner.done():
                expired = True
                inner.cancel()

        timer = threading.Timer(_fake.GUARD_SECONDS, loop.call_soon_threadsafe, (expire,))
        timer.daemon = True
        timer.name = "sessiontape-guard"
        with internal_threads():
            timer.start()
        try:
            return await inner
        except asyncio.CancelledError:
            if expired:  # the guard's, not the caller's, cancellation
                blocked(f"asyncio's Process.{name}()")
            raise
        finally:
            timer.cancel()
            # Gone when the call returns, as if it had never been (a program may count
            # its threads); a cancelled timer ends at once.
            timer.join()

    return method


def _replayed(proc: Any) -> bool:
    """Whether ``proc`` (a transport's ``Popen``) is a replayed process."""
    return proc is not None and type(proc.__dict__.get(TRACKER)) is _fake.Fake


def _waits_for_pipes(transport: type) -> bool:
    """Whether the transport tells those awaiting its process's end only once every pipe
    was connected and lost (gh-125502: 3.11, and 3.12 and 3.13 before its fix). 3.10
    tells them when the process exits; the fixed versions also when its pipes never
    connected. Found by what the methods' code names, whatever the version says."""
    exited = transport.__dict__["_process_exited"].__code__.co_names
    finish = transport.__dict__["_try_finish"].__code__.co_names
    return "_exit_waiters" not in exited and "_pipes_connected" not in finish


def _ends_unconnected(original: Any) -> Any:
    """The transport's ``__init__``: a replayed process's transport wakes those awaiting
    its end when the process ends, even if its pipes were never connected.

    asyncio connects a new process's pipes in a task of its own; a caller cancelled
    meanwhile (``asyncio.run`` cancelling what is left once another task raised) closes
    the transport and awaits its end, and where :func:`_waits_for_pipes`, waits for ever
    if that connecting task was cancelled too: the end is told only once every pipe has
    been connected and lost. Replay makes that moment likely: a replayed process starts at
    once, and a task that diverges from the tape (or a fork that stops) raises where it
    never did. So, as CPython's fix does, a replayed process's transport whose pipes are
    not connected wakes those waiting for its end when it ends. Only then: a program
    cannot await a transport's end before its pipes are connected, so nothing else
    changes. Set on the transport itself, it holds after interception ends, when
    ``asyncio.run`` cancels what is left.
    """

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if not _replayed(self._proc):
            return
        try_finish = self._try_finish

        def _try_finish() -> None:
            if self._returncode is not None and self._pending_calls is not None:
                for waiter in self._exit_waiters or ():
                    if not waiter.done():
                        waiter.set_result(self._returncode)
            try_finish()

        self._try_finish = _try_finish

    return __init__


@contextlib.contextmanager
def replaying_asyncio(on_exit: OnExit, guard: Guard) -> Iterator[None]:
    """For the block, a child watcher asked to watch a replayed pid is answered by it,
    and waiting for a replayed process in asyncio is bounded (see the module)."""
    from asyncio import base_subprocess
    from asyncio import subprocess as aio

    patches: list[tuple[type, str, Any]] = [
        (
            cls,
            "add_child_handler",
            _replay_add_child_handler(cls.__dict__["add_child_handler"], on_exit),
        )
        for cls in _watcher_classes()
    ]
    for name in ("wait", "communicate"):
        patches.append((aio.Process, name, _guarded(aio.Process.__dict__[name], name, guard)))
    transport = base_subprocess.BaseSubprocessTransport
    if _waits_for_pipes(transport):
        patches.append((transport, "__init__", _ends_unconnected(transport.__dict__["__init__"])))
    if _signals_itself(transport):
        send = transport.__dict__["send_signal"]

        def send_signal(self: Any, sig: int) -> None:
            if _replayed(self._proc):
                self._proc.send_signal(sig)  # the replayed process ends as the signal says
            else:
                send(self, sig)

        patches.append((transport, "send_signal", send_signal))
    with _patched(patches):
        yield
