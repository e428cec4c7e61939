"""``patch_subprocess()`` in a live re-record: each process runs for real or comes from the tape.

Both sides of the patch replace the same methods of :class:`subprocess.Popen`, and each
passes any process it does not handle to the original methods. A live re-record installs
one set that sends each process to one side, decided when the process is made
(``Popen.__init__``, before its pipes exist: a replayed process's pipes are wired, a real
one's are made): the processes the selectors pick (and every process started inside a
live call, or by a live runner call) are spawned for real by the record side, which relays
and logs their pipes and writes their entries to the live re-record; the others are served
from the tape by the replay side. asyncio's hooks of both sides are stacked: each passes a
process it does not know on to the other.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, Final

from ..._time import REAL
from ...replayer import IN_FLIGHT, RunLive
from .._process import IN_PROCESS_CALL, ProcessReplay
from .._protocols import RecordSide
from ._asyncio import recording_asyncio, replaying_asyncio
from ._pipes import ORIGINALS, install_methods, popen_argv
from ._record import _exited, _Recording, _signaled, still_producing
from ._replay import _Replaying

__all__ = ["live_popen"]

#: Real seconds a live process that exited holds an asyncio loop's clock while the
#: program has not learnt of its exit (asyncio's child watcher reaps it in a thread of its
#: own, then tells the loop); a process nobody waits for is let go after that.
_EXIT_ON_ITS_WAY: Final = 2.0

#: The attribute of a ``Popen`` that the live re-record runs for real.
_LIVE: Final = "_sessiontape_live"

#: Decides, from a process's argv, whether it runs for real (the caller knows the worker).
Picks = Callable[[list[str]], bool]


@functools.cache
def _init_signature() -> inspect.Signature:
    return inspect.signature(ORIGINALS["__init__"])


def _argv(popen: Any, args: Any, more: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str] | None:
    """The argv ``Popen(args, ...)`` will run, or ``None`` when the call is malformed (the
    replay side then raises what ``Popen`` would)."""
    try:
        given = _init_signature().bind(popen, args, *more, **kwargs).arguments
        return popen_argv(args, given.get("executable"), bool(given.get("shell", False)))
    except (TypeError, ValueError):
        return None


def _either(name: str, live: Any, replayed: Any) -> Any:
    """The method ``name``: the record side's for a live process, else the replay side's."""

    @functools.wraps(ORIGINALS[name])
    def method(popen: Any, *args: Any, **kwargs: Any) -> Any:
        side = live if popen.__dict__.get(_LIVE) else replayed
        return side(popen, *args, **kwargs)

    return method


class _LiveChild:
    """A process run for real, as a producer of the work an asyncio loop on virtual time
    waits for (``IN_FLIGHT``): while it runs, or its output is still being passed on, a
    loop with nothing ready waits for it in real time instead of jumping the clock to its
    next timer (``asyncio.wait_for(process.communicate(), 30)`` would time out at once).
    It leaves the registry the first time it is found done, or when the re-record ends."""

    __slots__ = ("_exited_at", "_popen", "_producers")

    def __init__(self, popen: Any, producers: set[_LiveChild]) -> None:
        self._popen = popen
        self._producers = producers
        self._exited_at: float | None = None

    def busy(self) -> bool:
        producing = still_producing(self._popen)
        if producing is None:
            # Exited, and the program has not learnt it yet: its exit is on its way (the
            # child watcher's thread), for a while; a process nobody waits for stops
            # holding the clock after that.
            now = REAL.monotonic()
            if self._exited_at is None:
                self._exited_at = now
            producing = now - self._exited_at < _EXIT_ON_ITS_WAY
        if producing:
            return True
        self.leave()
        return False

    def leave(self) -> None:
        self._producers.discard(self)
        IN_FLIGHT.discard(self)


def _init(replayed: Any, picks: Picks, producers: set[_LiveChild]) -> Any:
    original = ORIGINALS["__init__"]

    @functools.wraps(original)
    def __init__(popen: Any, args: Any, *more: Any, **kwargs: Any) -> None:
        if IN_PROCESS_CALL.get():
            live = True  # a live runner call's own spawn: real, recorded by the runner
        else:
            argv = _argv(popen, args, more, kwargs)
            live = argv is not None and picks(argv)
        if not live:
            try:
                replayed(popen, args, *more, **kwargs)
                return
            except RunLive:
                # A fork: the tape has no answer; nothing was served, and the process is
                # started for real on the same object, as a live one.
                popen.__dict__.clear()
        popen.__dict__[_LIVE] = True
        original(popen, args, *more, **kwargs)
        child = _LiveChild(popen, producers)
        producers.add(child)
        IN_FLIGHT.add(child)

    return __init__


@contextlib.contextmanager
def live_popen(server: ProcessReplay, rec: RecordSide, picks: Picks) -> Iterator[None]:
    """Run the processes ``picks`` chooses for real, recorded to ``rec``, and serve the
    others from the tape, for every process ``subprocess.Popen`` starts in the block."""
    recording = _Recording(rec)
    replaying = _Replaying(server)
    recorded = recording.methods()
    replayed = replaying.methods()
    # The stream descriptors pass any process the replay does not serve through as is.
    methods = {name: value for name, value in replayed.items() if name not in ORIGINALS}
    for name in ORIGINALS:
        if name in recorded or name in replayed:
            methods[name] = _either(
                name, recorded.get(name, ORIGINALS[name]), replayed.get(name, ORIGINALS[name])
            )
    producers: set[_LiveChild] = set()
    methods["__init__"] = _init(replayed["__init__"], picks, producers)
    with (
        install_methods(methods),
        recording_asyncio(_exited, _signaled),
        replaying_asyncio(replaying.on_exit, replaying.guard),
    ):
        try:
            yield
        finally:
            for child in list(producers):
                child.leave()
            try:
                replaying.stop()
            finally:
                recording.flush()
