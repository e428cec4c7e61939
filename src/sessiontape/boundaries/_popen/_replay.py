"""The replay side of ``patch_subprocess()``: a ``Popen`` that is a ``Popen``, spawning nothing.

``Popen._execute_child`` is replaced: instead of forking, it takes the recorded process
from the tape (a :class:`~._fake.Fake`). ``Popen.__init__`` and ``_get_handles`` are
wrapped so that a process's pipes can be wired rather than made (``_lazy``): a process
with nothing left to do once started gets them only if the program touches one, and a
``communicate()`` on pipes nobody touched is answered from the tape. Any other process
gets its pipes at once, fed by a :class:`~._pump.Pump`. Over pipes that exist, CPython's
own code runs ``communicate``, ``wait``, the context manager, ``readline`` and text
decoding over real file descriptors. The process answers ``poll()``, ``wait()`` and
signals from the tape: ``poll()`` finds it running as many times as the program found it
running when recording, and so does ``wait(timeout)`` (each counted apart, so a ``kill()``
from another thread while the program waits replays as recorded); a
``communicate(timeout=...)`` recorded as timing out times out once its recorded output is
read, and the process ends once the last of them has; a signal ends it.

Every wait is bounded (:data:`GUARD_SECONDS` of real time): a ``wait()`` or
``communicate()`` for a process that does not end as the tape says it did reports a
mismatch and raises rather than hang.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Final, NoReturn

from ..._time import REAL
from .._process import UNKNOWN_INPUT, ProcessReplay
from ._asyncio import replaying_asyncio
from ._fake import (
    GUARD_SECONDS,
    Fake,
    guard_deadline,
    items,
    running_loop,
    spawn_error,
    wait_for_end,
    would_block,
)
from ._lazy import LAZY, STREAMS, StreamAttribute, Wiring
from ._pipes import ORIGINALS, TAPE_PID_BASE, TRACKER, Spawn, install_methods, pending_bytes
from ._pump import Pump

__all__ = ["WAIT_SECONDS", "replaying_popen"]

#: Real seconds ``wait()`` waits for a replayed process to deliver its recorded output.
WAIT_SECONDS: Final = GUARD_SECONDS


class _Replaying:
    """The replaced ``Popen`` methods of one replay, and the processes they serve."""

    def __init__(self, server: ProcessReplay) -> None:
        self.server = server
        self.live: dict[int, Fake] = {}
        self._lock = threading.Lock()

    def methods(self) -> dict[str, Any]:
        return {
            "__init__": self._init(),
            "_get_handles": _get_handles,
            "_execute_child": self._execute_child(),
            "communicate": self._communicate(),
            "_internal_poll": _internal_poll,
            "_wait": _wait,
            "_communicate": _communicate,
            "_remaining_time": _remaining_time,
            "_check_timeout": _check_timeout,
            "send_signal": _send_signal,
            **{name: StreamAttribute(name, _open_pipes) for name in STREAMS},
        }

    def _init(self) -> Any:
        original = ORIGINALS["__init__"]

        @functools.wraps(original)
        def __init__(popen: Any, args: Any, bufsize: Any = -1, *more: Any, **kwargs: Any) -> None:
            # The wiring's presence tells _get_handles to leave the pipes out; its bufsize
            # is the one argument of __init__ the file objects need that Popen keeps not.
            wiring = Wiring(bufsize)
            slots = popen.__dict__
            slots[TRACKER] = wiring
            original(popen, args, bufsize, *more, **kwargs)
            fake = slots.get(TRACKER)
            if type(fake) is not Fake or fake.wiring is not wiring:
                return
            if wiring.pipes:
                wiring.complete(popen)
            if not fake.fast:
                fake.open_pipes(popen)  # it needs its pipes and its pump now
            elif wiring.pipes:
                for name in wiring.pipes:
                    slots[name] = LAZY
                fake.popen = weakref.ref(popen)

        return __init__

    def _execute_child(self) -> Any:
        server = self.server
        engine = server.engine
        replaying = self

        def _execute_child(popen: Any, args: Any, executable: Any, *rest: Any) -> None:
            spawn = Spawn.of(args, executable, rest)
            entry = server.serve(spawn.argv, cwd=spawn.cwd, env=spawn.env, input=UNKNOWN_INPUT)
            if entry.spawn_error is not None:
                engine.served(entry)
                raise spawn_error(entry.spawn_error)
            slots = popen.__dict__
            wiring = slots.get(TRACKER)
            fds = spawn.fds
            # Wired, unless pipes were made all the same (a subclass's own _get_handles).
            if type(wiring) is Wiring and fds[1] == fds[2] == fds[4] == -1:
                fake = Fake(server, entry, wiring)
                # No pipe fd reached here (they are wired); only a DEVNULL CPython opened
                # is left to close, as its own _execute_child would.
                if "_devnull" in slots:
                    popen._close_pipe_fds(*fds)
                else:
                    popen._closed_child_pipe_fds = True
            else:
                fake = Fake(server, entry, None)
                fake.attach(_pump_for(popen, fake, fds))
            popen.pid = TAPE_PID_BASE + entry.seq
            popen._child_created = True
            slots[TRACKER] = fake
            with replaying._lock:
                replaying.live[popen.pid] = fake
            # Ended: its output is all there and nothing waits. Served at once, virtual
            # time moving straight to the end of the call; started from an event loop,
            # it ends when the loop learns so (Fake.when_exited).
            if fake.fast and fake.pump is None and not fake.awaits_stdin() and not running_loop():
                fake.serve()
                return
            engine.clock_at(entry)  # our code runs in the call from here
            if fake.pump is not None:
                fake.pump.start()

        return _execute_child

    def _communicate(self) -> Any:
        original = ORIGINALS["communicate"]
        replaying = self

        @functools.wraps(original)
        def communicate(popen: Any, input: Any = None, timeout: float | None = None) -> Any:
            fake = _fake(popen)
            if fake is not None and fake.popen is not None:
                answer = fake.answer(popen, input, timeout)
                if answer is not None:
                    with replaying._lock:
                        replaying.live.pop(popen.pid, None)  # nothing left to do for it
                    return answer
                fake.open_pipes(popen)
            return original(popen, input, timeout)

        return communicate

    def guard(self, pid: int) -> Callable[[str], NoReturn] | None:
        # Asked while asyncio has not learnt the process's exit: even a process whose
        # output has ended may still wait for the signal that ends it on the tape.
        fake = self.live.get(pid)
        return None if fake is None else functools.partial(would_block, fake)

    def on_exit(self, pid: int, callback: Callable[[int], None]) -> bool:
        fake = self.live.get(pid)
        if fake is None:
            return False
        fake.when_exited(callback)
        return True

    def stop(self) -> None:
        """Interception ends: every replayed process still running ends with it, and every
        pipe still wired is made (the descriptors that would make it go with the patch)."""
        with self._lock:
            live, self.live = self.live, {}
        for fake in live.values():
            popen = fake.popen() if fake.popen is not None else None
            if popen is not None:
                fake.open_pipes(popen)
            if fake.pump is not None:
                fake.pump.stop(WAIT_SECONDS)
            fake.serve()


def _pump_for(popen: Any, fake: Fake, fds: tuple[int, int, int, int, int, int]) -> Pump:
    """A pump over the pipes CPython made (a ``Popen`` built without the patched
    ``__init__``): it gets copies of the child's ends, which ``Popen`` closes."""
    p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite = fds
    stdin = os.dup(p2cread) if p2cwrite != -1 else None
    out = os.dup(c2pwrite) if c2pread != -1 else None
    err = os.dup(errwrite) if errread != -1 else None
    merged = errread == -1 and errwrite != -1 and errwrite == c2pwrite
    popen._close_pipe_fds(*fds)
    entry = fake.entry
    return Pump(
        items(fake.server.engine, entry),
        stdin=stdin,
        outputs={"stdout": out, "stderr": out if merged else err},
        decode=fake._decode,
        ends_by_itself=fake.ends_by_itself,
        name=str(entry.seq),
    )


