"""The recording tape: :class:`RecordTape` wires each boundary's record side to a
:class:`~sessiontape.recorder.Recorder`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from .._clock import Clock
from .._context import derived_workers
from .._errors import UsageError
from .._time import RealClock
from ..boundaries import (
    AsyncProcessRunner,
    AsyncRecordingRunner,
    AsyncSubprocessRunner,
    CrashWatch,
    ProcessRunner,
    RecordingRunner,
    SubprocessRunner,
    recording_agent,
    recording_boundary,
    recording_notice,
    recording_popen,
    recording_store,
    watching_processes,
)
from ..cassette import BoundaryKind, Level, PayloadCodec
from ..recorder import Recorder
from ..scrub import PathRoots, Scrubber
from ._active import activate, deactivate
from ._base import Mode, Tape

__all__ = ["RecordTape"]


class RecordTape(Tape):
    """A tape writing to a cassette through a :class:`~sessiontape.recorder.Recorder`.

    Create it with :func:`sessiontape.record`.
    """

    mode = Mode.RECORD

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._clock = RealClock()
        # Threads that do not name themselves are named as on replay (see _context).
        self._threads = ExitStack()
        self._threads.enter_context(derived_workers())
        # A process started outside the interception is missing from the tape: say so.
        self._threads.enter_context(watching_processes(recording_notice(recorder)))
        # A worker that dies (a thread, a future or a task nobody read) is an error entry.
        self._crashes = self._threads.enter_context(CrashWatch(recorder.record_error))
        activate(self)

    # -- what the recording is ----------------------------------------------------------

    @property
    def path(self) -> Path:
        """The cassette being written."""
        return self._recorder.path

    @property
    def level(self) -> Level:
        """How much is kept: ``minimal``, ``standard`` or ``full``."""
        return self._recorder.level

    @property
    def roots(self) -> PathRoots:
        """The path roots written as placeholders."""
        return self._recorder.roots

    def set_roots(self, roots: Mapping[str, str] | PathRoots) -> None:
        """Write paths under ``roots`` as placeholders from now on (see :meth:`Tape.set_roots`)."""
        self._recorder.set_roots(roots)

    @property
    def scrubber(self) -> Scrubber:
        """What every recorded value goes through before it is written."""
        return self._recorder.scrubber

    @property
    def codec(self) -> PayloadCodec:
        """How stdin, stdout and stderr are stored."""
        return self._recorder.codec

    @property
    def run_id(self) -> str:
        """The run id in the cassette's header (kept when appending)."""
        return self._recorder.run_id

    @property
    def moved_to(self) -> Path | None:
        """Where ``if_exists="force"`` moved the previous cassette, if there was one."""
        return self._recorder.moved_to

    @property
    def active(self) -> bool:
        """Whether calls are still being recorded (false after a recording failure)."""
        return self._recorder.active

    @property
    def counts(self) -> dict[str, int]:
        """How many entries of each kind were written so far."""
        return self._recorder.counts

    @property
    def clock(self) -> Clock:
        return self._clock

    # -- boundaries ---------------------------------------------------------------------

    def process_runner(self, inner: ProcessRunner | None = None) -> ProcessRunner:
        return RecordingRunner(self._recorder, inner if inner is not None else SubprocessRunner())

    def async_process_runner(self, inner: AsyncProcessRunner | None = None) -> AsyncProcessRunner:
        return AsyncRecordingRunner(
            self._recorder, inner if inner is not None else AsyncSubprocessRunner()
        )

    def agent(
        self,
        adapter: Any = None,
        *,
        method: str | Sequence[str] = "execute",
        result_type: Any = None,
        name: str = "agent",
        asynchronous: bool | None = None,
    ) -> Any:
        if adapter is None:
            raise UsageError(
                "tape.agent() needs the adapter to record when recording; pass it as the "
                "first argument (replay ignores it)."
            )
        return recording_agent(self._recorder, adapter, name=name, method=method)

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
        return recording_store(
            self._recorder, store, name=name, mutations=mutations, snapshot=snapshot
        )

    def boundary(
        self,
        name: str,
        obj: Any = None,
        *,
        methods: Sequence[str],
        kind: BoundaryKind | Literal["substitute", "verify"] = BoundaryKind.SUBSTITUTE,
        result_type: Any = None,
    ) -> Any:
        return recording_boundary(
            self._recorder, name, obj, methods=methods, kind=BoundaryKind(kind)
        )

    def patch_subprocess(self) -> AbstractContextManager[None]:
        return recording_popen(self._recorder)

    def patched(self, change_id: str) -> bool:
        """Note that the recording code knows ``change_id``; ``True``."""
        self._recorder.note_patch(change_id)
        return True

    # -- ending -------------------------------------------------------------------------

    def record_error(self, exc: BaseException, tb: TracebackType | None = None) -> None:
        """Write an :class:`~sessiontape.Error` entry for an exception that escaped."""
        self._recorder.record_error(exc, tb)

    def finish(self, outcome: Any = None) -> None:
        """Write ``SessionEnd`` with ``outcome`` (JSON-ready data or a dataclass/Struct)."""
        self._crashes.flush()  # a future nobody read by now is a crash of its worker
        self._recorder.finish(outcome)

    def close(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        try:
            self._crashes.flush()
            self._recorder.close(exc, tb)
        finally:
            deactivate(self)
            self._threads.close()
