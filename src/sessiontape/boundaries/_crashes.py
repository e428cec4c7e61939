"""Exceptions that end a worker, not the session: recorded, and compared on replay.

A worker's crash does not reach the tape's block: a thread dies, a ``concurrent.futures``
future holds an exception nobody reads, an asyncio task's exception is never retrieved,
and the program goes on (it may even end normally). While a tape is open, these count as
the crash of a worker:

- **thread**: an exception (other than ``SystemExit``, or the stop of a saved chaos
  schedule) that ends a thread, seen by ``threading.excepthook``;
- **future**: a ``concurrent.futures.Future`` whose exception was set while the tape was
  open and was never read (by ``result()`` or ``exception()``, which ``executor.map``,
  ``asyncio.wrap_future`` and ``await loop.run_in_executor(...)`` call) before the future
  was garbage collected or the session ended (``tape.finish()``, or the end of the tape's
  block), whichever came first;
- **task**: an asyncio task or future whose exception was never retrieved, as asyncio
  itself reports it to the loop's exception handler ("Task exception was never
  retrieved", when the task is garbage collected; "unhandled exception during
  asyncio.run() shutdown"). Loops built on ``asyncio.BaseEventLoop`` (every loop of the
  standard library) are seen.

Each crash belongs to the worker it escaped from: the innermost ``sessiontape.worker()``
block it left, or the derived name of the thread or pool task that ran it (both note it
on the exception, ``_context.ESCAPED_FROM``), else the worker current where it is seen.
Recording writes it as an ``error`` entry with that ``origin``; replay hands it to the
engine, which passes it when it reproduces the recorded crash of that worker and reports
it otherwise.

The hooks are installed when the first tape opens and put back when the last one closes:
each hook calls the one it replaced (the program's own ``threading.excepthook`` or loop
exception handler still runs, and asyncio still logs), and a hook that the program has
replaced in the meantime is left where it is, passing everything through.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sysconfig
import threading
import traceback
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from .._context import ESCAPED_FROM, worker_var
from ..cassette import ErrorOrigin
from ..replayer import ScheduleStopped
from ._protocols import ReplaySide

if TYPE_CHECKING:
    import asyncio
    from concurrent.futures import Future

__all__ = ["CrashSink", "CrashWatch", "application_frame", "replaying_crashes"]

_SKIP: Final = tuple(
    {
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
        sysconfig.get_paths()["stdlib"] + os.sep,
        sysconfig.get_paths()["platstdlib"] + os.sep,
    }
)

#: Told of one crash, with the crashed worker current: ``(exception, traceback, origin)``.
CrashSink = Callable[[BaseException, "TracebackType | None", ErrorOrigin], None]

#: What asyncio says when nobody retrieved an exception (the ends of its messages).
_NEVER_RETRIEVED: Final = "exception was never retrieved"
_SHUTDOWN: Final = "unhandled exception during asyncio.run() shutdown"


def application_frame(tb: TracebackType | None) -> str | None:
    """``file:line in function`` of the innermost frame outside sessiontape and the
    standard library (the innermost frame at all when there is none)."""
    frames = traceback.extract_tb(tb)
    for frame in reversed(frames):
        if not os.path.abspath(frame.filename).startswith(_SKIP):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    if frames:
        last = frames[-1]
        return f"{last.filename}:{last.lineno} in {last.name}"
    return None


# -- the open watches, and the crashes they are told of ------------------------------------

_lock = threading.Lock()
#: The open watches' sinks, newest last: a tuple replaced whole, read without the lock.
_sinks: tuple[CrashSink, ...] = ()
#: Undoes the hooks; set while any watch is open.
_uninstall: Callable[[], None] | None = None


def _tell(
    sinks: tuple[CrashSink, ...],
    exc: BaseException,
    tb: TracebackType | None,
    origin: ErrorOrigin,
    worker: str,
) -> None:
    """Tell ``sinks`` of a crash, under the worker it escaped from (else ``worker``)."""
    escaped = getattr(exc, ESCAPED_FROM, None)
    token = worker_var.set(escaped if isinstance(escaped, str) else worker)
    try:
        for sink in sinks:
            # A strict replay raises on the report itself; the hook it came through must
            # still do its own work (print, log).
            with contextlib.suppress(Exception):
                sink(exc, tb, origin)
    finally:
        worker_var.reset(token)


class _Unread:
    """A future's exception that nobody has read yet."""

    __slots__ = ("exc", "finalizer", "tb", "worker")

    def __init__(self, exc: BaseException, worker: str) -> None:
        self.exc = exc
        self.tb = exc.__traceback__  # before result() raises it again and adds frames
        self.worker = worker
        self.finalizer: weakref.finalize[Any, Any] | None = None


#: The futures whose exception is unread, by ``id`` (a future's finalizer removes its own
#: entry before its id can be reused).
_unread: dict[int, _Unread] = {}


def _watch(future: object, exc: BaseException) -> None:
    entry = _Unread(exc, worker_var.get())
    key = id(future)
    entry.finalizer = weakref.finalize(future, _collected, key)
    entry.finalizer.atexit = False
    _unread[key] = entry


def _collected(key: int) -> None:
    """A future was garbage collected: its exception, if still unread, is a crash."""
    entry = _unread.pop(key, None)
    if entry is not None:
        _tell(_sinks, entry.exc, entry.tb, "future", entry.worker)


def _read(future: object) -> None:
    entry = _unread.pop(id(future), None)
    if entry is not None and entry.finalizer is not None:
        entry.finalizer.detach()


# -- the hooks ----------------------------------------------------------------------------


