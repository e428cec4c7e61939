"""The replay side of ``patch_subprocess()``: a ``Popen`` that is a ``Popen``, spawning nothing.

``Popen._execute_child`` is replaced: instead of forking, it takes the recorded process
from the tape and hands the child's ends of the real pipes ``Popen`` made to a
:class:`~._pump.Pump`. CPython's own code then runs ``communicate``, ``wait``, the
context manager, ``readline`` and text decoding over real file descriptors. The process
answers ``poll()``, ``wait()`` and signals from the tape: ``poll()`` finds it running as
many times as the program found it running when recording, a ``communicate(timeout=...)``
recorded as timing out times out once its recorded output is read, and a signal ends it.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final

from ..._errors import UsageError
from ...cassette import ErrorInfo, Payload, ProcessCall
from ...replayer import rebuild_error
from ...report import MismatchKind, diff_values_counted
from .._process import UNKNOWN_INPUT, ProcessReplay
from ._asyncio import replaying_asyncio
from ._pipes import ORIGINALS, TAPE_PID_BASE, TRACKER, Spawn, install_methods, pending_bytes
from ._pump import STALL_SECONDS, Pump

__all__ = ["WAIT_SECONDS", "replaying_popen"]

#: Real seconds ``wait()`` waits for a replayed process to deliver its recorded output.
WAIT_SECONDS: Final = 10.0
_ERRNO_MESSAGE: Final = re.compile(r"^\[Errno (\d+)\] (.*?)(?:: '(.*)')?$", re.S)


def spawn_error(info: ErrorInfo) -> BaseException:
    """The recorded spawn error, with its errno and filename (``FileNotFoundError``...)."""
    cls = getattr(builtins, info.type, None)
    match = _ERRNO_MESSAGE.match(info.message)
    if isinstance(cls, type) and issubclass(cls, OSError) and match is not None:
        errno_, text, filename = match.groups()
        if filename is not None:
            return cls(int(errno_), text, filename)
        return cls(int(errno_), text)
    return rebuild_error(info)


class _Fake:
    """The replayed process behind one ``Popen``: its tape entry and its pump."""

    def __init__(self, server: ProcessReplay, entry: ProcessCall, pump: Pump) -> None:
        self.server = server
        self.entry = entry
        self.pump = pump
        self.polls_left = entry.polls
        self.timeouts_left = entry.timeouts
        self.timing_out = False
        self.orig_timeout: float | None = None
        self.ends_by_itself = not (entry.unfinished or entry.timeouts or entry.signals)
        self._served = False
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[int], None]] = []
        pump.on_stdin = self._stdin_problem
        pump.on_finish = self._finished

    # -- the outcome --------------------------------------------------------------------

    def code(self) -> int | None:
        """The return code the program sees once the process has ended."""
        recorded = self.entry.returncode
        sig = self.pump.signaled
        if sig is not None and (self.ends_by_itself or recorded is None):
            return -sig  # killed here, though it ended by itself on the tape
        return recorded

    def serve(self) -> None:
        """Count the entry served (once), moving virtual time to the end of the call."""
        with self._lock:
            if self._served:
                return
            self._served = True
        self.server.engine.served(self.entry)

    def _finished(self) -> None:
        if self.ends_by_itself or self.pump.signaled is not None:
            self.serve()
            code = self.code()
            with self._lock:
                callbacks, self._callbacks = self._callbacks, []
            for callback in callbacks:
                callback(code if code is not None else -9)

    def when_exited(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(returncode)`` when the process ends (asyncio's watcher)."""
        with self._lock:
            done = self._served
            if not done:
                self._callbacks.append(callback)
        if done:
            code = self.code()
            callback(code if code is not None else -9)

    # -- stdin --------------------------------------------------------------------------

    def _stdin_problem(self, what: str) -> None:
        pump, entry = self.pump, self.entry
        if entry.chunks is None:
            where = "stdin"
            expected: Any = entry.input
            actual: Any = self.server.engine.codec.comparable(bytes(pump.received), entry.input)
            diffs, total = diff_values_counted(expected, actual, "input")
        else:
            index, start = next(
                ((i, s) for i, s in reversed(pump.stdin_starts) if s <= (pump.diverged_at or 0)),
                pump.stdin_starts[0] if pump.stdin_starts else (0, 0),
            )
            where = f"stdin chunk {index}"
            expected = _text(bytes(pump.expected[start:]))
            actual = _text(bytes(pump.received[start:]))
            diffs, total = diff_values_counted(expected, actual, f"chunks[{index}].data")
        sentence = {
            "differs": f"the program wrote other bytes to stdin than recorded ({where}).",
            "extra": "the program wrote more to stdin than was recorded.",
            "short": f"the program closed stdin before writing all that was recorded ({where}).",
            "stalled": f"the program wrote nothing to stdin for {STALL_SECONDS:g} s while "
            f"the recorded output waited for it ({where}); its output was ended so that it "
            "does not hang.",
        }[what]
        self.server.engine.mismatch(
            MismatchKind.ARGUMENT_MISMATCH,
            seq=entry.seq,
            worker=entry.worker,
            boundary="process",
            message=f"the process {entry.argv!r} at seq {entry.seq}: {sentence}",
            expected=expected,
            actual=actual,
            diffs=diffs,
            total=total,
        )


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def _items(entry: ProcessCall) -> list[tuple[str, Payload]]:
    """The recorded bytes in the order the pump serves them."""
    if entry.chunks is not None:
        return [(chunk.stream, chunk.data) for chunk in entry.chunks]
    items: list[tuple[str, Payload]] = []
    for stream, payload in (("stdin", entry.input), ("stdout", entry.stdout),
                            ("stderr", entry.stderr)):  # fmt: skip
        if payload is not None:
            items.append((stream, payload))
    return items


