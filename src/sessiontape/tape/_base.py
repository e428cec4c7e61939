"""The :class:`Tape` interface shared by recording, replay and disabled recording.

An application writes its wiring once against this interface; ``sessiontape.record(...)``
and ``sessiontape.replay(...)`` hand it a tape of the right mode.
"""

from __future__ import annotations

import abc
import enum

# Imported by ``sessiontape.record(None)`` (the disabled tape) and so by every application
# that wires its boundaries: nothing here may load typing, the cassette format or an
# engine at run time.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from contextlib import AbstractContextManager
    from types import TracebackType
    from typing import Any, Literal, TypeVar

    from .._clock import Clock
    from ..boundaries import AsyncProcessRunner, ProcessRunner
    from ..cassette import BoundaryKind
    from ..report import ReplayReport
    from ..scrub import PathRoots

    T = TypeVar("T")

__all__ = ["Mode", "Tape"]


class Mode(str, enum.Enum):
    """What a tape does with boundary calls."""

    RECORD = "record"
    REPLAY = "replay"
    DISABLED = "disabled"


class Tape(abc.ABC):
    """A recording or a replay in progress: the handle the application wires through.

    Use it as a context manager; :meth:`finish` ends the session (leaving the ``with``
    block finishes it too). Everything an application's wiring may call is declared here,
    so the same wiring runs recording, replaying and with recording off
    (``tests/test_tape_surface.py`` holds the three tapes to it).
    """

    mode: Mode

    @property
    @abc.abstractmethod
    def clock(self) -> Clock:
        """The clock to inject: real when recording, virtual (instant sleeps) on replay."""

    @property
    @abc.abstractmethod
    def roots(self) -> PathRoots:
        """The path roots: directories written as placeholders (``{work}/x``) when
        recording, and the directories the placeholders stand for on replay."""

    @abc.abstractmethod
    def set_roots(self, roots: Mapping[str, str] | PathRoots) -> None:
        """Name the directories written as placeholders, for code that learns them after
        the tape exists (a fresh temporary work directory): a mapping adds to (or
        replaces by name) the default roots (``repo``, ``home``, ``tmp``).

        Recording: paths under them are written as placeholders in every entry written
        from then on (a call still running is written with them too); the tape's header
        keeps the roots it started with. Replay: the placeholders stand for them; call it
        before the first call is served. Recording off: nothing to do.
        """

    @property
    def report(self) -> ReplayReport | None:
        """The replay's report once :meth:`finish` has run; ``None`` when recording."""
        return None

    @abc.abstractmethod
    def process_runner(self, inner: ProcessRunner | None = None) -> ProcessRunner:
        """The process boundary: records ``inner`` (default: real subprocesses), or on
        replay returns the FIFO fake runner."""

    @abc.abstractmethod
    def agent(
        self,
        adapter: Any = None,
        *,
        method: str | Sequence[str] = "execute",
        result_type: Any = None,
        name: str = "agent",
        asynchronous: bool | None = None,
    ) -> Any:
        """The agent boundary: wraps ``adapter`` so each ``method`` call records an
        ``AgentTurn``; on replay returns an adapter answering with the recorded results,
        decoded into ``result_type``.

        An adapter whose methods are ``async def`` is recorded as it is awaited; on replay
        the stand-in's methods are coroutine functions when ``asynchronous`` is true, or,
        when it is ``None``, when the ``adapter`` passed has coroutine methods."""

    @abc.abstractmethod
    def async_process_runner(self, inner: AsyncProcessRunner | None = None) -> AsyncProcessRunner:
        """The process boundary for asyncio code: ``await runner.run(argv, ...)``.

        Records ``inner`` (default: :class:`~sessiontape.AsyncSubprocessRunner`, asyncio's
        subprocesses); on replay returns a fake whose ``run`` is a coroutine answering from
        the tape. Calls are the same ``process`` entries as the synchronous runner's."""

    @abc.abstractmethod
    def store(
        self,
        store: Any = None,
        *,
        mutations: Sequence[str],
        snapshot: Callable[..., Any] | None = None,
        factory: Callable[[Any], Any] | None = None,
        name: str = "store",
    ) -> Any:
        """The store boundary: records ``snapshot`` at wrap time and every call to a
        ``mutations`` method; on replay builds ``factory(recorded snapshot)`` and verifies
        each mutation against the tape."""

    @abc.abstractmethod
    def boundary(
        self,
        name: str,
        obj: Any = None,
        *,
        methods: Sequence[str],
        kind: BoundaryKind | Literal["substitute", "verify"] = "substitute",
        result_type: Any = None,
    ) -> Any:
        """A user-defined boundary named ``name`` over ``obj``'s ``methods``."""

    @abc.abstractmethod
    def patch_subprocess(self) -> AbstractContextManager[None]:
        """Intercept :class:`subprocess.Popen` (so ``run``, ``check_output``, ``call``) for
        code that does not take an injected runner."""

    def patched(self, change_id: str) -> bool:
        """Whether this tape takes the path of the deliberate change ``change_id`` (see
        :func:`sessiontape.patched`): always, unless a replayed tape was recorded by code
        that did not know it."""
        return True

    @abc.abstractmethod
    def finish(self, outcome: Any = None) -> ReplayReport | None:
        """End the session: records ``SessionEnd`` (recording) or returns the
        :class:`ReplayReport` comparing ``outcome`` with the recorded one (replay)."""

    @abc.abstractmethod
    def close(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> bool | None:
        """Finish (if not finished) and release the tape's resources.

        Returns ``True`` when the exception that ended the block is to be swallowed
        (a replay that reproduced the recorded crash)."""

    def invariant(self, check: Callable[[], Any]) -> Callable[[], Any]:
        """Declare an invariant of the application's state, checked on replay after every
        verify-boundary call and at the end; recording ignores it. Returns ``check``, so
        it works as a decorator."""
        return check

    def __enter__(self: T) -> T:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return self.close(exc_type, exc, tb)
