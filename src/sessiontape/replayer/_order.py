"""Ordering: verify-boundary calls (store mutations) run in their recorded global order."""

from __future__ import annotations

import threading
from collections.abc import Sequence

__all__ = ["Sequencer", "order_broken", "verify_name"]


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
    them through in the order production saw. A call waits (real time, bounded) until
    every earlier recorded call of the same store has run.
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
        #: The indexes of calls taken as never coming (``skip_missing``).
        self._skipped: set[int] = set()

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
        with self._cond:
            self._waiting += 1
            try:
                while not self._cond.wait_for(lambda: self._cursor >= index, timeout=self._timeout):
                    if not skip_missing:
                        self.broken = True
                        self._cond.notify_all()
                        return next(s for s, i in self._index.items() if i == self._cursor)
                    self._skip_locked()
            finally:
                self._waiting -= 1
        return None

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