class _Replaying:
    """The replaced ``Popen`` methods of one replay, and the processes they serve."""

    def __init__(self, server: ProcessReplay) -> None:
        self.server = server
        self.live: dict[int, _Fake] = {}
        self._lock = threading.Lock()

    def methods(self) -> dict[str, Any]:
        return {
            "_execute_child": self._execute_child(),
            "_internal_poll": _internal_poll,
            "_wait": _wait,
            "_communicate": _communicate,
            "_remaining_time": _remaining_time,
            "_check_timeout": _check_timeout,
            "send_signal": _send_signal,
        }

    def _execute_child(self) -> Any:
        server = self.server
        engine = server.engine
        replaying = self

        def _execute_child(popen: Any, args: Any, executable: Any, *rest: Any) -> None:
            spawn = Spawn.of(args, executable, rest)
            p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite = spawn.fds
            entry = server.serve(spawn.argv, cwd=spawn.cwd, env=spawn.env, input=UNKNOWN_INPUT)
            engine.clock_at(entry)
            if entry.spawn_error is not None:
                engine.served(entry)
                raise spawn_error(entry.spawn_error)
            stdin = os.dup(p2cread) if p2cwrite != -1 else None
            out = os.dup(c2pwrite) if c2pread != -1 else None
            err = os.dup(errwrite) if errread != -1 else None
            merged = errread == -1 and errwrite != -1 and errwrite == c2pwrite
            popen._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)
            popen.pid = TAPE_PID_BASE + entry.seq
            popen._child_created = True

            def decode(index: int, payload: Payload) -> bytes:
                field = f"chunks[{index}]" if entry.chunks is not None else _items(entry)[index][0]
                served: bytes = engine.payload(entry, payload, field, text=False)
                return served

            pump = Pump(
                _items(entry),
                stdin=stdin,
                outputs={"stdout": out, "stderr": out if merged else err},
                decode=decode,
                ends_by_itself=not (entry.unfinished or entry.timeouts or entry.signals),
                name=str(entry.seq),
            )
            fake = _Fake(server, entry, pump)
            setattr(popen, TRACKER, fake)
            with replaying._lock:
                replaying.live[popen.pid] = fake
            pump.start()

        return _execute_child

    def on_exit(self, pid: int, callback: Callable[[int], None]) -> bool:
        fake = self.live.get(pid)
        if fake is None:
            return False
        fake.when_exited(callback)
        return True

    def stop(self) -> None:
        """Interception ends: every replayed process still running ends with it."""
        with self._lock:
            live, self.live = self.live, {}
        for fake in live.values():
            fake.pump.stop(WAIT_SECONDS)
            fake.serve()


def _fake(popen: Any) -> _Fake | None:
    found = popen.__dict__.get(TRACKER)
    return found if isinstance(found, _Fake) else None


