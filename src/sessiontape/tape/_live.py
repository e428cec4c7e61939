"""Live re-record: the calls a selector picks run for real, inside a replay, and are recorded.

The third way to drive the boundaries, beside record and replay, with the same pieces:
each picked call goes through the boundary's own record side (``RecordingRunner``,
``recording_agent``) around the real runner or adapter the application wired; the
:class:`LiveSide` those record sides write to is a :class:`~sessiontape.boundaries.RecordSide`
that scrubs every entry exactly as recording does (``scrub.scrub_entry``) and hands it to
the replay engine, which places it in the new tape where it happened. Every other call
is served from the tape as usual. A call made inside a live call (the model process a
live agent turn runs) is live too.
"""

from __future__ import annotations

import inspect
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from .._context import current_parent, worker_var
from .._errors import RecordingWarning
from .._time import REAL
from ..boundaries import AsyncProcessRunner, ProcessResult, ProcessRunner, ProcessStream
from ..cassette import (
    BOUNDARY_PROCESS,
    DEFAULT_MAX_INLINE_BYTES,
    Entry,
    Level,
    PayloadCodec,
    Sidecar,
)
from ..recorder import Opened
from ..replayer import ReplayEngine, RunLive
from ..scrub import Scrubber, Unencodable, scrub_entry, to_data

__all__ = [
    "AsyncLiveRunner",
    "LiveRunner",
    "LiveSeqs",
    "LiveSide",
    "live_methods",
    "process_picker",
]


class LiveSeqs(Protocol):
    """Who numbers the live calls: the live re-record's ``Updater``, or a fork's engine."""

    def provisional_seq(self) -> int:
        """A seq for a live call starting now (negative; renumbered when written)."""

    def started(self, seq: int) -> int | None:
        """When the live call ``seq`` started, in real time (monotonic ns)."""