def _fake(popen: Any) -> Fake | None:
    found = popen.__dict__.get(TRACKER)
    return found if type(found) is Fake else None


def _open_pipes(popen: Any) -> Wiring | None:
    fake = _fake(popen)
    if fake is None:
        return None
    fake.open_pipes(popen)
    return fake.wiring


def _get_handles(self: Any, stdin: Any, stdout: Any, stderr: Any) -> Any:
    wiring = self.__dict__.get(TRACKER)
    if type(wiring) is not Wiring:
        return ORIGINALS["_get_handles"](self, stdin, stdout, stderr)
    stdin, stdout, stderr = wiring.wire(stdin, stdout, stderr)
    if stdin is None and stdout is None and stderr is None:
        return -1, -1, -1, -1, -1, -1
    return ORIGINALS["_get_handles"](self, stdin, stdout, stderr)


def _raise_pending(fake: Fake) -> None:
    error, fake.error = fake.error, None
    pump = fake.pump
    if error is None and pump is not None:
        error, pump.error = pump.error, None
    if error is not None:
        raise error


def _settle(popen: Any, fake: Fake) -> int | None:
    """The process has ended for the program: its return code is collected."""
    if popen.returncode is None:
        popen.returncode = fake.code()
        fake.exited()
    return popen.returncode  # type: ignore[no-any-return]


