"""The process boundary: every call through a :class:`ProcessRunner`, recorded and served.

Recording, :class:`RecordingRunner` wraps the application's runner and writes one
:class:`~sessiontape.ProcessCall` per call (a streamed call when its stream closes). On
replay :class:`ProcessReplay` is the FIFO fake runner: it checks each request against the
head of the worker's queue and answers with the recorded result, raising the recorded
timeout or spawn error again. ``patch_subprocess`` (``_popen.py``) records and serves
through the same two functions, :func:`record_process` and :class:`ProcessReplay`.
"""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Final

import msgspec

from .._context import parent_var
from ..cassette import (
    BOUNDARY_PROCESS,
    ENV_DELTA_SINCE,
    ErrorInfo,
    Level,
    Payload,
    ProcessCall,
    exact_bytes,
    exact_request,
)
from ..recorder import Opened
from ..replayer import rebuild_error
from ..scrub import error_info
from ._protocols import RecordSide, ReplaySide
from ._runner import ProcessResult, ProcessRunner, ProcessStream, check_argv

__all__ = [
    "IN_PROCESS_CALL",
    "UNKNOWN_INPUT",
    "ProcessReplay",
    "RecordingRunner",
    "env_delta",
    "record_outcome",
    "record_process",
]

#: Set while a recorded runner call runs, so a patched ``Popen`` under it is not
#: recorded twice.
IN_PROCESS_CALL: Final[ContextVar[bool]] = ContextVar("sessiontape_in_process_call", default=False)
#: ``input`` for :meth:`ProcessReplay.serve` when stdin is not known yet: the request is
#: matched without it, and the boundary checks stdin when the program has written it.
UNKNOWN_INPUT: Final[Any] = object()


#: The key of an environment delta that says every variable not listed was removed.
ONLY_LISTED: Final = "*"


def env_delta(env: Mapping[Any, Any] | None) -> dict[str, str | None] | None:
    """A child's environment as its difference from ``os.environ`` now.

    Added and changed variables keep their value; a removed one is ``None``. A child
    that keeps fewer than half of the parent's variables was given an environment of its
    own: it is recorded whole, with ``"*": None`` for "nothing else", so that it compares
    alike on a machine whose environment has other variables. ``None`` for a child that
    inherits the parent's environment (``env=None``).
    """
    if env is None:
        return None
    parent = os.environ
    child = {os.fsdecode(k): os.fsdecode(v) for k, v in env.items()}
    kept = sum(1 for key in parent if key in child)
    if kept * 2 < len(parent):
        only: dict[str, str | None] = dict(child)
        only[ONLY_LISTED] = None
        return only
    delta: dict[str, str | None] = {k: v for k, v in child.items() if parent.get(k) != v}
    for key in parent:
        if key not in child:
            delta[key] = None
    return delta


# -- record side ----------------------------------------------------------------------


# Every recorded call is a copy of this one with the call's fields in it: replace() takes
# nineteen of them at a fifth of the cost of a constructor given as many.
_CALL: Final = ProcessCall(seq=0, ts_ns=0, mono_ns=0, argv=[])
_replace: Final = msgspec.structs.replace


def _str_argv(argv: Sequence[str]) -> tuple[list[str], bool]:
    """``argv`` as a list of str (the list itself when it is one: the usual case), and
    whether it is all ASCII (then it holds no bytes that are not UTF-8).

    One join at C speed tells both, as it refuses anything but a str (bytes, a path).
    """
    if type(argv) is list:
        try:
            return argv, "".join(argv).isascii()
        except TypeError:
            pass
    argv = [os.fsdecode(a) for a in argv]
    return argv, "".join(argv).isascii()