def _raise_pending(fake: _Fake) -> None:
    error, fake.pump.error = fake.pump.error, None
    if error is not None:
        raise error


def _settle(popen: Any, fake: _Fake) -> int | None:
    """The process has ended for the program: its return code is collected."""
    if popen.returncode is None:
        popen.returncode = fake.code()
        fake.serve()
    return popen.returncode  # type: ignore[no-any-return]


def _internal_poll(self: Any, *args: Any, **kwargs: Any) -> Any:
    fake = _fake(self)
    if fake is None:
        return ORIGINALS["_internal_poll"](self, *args, **kwargs)
    if self.returncode is not None:
        return self.returncode
    deadstate = args[0] if args else kwargs.get("_deadstate")
    if deadstate is None and fake.polls_left > 0:
        fake.polls_left -= 1
        return None
    if fake.ends_by_itself or fake.pump.finished.is_set():
        return _settle(self, fake)
    return None


def _wait(self: Any, timeout: float | None) -> Any:
    fake = _fake(self)
    if fake is None:
        return ORIGINALS["_wait"](self, timeout)
    if self.returncode is not None:
        return self.returncode
    if timeout is not None and fake.timing_out:
        # communicate(timeout=...) timed out on the tape while waiting for the exit; Python
        # reports the time that was left then, which was about the whole timeout.
        fake.polls_left = max(0, fake.polls_left - 1)
        raise subprocess.TimeoutExpired(self.args, fake.orig_timeout or 0.0)
    if timeout is not None and (fake.polls_left > 0 or not fake.ends_by_itself):
        if fake.polls_left > 0:
            fake.polls_left -= 1
        if fake.polls_left > 0 or not fake.pump.finished.is_set():
            raise subprocess.TimeoutExpired(self.args, timeout)
    if not fake.pump.finished.wait(WAIT_SECONDS):
        entry = fake.entry
        state = "was still running when interception ended" if entry.unfinished else (
            "was ended by a signal the program sent" if entry.signals else
            "had not delivered its recorded output")  # fmt: skip
        raise UsageError(
            f"seq {entry.seq}: wait() on the replayed process {entry.argv!r} (worker "
            f"{entry.worker!r}) would block: on the tape it {state}, and after "
            f"{WAIT_SECONDS:g} s it still has not ended here. Read its output before waiting, "
            "or send it the signal the recording did."
        )
    _raise_pending(fake)
    return _settle(self, fake)


def _communicate(self: Any, input: Any, endtime: Any, orig_timeout: Any) -> Any:
    fake = _fake(self)
    if fake is None:
        return ORIGINALS["_communicate"](self, input, endtime, orig_timeout)
    fake.timing_out = endtime is not None and fake.timeouts_left > 0
    fake.orig_timeout = orig_timeout
    try:
        result = ORIGINALS["_communicate"](self, input, endtime, orig_timeout)
    except subprocess.TimeoutExpired:
        if fake.timing_out:
            fake.timeouts_left -= 1
        raise
    finally:
        fake.timing_out = False
    _raise_pending(fake)
    return result


def _drained(self: Any, fake: _Fake) -> bool:
    if not fake.pump.delivered.is_set():
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
    if endtime is None:
        return None
    if not fake.timing_out:
        return WAIT_SECONDS  # the tape, not the clock, decides whether this times out
    if not (self.stdout or self.stderr or self.stdin):
        return 0.0  # no pipes: communicate() goes straight to wait(), which times out
    return -1.0 if _drained(self, fake) else 0.01


def _check_timeout(self: Any, endtime: Any, orig_timeout: Any, *args: Any, **kwargs: Any) -> Any:
    fake = _fake(self)
    if fake is None:
        return ORIGINALS["_check_timeout"](self, endtime, orig_timeout, *args, **kwargs)
    skip = kwargs.get("skip_check_and_raise", args[2] if len(args) > 2 else False)
    if endtime is None or not (skip or (fake.timing_out and _drained(self, fake))):
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
    if self.returncode is not None:
        return
    fake.pump.signal(int(sig))


@contextlib.contextmanager
def replaying_popen(server: ProcessReplay) -> Iterator[None]:
    """Serve every process ``subprocess.Popen`` starts in the block from the tape."""
    replaying = _Replaying(server)
    with install_methods(replaying.methods()), replaying_asyncio(replaying.on_exit):
        try:
            yield
        finally:
            replaying.stop()
