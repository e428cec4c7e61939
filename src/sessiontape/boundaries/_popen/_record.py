"""The record side of ``patch_subprocess()``: real processes, their pipes relayed and logged.

``Popen._execute_child`` (the spawn) is replaced: for each stream that is a pipe, the child
gets one end of a new pipe and a relay thread copies the bytes between it and the pipe
``Popen`` made, logging each chunk before passing it on (so the log keeps cause before
effect). However the program reads (``communicate``, which reads the file descriptors
directly, ``readline``, iteration, asyncio's transports), every byte crosses a relay.
The entry is written when the process has ended and its pipes are drained; one still
running when interception ends is written then, as unfinished.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import subprocess
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Final

from ..._time import REAL
from ...cassette import Chunk, Level
from ...recorder import Opened
from ...scrub import error_info
from .._process import IN_PROCESS_CALL, env_delta, record_process
from .._protocols import RecordSide
from .._unseen import intercepted
from ._asyncio import recording_asyncio
from ._pipes import (
    ORIGINALS,
    TRACKER,
    ChunkLog,
    Spawn,
    close_quietly,
    install_methods,
    internal_thread,
)

__all__ = ["recording_popen"]

_BLOCK: Final = 1 << 16
#: Real seconds, in all, that the end of interception waits for the output relays of
#: processes that have exited to pass on their last bytes (a grandchild that kept the
#: pipe open would hold them for ever).
_DRAIN_SECONDS: Final = 2.0
#: Real seconds at most that learning of a child's exit waits for its stdin relay to end.
#: It is woken by the same exit and ends in microseconds on an idle machine (at most 0.2 s
#: seen with both cores of two busy); the bound is for a relay stuck behind a lock the
#: learning thread holds (a ``Popen`` the garbage collector finalises inside a write).
_SETTLE_SECONDS: Final = 5.0

#: What ``poll()`` reports on a pipe's write end once no process holds its read end.
_READER_GONE: Final = select.POLLERR | select.POLLHUP | select.POLLNVAL


class _Tracked:
    """One process spawned under recording, from its spawn to its entry."""

    def __init__(
        self, rec: RecordSide, opened: Opened, argv: list[str], call: dict[str, Any]
    ) -> None:
        self.rec = rec
        self.opened = opened
        self.argv = argv
        self.call = call
        self.log = ChunkLog()
        self.piped: set[str] = set()
        self.open_relays = 0
        #: The stdout and stderr relays: they end at end-of-file once the process exits.
        #: Weak references, like :attr:`stdin_relay`'s.
        self.output_relays: list[weakref.ref[threading.Thread]] = []
        self.returncode: int | None = None
        self.ended_ns: int | None = None
        self.duration_ns = 0
        self.polls = 0
        self.wait_timeouts = 0  # how many of the polls were wait(timeout) calls
        self.timeouts = 0
        #: For each timed-out communicate(): the bytes of stdout and stderr it had read.
        self.read_at_timeouts: list[list[int]] = []
        self.signals: list[int] = []
        #: How many of ``signals`` came once every piped output had ended (end-of-file,
        #: or the program closed its end).
        self.signals_after_eof = 0
        #: The piped outputs (stdout, stderr), and how many of them have ended.
        self.outputs = 0
        self.outputs_ended = 0
        self.written = False
        #: The stdin relay, and the write end it feeds the child through while open. The
        #: thread is held weakly: it can be joined until it has ended, and nothing of it is
        #: kept after (a program may count the thread objects it can still see, as CPython
        #: 3.10's test support does, ``threading._dangling``).
        self.stdin_relay: weakref.ref[threading.Thread] | None = None
        self.stdin_end = -1
        self._lock = threading.Lock()
        self._fds_lock = threading.Lock()

    def close_relay(self, stream: str, src: int, dst: int) -> None:
        """A relay closes its two fds (under the lock :meth:`_settle_stdin` polls under,
        so that it never polls an fd number already reused)."""
        with self._fds_lock:
            if stream == "stdin":
                self.stdin_end = -1
            else:  # counted before the program can see the end of file
                self.outputs_ended += 1
            close_quietly(src, dst)

    def signaled(self, sig: int) -> None:
        """The program sent the running process ``sig``."""
        with self._fds_lock:
            # Once all its output has ended, a signal does not end the output: a
            # terminate() that races a process already exiting (replay does not hold its
            # output back for it).
            after_eof = self.outputs > 0 and self.outputs_ended == self.outputs
        self.signals.append(sig)
        self.signals_after_eof += after_eof

    def _settle_stdin(self) -> None:
        """The program learnt that the child exited: if no process holds the child's
        stdin any more, wait for the relay to end, so the program sees its stdin's reader
        gone from now on, and no relay thread left, as it would without the relay.

        A relay that has closed its ends already is leaving: it is waited for too (its
        thread is still running until it returns)."""
        thread = None if self.stdin_relay is None else self.stdin_relay()
        if thread is None or thread is threading.current_thread():
            return
        with self._fds_lock:
            gone = self.stdin_end < 0
            if not gone:
                poller = select.poll()
                poller.register(self.stdin_end, 0)
                gone = any(events & _READER_GONE for _, events in poller.poll(0))
        if gone:
            thread.join(_SETTLE_SECONDS)

    def relay_done(self) -> None:
        with self._lock:
            self.open_relays -= 1
            ready = self.open_relays == 0 and self.ended_ns is not None
        if ready:
            self.write()

    def exited(self, code: int | None) -> None:
        """The program learnt the exit status (``_handle_exitstatus``, asyncio's watcher)."""
        if code is None:
            return
        with self._lock:
            if self.ended_ns is not None:
                return
            self.returncode = code
            self.ended_ns = REAL.monotonic_ns()
            # The record side's own measure: real time since the call opened (the
            # opening time of a live call is the replay's virtual one).
            self.duration_ns = self.rec.elapsed(self.opened)
            ready = self.open_relays == 0
        if ready:
            self.write()
        # Even when every relay has counted itself out: a relay that has is still leaving.
        self._settle_stdin()

    def write(self, *, unfinished: bool = False) -> None:
        """Write the entry (once)."""
        with self._lock:
            if self.written:
                return
            self.written = True
        rec = self.rec
        chunks = self.log.stop()
        codec = rec.codec
        more: dict[str, Any] = {
            "polls": self.polls,
            "timeouts": self.timeouts,
            "signals": list(self.signals) or None,
            "unfinished": unfinished,
            "wait_timeouts": self.wait_timeouts,
            "signals_after_eof": self.signals_after_eof,
            "read_at_timeouts": self.read_at_timeouts or None,
        }
        streams: dict[str, bytes | None] = {
            name: ChunkLog.joined(chunks, name) if name in self.piped else None
            for name in ("stdin", "stdout", "stderr")
        }
        if self.log.conversation:
            if rec.level is not Level.MINIMAL:
                more["chunks"] = [Chunk(name, codec.encode(data)) for name, data in chunks]
            streams = dict.fromkeys(streams)
        duration = self.duration_ns if self.ended_ns is not None else None
        with contextlib.suppress(Exception):  # recording never breaks the program
            record_process(
                rec, self.opened, self.argv,
                input=streams["stdin"], stdout=streams["stdout"], stderr=streams["stderr"],
                returncode=None if unfinished else self.returncode,
                timed_out=self.timeouts > 0, duration_ns=duration, **self.call, **more,
            )  # fmt: skip


def _relay(tracked: _Tracked, src: int, dst: int, stream: str) -> None:
    """Copy ``src`` to ``dst`` until EOF, logging each chunk before it is passed on.

    The relay is a pipe in the middle: it must let neither end look open longer than it
    would without it. So it also watches ``dst``: once its reader is gone (the child
    exited and nothing else holds its stdin, or the program closed the pipe it reads),
    it closes ``src`` at once, and the writer at the other end sees the reader go (a
    ``POLLERR``, a broken pipe) as it would have seen it. Bytes it could not pass on are
    taken back from the log: the tape holds what crossed.
    """
    poller = select.poll()
    poller.register(src, select.POLLIN)
    poller.register(dst, 0)  # POLLERR/POLLHUP are always reported
    try:
        while True:
            try:
                ready = poller.poll()
            except InterruptedError:  # pragma: no cover (PEP 475 retries)
                continue
            if any(fd == dst and events & _READER_GONE for fd, events in ready):
                break
            try:
                data = os.read(src, _BLOCK)
            except OSError:
                break
            if not data:
                break
            tracked.log.add(stream, data)
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(dst, view) :]
            except OSError:
                # The reader went away: the writer gets the broken pipe, as it would.
                tracked.log.retract(stream, len(view))
                break
    finally:
        tracked.close_relay(stream, src, dst)
        tracked.relay_done()