def record_process(
    rec: RecordSide,
    opened: Opened,
    argv: Sequence[str],
    *,
    cwd: str | bytes | os.PathLike[str] | None,
    env: Mapping[str, str | None] | None,
    input: str | bytes | None,
    text: bool,
    timeout: float | None,
    streamed: bool = False,
    returncode: int | None = None,
    stdout: str | bytes | None = None,
    stderr: str | bytes | None = None,
    timed_out: bool = False,
    spawn_error: ErrorInfo | None = None,
    duration_ns: int | None = None,
    **more: Any,
) -> None:
    """Write one :class:`ProcessCall` for a call opened with ``rec.open()``.

    ``env`` is the child's environment as :func:`env_delta` gave it when the call
    started; ``more`` are the fields only ``patch_subprocess()`` records (``chunks``,
    ``polls``, ``timeouts``, ``signals``, ``unfinished``), already encoded.
    """
    codec = rec.codec
    seq, ts_ns, mono_ns, worker, thread, parent = opened
    argv, ascii_argv = _str_argv(argv)
    env = None if env is None or rec.level is Level.MINIMAL else dict(env)
    if (
        (env is not None or not ascii_argv)  # else all text: the common case, told now
        and rec.level is not Level.MINIMAL
        and exact_bytes(argv, env)[2] is not None
    ):
        # Some value is not UTF-8 (a str with surrogate escapes, which JSON cannot hold):
        # kept readable and exact, both from the scrubbed value (a secret is redacted in
        # both forms before anything is written).
        scrub = rec.scrubber
        argv, env, more["exact"] = exact_bytes(scrub.argv(argv), scrub.env(env) if env else env)
    # argv, cwd and env are scrubbed on the write path (``Recorder.write``), in the one
    # place every entry goes through; payloads are scrubbed by the codec, which must see
    # them scrubbed before it decides to keep them inline or in the sidecar.
    rec.write(
        _replace(
            _CALL,
            seq=seq,
            ts_ns=ts_ns,
            mono_ns=mono_ns,
            worker=worker,
            thread=thread,
            parent=parent,
            argv=argv,
            cwd=cwd if cwd is None or type(cwd) is str else os.fsdecode(cwd),
            env=env,
            input=None if input is None else codec.encode(input),
            text=text,
            timeout=timeout,
            streamed=streamed,
            returncode=returncode,
            stdout=None if stdout is None else codec.encode(stdout),
            stderr=None if stderr is None else codec.encode(stderr),
            timed_out=timed_out,
            spawn_error=spawn_error,
            duration_ns=rec.elapsed(opened) if duration_ns is None else duration_ns,
            **more,
        )
    )


def record_outcome(
    rec: RecordSide,
    opened: Opened,
    argv: Sequence[str],
    call: dict[str, Any],
    result: ProcessResult | None,
    exc: BaseException | None,
) -> None:
    """Record how a runner call ended: its result, a timeout or a spawn error."""
    if exc is None:
        if result is not None:
            record_process(
                rec, opened, argv, returncode=result.returncode, stdout=result.stdout,
                stderr=result.stderr, **call,
            )  # fmt: skip
    elif isinstance(exc, subprocess.TimeoutExpired):
        record_process(
            rec, opened, argv, stdout=exc.stdout, stderr=exc.stderr, timed_out=True, **call
        )
    else:
        record_process(rec, opened, argv, spawn_error=error_info(exc, with_traceback=False), **call)


