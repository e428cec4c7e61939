"""One replayed process: its tape entry, its pipes (wired, then made), its pump.

A process whose recorded interaction is not a conversation and that ended by itself
(:attr:`Fake.fast`) has ended as soon as it started: its pipes are made only when the
program touches one (``_lazy``), and a ``communicate()`` on pipes nobody touched is
answered from the tape (:meth:`Fake.answer`), with no pipe and no thread. Any other
process gets its pipes at once, fed by a :class:`~._pump.Pump`, and so does a fast one
once the program touches its pipes, if its recorded output does not fit in them at once
or stdin is to be checked as it comes.
"""

from __future__ import annotations

import builtins
import os
import re
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any, Final, NoReturn

from ..._errors import UsageError
from ..._time import NS_PER_S, REAL
from ...cassette import ErrorInfo, Payload, ProcessCall
from ...replayer import loop_on_clock, rebuild_error
from ...report import MismatchKind
from .._process import ProcessReplay
from .._protocols import ReplaySide
from . import _pump
from ._lazy import LAZY, Wiring, close_answered, fits, make_pipes, read_as, stdin_bytes
from ._pipes import close_quietly
from ._pump import Pump
from ._stdin import StdinCheck

__all__ = [
    "GUARD_SECONDS",
    "Fake",
    "guard_deadline",
    "items",
    "running_loop",
    "spawn_error",
    "wait_for_end",
    "would_block",
]

#: Real seconds a replayed ``wait()`` or ``communicate()`` waits for a process to end as
#: the tape says it did, before it reports that it cannot follow the tape and raises.
GUARD_SECONDS: Final = 10.0

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


def running_loop() -> Any:
    """The asyncio event loop the calling thread runs, if any (asyncio not imported: none)."""
    asyncio = sys.modules.get("asyncio")
    return None if asyncio is None else asyncio._get_running_loop()


def _empty(payload: Payload) -> bool:
    return payload is None or payload == ""