class _Recording:
    """The replaced ``Popen`` methods of one recording, and the processes they track."""

    def __init__(self, rec: RecordSide) -> None:
        self.rec = rec
        self.live: set[_Tracked] = set()
        self._lock = threading.Lock()

    def methods(self) -> dict[str, Any]:
        return {
            "_execute_child": self._execute_child(),
            "_internal_poll": _internal_poll,
            "_wait": _wait,
            "_communicate": _communicate,
            "_handle_exitstatus": _handle_exitstatus,
            "send_signal": _send_signal,
        }

    def _execute_child(self) -> Any:
        original = ORIGINALS["_execute_child"]
        recording = self

        def _execute_child(popen: Any, args: Any, executable: Any, *rest: Any) -> None:
            rec = recording.rec
            if not rec.active or IN_PROCESS_CALL.get():
                original(popen, args, executable, *rest)
                return
            spawn = Spawn.of(args, executable, rest)
            p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite = spawn.fds
            opened = rec.open()
            call = {
                "cwd": spawn.cwd, "env": env_delta(spawn.env), "text": bool(popen.text_mode),
                "timeout": None,
            }  # fmt: skip
            tracked = _Tracked(rec, opened, spawn.argv, call)
            relays: list[tuple[int, int, str]] = []
            child_ends: list[int] = []
            if p2cwrite != -1:
                r, w = os.pipe()
                relays.append((p2cread, w, "stdin"))
                child_ends.append(r)
                p2cread = r
            merged = errread == -1 and errwrite != -1 and errwrite == c2pwrite
            if c2pread != -1:
                r, w = os.pipe()
                relays.append((r, c2pwrite, "stdout"))
                child_ends.append(w)
                c2pwrite = w
            if errread != -1:
                r, w = os.pipe()
                relays.append((r, errwrite, "stderr"))
                child_ends.append(w)
                errwrite = w
            elif merged and c2pread != -1:
                errwrite = c2pwrite
            new = (p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)
            try:
                with intercepted():  # its audit event is the interception's own
                    original(popen, args, executable, *rest[:8], *new, *rest[14:])
            except BaseException as exc:
                ours = [w if name == "stdin" else r for r, w, name in relays]
                if popen._closed_child_pipe_fds:
                    # Popen closed the child's ends; ours and the ones we took are left.
                    close_quietly(*ours, *(r if name == "stdin" else w for r, w, name in relays))
                else:
                    close_quietly(*ours, *child_ends)
                if isinstance(exc, Exception):
                    err = error_info(exc, with_traceback=False)
                    record_process(rec, opened, tracked.argv, input=None, spawn_error=err, **call)
                raise
            tracked.piped = {name for _, _, name in relays}
            tracked.outputs = len(tracked.piped - {"stdin"})
            for _, dst, name in relays:
                if name == "stdin":
                    tracked.stdin_end = dst
            tracked.open_relays = len(relays)
            setattr(popen, TRACKER, tracked)
            with recording._lock:
                recording.live.add(tracked)
            threads = []
            for src, dst, name in relays:
                thread = internal_thread(
                    functools.partial(_relay, tracked, src, dst, name),
                    f"sessiontape-relay-{popen.pid}-{name}",
                )
                threads.append(thread)
                if name == "stdin":
                    tracked.stdin_relay = weakref.ref(thread)
                else:
                    tracked.output_relays.append(weakref.ref(thread))
            for thread in threads:
                thread.start()

        return _execute_child

    def flush(self) -> None:
        """Interception ends: write every process not written yet (unfinished if running).

        A process that has exited may still have output in its relays (the program waited
        for it without reading its pipes): its entry is written once they have passed it
        on, within :data:`_DRAIN_SECONDS` in all, so that it is complete.
        """
        with self._lock:
            live, self.live = self.live, set()
        deadline = REAL.monotonic() + _DRAIN_SECONDS
        for tracked in sorted(live, key=lambda t: t.opened[0]):
            if tracked.ended_ns is not None:
                for relay in tracked.output_relays:
                    thread = relay()
                    if thread is not None:
                        thread.join(max(0.0, deadline - REAL.monotonic()))
            tracked.write(unfinished=tracked.ended_ns is None)


