"""The pump: a replayed process's recorded bytes, written into the real pipes ``Popen`` made.

``Popen`` creates its pipes as usual; the replay side hands the pump the child's ends.
The pump writes the recorded stdout and stderr into them and reads what the program
writes to stdin, checking it against the tape as it comes. Recorded output that followed
stdin (a conversation) is released only once the program has written that stdin (today's
version of the recorded chunk: see ``_stdin``). The
common case (no stdin, output that fits in the pipes) completes at once, without a
thread; anything else runs in a thread that ends when the process does, or when
interception ends. Every wait is bounded: a program that stops writing the stdin the
tape is waiting for is reported after :data:`STALL_SECONDS` and given end-of-file, and so
is one that has read all the output of a process the recording ended with a signal, when
that signal does not come (a read to end-of-file would otherwise wait for ever).

A pump's thread is a producer for an asyncio loop on virtual time (``replayer``'s
``IN_FLIGHT``): while it works, or has a reason to wake (stdin written, room in a pipe it
has output for, a signal), a loop waiting for its output waits in real time instead of
jumping the clock to its next timer.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Callable, Sequence
from typing import Final

from ...cassette import Payload
from ...replayer import IN_FLIGHT
from ._pipes import close_quietly, internal_thread, pending_bytes
from ._stdin import STALL_SECONDS, Chunks

__all__ = ["STALL_SECONDS", "Pump"]

_BLOCK: Final = 1 << 16

#: Reads one recorded payload (the item's index, its payload) as bytes; may raise.
Decode = Callable[[int, Payload], bytes]


class Pump:
    """Serves one replayed process's pipes (see the module's documentation)."""

    def __init__(
        self,
        items: Sequence[tuple[str, Payload]],
        *,
        stdin: int | None,
        outputs: dict[str, int | None],
        decode: Decode,
        ends_by_itself: bool,
        name: str,
    ) -> None:
        self._items = list(items)
        self._stdin = stdin
        # stream name -> fd; several streams may share an fd (stderr=STDOUT)
        self._targets = outputs
        self._fds = sorted({fd for fd in outputs.values() if fd is not None})
        self._buffers: dict[int, bytearray] = {fd: bytearray() for fd in self._fds}
        self._decode = decode
        self._ends_by_itself = ends_by_itself
        #: Whether the thread is serving (not waiting in its select): see :meth:`busy`.
        self._working = True
        self._name = name
        self._pos = 0
        #: What the program wrote to stdin, cut into the recorded chunks it answers.
        self.stdin_chunks = Chunks(eof=stdin is None)
        self.delivered = threading.Event()
        self.finished = threading.Event()
        self.error: BaseException | None = None
        self.signaled: int | None = None
        self._stopped = False
        self._lock = threading.Lock()
        # The thread's wake-up pipe, made only if a thread is needed (most pumps finish
        # in start()); -1 while there is none.
        self._wake_r = self._wake_w = -1
        for fd in [*self._fds, *([stdin] if stdin is not None else [])]:
            os.set_blocking(fd, False)
        self._thread: threading.Thread | None = None
        #: Called when stdin runs past the tape (``"extra"``) or stalls (``"stalled"``);
        #: the replay side reports it.
        self.on_stdin: Callable[[str], None] = lambda what: None
        #: Called once when the process's output has ended and it has exited.
        self.on_finish: Callable[[], None] = lambda: None
        #: Whether its output ends only with a signal the program sent when recording;
        #: then called if the program read all of it and no signal came in time.
        self.awaits_signal = False
        self.on_unsignaled: Callable[[], None] = lambda: None

    # -- control ------------------------------------------------------------------------

    def start(self) -> None:
        """Serve what can be served at once; start a thread for the rest, if any."""
        if self._step():
            return
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        IN_FLIGHT.add(self)
        self._thread = internal_thread(self._run, f"sessiontape-pump-{self._name}")
        try:
            self._thread.start()
        except BaseException:
            self._thread = None
            IN_FLIGHT.discard(self)
            raise

    def may_end(self) -> None:
        """The recorded timeouts are all served: it ends once its output is out."""
        self._ends_by_itself = True
        self._wake()

    def busy(self) -> bool:
        """Whether the thread is serving, or will wake without the program acting: a
        signal or stop came, stdin was written, or a pipe it has output for has room;
        or the program has written part of a request whose recorded answer waits for
        the rest (it waits for that answer: in real time, until the pump reports the
        stall, never by a jump of virtual time to its timeout). Asked from an event
        loop's thread (``IN_FLIGHT``); does not block."""
        if self._working:  # even finished: its exit callbacks come after (until discard)
            return True
        with self._lock:
            wake = self._wake_r
            if wake < 0 or self.finished.is_set():
                return False
            if self.stdin_chunks.partial():
                return True
            readers = [wake]
            if self._stdin is not None and not self.stdin_chunks.eof:
                readers.append(self._stdin)
            writers = [fd for fd, buffer in self._buffers.items() if buffer]
            try:
                ready = select.select(readers, writers, [], 0)
            except (OSError, ValueError):
                return False  # closed meanwhile: it has ended
        return any(ready)

    def signal(self, sig: int) -> None:
        """The program signalled the process: its output ends now (if ended: the process)."""
        first = self.signaled is None
        self.signaled = sig
        if self.finished.is_set():
            if first:
                self.on_finish()
            return
        self._wake()

    def stop(self, timeout: float) -> None:
        """Interception ends: end the output, close everything, join the thread."""
        self._stopped = True
        self._wake()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        if not self.finished.is_set():
            self._end()
        if thread is None:
            self._close_wake()

    def _wake(self) -> None:
        with self._lock:
            if self._wake_w >= 0:
                with contextlib.suppress(OSError):
                    os.write(self._wake_w, b"x")
        if self._thread is None and not self.finished.is_set():
            self._step()

    # -- the work -----------------------------------------------------------------------

    def _gated(self) -> bool:
        """Whether the next output waits for stdin the program has not written yet."""
        return self.stdin_chunks.pending is not None

    def _release(self) -> None:
        items, stdin = self._items, self.stdin_chunks
        while self._pos < len(items):
            stream, payload = items[self._pos]
            if stream == "stdin":
                if stdin.pending is None:
                    stdin.pending = (self._pos, self._decode(self._pos, payload))
                if not stdin.complete():
                    return
            else:
                data = self._decode(self._pos, payload)
                fd = self._targets.get(stream)
                if fd is not None and data:
                    self._buffers[fd] += data
            self._pos += 1

    def _read_stdin(self) -> None:
        fd, stdin = self._stdin, self.stdin_chunks
        if fd is None or stdin.eof:
            return
        while True:
            try:
                data = os.read(fd, _BLOCK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                stdin.eof = True
                return
            stdin.received += data

    def _write(self) -> None:
        for fd, buffer in self._buffers.items():
            while buffer:
                try:
                    written = os.write(fd, buffer[:_BLOCK])
                except BlockingIOError:
                    break
                except OSError:  # the program closed its end: it reads nothing more
                    buffer.clear()
                    break
                del buffer[:written]

    def _step(self) -> bool:
        """Serve what can be served without blocking; return whether the pump is done."""
        if self.finished.is_set():
            return True
        # Read once: a stop() that comes during the step is served by the next one (it
        # wakes the thread), after what the program wrote before it has been read.
        stopped = self._stopped
        try:
            self._read_stdin()
            if self.signaled is None:
                self._release()  # also when stopped: what came last may end a chunk
                if not stopped:
                    if self.stdin_chunks.runs_past(self._pos >= len(self._items)):
                        self.on_stdin("extra")
                    self._write()
        except BaseException as exc:  # a payload the tape lacks, a strict-mode mismatch
            self.error = exc
            self._end()
            return True
        if self.signaled is None and stopped and self.stdin_chunks.partial():
            # Interception ends while the program waits for the answer to a request it
            # wrote only in part: the report says which request found no answer.
            self._report(self.on_stdin, "unanswered")
            return True
        if self.signaled is not None or stopped:
            self._end()
            return True
        done = self._pos >= len(self._items) and not any(self._buffers.values())
        if done and not self.delivered.is_set():
            self.delivered.set()
        if self.stdin_chunks.extra and not self._ends_by_itself:
            self._end()  # the program wants more than was recorded: end its wait
            return True
        if done and self._ends_by_itself and not self._gated():
            self._end()
            return True
        return False

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            self._close_wake()
            IN_FLIGHT.discard(self)
            self._thread = None  # an ended pump holds no thread (see internal_thread)

    def _loop(self) -> None:
        while not self._step():
            readers = [self._wake_r]
            if self._stdin is not None and not self.stdin_chunks.eof:
                readers.append(self._stdin)
            writers = [fd for fd, buffer in self._buffers.items() if buffer]
            gated = self._pos < len(self._items) and self._gated()
            unsignaled = self._awaits_signal_only(writers)
            IN_FLIGHT.idle()
            self._working = False
            try:
                limit = STALL_SECONDS if gated or unsignaled else None
                ready = select.select(readers, writers, [], limit)
            except (OSError, ValueError):
                ready = None
            finally:
                self._working = True
                IN_FLIGHT.working()
            if ready is None:
                self._end()
                return
            if not any(ready) and gated:
                self._report(self.on_stdin, "stalled")
                return
            if not any(ready) and unsignaled and not any(map(pending_bytes, self._fds)):
                self._report(self.on_unsignaled)  # all of it read: a read waits for EOF
                return
            if self._wake_r in ready[0]:
                with contextlib.suppress(OSError):
                    os.read(self._wake_r, 64)

    def _awaits_signal_only(self, writers: list[int]) -> bool:
        """Whether all its output is out and only the recorded signal would end it."""
        return (
            self.awaits_signal
            and self.signaled is None
            and not self._ends_by_itself
            and bool(self._fds)
            and not writers
            and self._pos >= len(self._items)
        )

    def _report(self, report: Callable[..., None], *args: str) -> None:
        """Report a wait the pump ends, then end the output (a strict replay's mismatch
        is raised where the program next waits for the process)."""
        try:
            report(*args)
        except BaseException as exc:
            self.error = exc
        self._end()

    def _end(self) -> None:
        """The process's output ends (end-of-file) and it stops reading stdin."""
        if self.finished.is_set():
            return
        # Stdin first: a program that has read to the end of the output finds the process
        # gone (EPIPE) when it writes again, every time, as when recording.
        close_quietly(self._stdin, *self._fds)
        self._buffers = {}
        self._fds = []
        self._stdin = None
        self.delivered.set()
        self.finished.set()
        try:
            self.on_finish()
        finally:
            if self._thread is None or self._thread is threading.current_thread():
                self._close_wake()

    def _close_wake(self) -> None:
        with self._lock:
            close_quietly(self._wake_r, self._wake_w)
            self._wake_r = self._wake_w = -1