def _internal_poll(self: Any, *args: Any, **kwargs: Any) -> Any:
    fake = _fake(self)
    if fake is None:
        return ORIGINALS["_internal_poll"](self, *args, **kwargs)
    if self.returncode is not None:
        return self.returncode
    deadstate = args[0] if args else kwargs.get("_deadstate")
    if deadstate is None and fake.poll_finds_running():
        return None
    if fake.ends_by_itself or fake.finished():
        return _settle(self, fake)
    return None


def _wait(self: Any, timeout: float | None) -> Any:
    fake = _fake(self)
    if fake is None:
        return ORIGINALS["_wait"](self, timeout)
    if self.returncode is not None:
        return self.returncode
    if fake.awaits_stdin():
        fake.open_pipes(self)  # the process waits for that stdin, as the pump does
    if timeout is not None and not fake.guarded:
        # A wait(timeout) CPython's code or the program made, as when recording.
        if fake.timing_out:
            # communicate(timeout=...) timed out on the tape while waiting for the exit;
            # Python reports the time that was left then, which was about the whole timeout.
            fake.wait_times_out()
            raise subprocess.TimeoutExpired(self.args, fake.orig_timeout or 0.0)
        if fake.wait_times_out():
            raise subprocess.TimeoutExpired(self.args, timeout)
    pump = fake.pump
    if pump is None:
        _raise_pending(fake)
        return _settle(self, fake)
    unfinished = fake.entry.unfinished and not pump.finished.is_set()
    if timeout is not None and not fake.guarded and unfinished:
        raise subprocess.TimeoutExpired(self.args, timeout)  # it never ended on the tape
    # The tape says this wait saw the process end (a signal from another thread, say,
    # or the end of its output): wait for that in real time, within the guard.
    wait_for_end(fake, "wait()" if timeout is None else f"wait(timeout={timeout:g})")
    _raise_pending(fake)
    return _settle(self, fake)


def _communicate(self: Any, input: Any, endtime: Any, orig_timeout: Any) -> Any:
    fake = _fake(self)
    if fake is None:
        return ORIGINALS["_communicate"](self, input, endtime, orig_timeout)
    fake.timing_out = endtime is not None and fake.timeouts_left > 0
    fake.orig_timeout = orig_timeout
    fake.guarded = endtime is None
    fake.deadline = guard_deadline()
    try:
        result = ORIGINALS["_communicate"](self, input, endtime, orig_timeout)
    except subprocess.TimeoutExpired as exc:
        if fake.timing_out:
            _read_as_recorded(exc, fake)
            _timed_out(fake)
        raise
    finally:
        fake.timing_out = fake.guarded = False
        fake.deadline = None
    _raise_pending(fake)
    return result