def _tracked(popen: Any) -> _Tracked | None:
    found = popen.__dict__.get(TRACKER)
    return found if isinstance(found, _Tracked) else None


def _child_running(pid: int) -> bool:
    """Whether the child ``pid`` has not exited, asked without reaping it (``WNOWAIT``:
    its exit status stays for ``subprocess`` or asyncio's child watcher). Where ``waitid``
    is missing, a child not reaped yet counts as running."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        return True
    try:
        return waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:  # reaped already
        return False


def still_producing(popen: Any) -> bool | None:
    """Whether a real process started under recording will yet make something ready for
    the program without the program acting: it runs, or a relay still passes its output
    on (``True``); or it has exited and nothing says the program learnt it: its exit is
    on its way to the program (asyncio's child watcher reaps it and tells the loop from
    another thread), or it will never be, as nobody waits for it (``None``: the caller
    decides how long to believe the first); or neither (``False``)."""
    tracked = _tracked(popen)
    if tracked is None:
        return False
    if any(
        thread is not None and thread.is_alive()
        for thread in (relay() for relay in tracked.output_relays)
    ):
        return True
    if popen.returncode is not None:
        return False
    return True if _child_running(popen.pid) else None


def _internal_poll(self: Any, *args: Any, **kwargs: Any) -> Any:
    result = ORIGINALS["_internal_poll"](self, *args, **kwargs)
    tracked = _tracked(self)
    if tracked is not None:
        deadstate = args[0] if args else kwargs.get("_deadstate")
        if result is None and deadstate is None:
            tracked.polls += 1
        tracked.exited(self.returncode)
    return result


def _wait(self: Any, timeout: float | None) -> Any:
    tracked = _tracked(self)
    try:
        result = ORIGINALS["_wait"](self, timeout)
    except subprocess.TimeoutExpired:
        if tracked is not None:
            tracked.polls += 1
            tracked.wait_timeouts += 1
        raise
    if tracked is not None:
        tracked.exited(self.returncode)
    return result


def _communicate(self: Any, input: Any, endtime: Any, orig_timeout: Any) -> Any:
    tracked = _tracked(self)
    if tracked is not None and orig_timeout is not None:
        tracked.call["timeout"] = orig_timeout
    try:
        return ORIGINALS["_communicate"](self, input, endtime, orig_timeout)
    except subprocess.TimeoutExpired as exc:
        if tracked is not None:
            tracked.timeouts += 1
            # What the program had read when it gave up: replay gives it back as much.
            tracked.read_at_timeouts.append([len(exc.output or b""), len(exc.stderr or b"")])
        raise


def _handle_exitstatus(self: Any, *args: Any, **kwargs: Any) -> Any:
    result = ORIGINALS["_handle_exitstatus"](self, *args, **kwargs)
    tracked = _tracked(self)
    if tracked is not None:
        tracked.exited(self.returncode)
    return result


def _send_signal(self: Any, sig: int) -> None:
    ORIGINALS["send_signal"](self, sig)
    tracked = _tracked(self)
    if tracked is not None and self.returncode is None:
        tracked.signaled(int(sig))  # it was running: the signal was sent


@contextlib.contextmanager
def recording_popen(rec: RecordSide) -> Iterator[None]:
    """Record every process ``subprocess.Popen`` starts in the block (asyncio's too)."""
    recording = _Recording(rec)
    with install_methods(recording.methods()), recording_asyncio(_exited, _signaled):
        try:
            yield
        finally:
            recording.flush()


def _signaled(popen: Any, sig: int) -> None:
    tracked = _tracked(popen)
    if tracked is not None:
        tracked.signaled(sig)


def _exited(popen: Any, code: int | None) -> None:
    tracked = _tracked(popen)
    if tracked is not None:
        tracked.exited(code)
