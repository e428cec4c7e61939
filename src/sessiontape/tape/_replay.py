"""The replay tape: each boundary's replay side wired to a replay engine.

:class:`ReplayTape` is what the application's wiring receives on replay: the FIFO fake
runner, the agent stand-in, the verified store, and the virtual clock, installed into the
process (``time.sleep`` instant, wall-clock reads at the recorded times) while the tape is
entered.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from .._context import derived_workers
from .._errors import UsageError
from ..boundaries import (
    AsyncProcessRunner,
    AsyncRecordingRunner,
    AsyncReplayRunner,
    AsyncSubprocessRunner,
    ProcessReplay,
    ProcessRunner,
    RecordingRunner,
    SubprocessRunner,
    live_popen,
    method_names,
    recording_agent,
    recording_boundary,
    replaying_agent,
    replaying_boundary,
    replaying_crashes,
    replaying_popen,
    replaying_store,
    watching_processes,
)
from ..cassette import BOUNDARY_AGENT, BoundaryKind, Recording
from ..replayer import (
    UNSET,
    ChaosEngine,
    FakeClock,
    ForkEngine,
    Invariant,
    Noise,
    ReplayEngine,
    scheduled_pools,
)
from ..report import ChaosResult, ForkResult, ReplayReport
from ..scrub import PathRoots, Scrubber
from ._active import activate, deactivate
from ._base import Mode, Tape
from ._live import AsyncLiveRunner, LiveRunner, LiveSide, live_methods, process_picker

__all__ = ["ReplayTape"]


class ReplayTape(Tape):
    """A tape serving a recording through a :class:`~sessiontape.replayer.ReplayEngine`.

    Create it with :func:`sessiontape.replay`. With ``patch_time`` (the default),
    entering the tape installs its virtual clock into the process.
    """

    mode = Mode.REPLAY

    def __init__(self, engine: ReplayEngine, *, patch_time: bool = True) -> None:
        self._engine = engine
        self._patch_time = patch_time
        self._stack = ExitStack()
        self._processes: ProcessReplay | None = None
        #: The verify boundaries' real objects by name (for ``sessiontape_invariant``).
        self.stores: dict[str, Any] = {}
        # The session starts with the tape: threads are named, their crashes compared
        # with the recorded ones.
        self._stack.enter_context(derived_workers())
        self._crashes = self._stack.enter_context(replaying_crashes(engine))
        # A process started outside the interception runs for real: the report says so.
        self._stack.enter_context(watching_processes(engine))
        # Live payloads past the inline limit go to the sidecar of the tape being written.
        updater = engine.updater
        self._live: LiveSide | None = None
        if engine.live is not None and updater is not None:
            self._live = LiveSide(engine, str(updater.target), updater)
        elif isinstance(engine, ForkEngine):
            # A fork runs live whatever the tape cannot answer after it parts.
            self._live = LiveSide(engine, str(engine.target), engine)
        activate(self)
        if isinstance(engine, ChaosEngine):
            # Under a schedule, the thread creating the tape holds the baton from now on;
            # the threads it starts and the pool tasks it submits are scheduled too.
            self._stack.enter_context(engine.scheduler.running())
            self._stack.enter_context(scheduled_pools(engine.scheduler))

    # -- what the replay is -------------------------------------------------------------

    @property
    def recording(self) -> Recording:
        """The cassette being replayed."""
        return self._engine.recording

    @property
    def report(self) -> ReplayReport | None:
        """The report, once the replay is finished."""
        return self._engine.report

    @property
    def strict(self) -> bool:
        """Whether the first divergence raises :class:`~sessiontape.ReplayMismatch`."""
        return self._engine.strict

    @property
    def noise(self) -> Noise:
        """The noise masks and patterns applied to every comparison."""
        return self._engine.noise

    @property
    def lookahead(self) -> int:
        """How far ahead of its queue's head a request may match."""
        return self._engine.lookahead

    @property
    def loaded(self) -> int:
        """How many recorded calls there are to replay."""
        return self._engine.loaded

    @property
    def roots(self) -> PathRoots:
        """Today's directories for the recorded path placeholders."""
        return self._engine.roots

    @property
    def scrubber(self) -> Scrubber:
        """What today's requests go through before they are compared."""
        return self._engine.scrubber

    @property
    def clock(self) -> FakeClock:
        return self._engine.clock

    @property
    def chaos(self) -> ChaosResult | None:
        """Under a schedule, what became of it (once the tape is closed); else ``None``."""
        engine = self._engine
        return engine.result if isinstance(engine, ChaosEngine) else None

    @property
    def fork(self) -> ForkResult | None:
        """In a fork, what it did (once the replay is finished); else ``None``."""
        report = self._engine.report
        return report.fork if report is not None else None

    def save_chaos(self, target: str | os.PathLike[str]) -> Path:
        """Write the chaos schedule this replay ran as a cassette of its own at
        ``target``: the calls in the order they ran, answered as the original answered
        them; it replays in plain mode and fails the same way."""
        engine = self._engine
        if not isinstance(engine, ChaosEngine):
            raise UsageError("save_chaos() needs a replay under a schedule (schedule=...).")
        return engine.save(Path(target))

    def invariant(self, check: Invariant) -> Invariant:
        """Declare an invariant of the application's state: checked after every
        verify-boundary call and at the end (``None``/``True``: it holds; ``False``, a
        message, or an ``AssertionError``: violated). Usable as a decorator."""
        self._engine.add_invariant(check)
        return check

    def set_roots(self, roots: Mapping[str, str] | PathRoots) -> None:
        """Name today's directories for the recorded path placeholders.

        For code that learns its directories after the tape exists, such as a
        ``sessiontape_replay`` hook making a fresh work dir: call it before the first call
        is served. A mapping adds to (or replaces by name) the default roots.
        """
        self._engine.set_roots(roots)

    def __enter__(self) -> ReplayTape:
        if self._patch_time:
            try:
                self._stack.enter_context(self._engine.clock.install())
            except BaseException as exc:
                # Not entered, so the block's __exit__ never runs: the tape is closed here
                # (left open, it would stay active for every thread after it).
                self.close(type(exc), exc, exc.__traceback__)
                raise
        return self

    # -- boundaries ---------------------------------------------------------------------

    def _process_replay(self) -> ProcessReplay:
        if self._processes is None:
            self._processes = ProcessReplay(self._engine)
        return self._processes

    def _picks(self, boundary: str) -> bool:
        """Whether a live re-record may pick calls of ``boundary`` (or of a worker), or a
        fork run them live."""
        if isinstance(self._engine, ForkEngine):
            return True
        live = self._engine.live
        return live is not None and any(s.boundary in (None, boundary) for s in live.items)

    def process_runner(self, inner: ProcessRunner | None = None) -> ProcessRunner:
        replayed = self._process_replay().runner()
        if self._live is None:
            return replayed
        # A live agent's model process is live too: any live re-record needs the real one.
        real = RecordingRunner(self._live, inner if inner is not None else SubprocessRunner())
        return LiveRunner(self._engine, replayed, real)

    def async_process_runner(self, inner: AsyncProcessRunner | None = None) -> AsyncProcessRunner:
        replayed = AsyncReplayRunner(self._process_replay())
        if self._live is None:
            return replayed
        real = AsyncRecordingRunner(
            self._live, inner if inner is not None else AsyncSubprocessRunner()
        )
        return AsyncLiveRunner(self._engine, replayed, real)

    def agent(
        self,
        adapter: Any = None,
        *,
        method: str | Sequence[str] = "execute",
        result_type: Any = None,
        name: str = "agent",
        asynchronous: bool | None = None,
    ) -> Any:
        if asynchronous is None:
            names = [method] if isinstance(method, str) else list(method)
            asynchronous = adapter is not None and any(
                inspect.iscoroutinefunction(getattr(adapter, n, None)) for n in names
            )
        replayed = replaying_agent(
            self._engine, method=method, result_type=result_type, asynchronous=asynchronous
        )
        if self._live is None or not self._picks(BOUNDARY_AGENT):
            return replayed
        if adapter is None:
            if isinstance(self._engine, ForkEngine):
                return replayed  # a call the tape cannot answer raises RunLive, saying why
            raise UsageError(
                "a live re-record of the agent needs the real adapter: pass it to "
                "tape.agent(adapter, ...) as when recording."
            )
        names = [method] if isinstance(method, str) else list(method)
        real = recording_agent(self._live, adapter, name=name, method=method)
        return live_methods(self._engine, BOUNDARY_AGENT, names, real, replayed)

    def store(
        self,
        store: Any = None,
        *,
        mutations: Sequence[str],
        snapshot: Callable[..., Any] | None = None,
        factory: Callable[[Any], Any] | None = None,
        name: str = "store",
    ) -> Any:
        replayed = replaying_store(
            self._engine, store, name=name, mutations=mutations, factory=factory
        )
        self.stores[name] = replayed
        return replayed

    def boundary(
        self,
        name: str,
        obj: Any = None,
        *,
        methods: Sequence[str],
        kind: BoundaryKind | Literal["substitute", "verify"] = BoundaryKind.SUBSTITUTE,
        result_type: Any = None,
    ) -> Any:
        kind = BoundaryKind(kind)
        replayed = replaying_boundary(
            self._engine, name, obj, methods=methods, kind=kind, result_type=result_type
        )
        if kind is BoundaryKind.VERIFY:
            self.stores[name] = replayed
        # A verify boundary runs for real anyway; a substitute one runs live when picked.
        if self._live is None or kind is not BoundaryKind.SUBSTITUTE or not self._picks(name):
            return replayed
        if obj is None:
            if isinstance(self._engine, ForkEngine):
                return replayed
            raise UsageError(
                f"a live re-record of {name!r} needs the real object: pass it to "
                f"tape.boundary({name!r}, obj, ...) as when recording."
            )
        real = recording_boundary(self._live, name, obj, methods=methods, kind=kind)
        return live_methods(self._engine, name, method_names(methods), real, replayed)

    def patch_subprocess(self) -> AbstractContextManager[None]:
        if self._live is None:
            return replaying_popen(self._process_replay())
        # Any live re-record: a live agent's model process is live too.
        return live_popen(self._process_replay(), self._live, process_picker(self._engine))

    def patched(self, change_id: str) -> bool:
        """Whether the tape was recorded by code that knew ``change_id``."""
        return change_id in self._engine.recording.patches

    # -- ending -------------------------------------------------------------------------

    def finish(self, outcome: Any = UNSET) -> ReplayReport:
        """Compare ``outcome`` with the recorded one and return the report.

        In strict mode a report that is not ok raises :class:`ReplayMismatch`.
        """
        self._crashes.flush()  # a future nobody read by now is a crash of its worker
        return self._engine.finish(outcome)

    def close(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> bool:
        """Finish the replay; swallow an exception that reproduces the recorded crash."""
        try:
            self._crashes.flush()
            return self._engine.close(exc)
        finally:
            deactivate(self)
            self._stack.close()