class RecordingRunner:
    """A :class:`ProcessRunner` that records every call of the runner it wraps."""

    def __init__(self, rec: RecordSide, inner: ProcessRunner) -> None:
        self._rec = rec
        self.inner = inner

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        """Run ``argv`` through the inner runner and record the call."""
        if isinstance(argv, (str, bytes)):  # check_argv's test first: this runs per call
            check_argv(argv, "runner.run")
        rec = self._rec
        if not rec.active:
            return self.inner.run(argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text)
        opened = rec.open()
        delta = None if env is None else env_delta(env)
        token = parent_var.set(opened[0])
        flag = IN_PROCESS_CALL.set(True)
        try:
            result = self.inner.run(argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text)
        except Exception as exc:
            call = {"cwd": cwd, "env": delta, "input": input, "text": text, "timeout": timeout}
            record_outcome(rec, opened, argv, call, None, exc)
            raise
        finally:
            IN_PROCESS_CALL.reset(flag)
            parent_var.reset(token)
        if result is not None:
            # What record_outcome() does for a result, without building the call's dict.
            record_process(
                rec, opened, argv, cwd=cwd, env=delta, input=input, text=text, timeout=timeout,
                returncode=result.returncode, stdout=result.stdout, stderr=result.stderr,
            )  # fmt: skip
        return result

    def stream(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = True,
    ) -> ProcessStream:
        """Start ``argv`` through the inner runner; the call is recorded when it closes."""
        check_argv(argv, "runner.stream")
        rec = self._rec
        if not rec.active:
            return self.inner.stream(
                argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text
            )
        opened = rec.open()
        call: dict[str, Any] = {
            "cwd": cwd, "env": env_delta(env), "input": input, "text": text, "timeout": timeout,
        }  # fmt: skip
        try:
            inner = self.inner.stream(
                argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text
            )
        except Exception as exc:
            record_process(
                rec, opened, argv, streamed=True,
                spawn_error=error_info(exc, with_traceback=False), **call,
            )  # fmt: skip
            raise
        return _RecordingStream(rec, opened, argv, inner, call)


class _RecordingStream(ProcessStream):
    """Passes lines through from the real stream and records the call when it closes."""

    def __init__(
        self,
        rec: RecordSide,
        opened: Opened,
        argv: Sequence[str],
        inner: ProcessStream,
        call: dict[str, Any],
    ) -> None:
        super().__init__(argv, text=call["text"])
        self._rec = rec
        self._opened = opened
        self._inner = inner
        self._call = call
        self._seen: list[Any] = []

    def _lines(self) -> Iterator[Any]:
        for line in self._inner:
            self._seen.append(line)
            yield line

    def _finish(self) -> None:
        empty: str | bytes = "" if self.text else b""
        stdout = empty.join(self._seen)
        try:
            self.returncode = self._inner.close()
        except subprocess.TimeoutExpired:
            record_process(
                self._rec, self._opened, self.argv, streamed=True, stdout=stdout,
                timed_out=True, **self._call,
            )  # fmt: skip
            raise
        self.stderr = self._inner.stderr
        record_process(
            self._rec, self._opened, self.argv, streamed=True, returncode=self.returncode,
            stdout=stdout, stderr=self.stderr, **self._call,
        )  # fmt: skip


# -- replay side ----------------------------------------------------------------------


