"""The recording engine: seq allocation, the data policy and the write path.

A :class:`Recorder` owns one cassette. Boundaries ask it to :meth:`~Recorder.open` a call
(which reserves the call's seq and notes when, where and inside which call it started),
build their entry from the call's outcome, and hand it to :meth:`~Recorder.write`, which
scrubs every entry (``scrub.scrub_entry``) before it is encoded: nothing unscrubbed
reaches disk. Values are made JSON-ready first, by :meth:`~Recorder.convert` (and
:meth:`~Recorder.convert_call` for a method call's arguments and result, in one
conversion), or :meth:`~Recorder.data` (converted and scrubbed at once); payloads go
through the codec (levels, digests, scrubbed text), which must see them scrubbed before it
decides to keep them inline or in the sidecar.

Recording is observability, never the critical path: whatever goes wrong inside it (an
unwritable directory, a full disk, a value with no JSON form) gives one
:class:`~sessiontape.RecordingWarning` and the application goes on unharmed.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import platform
import socket
import sys
import threading
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from .._context import LateSeq, current_parent, parent_var, worker_var
from .._errors import RecordingWarning, UsageError
from .._time import REAL, TIME_MACHINE
from .._version import __version__
from ..cassette import (
    DEFAULT_MAX_INLINE_BYTES,
    CassetteWriter,
    Entry,
    Error,
    ErrorOrigin,
    Level,
    Patched,
    PayloadCodec,
    SessionEnd,
    SessionResume,
    SessionStart,
    Sidecar,
)
from ..scrub import (
    PathRoots,
    Scrubber,
    Unencodable,
    format_traceback,
    qualname,
    scrub_entry,
    to_data,
)
from ._target import IF_EXISTS, IfExists, default_entrypoint, prepare

__all__ = ["COMMON_FIELDS", "Opened", "Recorder", "common_fields"]

#: What :meth:`Recorder.open` returns: ``(seq, ts_ns, mono_ns, worker, thread, parent)``.
Opened = tuple[int, int, int, str, str, "int | None"]
#: The names of the fields of :data:`Opened`, the fields every entry has.
COMMON_FIELDS: Final = ("seq", "ts_ns", "mono_ns", "worker", "thread", "parent")


def common_fields(opened: Opened) -> dict[str, Any]:
    """The fields every entry has, from a call's :data:`Opened`, as entry keyword arguments."""
    return dict(zip(COMMON_FIELDS, opened, strict=True))


def _platform_string() -> str:
    """What ``platform.platform()`` says, built without spawning anything.

    ``platform.platform()`` may run ``uname -p`` in a subprocess, which a recording must
    not do (a test counting spawns would see it).
    """
    try:
        uname = os.uname()
    except AttributeError:  # not POSIX
        return sys.platform
    return f"{uname.sysname}-{uname.release}-{uname.machine}-{sys.platform}"


# Module globals rather than attributes: the hot path reads them once per call, and tests
# pin the recorder's time by replacing them. Real time, from ``_time``: this module may be
# imported first while a user's freeze_time or time_machine.travel is active.
_time_ns: Final = REAL.time_ns
# REAL.time_ns without the call of Python code it costs, while time-machine is not imported
# (``open`` tests that first: this runs per call).
_clock_time_ns: Final = REAL.time_ns_unless_travelling
_modules: Final = sys.modules
_mono_ns: Final = REAL.monotonic_ns
_current_thread: Final = threading.current_thread
_parent: Final = parent_var.get