def _read_as_recorded(exc: subprocess.TimeoutExpired, fake: Fake) -> None:
    """The output a timed-out ``communicate()`` carries is what it had read when recorded.

    Replay times a ``communicate(timeout=...)`` out once the output delivered so far is
    read; when recording, some of it may have come only after the timeout (a process
    slow to print). The bytes read beyond the recorded count stay read (the next
    ``communicate()`` returns them, as when recording); the exception carries only the
    recorded count, ``None`` for none, as Python gives it.
    """
    entry = fake.entry
    reads = entry.read_at_timeouts
    index = entry.timeouts - fake.timeouts_left
    if reads is None or not 0 <= index < len(reads):
        return  # a tape from before the counts were recorded: as read here
    stdout, stderr = reads[index]
    exc.output = (exc.output or b"")[:stdout] or None
    exc.stderr = (exc.stderr or b"")[:stderr] or None


def _timed_out(fake: Fake) -> None:
    """A ``communicate(timeout=...)`` timed out as on the tape; after the last one, a
    process that ended by itself ends once its output is out (and is read)."""
    fake.timeouts_left -= 1
    entry = fake.entry
    if not (fake.timeouts_left > 0 or entry.unfinished or fake.signal_ends_output):
        fake.ends_by_itself = True
        if fake.pump is not None:
            fake.pump.may_end()


def _drained(self: Any, fake: Fake) -> bool:
    pump = fake.pump
    if pump is not None and not pump.delivered.is_set():
        return False
    for pipe in (self.stdout, self.stderr):
        if pipe is not None:
            with contextlib.suppress(ValueError, OSError):
                if pending_bytes(pipe.fileno()):
                    return False
    return True


def _remaining_time(self: Any, endtime: Any) -> Any:
    fake = _fake(self)
    if fake is None:
        return ORIGINALS["_remaining_time"](self, endtime)
    if fake.timing_out:
        if not (self.stdout or self.stderr or self.stdin):
            return 0.0  # no pipes: communicate() goes straight to wait(), which times out
        return -1.0 if _drained(self, fake) else 0.01
    deadline = fake.deadline
    if deadline is not None:
        # Inside communicate(): the tape, not the clock, decides whether it times out;
        # its select waits in real time, up to the guard (_check_timeout raises then).
        return max(deadline - REAL.monotonic(), 0.001)
    return None if endtime is None else WAIT_SECONDS


def _check_timeout(self: Any, endtime: Any, orig_timeout: Any, *args: Any, **kwargs: Any) -> Any:
    fake = _fake(self)
    if fake is None:
        return ORIGINALS["_check_timeout"](self, endtime, orig_timeout, *args, **kwargs)
    deadline = fake.deadline
    late = deadline is not None and REAL.monotonic() >= deadline
    if late and not fake.timing_out:
        would_block(fake, "communicate()")
    skip = kwargs.get("skip_check_and_raise", args[2] if len(args) > 2 else False)
    # A communicate() that timed out on the tape times out once its output is read (or
    # at the guard, if that output never comes).
    if endtime is None or not (skip or late or (fake.timing_out and _drained(self, fake))):
        return None
    stdout_seq, stderr_seq = args[0], args[1]
    return ORIGINALS["_check_timeout"](
        self, endtime, orig_timeout, stdout_seq, stderr_seq, skip_check_and_raise=True
    )


def _send_signal(self: Any, sig: int) -> None:
    fake = _fake(self)
    if fake is None:
        ORIGINALS["send_signal"](self, sig)
        return
    self.poll()
    if self.returncode is not None or fake.pump is None:
        return
    fake.pump.signal(int(sig))


@contextlib.contextmanager
def replaying_popen(server: ProcessReplay) -> Iterator[None]:
    """Serve every process ``subprocess.Popen`` starts in the block from the tape."""
    replaying = _Replaying(server)
    with (
        install_methods(replaying.methods()),
        replaying_asyncio(replaying.on_exit, replaying.guard),
    ):
        try:
            yield
        finally:
            replaying.stop()