def _put_back(owner: Any, name: str, ours: object, previous: object) -> None:
    """Undo one hook, unless something else has replaced it since (then ours, left in
    its chain, only passes through)."""
    current = vars(owner).get(name) if isinstance(owner, type) else getattr(owner, name)
    if current is ours:
        setattr(owner, name, previous)


#: Our hooks, by what each wraps: made once per function wrapped, not at every tape's
#: opening (making the five, ``functools.wraps`` and all, took a tenth of the time of a
#: corpus cassette's whole pytest item). Each closes over nothing but what it wraps.
_MADE: dict[tuple[str, object], Any] = {}
#: Past this many, the cache starts again (a program that installs a new
#: ``threading.excepthook`` for each of its tests).
_MADE_AT_MOST: Final = 64


def _hook(
    owner: Any, name: str, make: Callable[[Any], Any], undo: list[Callable[[], None]]
) -> None:
    """Put our hook ``make(real)`` in place of ``owner.name`` (``real``), undone by the
    last step of ``undo``."""
    real = getattr(owner, name)
    key = (name, real)
    ours = _MADE.get(key)
    if ours is None:
        if len(_MADE) >= _MADE_AT_MOST:
            _MADE.clear()
        ours = _MADE[key] = make(real)
    setattr(owner, name, ours)
    undo.append(functools.partial(_put_back, owner, name, ours, real))


def _thread_hook(previous: Any) -> Any:
    def excepthook(args: Any) -> None:
        exc = args.exc_value
        if isinstance(exc, ScheduleStopped):
            return  # stopped where a saved schedule stopped it: an end, not a death
        if _sinks and args.exc_type is not SystemExit and exc is not None:
            _tell(_sinks, exc, args.exc_traceback, "thread", worker_var.get())
        previous(args)

    return excepthook


def _set_exception_hook(real: Any) -> Any:
    @functools.wraps(real)
    def set_exception(self: Future[Any], exception: BaseException | None) -> None:
        real(self, exception)
        if _sinks and exception is not None:
            _watch(self, exception)

    return set_exception


def _result_hook(real: Any) -> Any:
    @functools.wraps(real)
    def result(self: Future[Any], timeout: float | None = None) -> Any:
        try:
            return real(self, timeout)
        except BaseException as raised:
            if raised is getattr(self, "_exception", None):  # not a timeout: read
                _read(self)
            raise

    return result


def _exception_hook(real: Any) -> Any:
    @functools.wraps(real)
    def exception(self: Future[Any], timeout: float | None = None) -> BaseException | None:
        found: BaseException | None = real(self, timeout)
        if found is not None:
            _read(self)
        return found

    return exception


def _loop_hook(real: Any) -> Any:
    @functools.wraps(real)
    def call_exception_handler(self: asyncio.BaseEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if _sinks and isinstance(exc, BaseException) and _unretrieved(context):
            _tell(_sinks, exc, exc.__traceback__, "task", worker_var.get())
        real(self, context)  # the program's handler, or asyncio's default that logs it

    return call_exception_handler


def _unretrieved(context: dict[str, Any]) -> bool:
    """Whether asyncio reports an exception nobody retrieved (not a callback's error)."""
    message = str(context.get("message", ""))
    if "future" in context and message.endswith(_NEVER_RETRIEVED):
        return True
    return "task" in context and message.startswith(_SHUTDOWN)


def _install() -> Callable[[], None]:
    import asyncio  # loaded already: the tapes' runners import it
    from concurrent.futures import Future

    undo: list[Callable[[], None]] = []
    _hook(threading, "excepthook", _thread_hook, undo)
    _hook(Future, "set_exception", _set_exception_hook, undo)
    _hook(Future, "result", _result_hook, undo)
    _hook(Future, "exception", _exception_hook, undo)
    _hook(asyncio.BaseEventLoop, "call_exception_handler", _loop_hook, undo)

    def uninstall() -> None:
        for step in reversed(undo):
            step()

    return uninstall


class CrashWatch:
    """Tells ``sink`` of every crash of a worker (see the module's documentation) from
    :meth:`open` to :meth:`close`; :meth:`flush` ends the session's watch of futures."""

    def __init__(self, sink: CrashSink) -> None:
        self._sink = sink
        self._open = False

    def open(self) -> None:
        global _sinks, _uninstall
        with _lock:
            if self._open:
                return
            if _uninstall is None:
                _uninstall = _install()
            _sinks = (*_sinks, self._sink)
            self._open = True

    def flush(self) -> None:
        """The session ends: every future whose exception is still unread is a crash,
        told to this watch's sink (and no longer watched)."""
        if not self._open:
            return
        while _unread:
            try:
                _, entry = _unread.popitem()  # atomic: a future read meanwhile is gone
            except KeyError:
                break
            if entry.finalizer is not None:
                entry.finalizer.detach()
            _tell((self._sink,), entry.exc, entry.tb, "future", entry.worker)

    def close(self) -> None:
        """Flush, stop telling the sink, and put the hooks back after the last watch."""
        global _sinks, _uninstall
        self.flush()
        with _lock:
            if not self._open:
                return
            self._open = False
            kept = list(_sinks)
            kept.remove(self._sink)
            _sinks = tuple(kept)
            if not _sinks and _uninstall is not None:
                _uninstall()
                _uninstall = None

    def __enter__(self) -> CrashWatch:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def replaying_crashes(engine: ReplaySide) -> CrashWatch:
    """The replay's watch: each crash is handed to the engine, with the application's
    innermost frame, to be compared with the worker's recorded crash."""

    def sink(exc: BaseException, tb: TracebackType | None, origin: ErrorOrigin) -> None:
        engine.worker_crashed(exc, application_frame(tb), origin)

    return CrashWatch(sink)