class ProcessReplay:
    """The replay side of the process boundary: serves process calls from the tape.

    One per replay, shared by the fake runner and the patched ``Popen``.
    """

    def __init__(self, engine: ReplaySide) -> None:
        self.engine = engine
        # Today's working directories in their recorded form (roots as placeholders):
        # an application runs many calls in few directories. Keyed by the scrubber that
        # made them, since set_roots() replaces it.
        self._cwd_forms: tuple[object, dict[str, str]] = (engine.scrubber, {})

    def runner(self) -> ProcessRunner:
        """The FIFO fake runner."""
        return _ReplayRunner(self)

    def _cwd_form(self, cwd: str) -> str:
        scrubber, cache = self._cwd_forms
        if scrubber is not self.engine.scrubber:
            scrubber, cache = self._cwd_forms = (self.engine.scrubber, {})
        form = cache.get(cwd)
        if form is None:
            if len(cache) >= 4096:
                cache.clear()
            form = cache[cwd] = self.engine.scrubber.path(cwd)
        return form

    def same_as_head(self, argv: Sequence[str], cwd: Any) -> ProcessCall | None:
        """Take the calling worker's next recorded process call, and count it served, if
        ``argv`` and ``cwd`` are its own and it had no environment or input of its own;
        else ``None`` (and nothing changes). The common case of a runner's ``run()``, in
        one call: :meth:`serve` does the rest.
        """
        queue = self.engine.queue(BOUNDARY_PROCESS)
        if not queue:
            return None
        head = queue[0]
        if head.argv != argv or head.env is not None or head.input is not None:  # type: ignore[union-attr]
            return None
        if head.exact is not None:  # type: ignore[union-attr]
            return None  # the readable form of bytes: compared with the bytes (serve())
        recorded_cwd = head.cwd  # type: ignore[union-attr]
        if recorded_cwd != cwd and not (type(cwd) is str and recorded_cwd == self._cwd_form(cwd)):
            return None
        self.engine.serve_head(queue, head)
        return head  # type: ignore[return-value]

    def run(self, argv: Sequence[str], cwd: Any, env: Any, input: Any, text: bool) -> ProcessResult:
        """A runner's ``run()``: the entry answering it (:meth:`same_as_head`, else
        :meth:`serve`, after refusing a string argv, which never equals a recorded one),
        served, and its recorded outcome (see :meth:`answer`)."""
        entry = self.same_as_head(argv, cwd) if env is None and input is None else None
        if entry is None:
            check_argv(argv, "runner.run")
            entry = self.serve(argv, cwd=cwd, env=env, input=input)
            self.engine.served(entry)
        return self.answer(entry, argv, text)

    def serve(
        self,
        argv: Sequence[str],
        *,
        cwd: str | bytes | os.PathLike[str] | None,
        env: Mapping[Any, Any] | None,
        input: Any,
    ) -> ProcessCall:
        """Align one process request with the tape and return its entry.

        ``env`` is the child's whole environment (``None``: inherited); it is compared
        as its delta from today's ``os.environ`` (whole, for a format 1 tape).
        ``input=UNKNOWN_INPUT`` matches without stdin, which the caller checks later.
        Raises :class:`~sessiontape.UnrecordedCallError` when the tape has no answer for
        it (the report already holds the mismatch).
        """
        engine = self.engine
        head = engine.head(BOUNDARY_PROCESS)
        assert head is None or isinstance(head, ProcessCall)
        if input is UNKNOWN_INPUT:
            input = None
            deferred: Payload = head.input if head is not None else None
        else:
            deferred = UNKNOWN_INPUT
        # Fast path: identical request, nothing to normalise but the working directory
        # (today's path under a root), whose placeholder form is cached.
        if (
            head is not None
            and env is None
            and input is None
            and head.env is None
            and (head.input is None or deferred is not UNKNOWN_INPUT)
            and head.argv == argv
            and head.exact is None
            and (head.cwd == cwd or (type(cwd) is str and head.cwd == self._cwd_form(cwd)))
        ):
            engine.take_head(BOUNDARY_PROCESS)
            return head
        scrub = engine.scrubber
        if env is not None:
            if engine.recording.header.format_version >= ENV_DELTA_SINCE:
                env = env_delta(env)
            else:
                env = {os.fsdecode(k): os.fsdecode(v) for k, v in env.items()}
        shown_argv, shown_env, exact = exact_bytes(
            scrub.argv([os.fsdecode(a) for a in argv]), scrub.env(env) if env is not None else None
        )
        request = {
            "argv": shown_argv,
            "cwd": scrub.path(os.fsdecode(cwd)) if cwd is not None else None,
            "env": shown_env,
            "input": deferred
            if deferred is not UNKNOWN_INPUT
            else engine.codec.comparable(input, head.input if head is not None else None),
        }
        if exact is not None:  # bytes that are not UTF-8: compared by the bytes
            request["exact"] = exact_request(exact)
        if deferred is UNKNOWN_INPUT:
            entry = engine.take(BOUNDARY_PROCESS, request)
        else:
            entry = engine.take_before_stdin(BOUNDARY_PROCESS, request)
        if entry is None:
            raise engine.unanswered(BOUNDARY_PROCESS, f"the process call {list(argv)!r}")
        assert isinstance(entry, ProcessCall)
        return entry

    def output(self, entry: ProcessCall, field: str, text: bool) -> Any:
        """The recorded ``stdout`` or ``stderr`` of ``entry`` as served today."""
        return self.engine.payload(entry, getattr(entry, field), field, text=text)

    def answer(self, entry: ProcessCall, argv: Sequence[str], text: bool) -> ProcessResult:
        """The recorded outcome of a process call already served: its result, or the
        recorded error.

        Its ``stdout`` and ``stderr`` are read from the tape when the program reads them,
        so a payload the tape lacks fails only a program that reads it.
        """
        if entry.spawn_error is not None:
            raise rebuild_error(entry.spawn_error)
        if entry.timed_out:
            raise subprocess.TimeoutExpired(
                list(argv),
                entry.timeout or 0.0,
                output=self.output(entry, "stdout", text),
                stderr=self.output(entry, "stderr", text),
            )
        return _ReplayedResult(self, entry, argv, text)


