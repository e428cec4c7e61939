"""Recording: the tape that writes every boundary call to a cassette.

Recording is observability, never the critical path: whatever goes wrong inside it (an
unwritable directory, a full disk, a value with no JSON form) gives one
:class:`RecordingWarning` and the application goes on unharmed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import inspect
import itertools
import os
import platform
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

from . import _hooks
from ._cassette import CassetteWriter, load, truncate_torn_tail
from ._clock import Clock, RealClock
from ._context import _parent, _worker
from ._entries import (
    AgentTurn,
    Call,
    Entry,
    Error,
    ErrorInfo,
    ProcessCall,
    SessionEnd,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
)
from ._errors import CassetteError, RecordingWarning, UsageError
from ._policy import (
    DEFAULT_MAX_INLINE_BYTES,
    Level,
    PayloadCodec,
    Unencodable,
    error_info,
    extract_usage,
    format_traceback,
    qualname,
    to_data,
)
from ._runner import ProcessResult, ProcessRunner, ProcessStream, SubprocessRunner
from ._scrub import PathRoots, Scrubber
from ._tape import BoundaryKind, Mode, Tape
from ._version import __version__

__all__ = [
    "ENV_VAR",
    "DisabledTape",
    "RecordTape",
    "add_record_argument",
    "record",
    "record_path",
]

#: The environment variable that turns recording on: ``SESSIONTAPE_RECORD=PATH``.
ENV_VAR: Final = "SESSIONTAPE_RECORD"

IfExists = Literal["force", "append"]

_time_ns: Final = time.time_ns
_mono_ns: Final = time.monotonic_ns
_current_thread: Final = threading.current_thread

#: Set while a recorded runner call runs, so a patched ``Popen`` under it is not
#: recorded twice.
_in_process_call: ContextVar[bool] = ContextVar("sessiontape_in_process_call", default=False)


class RecordTape(Tape):
    """A tape writing to a cassette. Create it with :func:`record`."""

    mode = Mode.RECORD

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        config: Any = None,
        app_version: str | None = None,
        entrypoint: str | None = None,
        level: Level | str = Level.FULL,
        if_exists: IfExists = "force",
        roots: Mapping[str, str] | PathRoots | None = None,
        max_inline_bytes: int = DEFAULT_MAX_INLINE_BYTES,
        redact: bool = True,
    ) -> None:
        if if_exists not in ("force", "append"):
            raise UsageError(f"if_exists must be 'force' or 'append', got {if_exists!r}.")
        self.path = Path(path)
        self.level = Level.parse(level)
        self.roots = roots if isinstance(roots, PathRoots) else PathRoots.default(roots)
        self.scrubber = Scrubber(self.roots, redact=redact, extra=_hooks.scrub_functions())
        self.codec = PayloadCodec(self.level, max_inline_bytes, scrub=self.scrubber.text)
        self._clock = RealClock()
        self._counts: Counter[str] = Counter()
        self._warned: set[str] = set()
        self._finished = False
        self._started_mono = _mono_ns()
        self.run_id = uuid.uuid4().hex
        #: Where ``if_exists="force"`` moved the previous cassette, if there was one.
        self.moved_to: Path | None = None
        first_seq = 0
        append = False
        if self.path.exists():
            if if_exists == "append":
                first_seq, previous_run = self._resume()
                append = first_seq > 0
                if append:
                    self.run_id = previous_run
            else:
                self.moved_to = _move_aside(self.path)
        self._seq = itertools.count(first_seq)
        self._writer = CassetteWriter(self.path, append=append)
        if not append:
            self._write(
                SessionStart(
                    seq=next(self._seq),
                    ts_ns=_time_ns(),
                    mono_ns=self._started_mono,
                    worker=_worker.get(),
                    thread=_current_thread().name,
                    run_id=self.run_id,
                    recorded_at=_dt.datetime.now(_dt.timezone.utc).isoformat(),
                    sessiontape_version=__version__,
                    app_version=app_version,
                    entrypoint=entrypoint if entrypoint is not None else _entrypoint(),
                    config=self._data(config, "config"),
                    level=self.level.value,
                    host=socket.gethostname(),
                    platform=platform.platform(),
                    python=platform.python_version(),
                    roots=self.roots.as_dict(),
                )
            )

    def _resume(self) -> tuple[int, str]:
        """Prepare to append: drop a torn tail, return the next seq and the run id."""
        try:
            truncate_torn_tail(self.path)
            previous = load(self.path)
        except CassetteError as exc:
            raise CassetteError(
                f"cannot append to it: {exc.reason} Nothing was changed; record with "
                "if_exists='force' to move it aside and start a new cassette.",
                path=exc.path,
                line=exc.line,
            ) from None
        return previous.entries[-1].seq + 1, previous.header.run_id

    # -- plumbing -------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether calls are still being recorded (false after a recording failure)."""
        return self._writer.active and not self._finished

    @property
    def clock(self) -> Clock:
        return self._clock

    def _write(self, entry: Entry) -> None:
        self._counts[entry.__struct_config__.tag] += 1  # type: ignore[index]
        self._writer.write(entry)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(f"sessiontape: {message}", RecordingWarning, stacklevel=4)

    def _data(self, value: Any, what: str) -> Any:
        """``value`` as scrubbed JSON data; unencodable values become their repr."""
        if self.level is Level.MINIMAL:
            return None
        try:
            data = to_data(value)
        except Unencodable as exc:
            self._warn_once(
                f"unencodable:{what}",
                f"{what} has no JSON form ({exc}); it was recorded as its repr and will not "
                "replay. Make it a dataclass, msgspec Struct or plain data.",
            )
            return {"$repr": repr(value)}
        return self.scrubber.data(data)

    def _open(self) -> tuple[int, int, int, str, str, int | None]:
        return (
            next(self._seq),
            _time_ns(),
            _mono_ns(),
            _worker.get(),
            _current_thread().name,
            _parent.get(),
        )

    # -- boundaries -----------------------------------------------------------------

    def process_runner(self, inner: ProcessRunner | None = None) -> ProcessRunner:
        return _RecordingRunner(self, inner if inner is not None else SubprocessRunner())

    def record_process(
        self,
        opened: tuple[int, int, int, str, str, int | None],
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None,
        env: Mapping[str, str] | None,
        input: str | bytes | None,
        text: bool,
        timeout: float | None,
        streamed: bool = False,
        returncode: int | None = None,
        stdout: str | bytes | None = None,
        stderr: str | bytes | None = None,
        timed_out: bool = False,
        spawn_error: ErrorInfo | None = None,
    ) -> None:
        """Write one :class:`ProcessCall` for a call opened with ``_open()``."""
        seq, ts_ns, mono_ns, worker, thread, parent = opened
        scrub = self.scrubber
        codec = self.codec
        full = self.level is not Level.MINIMAL
        self._write(
            ProcessCall(
                seq=seq,
                ts_ns=ts_ns,
                mono_ns=mono_ns,
                worker=worker,
                thread=thread,
                parent=parent,
                argv=scrub.argv([os.fspath(a) for a in argv]),
                cwd=scrub.path(os.fspath(cwd)) if cwd is not None else None,
                env=scrub.env(env) if env is not None and full else None,
                input=codec.encode(input),
                text=text,
                timeout=timeout,
                streamed=streamed,
                returncode=returncode,
                stdout=codec.encode(stdout),
                stderr=codec.encode(stderr),
                timed_out=timed_out,
                spawn_error=spawn_error,
                duration_ns=_mono_ns() - mono_ns,
            )
        )

    def agent(
        self,
        adapter: Any = None,
        *,
        method: str | Sequence[str] = "execute",
        result_type: Any = None,
        name: str = "agent",
    ) -> Any:
        if adapter is None:
            raise UsageError(
                "tape.agent() needs the adapter to record when recording; pass it as the "
                "first argument (replay ignores it)."
            )
        return _proxy(self, adapter, name, _names(method), self._agent_recorder(name))

    def store(
        self,
        store: Any = None,
        *,
        mutations: Sequence[str],
        snapshot: Callable[..., Any] | None = None,
        factory: Callable[[Any], Any] | None = None,
        name: str = "store",
    ) -> Any:
        if store is None:
            raise UsageError(
                "tape.store() needs the live store when recording; pass it as the first "
                "argument (replay builds one with factory(snapshot) instead)."
            )
        if snapshot is not None and self.active:
            seq, ts_ns, mono_ns, worker, thread, parent = self._open()
            data: Any = None
            err: ErrorInfo | None = None
            try:
                data = self._data(_call_snapshot(snapshot, store), f"snapshot of {name!r}")
            except Exception as exc:  # a failing snapshot must not break the app
                err = error_info(exc)
            self._write(
                StoreSnapshot(
                    seq=seq,
                    ts_ns=ts_ns,
                    mono_ns=mono_ns,
                    worker=worker,
                    thread=thread,
                    parent=parent,
                    store=name,
                    data=data,
                    error=err,
                )
            )
        return _proxy(self, store, name, _names(mutations), self._store_recorder(name))

    def boundary(
        self,
        name: str,
        obj: Any = None,
        *,
        methods: Sequence[str],
        kind: BoundaryKind | Literal["substitute", "verify"] = BoundaryKind.SUBSTITUTE,
        result_type: Any = None,
    ) -> Any:
        mode = BoundaryKind(kind)
        if obj is None:
            raise UsageError(f"tape.boundary({name!r}) needs the object to record.")
        if name in ("process", "agent", "store"):
            raise UsageError(
                f"boundary name {name!r} is reserved for the preset; use "
                f"tape.{name if name != 'process' else 'process_runner'}() or another name."
            )
        return _proxy(self, obj, name, _names(methods), self._call_recorder(name, mode))

    def _call_fields(
        self,
        label: str,
        base: tuple[int, int, int, str, str, int | None],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result: Any,
        err: ErrorInfo | None,
        duration: int,
    ) -> dict[str, Any]:
        """The fields every recorded method call has, its data made JSON-ready."""
        fields: dict[str, Any] = dict(zip(_COMMON_FIELDS, base, strict=True))
        fields["args"] = self._data(list(args), f"{label} arguments") or []
        fields["kwargs"] = self._data(kwargs, f"{label} arguments") or {}
        fields["result"] = None if err is not None else self._data(result, label)
        fields["error"] = err
        fields["duration_ns"] = duration
        return fields

    @staticmethod
    def _agent_recorder(name: str) -> _EntryMaker:
        def make(fields: dict[str, Any], method: str, result: Any, failed: bool) -> Entry:
            return AgentTurn(
                **fields,
                agent=name,
                method=method,
                result_type=None if failed else qualname(type(result)),
                usage=extract_usage(fields["result"]),
            )

        return make

    @staticmethod
    def _store_recorder(name: str) -> _EntryMaker:
        def make(fields: dict[str, Any], method: str, result: Any, failed: bool) -> Entry:
            return StoreMutation(**fields, store=name, operation=method)

        return make

    @staticmethod
    def _call_recorder(boundary: str, kind: BoundaryKind) -> _EntryMaker:
        def make(fields: dict[str, Any], method: str, result: Any, failed: bool) -> Entry:
            return Call(**fields, boundary=boundary, method=method, mode=kind.value)

        return make

    def patch_subprocess(self) -> AbstractContextManager[None]:
        return _patched_popen(_recording_popen_class(self))

    # -- ending ---------------------------------------------------------------------

    def record_error(self, exc: BaseException, tb: TracebackType | None = None) -> None:
        """Write an :class:`Error` entry for an exception that escaped the session."""
        if not self.active:
            return
        seq, ts_ns, mono_ns, worker, thread, parent = self._open()
        trace = format_traceback(type(exc), exc, tb or exc.__traceback__)
        self._write(
            Error(
                seq=seq,
                ts_ns=ts_ns,
                mono_ns=mono_ns,
                worker=worker,
                thread=thread,
                parent=parent,
                type=qualname(type(exc)),
                message=self.scrubber.text(str(exc)),
                traceback=self.scrubber.text(trace),
            )
        )

    def finish(self, outcome: Any = None) -> None:
        """Write ``SessionEnd`` with ``outcome`` (JSON-ready data or a dataclass/Struct)."""
        if self._finished:
            return
        if self._writer.active:
            seq, ts_ns, mono_ns, worker, thread, parent = self._open()
            counts = dict(self._counts)
            counts["session_end"] = counts.get("session_end", 0) + 1
            self._write(
                SessionEnd(
                    seq=seq,
                    ts_ns=ts_ns,
                    mono_ns=mono_ns,
                    worker=worker,
                    thread=thread,
                    parent=parent,
                    outcome=self._data(outcome, "outcome"),
                    counts=counts,
                    duration_ns=mono_ns - self._started_mono,
                )
            )
        self._finished = True

    def close(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        if exc is not None and not self._finished:
            self.record_error(exc, tb)
            # A crash leaves no SessionEnd: the tape then loads as a crashed session.
            self._finished = True
        self.finish()
        self._writer.close()

    @property
    def counts(self) -> dict[str, int]:
        """How many entries of each kind were written so far."""
        return dict(self._counts)


#: The fields every entry has, in the order ``RecordTape._open()`` returns them.
_COMMON_FIELDS: Final = ("seq", "ts_ns", "mono_ns", "worker", "thread", "parent")

#: Builds a boundary's entry from the common call fields (``RecordTape._call_fields``),
#: the method name, the result, and whether the call raised.
_EntryMaker = Callable[[dict[str, Any], str, Any, bool], Entry]


def _names(value: str | Sequence[str]) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else tuple(value)
    if not names:
        raise UsageError("name at least one method to record.")
    return names


def _call_snapshot(snapshot: Callable[..., Any], store: Any) -> Any:
    """Call a snapshot function bound (``store.list_tasks``) or unbound (``Store.dump``)."""
    try:
        params = inspect.signature(snapshot).parameters.values()
    except (TypeError, ValueError):
        return snapshot()
    required = [
        p
        for p in params
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return snapshot(store) if required else snapshot()


class _Proxy:
    """Stands in for a wrapped object: named methods are recorded, the rest pass through."""

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_sessiontape_target", target)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_sessiontape_target"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_sessiontape_target"), name, value)

    def __repr__(self) -> str:
        return f"<sessiontape proxy of {object.__getattribute__(self, '_sessiontape_target')!r}>"


def _proxy(
    tape: RecordTape, target: Any, name: str, methods: tuple[str, ...], make: _EntryMaker
) -> Any:
    proxy = _Proxy(target)
    for method in methods:
        bound = getattr(target, method, None)
        if not callable(bound):
            raise UsageError(
                f"{type(target).__name__} has no method {method!r} to record; the methods "
                f"named must exist on the object (got {list(methods)!r})."
            )
        recorded = _recorded_method(tape, f"{name}.{method}", method, bound, make)
        object.__setattr__(proxy, method, recorded)
    return proxy


def _recorded_method(
    tape: RecordTape, label: str, method: str, bound: Callable[..., Any], make: _EntryMaker
) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if not tape.active:
            return bound(*args, **kwargs)
        opened = tape._open()
        token = _parent.set(opened[0])
        try:
            result = bound(*args, **kwargs)
        except BaseException as exc:
            _parent.reset(token)
            err = error_info(exc, with_traceback=False)
            duration = _mono_ns() - opened[2]
            fields = tape._call_fields(label, opened, args, kwargs, None, err, duration)
            tape._write(make(fields, method, None, True))
            raise
        _parent.reset(token)
        duration = _mono_ns() - opened[2]
        fields = tape._call_fields(label, opened, args, kwargs, result, None, duration)
        tape._write(make(fields, method, result, False))
        return result

    call.__name__ = method
    call.__doc__ = getattr(bound, "__doc__", None)
    return call


class _RecordingRunner:
    """A :class:`ProcessRunner` that records every call of the runner it wraps."""

    def __init__(self, tape: RecordTape, inner: ProcessRunner) -> None:
        self._tape = tape
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
        tape = self._tape
        if not tape.active:
            return self.inner.run(argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text)
        opened = tape._open()
        token = _parent.set(opened[0])
        flag = _in_process_call.set(True)
        try:
            result = self.inner.run(argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text)
        except subprocess.TimeoutExpired as exc:
            tape.record_process(
                opened, argv, cwd=cwd, env=env, input=input, text=text, timeout=timeout,
                stdout=exc.stdout, stderr=exc.stderr, timed_out=True,
            )  # fmt: skip
            raise
        except Exception as exc:
            tape.record_process(
                opened, argv, cwd=cwd, env=env, input=input, text=text, timeout=timeout,
                spawn_error=error_info(exc, with_traceback=False),
            )  # fmt: skip
            raise
        finally:
            _in_process_call.reset(flag)
            _parent.reset(token)
        tape.record_process(
            opened, argv, cwd=cwd, env=env, input=input, text=text, timeout=timeout,
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
        tape = self._tape
        if not tape.active:
            return self.inner.stream(
                argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text
            )
        opened = tape._open()
        call: dict[str, Any] = {
            "cwd": cwd, "env": env, "input": input, "text": text, "timeout": timeout,
        }  # fmt: skip
        try:
            inner = self.inner.stream(
                argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text
            )
        except Exception as exc:
            tape.record_process(
                opened, argv, streamed=True, spawn_error=error_info(exc, with_traceback=False),
                **call,
            )  # fmt: skip
            raise
        return _RecordingStream(tape, opened, argv, inner, call)


class _RecordingStream(ProcessStream):
    """Passes lines through from the real stream and records the call when it closes."""

    def __init__(
        self,
        tape: RecordTape,
        opened: tuple[int, int, int, str, str, int | None],
        argv: Sequence[str],
        inner: ProcessStream,
        call: dict[str, Any],
    ) -> None:
        super().__init__(argv, text=call["text"])
        self._tape = tape
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
            self._tape.record_process(
                self._opened, self.argv, streamed=True, stdout=stdout, timed_out=True,
                **self._call,
            )  # fmt: skip
            raise
        self.stderr = self._inner.stderr
        self._tape.record_process(
            self._opened, self.argv, streamed=True, returncode=self.returncode,
            stdout=stdout, stderr=self.stderr, **self._call,
        )  # fmt: skip


# -- patch_subprocess (shared with replay) ----------------------------------------------

_REAL_POPEN: Final = subprocess.Popen
_patch_lock = threading.Lock()


@contextmanager
def _patched_popen(replacement: type[Any]) -> Iterator[None]:
    """Install ``replacement`` as :class:`subprocess.Popen` for the block."""
    with _patch_lock:
        if subprocess.Popen is not _REAL_POPEN:
            raise UsageError(
                "subprocess.Popen is already patched (a tape.patch_subprocess() block is "
                "active, or another library patched it); nest no patch_subprocess() blocks."
            )
        subprocess.Popen = replacement  # type: ignore[misc]
    try:
        yield
    finally:
        with _patch_lock:
            subprocess.Popen = _REAL_POPEN  # type: ignore[misc]


def _popen_text(kwargs: Mapping[str, Any]) -> bool:
    return bool(
        kwargs.get("text")
        or kwargs.get("universal_newlines")
        or kwargs.get("encoding")
        or kwargs.get("errors")
    )


def _popen_argv(args: Any, kwargs: Mapping[str, Any]) -> list[str]:
    if isinstance(args, (str, bytes, os.PathLike)):
        argv = [os.fsdecode(args)]
        if kwargs.get("shell"):
            argv = ["/bin/sh", "-c", argv[0]]
        return argv
    return [os.fsdecode(a) for a in args]


def _recording_popen_class(tape: RecordTape) -> type[Any]:
    class RecordingPopen(_REAL_POPEN):  # type: ignore[misc,valid-type]
        """``subprocess.Popen`` that records the call when it completes."""

        def __init__(self, args: Any, *pargs: Any, **kwargs: Any) -> None:
            self._st_record = tape.active and not _in_process_call.get()
            self._st_text = _popen_text(kwargs)
            self._st_call: dict[str, Any] = {
                "cwd": kwargs.get("cwd"),
                "env": kwargs.get("env"),
                "text": self._st_text,
                "timeout": None,
                "input": None,
            }
            self._st_argv = _popen_argv(args, kwargs)
            self._st_opened = tape._open() if self._st_record else None
            try:
                super().__init__(args, *pargs, **kwargs)
            except Exception as exc:
                if self._st_opened is not None:
                    tape.record_process(
                        self._st_opened, self._st_argv,
                        spawn_error=error_info(exc, with_traceback=False), **self._st_call,
                    )  # fmt: skip
                raise

        def _st_done(self, stdout: Any, stderr: Any, *, timed_out: bool = False) -> None:
            opened, self._st_opened = self._st_opened, None
            if opened is not None:
                tape.record_process(
                    opened, self._st_argv, returncode=None if timed_out else self.returncode,
                    stdout=stdout, stderr=stderr, timed_out=timed_out, **self._st_call,
                )  # fmt: skip

        def communicate(self, input: Any = None, timeout: float | None = None) -> Any:
            if self._st_opened is not None:
                self._st_call["input"] = input
                self._st_call["timeout"] = timeout
            try:
                out, err = super().communicate(input, timeout)
            except subprocess.TimeoutExpired as exc:
                self._st_done(exc.stdout, exc.stderr, timed_out=True)
                raise
            self._st_done(out, err)
            return out, err

        def wait(self, timeout: float | None = None) -> int:
            code: int = super().wait(timeout)
            if self._st_opened is not None and self.stdout is None and self.stderr is None:
                self._st_done(None, None)
            return code

    return RecordingPopen


# -- disabled recording -------------------------------------------------------------------


class DisabledTape(Tape):
    """The tape when recording is off: every wrapper returns what it was given.

    This is the no-op fast path: with recording disabled there is nothing between the
    application and its runner, agent or store.
    """

    mode = Mode.DISABLED

    def __init__(self) -> None:
        self._clock = RealClock()

    @property
    def clock(self) -> Clock:
        return self._clock

    def process_runner(self, inner: ProcessRunner | None = None) -> ProcessRunner:
        return inner if inner is not None else SubprocessRunner()

    def agent(
        self,
        adapter: Any = None,
        *,
        method: str | Sequence[str] = "execute",
        result_type: Any = None,
        name: str = "agent",
    ) -> Any:
        return adapter

    def store(
        self,
        store: Any = None,
        *,
        mutations: Sequence[str],
        snapshot: Callable[..., Any] | None = None,
        factory: Callable[[Any], Any] | None = None,
        name: str = "store",
    ) -> Any:
        return store

    def boundary(
        self,
        name: str,
        obj: Any = None,
        *,
        methods: Sequence[str],
        kind: BoundaryKind | Literal["substitute", "verify"] = BoundaryKind.SUBSTITUTE,
        result_type: Any = None,
    ) -> Any:
        return obj

    def patch_subprocess(self) -> AbstractContextManager[None]:
        return nullcontext()

    def finish(self, outcome: Any = None) -> None:
        return None

    def close(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        return None


# -- entry points ---------------------------------------------------------------------------


def record(
    path: str | os.PathLike[str] | None = None,
    *,
    config: Any = None,
    app_version: str | None = None,
    entrypoint: str | None = None,
    level: Level | str = Level.FULL,
    if_exists: IfExists = "force",
    roots: Mapping[str, str] | PathRoots | None = None,
    max_inline_bytes: int = DEFAULT_MAX_INLINE_BYTES,
    redact: bool = True,
) -> Tape:
    """Start recording a session to the cassette at ``path``.

    With ``path=None`` the ``SESSIONTAPE_RECORD`` environment variable names the cassette;
    when it is unset too, recording is disabled and the returned tape passes everything
    through untouched. ``if_exists="force"`` moves an existing cassette to
    ``NAME.old.TIMESTAMP``; ``"append"`` resumes it, continuing its seqs. ``roots`` maps
    placeholder names to directories (``{"repo": "/srv/app"}``) in addition to the
    defaults (the git checkout around the current directory, home, temp).
    """
    if path is None:
        path = os.environ.get(ENV_VAR) or None
    if path is None:
        return DisabledTape()
    return RecordTape(
        path,
        config=config,
        app_version=app_version,
        entrypoint=entrypoint,
        level=level,
        if_exists=if_exists,
        roots=roots,
        max_inline_bytes=max_inline_bytes,
        redact=redact,
    )


def add_record_argument(parser: argparse.ArgumentParser, *, flag: str = "--record-session") -> None:
    """Add ``--record-session PATH`` to an application's argparse parser.

    Pair it with :func:`record_path`: ``sessiontape.record(sessiontape.record_path(args))``.
    """
    parser.add_argument(
        flag,
        metavar="PATH",
        default=None,
        help=f"record this run to a sessiontape cassette at PATH (or set {ENV_VAR}=PATH)",
    )


def record_path(
    args: argparse.Namespace | None = None, *, dest: str = "record_session"
) -> str | None:
    """The cassette path asked for by ``--record-session`` or ``SESSIONTAPE_RECORD``."""
    value = getattr(args, dest, None) if args is not None else None
    return value or os.environ.get(ENV_VAR) or None


def _move_aside(path: Path) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.old.{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.old.{stamp}.{n}")
        n += 1
    shutil.move(os.fspath(path), os.fspath(target))
    return target


def _entrypoint() -> str:
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else ""
