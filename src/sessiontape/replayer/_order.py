"""Ordering: verify-boundary calls (store mutations) run in their recorded global order."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Sequence, Sized

__all__ = ["Progress", "Sequencer", "order_broken", "verify_name"]


class Progress:
    """Whether a replay is moving: what a verify call waiting for its turn watches.

    The replay moves when a call is served (substituted or verified: ``served`` grows) and
    when a live call starts or ends; while a live call runs (a real process, a real agent
    turn), it is moving. A wait for a turn is given up only once the replay has stood
    still for a whole order timeout: on a loaded machine, or while a live re-record's real
    processes run, the call waited for is still on its way, however long that takes.
    """

    __slots__ = ("_live", "_lock", "_moves", "_served")

    def __init__(self, served: Sized) -> None:
        self._served = served
        self._lock = threading.Lock()
        self._live = 0
        self._moves = 0

    def moved(self) -> None:
        """Something happened that no served call counts (a live call started or ended)."""
        with self._lock:
            self._moves += 1

    @contextlib.contextmanager
    def live_call(self) -> Iterator[None]:
        """The block runs a live call: the replay is moving until it ends."""
        with self._lock:
            self._live += 1
            self._moves += 1
        try:
            yield
        finally:
            with self._lock:
                self._live -= 1
                self._moves += 1

    def mark(self) -> tuple[int, int] | None:
        """Where the replay stands now (``None`` while a live call runs: it is moving)."""
        with self._lock:
            if self._live:
                return None
            return len(self._served), self._moves


def verify_name(entry: object) -> str | None:
    """The store (or verify boundary) whose recorded order a call takes its turn in
    (``None``: a call of a substitute boundary)."""
    name = getattr(entry, "store", None)
    if name is None and getattr(entry, "mode", None) == "verify":
        name = getattr(entry, "boundary", None)
    return name


def order_broken(name: str, seq: int, waited_on: int) -> str:
    """What a verify call that waited for its turn in vain (``waited_on``) says: the call
    it waited on never came, or, when it is ``seq`` itself, it came too late."""
    why = (
        f"the recorded call at seq {seq} came after the calls recorded after it, which "
        "ran when it was late"
        if waited_on == seq
        else f"the recorded call at seq {waited_on} never came"
    )
    return (
        f"{name}: {why}, so the calls of {name} can no longer run in the recorded order; "
        "the rest of this replay runs them as they come."
    )


class Sequencer:
    """Makes verify-boundary calls of one store run in their recorded global order.

    Concurrent workers race for shared state; replaying a store faithfully means letting
    them through in the order production saw. A call waits until every earlier recorded
    call of the same store has run, until the whole replay has stood still for the
    timeout (real seconds, see :class:`Progress`): then the call waited for never came;
    or until the call it waits behind is :meth:`abandon`-ed: its worker was told a call
    has no recorded answer, or its thread died, so it will most likely never make it (a
    replay that fails early, as most of shrink's candidates do, does not wait out the
    time limit behind it).
    """

    def __init__(
        self, seqs: Sequence[int], timeout: float, progress: Progress | None = None
    ) -> None:
        self._index = {seq: i for i, seq in enumerate(seqs)}
        self._done = bytearray(len(seqs))
        self._cursor = 0
        # A plain lock (Condition's default is an RLock, slower), and a count of waiters so
        # that the common case, calls arriving in order, notifies nobody. The lock is taken
        # as itself where nothing waits: Condition's own ``with`` runs two Python frames.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0
        self._timeout = timeout
        #: What the replay does meanwhile (none given: a wait gives up at its timeout).
        self._progress = progress
        #: Set once a call waited in vain: the rest of the replay runs calls as they come.
        self.broken = False
        #: The indexes of calls taken as never coming (``skip_missing``).
        self._skipped: set[int] = set()
        #: Positions of the calls whose worker stopped before making them.
        self._abandoned: set[int] = set()

    def wait_turn(self, seq: int, *, skip_missing: bool = False) -> int | None:
        """Wait until ``seq`` is next; return the seq it waited on in vain, or None.

        With ``skip_missing``, a call waited on in vain is taken as never coming: the
        order goes on past it (and waits again for the next one, if need be) instead of
        breaking."""
        index = self._index.get(seq)
        if index is None or self.broken:
            return None
        if index in self._skipped:
            # Taken as never coming, it came: the calls after it already ran before it.
            self.broken = True
            return seq
        if self._cursor >= index:  # its turn already (the cursor only moves forward)
            return None
        progress = self._progress
        with self._cond:
            self._waiting += 1
            try:
                mark = None if progress is None else progress.mark()
                while True:
                    came = self._cond.wait_for(
                        lambda: (
                            self._cursor >= index or self.broken or self._cursor in self._abandoned
                        ),
                        timeout=self._timeout,
                    )
                    if self._cursor >= index or self.broken:
                        break
                    if not came:
                        now = None if progress is None else progress.mark()
                        if progress is not None and (now is None or now != mark):
                            mark = now  # the replay moved: the call waited on is on its way
                            continue
                    # Nothing moved for the whole timeout, or the call at the cursor will
                    # not come (its worker stopped).
                    if not skip_missing:
                        break
                    self._skip_locked()
            finally:
                self._waiting -= 1
            if self._cursor >= index or self.broken:
                # Its turn; or another call gave the order up, and this one runs as it
                # comes (it does not wait out a timeout of its own, nor report it again).
                return None
            self.broken = True
            self._cond.notify_all()
            return next(s for s, i in self._index.items() if i == self._cursor)

    def wait_all(self) -> None:
        """Wait until every recorded call has run: the turn of a call the recording lacks,
        made by a worker with no recorded call of this store left. It comes after them,
        not as it happens to come, which would race them (a claim the recording lacks
        would take the task a recorded claim gets). Gives up, without breaking the order,
        once the replay stands still for the timeout or the call at the cursor will not
        come (its worker stopped)."""
        end = len(self._done)
        if self._cursor >= end or self.broken:
            return
        progress = self._progress
        with self._cond:
            self._waiting += 1
            try:
                mark = None if progress is None else progress.mark()
                while not self._cond.wait_for(
                    lambda: self._cursor >= end or self.broken or self._cursor in self._abandoned,
                    timeout=self._timeout,
                ):
                    now = None if progress is None else progress.mark()
                    if progress is None or (now is not None and now == mark):
                        return  # the replay stands still: the call runs now
                    mark = now
            finally:
                self._waiting -= 1

    def _skip_locked(self) -> None:
        """Take the call at the cursor as run (it never came), under the lock."""
        self._skipped.add(self._cursor)
        done = self._done
        done[self._cursor] = 1
        cursor = self._cursor
        while cursor < len(done) and done[cursor]:
            cursor += 1
        self._cursor = cursor
        self._cond.notify_all()

    def abandon(self, seqs: Iterable[int]) -> None:
        """The recorded calls ``seqs`` (of a worker that stopped) will not come: a call
        waiting behind one of them stops waiting now. Seqs of other stores are ignored."""
        with self._lock:
            cursor = self._cursor
            for seq in seqs:
                index = self._index.get(seq)
                if index is not None and index >= cursor:
                    self._abandoned.add(index)
            if self._waiting:
                self._cond.notify_all()

    def done(self, seq: int) -> None:
        """Mark ``seq`` as run, letting the next recorded call through."""
        index = self._index.get(seq)
        if index is None:
            return
        with self._lock:  # the condition's lock: notify_all() below holds it
            done = self._done
            done[index] = 1
            cursor = self._cursor
            while cursor < len(done) and done[cursor]:
                cursor += 1
            self._cursor = cursor
            if self._waiting:
                self._cond.notify_all()