class _ReplayedResult(ProcessResult):
    """A replayed :class:`ProcessResult` whose output is decoded when first read."""

    __slots__ = ("_entry", "_server", "_text", "_values")

    def __init__(
        self, server: ProcessReplay, entry: ProcessCall, argv: Sequence[str], text: bool
    ) -> None:
        self._server = server
        self._entry = entry
        self._text = text
        self._values: dict[str, Any] = {}  # the outputs, once read (or set)
        self.argv = list(argv)
        code = entry.returncode
        self.returncode = code if code is not None else 0
        self.duration_ns = entry.duration_ns

    def _read(self, field: str) -> Any:
        values = self._values
        try:
            return values[field]
        except KeyError:
            pass
        entry = self._entry
        served = self._server.engine.payload(entry, getattr(entry, field), field, text=self._text)
        if served is None:
            served = "" if self._text else b""
        values[field] = served
        return served

    @property
    def stdout(self) -> Any:
        """The recorded stdout (read from the tape on first access)."""
        return self._read("stdout")

    @stdout.setter
    def stdout(self, value: Any) -> None:
        self._values["stdout"] = value

    @property
    def stderr(self) -> Any:
        """The recorded stderr (read from the tape on first access)."""
        return self._read("stderr")

    @stderr.setter
    def stderr(self, value: Any) -> None:
        self._values["stderr"] = value


class _ReplayRunner:
    """The FIFO fake runner: answers each process call from the caller's queue."""

    def __init__(self, server: ProcessReplay) -> None:
        self._server = server

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        """Answer ``argv`` with its recorded result."""
        return self._server.run(argv, cwd, env, input, text)

    def stream(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = True,
    ) -> ProcessStream:
        """Answer ``argv`` with a stream of its recorded stdout lines."""
        check_argv(argv, "runner.stream")
        server = self._server
        entry = server.serve(argv, cwd=cwd, env=env, input=input)
        if entry.spawn_error is not None:
            server.engine.served(entry)
            raise rebuild_error(entry.spawn_error)
        # The application runs while it reads the lines: it sees the call's start time.
        server.engine.clock_at(entry)
        return _ReplayStream(server, entry, argv, text)


class _ReplayStream(ProcessStream):
    """Serves the recorded stdout of a streamed call line by line."""

    def __init__(
        self, server: ProcessReplay, entry: ProcessCall, argv: Sequence[str], text: bool
    ) -> None:
        super().__init__(argv, text=text)
        self._server = server
        self._entry = entry
        stdout = server.output(entry, "stdout", text)
        empty: str | bytes = "" if text else b""
        self._stdout = stdout if stdout is not None else empty

    def _lines(self) -> Iterator[Any]:
        out: Any = self._stdout
        stream: Any = io.StringIO(out) if self.text else io.BytesIO(out)
        yield from stream

    def _finish(self) -> None:
        entry = self._entry
        self._server.engine.served(entry)
        if entry.timed_out:
            raise subprocess.TimeoutExpired(self.argv, entry.timeout or 0.0)
        self.returncode = entry.returncode
        stderr = self._server.output(entry, "stderr", self.text)
        self.stderr = stderr if stderr is not None else ("" if self.text else b"")
