"""The tape of a session that is not recorded: every object handed back as it is.

This is what ``sessiontape.record(None)`` returns when recording is off, the production
default, so it is built from the cheapest modules there are (``_base``, ``_time``): an
application that imports sessiontape to wire its boundaries pays next to nothing for it.
What a method needs beyond them (the default runners) is imported when it is called.
"""

from __future__ import annotations

from .._time import RealClock
from ._base import Mode, Tape

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from contextlib import AbstractContextManager
    from types import TracebackType
    from typing import Any, Literal

    from .._clock import Clock
    from ..boundaries import AsyncProcessRunner, ProcessRunner
    from ..cassette import BoundaryKind
    from ..scrub import PathRoots

__all__ = ["DisabledTape"]


class DisabledTape(Tape):
    """The tape when recording is off: every wrapper returns what it was given.

    This is the no-op fast path: with recording disabled there is nothing between the
    application and its runner, agent or store.
    """

    mode = Mode.DISABLED

    def __init__(self) -> None:
        self._clock = RealClock()
        self._roots: Mapping[str, str] | PathRoots | None = None

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def roots(self) -> PathRoots:
        """The roots a recording would use here (built when asked: nothing else needs them)."""
        from ..scrub import PathRoots

        roots = self._roots
        return roots if isinstance(roots, PathRoots) else PathRoots.default(roots)

    def set_roots(self, roots: Mapping[str, str] | PathRoots) -> None:
        """Nothing is recorded: kept for :attr:`roots`, and never checked (recording off
        never raises)."""
        self._roots = roots

    def process_runner(self, inner: ProcessRunner | None = None) -> ProcessRunner:
        if inner is not None:
            return inner
        from ..boundaries import SubprocessRunner

        return SubprocessRunner()

    def async_process_runner(self, inner: AsyncProcessRunner | None = None) -> AsyncProcessRunner:
        if inner is not None:
            return inner
        from ..boundaries import AsyncSubprocessRunner

        return AsyncSubprocessRunner()

    def agent(
        self,
        adapter: Any = None,
        *,
        method: str | Sequence[str] = "execute",
        result_type: Any = None,
        name: str = "agent",
        asynchronous: bool | None = None,
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
        kind: BoundaryKind | Literal["substitute", "verify"] = "substitute",
        result_type: Any = None,
    ) -> Any:
        return obj

    def patch_subprocess(self) -> AbstractContextManager[None]:
        from contextlib import nullcontext

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