class Recorder:
    """The engine behind a recording tape: one cassette, its seqs and its write path."""

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
        scrubbers: Sequence[Callable[[str], str]] = (),
    ) -> None:
        if if_exists not in IF_EXISTS:
            raise UsageError(f"if_exists must be 'force' or 'append', got {if_exists!r}.")
        self.path = Path(path)
        self.level = Level.parse(level)
        self._redact = redact
        self._extra = tuple(scrubbers)
        self._max_inline_bytes = max_inline_bytes
        self.set_roots(roots)
        self._warned: set[str] = set()
        self._patches: set[str] = set()
        self._patch_lock = threading.Lock()
        self._finished = False
        self._started_mono = _mono_ns()
        target = prepare(self.path, if_exists)
        #: Where ``if_exists="force"`` moved the previous cassette, if there was one.
        self.moved_to = target.moved_to
        #: Where ``if_exists="append"`` set a torn last line aside, if there was one.
        self.torn_to = target.torn_to
        self.run_id = target.run_id or uuid.uuid4().hex
        self._seq = itertools.count(target.first_seq)
        self._writer = CassetteWriter(self.path, fd=target.fd, disabled=target.failure)
        header: dict[str, Any] = {
            "recorded_at": REAL.now(_dt.timezone.utc).isoformat(),
            "sessiontape_version": __version__,
            "app_version": app_version,
            "entrypoint": entrypoint if entrypoint is not None else default_entrypoint(),
            "config": self.data(config, "config"),
            "level": self.level.value,
            "host": socket.gethostname(),
        }
        if target.run_id is None:
            self.write(
                SessionStart(
                    **common_fields(self.open()),
                    **header,
                    run_id=self.run_id,
                    platform=_platform_string(),
                    python=platform.python_version(),
                    roots=self.roots.as_dict(),
                )
            )
        else:
            # A later run continues the tape: the marker says where, and the session it
            # holds from here on is this run's (see Recording.end).
            self.write(SessionResume(**common_fields(self.open()), **header))

    def set_roots(self, roots: Mapping[str, str] | PathRoots | None) -> None:
        """Write paths under ``roots`` as their placeholders, in every entry written from
        now on (a mapping adds to, or replaces by name, the default roots).

        ``roots``, ``scrubber`` and ``codec`` are replaced whole, and the boundaries read
        them for each entry, so a call still running when the roots change is written with
        the new ones. The header keeps the roots the recording started with.
        """
        self.roots = roots if isinstance(roots, PathRoots) else PathRoots.default(roots)
        self.scrubber = Scrubber(self.roots, redact=self._redact, extra=self._extra)
        self.codec = PayloadCodec(
            self.level,
            self._max_inline_bytes,
            scrub=self.scrubber.text,
            sidecar=Sidecar(self.path),
        )

    # -- the write path ---------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether calls are still being recorded (false after a failure or the end)."""
        return self._writer.active and not self._finished

    @property
    def counts(self) -> dict[str, int]:
        """How many entries of each kind were written so far."""
        return self._writer.counts()

    def open(self) -> Opened:
        """Start a call: reserve its seq and note when, where and inside what it started.

        Seqs are reserved at the start, so they give the order replay serves calls in and
        a call's children can name it as their ``parent`` while it is still open. A verify
        call's is reserved when it ends (:meth:`open_late`), or here, first, when a call
        made inside it opens.
        """
        parent = _parent()
        if isinstance(parent, LateSeq):  # current_parent(), inlined: this runs per call
            parent = parent.seq()  # first: its seq is then lower than this call's
        return (
            next(self._seq),
            _clock_time_ns() if TIME_MACHINE not in _modules else _time_ns(),
            _mono_ns(),
            worker_var.get(),
            _current_thread().name,
            parent,
        )

    def open_late(self) -> tuple[Opened, LateSeq]:
        """Start a verify call whose seq is reserved late (see :class:`LateSeq`): its
        ``Opened`` has seq -1 until then."""
        late = LateSeq(self._seq.__next__)
        opened = (-1, _time_ns(), _mono_ns(), worker_var.get(), _current_thread().name)
        return (*opened, current_parent()), late

    @staticmethod
    def elapsed(opened: Opened) -> int:
        """ns since the call ``opened`` started: its duration when it has just ended."""
        return _mono_ns() - opened[2]

    def write(self, entry: Entry) -> None:
        """Append ``entry`` to the cassette (one flushed line; thread-safe).

        Every entry is scrubbed here, whatever built it: the one place on the write path
        where redaction happens (values a boundary scrubbed already are recognised).
        """
        if not self._writer.active:
            return
        try:
            scrubbed = scrub_entry(entry, self.scrubber)
        except Exception as exc:  # a defect of ours, or of a user's scrubber: one warning
            # Never written unscrubbed (it may hold a secret), and never the run's end.
            self.warn_once(
                f"scrub:{type(exc).__name__}",
                f"an entry (seq {entry.seq}, {type(entry).__name__}) could not be scrubbed "
                f"({type(exc).__name__}: {exc}), so it was not written: the tape has a gap "
                "at that seq. If no scrubber of yours raised this, it is a bug in "
                "sessiontape: please report it.",
            )
            return
        self._writer.write(scrubbed)

    def note_patch(self, change_id: str) -> None:
        """Write a ``patched`` entry for ``change_id``, the first time the code asks for it."""
        if change_id in self._patches:  # the common case, without the lock
            return
        with self._patch_lock:
            if change_id in self._patches:
                return
            self._patches.add(change_id)
        self.write(Patched(**common_fields(self.open()), id=change_id))

    def warn_once(self, key: str, message: str) -> None:
        """Emit ``message`` as a :class:`RecordingWarning`, once per ``key``."""
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(f"sessiontape: {message}", RecordingWarning, stacklevel=4)

    def convert(self, value: Any, what: str) -> Any:
        """``value`` as JSON data, not scrubbed yet: for a field the write path scrubs.

        ``None`` at level ``minimal``; an unencodable value becomes its repr (one warning
        per ``what``).
        """
        if self.level is Level.MINIMAL:
            return None
        try:
            return to_data(value)
        except Unencodable as exc:
            return self._unencodable(value, what, exc)

    def convert_call(
        self, label: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> tuple[list[Any], dict[str, Any], Any]:
        """A method call's arguments and result as JSON data, not scrubbed yet (the write
        path scrubs them with the rest of the call's entry), in one conversion."""
        if self.level is Level.MINIMAL:
            return [], {}, None
        try:
            if not kwargs:
                if result is None:
                    return to_data(args), {}, None
                converted_args, converted = to_data((args, result))
                return converted_args, {}, converted
            converted_args, converted_kwargs, converted = to_data((args, kwargs, result))
        except Unencodable:
            # Say which part has no JSON form (the arguments or the result), and keep the
            # arguments a list and a dict, each value that has no JSON form its repr: the
            # entry must still load.
            arguments = f"{label} arguments"
            return (
                [self.convert(arg, arguments) for arg in args],
                {str(key): self.convert(value, arguments) for key, value in kwargs.items()},
                self.convert(result, label),
            )
        return converted_args, converted_kwargs, converted

    def data(self, value: Any, what: str) -> Any:
        """``value`` as scrubbed JSON data; an unencodable value becomes its repr."""
        data = self.convert(value, what)
        return None if data is None else self.scrubber.data(data)

    def _unencodable(self, value: Any, what: str, exc: Unencodable) -> Any:
        self.warn_once(
            f"unencodable:{what}",
            f"{what} has no JSON form ({exc}); it was recorded as its repr and will not "
            "replay. Make it a dataclass, msgspec Struct or plain data.",
        )
        return {"$repr": repr(value)}

    # -- ending -----------------------------------------------------------------------

    def record_error(
        self,
        exc: BaseException,
        tb: TracebackType | None = None,
        origin: ErrorOrigin = "session",
    ) -> None:
        """Write an :class:`Error` entry for an exception that escaped the session
        (``origin="session"``) or ended the current worker (``"thread"``, ``"future"``,
        ``"task"``: the session goes on)."""
        if not self.active:
            return
        trace = format_traceback(type(exc), exc, tb or exc.__traceback__)
        self.write(
            Error(
                **common_fields(self.open()),
                type=qualname(type(exc)),
                message=str(exc),
                traceback=trace,
                origin=origin,
            )
        )

    def finish(self, outcome: Any = None) -> None:
        """Write ``SessionEnd`` with ``outcome`` (JSON-ready data or a dataclass/Struct)."""
        if self._finished:
            return
        # The cassette deleted, moved or replaced during the run is noticed here at the
        # latest: one warning, and no session_end written into a file nobody will read.
        if self._writer.verify():
            opened = self.open()
            counts = self._writer.counts()
            counts["session_end"] = counts.get("session_end", 0) + 1
            self.write(
                SessionEnd(
                    **common_fields(opened),
                    outcome=self.data(outcome, "outcome"),
                    counts=counts,
                    duration_ns=opened[2] - self._started_mono,
                )
            )
        self._finished = True

    def close(self, exc: BaseException | None = None, tb: TracebackType | None = None) -> None:
        """End the recording: a crash (``exc``) is recorded and leaves no ``SessionEnd``."""
        if exc is not None and not self._finished:
            self.record_error(exc, tb)
            # A crash leaves no SessionEnd: the tape then loads as a crashed session.
            self._finished = True
        self.finish()
        self._writer.close()