class Fake:
    """The replayed process behind one ``Popen``: its tape entry, how its pipes are wired
    (until they are made), and its pump (once they carry bytes a thread may have to feed)."""

    __slots__ = (
        "_callbacks", "_lock", "_served", "_stdin", "deadline", "ends_by_itself", "entry",
        "error", "fast", "guarded", "orig_timeout", "polls_left", "popen", "pump", "server",
        "signal_ends_output", "timeouts_left", "timing_out", "waits_left", "wiring",
    )  # fmt: skip

    def __init__(self, server: ProcessReplay, entry: ProcessCall, wiring: Wiring | None) -> None:
        self.server = server
        self.entry = entry
        self.wiring = wiring
        self.pump: Pump | None = None
        self.error: BaseException | None = None
        #: The ``Popen``, while pipes wired for it wait to be made.
        self.popen: weakref.ref[Any] | None = None
        #: poll()s and wait(timeout)s left that find it running (None: an older tape).
        self.waits_left: int | None = entry.wait_timeouts
        self.polls_left = entry.polls - (entry.wait_timeouts or 0)
        self.timeouts_left = entry.timeouts
        self.timing_out = False
        self.orig_timeout: float | None = None
        #: In a communicate() with no timeout; when the one under way gives up (real time).
        self.guarded = False
        self.deadline: float | None = None
        #: Whether its output ended only with a signal the program sent it; not when every
        #: signal came once its output had ended (a terminate() racing its exit).
        signals = entry.signals or ()
        self.signal_ends_output = len(signals) > entry.signals_after_eof
        self.ends_by_itself = not (entry.unfinished or entry.timeouts or self.signal_ends_output)
        #: The fast path's condition: what the process did needs neither a thread nor a
        #: pipe made before the program asks for one. Not a conversation (its recorded
        #: output waits for no stdin chunk), ended by itself (no timeout, signal or
        #: unfinished state decides when its output ends), never found running by a poll.
        self.fast = entry.chunks is None and entry.polls == 0 and self.ends_by_itself
        self._served = False
        self._stdin: StdinCheck | None = None
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[int], None]] = []

    @property
    def stdin(self) -> StdinCheck:
        """The check of what the program writes to its stdin (made when first needed: most
        replayed processes have no stdin to check)."""
        check = self._stdin
        if check is None:
            check = self._stdin = StdinCheck(self)
        return check

    @property
    def stdin_pump(self) -> Pump | None:
        """The pump feeding its pipes, once it has one (what :class:`StdinCheck` reads)."""
        return self.pump

    def attach(self, pump: Pump) -> Pump:
        """Give the process its pump (before it is started)."""
        pump.stdin_chunks.on_chunk = self.stdin.chunk
        pump.on_stdin = self.stdin.problem
        pump.on_finish = self._finished
        pump.awaits_signal = self.signal_ends_output and not self.entry.unfinished
        pump.on_unsignaled = lambda: _unsignaled(self)
        self.pump = pump
        return pump

    # -- the outcome --------------------------------------------------------------------

    def code(self) -> int | None:
        """The return code the program sees once the process has ended."""
        recorded = self.entry.returncode
        sig = self.pump.signaled if self.pump is not None else None
        unsignaled = self.ends_by_itself and not self.entry.signals
        if sig is not None and (unsignaled or recorded is None):
            return -sig  # killed here, though it ended by itself on the tape
        return recorded

    def finished(self) -> bool:
        """Whether its output has ended (a process with no pump delivered it at once)."""
        return self.pump is None or self.pump.finished.is_set()

    def awaits_stdin(self) -> bool:
        """Whether it still waits for stdin the tape says the program wrote to a pipe
        not made yet (it cannot have ended before that stdin came)."""
        wiring = self.wiring
        return wiring is not None and "stdin" in wiring.pipes and not _empty(self.entry.input)

    def wait_times_out(self) -> bool:
        """A ``wait(timeout)``: whether the tape says it found the process running (and
        raised ``TimeoutExpired``); counted off."""
        if self.waits_left is None:  # an older tape: polls counts both
            return self.poll_finds_running()
        found, self.waits_left = self.waits_left > 0, max(0, self.waits_left - 1)
        return found

    def poll_finds_running(self) -> bool:
        """A ``poll()``: whether the tape says it found the process running; counted off."""
        found, self.polls_left = self.polls_left > 0, max(0, self.polls_left - 1)
        return found

    def serve(self) -> None:
        """Count the entry served (once), moving virtual time to the end of the call."""
        if not self._served:
            with self._lock:
                first, self._served = not self._served, True
            if first:
                self.server.engine.served(self.entry)

    def _finished(self) -> None:
        pump = self.pump
        if self.ends_by_itself or (pump is not None and pump.signaled is not None):
            self.exited()

    def exited(self) -> None:
        """The process has ended for the program: served, and asyncio's watcher told."""
        self.serve()
        if self._callbacks:  # asyncio's watcher's, the only ones (see when_exited)
            with self._lock:
                callbacks, self._callbacks = self._callbacks, []
            for callback in callbacks:
                code = self.code()
                callback(code if code is not None else -9)

    def when_exited(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(returncode)`` when the process ends (asyncio's watcher).

        A process that has ended on the tape and was started from an event loop running on
        the virtual clock (see ``_replay``) ends for the loop at its recorded end: a timer
        of the loop, so that the loop's tasks learn of their processes' ends in the
        recorded order (a short process started after a long one ends first), and call
        what comes next (a store's mutation) in the order the tape holds.
        """
        with self._lock:
            done = self._served
            if not done:
                self._callbacks.append(callback)
        if done:
            code = self.code()
            callback(code if code is not None else -9)
        elif self.fast and self.pump is None and not self.awaits_stdin():
            loop = running_loop()
            if loop is not None and loop_on_clock(loop):
                entry = self.entry
                loop.call_at((entry.mono_ns + entry.duration_ns) / NS_PER_S, self.exited)
            else:
                self.exited()

    # -- the pipes ----------------------------------------------------------------------

    def open_pipes(self, popen: Any) -> None:
        """Make the wired pipes (once) and feed them from the tape; a process that is not
        :attr:`fast` gets its pump here, pipes or none (it decides when the process ends)."""
        with self._lock:
            wiring = self.wiring
            if wiring is None or not (wiring.pipes or (not self.fast and self.pump is None)):
                return
            child = make_pipes(popen, wiring, popen.pipesize) if wiring.pipes else {}
            self.popen = None
        stdin, out, err = child.get("stdin"), child.get("stdout"), child.get("stderr")
        if self.fast and (stdin is None or _empty(self.entry.input)) and self._write(out, err):
            # The process has exited: end of file on its output, EPIPE for stdin writes.
            close_quietly(stdin, out, err if err != out else None)
            return
        pump = Pump(
            items(self.server.engine, self.entry),
            stdin=stdin,
            outputs={"stdout": out, "stderr": err},
            decode=self._decode,
            ends_by_itself=self.ends_by_itself,
            name=str(self.entry.seq),
        )
        self.attach(pump).start()

    def _write(self, out: int | None, err: int | None) -> bool:
        """Write the recorded output into the pipes at once if it fits in them (so that no
        reader is needed); ``False`` if it does not (the pump writes it then). ``err`` is
        ``out`` when stderr goes to stdout."""
        try:
            data = self._output(self.entry.stdout, "stdout") if out is not None else b""
            more = self._output(self.entry.stderr, "stderr") if err is not None else b""
        except Exception as exc:  # a payload the tape lacks: raised where the pump raises it
            self.error = exc
            return True
        if more and err == out:
            data, more = data + more, b""
        pending = [
            (fd, chunk) for fd, chunk in ((out, data), (err, more)) if fd is not None and chunk
        ]
        if not all(fits(fd, len(chunk)) for fd, chunk in pending):
            return False
        for fd, chunk in pending:
            view = memoryview(chunk)
            while view:  # one write: it fits in the empty pipe
                view = view[os.write(fd, view) :]
        return True

    def _output(self, payload: Payload, name: str) -> bytes:
        """The recorded ``stdout`` or ``stderr`` (``payload``) as bytes served today."""
        payload = self.server.engine.stored(self.entry, payload, name)
        if payload is None:
            return b""
        served: bytes = self.server.engine.payload(self.entry, payload, name, text=False)
        return served

    def _decode(self, index: int, payload: Payload) -> bytes:
        entry = self.entry
        field = (
            f"chunks[{index}]"
            if entry.chunks is not None
            else items(self.server.engine, entry)[index][0]
        )
        served: bytes = self.server.engine.payload(entry, payload, field, text=False)
        return served

    # -- communicate() from the tape ------------------------------------------------------

    def answer(self, popen: Any, input: Any, timeout: float | None) -> Any:
        """``communicate(input, timeout)`` answered from the tape while no wired pipe is
        made; ``None`` if CPython's own code must run it (the pipes are made first)."""
        wiring = self.wiring
        if wiring is None or popen._communication_started or bool(popen.text_mode) != wiring.text:
            return None
        names = wiring.pipes
        if not names:
            return None  # made by another thread since the caller looked
        slots = popen.__dict__
        for name in names:
            if slots.get(name) is not LAZY:
                return None  # a stand-in for a stream (a mock): CPython's code uses it
        closed = wiring.closed_files()
        written = stdin_bytes(wiring, input, closed["stdin"]) if "stdin" in names else None
        if written is None and "stdin" in names:
            return None
        if written is not None:
            # Before any output is read: the stdin may be another recorded call's (chaos),
            # and a value the program made up in it is carried into the outputs.
            _answer_by_stdin(self, written)
            self.stdin.written(written)
        out_raw = err_raw = out = err = None
        try:
            if "stdout" in names:
                out_raw = self._output(self.entry.stdout, "stdout")
                if (out := read_as(popen, wiring, out_raw, closed["stdout"])) is None:
                    return None
            if "stderr" in names:
                err_raw = self._output(self.entry.stderr, "stderr")
                if (err := read_as(popen, wiring, err_raw, closed["stderr"])) is None:
                    return None
        except Exception:  # a payload the tape lacks: raised as the pump path raises it
            return None
        with self._lock:
            if wiring.pipes is not names:
                return None  # another thread made them meanwhile
            wiring.pipes = ()
            self.popen = None
        if timeout is not None or len(names) > 1:
            popen._communication_started = True  # CPython's select loop, not its shortcut
        close_answered(popen, wiring, closed, names, (out_raw, err_raw), input, written)
        self.serve()
        popen.wait()
        return out, err


def _answer_by_stdin(fake: Fake, written: bytes) -> None:
    """A process taken before its stdin was written is answered by the recorded call
    that got this stdin, when it is not the entry's and the engine knows one
    (``stdin_differs``, under a chaos schedule); otherwise the stdin check reports it."""
    entry = fake.entry
    if entry.input is None and not written:
        return
    engine = fake.server.engine
    if engine.codec.comparable(written, entry.input) == entry.input:
        return
    other = engine.stdin_differs(entry, written)
    if other is not None:
        assert isinstance(other, ProcessCall)
        fake.entry = other


def guard_deadline() -> float:
    """The real monotonic time a wait that starts now gives up at."""
    return REAL.monotonic() + GUARD_SECONDS


def wait_for_end(fake: Fake, call: str) -> None:
    """Wait, in real time and within the guard, for ``fake``'s pump to end the process
    (:func:`would_block` if it does not)."""
    pump = fake.pump
    if pump is not None and not pump.finished.wait(GUARD_SECONDS):
        would_block(fake, call)


def would_block(fake: Fake, call: str) -> NoReturn:
    """``fake``'s process has not ended ``GUARD_SECONDS`` after ``call`` began waiting for
    it, where the tape says it did: reported as a mismatch (replay cannot follow the
    tape), then raised, so that replay never hangs."""
    entry = fake.entry
    if entry.unfinished:
        state = "was still running when interception ended"
    elif fake.signal_ends_output and (fake.pump is None or fake.pump.signaled is None):
        state = f"was ended by the signal(s) {entry.signals} the program sent it"
    elif fake.timeouts_left > 0:
        state = (
            f"ended after {entry.timeouts} communicate(timeout=...) call(s) timed out "
            f"({fake.timeouts_left} have not yet here)"
        )
    else:
        state = "ended once its recorded output was read"
    what = (
        f"seq {entry.seq}: {call} on the replayed process {entry.argv!r} (worker "
        f"{entry.worker!r}) would block: on the tape it {state}, and after "
        f"{GUARD_SECONDS:g} s it still has not ended here."
    )
    hint = (
        " Read its output before waiting, send it the signal the recording did, or "
        "record the tape again if the program now drives the process differently."
    )
    fake.server.engine.mismatch(
        MismatchKind.ERROR_MISMATCH,
        seq=entry.seq,
        worker=entry.worker,
        boundary="process",
        message=what,
        expected=f"the process ends ({state})",
        actual=f"{call} still waiting after {GUARD_SECONDS:g} s",
    )
    raise UsageError(what + hint)


def _unsignaled(fake: Fake) -> None:
    """The program read all the output of a process the recording ended with a signal,
    and the signal did not come: its output is ended, so that the read returns."""
    entry = fake.entry
    fake.server.engine.mismatch(
        MismatchKind.ERROR_MISMATCH,
        seq=entry.seq,
        worker=entry.worker,
        boundary="process",
        message=f"seq {entry.seq}: the program read all the output of the replayed process "
        f"{entry.argv!r} and waited {_pump.STALL_SECONDS:g} s more for its end, but the "
        f"signal(s) {entry.signals} that ended it on the tape never came; its output was "
        "ended so that the program does not hang.",
        expected=f"the signal(s) {entry.signals}",
        actual="no signal",
    )


def items(engine: ReplaySide, entry: ProcessCall) -> list[tuple[str, Payload]]:
    """The recorded bytes in the order the pump serves them."""
    if entry.chunks is not None:
        return [(chunk.stream, chunk.data) for chunk in entry.chunks]
    items: list[tuple[str, Payload]] = []
    for stream, payload in (("stdin", entry.input),
                            ("stdout", engine.stored(entry, entry.stdout, "stdout")),
                            ("stderr", engine.stored(entry, entry.stderr, "stderr"))):  # fmt: skip
        if payload is not None:
            items.append((stream, payload))
    return items