class LiveSide:
    """A record side whose entries go into the new tape of a live re-record or a fork."""

    level = Level.FULL

    def __init__(self, engine: ReplayEngine, sidecar_of: str, seqs: LiveSeqs) -> None:
        self._engine = engine
        self._seqs = seqs
        self._sidecar = Sidecar(sidecar_of)
        self._codec: PayloadCodec | None = None
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    @property
    def scrubber(self) -> Scrubber:
        """The replay's scrubber (today's roots): the one recording would use."""
        return self._engine.scrubber

    @property
    def codec(self) -> PayloadCodec:
        """How outputs are stored: as recording stores them at level ``full``."""
        if self._codec is None:
            self._codec = PayloadCodec(
                Level.FULL,
                DEFAULT_MAX_INLINE_BYTES,
                scrub=self.scrubber.text,
                sidecar=self._sidecar,
            )
        return self._codec

    @property
    def active(self) -> bool:
        return True

    def open(self) -> Opened:
        # The call starts at the virtual time the replay is at: the tape's time axis.
        seq = self._seqs.provisional_seq()
        self._engine.progress.moved()  # a live call started: the replay moves
        clock = self._engine.clock
        return (
            seq,
            clock.time_ns(),
            clock.monotonic_ns(),
            worker_var.get(),
            threading.current_thread().name,
            current_parent(),
        )

    def open_late(self) -> None:
        # A live call's seq is provisional, its start kept by seq (elapsed()): numbered
        # when it opens, as any call; its place on the tape is the update's to decide.
        return None

    def elapsed(self, opened: Opened) -> int:
        # Its duration is real: the call ran for real.
        started = self._seqs.started(opened[0])
        return 0 if started is None else REAL.monotonic_ns() - started

    def write(self, entry: Entry) -> None:
        # Virtual time passes over the call as real time did: the program reads a clock
        # that moved by the call's real duration, and its next call starts after it.
        duration = int(getattr(entry, "duration_ns", 0) or 0)
        self._engine.clock.advance_to(entry.ts_ns + duration, entry.mono_ns + duration)
        self._engine.add_call(scrub_entry(entry, self.scrubber))  # type: ignore[arg-type]

    def data(self, value: Any, what: str) -> Any:
        return self._engine.data(value)

    def warn_once(self, key: str, message: str) -> None:
        # As the recorder warns: a live call that cannot be recorded whole is noted once.
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        warnings.warn(f"sessiontape: {message}", RecordingWarning, stacklevel=4)

    def convert_call(
        self, label: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> tuple[list[Any], dict[str, Any], Any]:
        def convert(value: Any) -> Any:
            try:
                return to_data(value)
            except Unencodable:
                return {"$repr": repr(value)}

        return convert(list(args)), convert(kwargs), convert(result)


def inside_live_call() -> bool:
    """Whether the calling code runs inside a live call (its parent is a live seq)."""
    parent = current_parent()
    return parent is not None and parent < 0


def process_picker(engine: ReplayEngine) -> Callable[[Sequence[str]], bool]:
    """Whether a process call with this argv, made now by the calling worker, runs live:
    the selectors pick it, or it is made inside a live call (a live agent's model process)."""
    live = engine.live

    def picks(argv: Sequence[str]) -> bool:
        return inside_live_call() or (
            live is not None and live.picks(BOUNDARY_PROCESS, worker_var.get(), argv)
        )

    return picks


class LiveRunner:
    """A runner that runs the calls the selectors pick for real and replays the others."""

    def __init__(
        self, engine: ReplayEngine, replayed: ProcessRunner, recording: ProcessRunner
    ) -> None:
        self._picks = process_picker(engine)
        self._progress = engine.progress
        self._replayed = replayed
        self._recording = recording

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
        """Run ``argv`` for real when it is live, else answer it from the tape (a fork
        runs it for real when the tape has no answer)."""
        if not self._picks(argv):
            try:
                return self._replayed.run(
                    argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text
                )
            except RunLive:
                pass
        with self._progress.live_call():
            return self._recording.run(
                argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text
            )

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
        """Stream ``argv`` for real when it is live, else from the tape (a fork streams
        it for real when the tape has no answer)."""
        if not self._picks(argv):
            try:
                return self._replayed.stream(
                    argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text
                )
            except RunLive:
                pass
        return self._recording.stream(
            argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text
        )


class AsyncLiveRunner:
    """The async runner of a live re-record: the calls the selectors pick are awaited for
    real (and recorded), the others are answered from the tape."""

    def __init__(
        self, engine: ReplayEngine, replayed: AsyncProcessRunner, recording: AsyncProcessRunner
    ) -> None:
        self._picks = process_picker(engine)
        self._progress = engine.progress
        self._replayed = replayed
        self._recording = recording

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        """Await ``argv`` for real when it is live, else answer it from the tape (a fork
        awaits it for real when the tape has no answer)."""
        if not self._picks(argv):
            try:
                return await self._replayed.run(
                    argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text
                )
            except RunLive:
                pass
        with self._progress.live_call():
            return await self._recording.run(
                argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text
            )


class _LiveMethods:
    """An object whose methods each run live or replayed, call by call."""

    def __init__(self, methods: Mapping[str, Callable[..., Any]], target: Any) -> None:
        object.__setattr__(self, "_methods", dict(methods))
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        methods = object.__getattribute__(self, "_methods")
        if name in methods:
            return methods[name]
        return getattr(object.__getattribute__(self, "_target"), name)


def live_methods(
    engine: ReplayEngine,
    boundary: str,
    methods: Sequence[str],
    live: Any,
    replayed: Any,
) -> Any:
    """``methods`` of ``live`` (the recording proxy of the real object) for the calls the
    selectors pick, of ``replayed`` (the stand-in) for the others."""
    selectors = engine.live
    progress = engine.progress

    def picked() -> bool:
        return inside_live_call() or (
            selectors is not None and selectors.picks(boundary, worker_var.get())
        )

    def choose(method: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if not picked():
                try:
                    return getattr(replayed, method)(*args, **kwargs)
                except RunLive:  # a fork: the tape has no answer, the call runs live
                    pass
            with progress.live_call():
                return getattr(live, method)(*args, **kwargs)

        # An async method stays a coroutine function (frameworks ask), decided when the
        # coroutine runs: in the task's own context, where its worker is.
        async def acall(*args: Any, **kwargs: Any) -> Any:
            if not picked():
                try:
                    return await getattr(replayed, method)(*args, **kwargs)
                except RunLive:
                    pass
            with progress.live_call():
                return await getattr(live, method)(*args, **kwargs)

        chosen = acall if inspect.iscoroutinefunction(getattr(live, method, None)) else call
        chosen.__name__ = method
        return chosen

    return _LiveMethods({m: choose(m) for m in methods}, live)
