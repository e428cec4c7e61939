"""Ordering: verify-boundary calls (store mutations) run in their recorded global order."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

__all__ = ["Sequencer"]


class Sequencer:
    """Makes verify-boundary calls of one store run in their recorded global order.

    Concurrent workers race for shared state; replaying a store faithfully means letting
    them through in the order production saw. A call waits (real time, bounded) until
    every earlier recorded call of the same store has run, or until the call it waits
    behind is :meth:`abandon`-ed: its worker was told a call has no recorded answer, or
    its thread died, so it will most likely never make it (a replay that fails early, as
    most of shrink's candidates do, does not wait out the time limit behind it).
    """

    def __init__(self, seqs: Sequence[int], timeout: float) -> None:
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
        #: Set once a call waited in vain: the rest of the replay runs calls as they come.
        self.broken = False
        #: Positions of the calls whose worker stopped before making them.
        self._abandoned: set[int] = set()

    def wait_turn(self, seq: int) -> int | None:
        """Wait until ``seq`` is next; return the seq it waited on in vain, or None."""
        index = self._index.get(seq)
        if index is None or self.broken:
            return None
        if self._cursor >= index:  # its turn already (the cursor only moves forward)
            return None
        with self._cond:
            self._waiting += 1
            try:
                self._cond.wait_for(
                    lambda: self._cursor >= index or self.broken or self._cursor in self._abandoned,
                    timeout=self._timeout,
                )
            finally:
                self._waiting -= 1
            if self._cursor >= index or self.broken:
                # Its turn; or another call gave the order up, and this one runs as it
                # comes (it does not wait out a timeout of its own, nor report it again).
                return None
            # Timed out, or the call at the cursor will not come: give up the order.
            self.broken = True
            self._cond.notify_all()
            return next(s for s, i in self._index.items() if i == self._cursor)

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
