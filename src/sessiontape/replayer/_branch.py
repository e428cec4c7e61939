"""The calls of a fork's branch as they were made: what its tape is written from.

Every call from the fork's seq on is noted when it starts, in one order across threads:
a call the tape answered (its recorded entry, under the worker that made it), the call at
the fork given its new answer, a call run live (its entry comes when it ends, scrubbed as
recording scrubs it, under the provisional negative seq it was opened with), a verify
call with the result it really gave, a worker's crash. ``_fork_save.py`` numbers them in
that order after the calls before the fork.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import msgspec

from .._context import worker_var
from .._time import REAL
from ..cassette import CallEntry, Entry, ErrorInfo

__all__ = ["Branch", "Made"]


class Made(msgspec.Struct, kw_only=True):
    """One call of the branch: its place in the order calls started, the entry (``None``
    until a live call ends), whether the tape answered it, and the worker that made it."""

    order: int
    entry: Entry | None
    from_tape: bool
    worker: str
    thread: str
    #: A verify call: it ran for real, in the place of the recorded call ``entry``.
    verify: bool = False


class Branch:
    """The calls of one fork's branch (see the module's documentation)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._order = itertools.count()
        self._provisional = itertools.count(-1, -1)
        self.made: list[Made] = []
        #: The live calls under way, by provisional seq: their place, and real start.
        self._live: dict[int, tuple[Made, int]] = {}
        #: Per thread, the verify call under way (its real result may differ).
        self._verifying: dict[int, Made] = {}
        #: Held by the verify call running (see :meth:`running`), and the threads holding it.
        self._serial = threading.Lock()
        self._holding: set[int] = set()
        #: Per thread, the place of the verify call without a twin running (:meth:`adding`).
        self._adding: dict[int, Made] = {}

    def _made(self, entry: Entry | None, *, from_tape: bool, first: bool = False) -> Made:
        made = Made(
            order=0,
            entry=entry,
            from_tape=from_tape,
            worker=worker_var.get(),
            thread=threading.current_thread().name,
        )
        with self._lock:
            # The call at the fork comes first, whatever other workers did meanwhile: it
            # keeps the fork's seq in the branch.
            made.order = -1 if first else next(self._order)
            self.made.append(made)
        return made

    def answered(self, entry: CallEntry, *, verify: bool = False) -> None:
        """The calling worker's call was answered by the recorded ``entry`` (or, for a
        verify call, runs for real in its place: not counted as answered by the tape)."""
        made = self._made(entry, from_tape=True)
        made.verify = verify
        if verify:
            self._verifying[threading.get_ident()] = made

    def given(self, entry: CallEntry) -> None:
        """The call at the fork, answered by the answer given (``entry`` holds it)."""
        self._made(entry, from_tape=False, first=True)

    def provisional_seq(self, *, first: bool = False) -> int:
        """A seq for a live call starting now (negative; renumbered when written);
        ``first``: the call at the fork, run live."""
        made = self._made(None, from_tape=False, first=first)
        with self._lock:
            seq = next(self._provisional)
            self._live[seq] = (made, REAL.monotonic_ns())
        return seq

    def started(self, seq: int) -> int | None:
        """When the live call ``seq`` started, in real time (monotonic ns)."""
        found = self._live.get(seq)
        return None if found is None else found[1]

    def adding(self) -> None:
        """A verify call the tape has no twin for is about to run for real in this
        thread: its place is now, and it runs alone (see :meth:`running`)."""
        me = threading.get_ident()
        if me in self._holding:
            return
        self._serial.acquire()
        self._holding.add(me)
        self._adding[me] = self._made(None, from_tape=False)

    def ended(self, entry: CallEntry) -> None:
        """A live call ended (``entry``, with its provisional seq), or a verify call the
        tape has no twin for ran for real (``entry.seq`` 0: placed where it started)."""
        me = threading.get_ident()
        with self._lock:
            found = self._live.pop(entry.seq, None)
        if found is not None:
            found[0].entry = entry
            return
        placed = self._adding.pop(me, None) if entry.seq == 0 else None
        if placed is None:
            self._made(entry, from_tape=False)
            return
        placed.entry = entry
        self._holding.discard(me)
        self._serial.release()

    def gave(self, actual: Any) -> None:
        """The verify call under way in this thread gave ``actual`` (``{"result": ...}``
        or ``{"error": {...}}``), not what its recorded twin gave."""
        made = self._verifying.get(threading.get_ident())
        if made is None or made.entry is None:
            return
        entry = made.entry
        if "error" in actual:
            error = msgspec.convert(actual["error"], type=ErrorInfo)
            made.entry = msgspec.structs.replace(entry, error=error, result=None)
        else:
            made.entry = msgspec.structs.replace(entry, result=actual.get("result"), error=None)

    def running(self) -> None:
        """The verify call under way in this thread runs now: its place in the branch is
        where it runs, not where it was matched (another worker's call may run in
        between). The verify calls of a branch run one at a time, so that this order is
        the order they ran in, which a replay of the branch keeps (a recording takes its
        seq when a call starts, and its program does not race to the store on virtual
        time)."""
        me = threading.get_ident()
        made = self._verifying.get(me)
        if made is None or me in self._holding:
            return
        self._serial.acquire()
        self._holding.add(me)
        with self._lock:
            made.order = next(self._order)

    def done_verifying(self) -> None:
        """The verify call under way in this thread is over."""
        me = threading.get_ident()
        self._verifying.pop(me, None)
        if me in self._holding:
            self._holding.discard(me)
            self._serial.release()

    def replace(self, old: CallEntry, new: CallEntry) -> None:
        """A process taken before its stdin was written is answered by ``new`` instead."""
        with self._lock:
            for made in reversed(self.made):
                if made.entry is old:
                    made.entry = new
                    return

    def crashed(self, error: Entry) -> None:
        """A worker (or the session) ended with ``error``."""
        self._made(error, from_tape=False)

    def live_seqs(self) -> list[int]:
        """The provisional seqs of the live calls that ended."""
        with self._lock:
            return [m.entry.seq for m in self.made if m.entry is not None and _live(m)]

    def counts(self) -> tuple[int, int]:
        """The calls after the fork the tape answered, and those that ran live (the
        fork's own call is not after it: it is not counted)."""
        with self._lock:
            made = list(self.made)
        from_tape = sum(1 for m in made if m.from_tape and not m.verify)
        return from_tape, sum(1 for m in made if _live(m) and m.order >= 0)


def _live(made: Made) -> bool:
    """Whether ``made`` ran live (a provisional seq: the record side opened it)."""
    return not made.from_tape and made.entry is not None and made.entry.seq < 0
