"""Work in flight that an asyncio loop on virtual time must wait for in real time.

An installed :class:`~._clock.FakeClock` runs asyncio loops on virtual time: a loop that
finds no I/O ready and has nothing to do but wait for its next timer jumps the clock to it
(``_timepatch``). That is right only if nothing else will make I/O ready first. Two kinds
of work do so without the program doing anything: an executor call (held with
:meth:`FakeClock.hold` from its submission to its completion) and a replay-side thread
feeding what the loop waits for, such as the pump writing a replayed process's output
into the pipe the loop reads, or ending it and reporting its exit. This module is the
second kind's registry.

A *producer* (:class:`Producer`) says whether it will act without the program acting
(:meth:`Producer.busy`), and brackets each burst of its own work with :meth:`InFlight.
working` / :meth:`InFlight.idle`, which count. A loop decides to jump only if, between
a count read before its non-blocking look at its own descriptors and one read after
asking every producer, the count did not move and no producer was busy: any output a
producer made that the loop's look missed lies inside a burst that moved the count or
was still going on when it was asked. That holds however slowly threads are scheduled,
so a loaded machine cannot make a loop jump past work in flight.
"""

from __future__ import annotations

import threading
from typing import Final, Protocol

__all__ = ["IN_FLIGHT", "InFlight", "Producer"]


class Producer(Protocol):
    """A replay-side thread that feeds an event loop (a replayed process's pump)."""

    def busy(self) -> bool:
        """Whether it is working now, or will start without the program acting (its
        wake-up descriptors are ready). Called from the loop's thread; must not block."""


class InFlight:
    """The producers alive now, and a count of their bursts of work (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._producers: set[Producer] = set()
        self._count = 0

    def add(self, producer: Producer) -> None:
        """Start asking ``producer`` (before its thread starts)."""
        with self._lock:
            self._producers.add(producer)
            self._count += 1

    def discard(self, producer: Producer) -> None:
        """Stop asking ``producer`` (once it has done all it will do)."""
        with self._lock:
            self._producers.discard(producer)
            self._count += 1

    def working(self) -> None:
        """A producer starts a burst of work (it woke up)."""
        with self._lock:
            self._count += 1

    def idle(self) -> None:
        """A producer ends a burst of work (it goes back to waiting)."""
        with self._lock:
            self._count += 1

    @property
    def count(self) -> int:
        """Moves whenever a producer starts or ends a burst, or comes or goes."""
        return self._count

    def busy(self) -> bool:
        """Whether any producer is working or about to."""
        with self._lock:
            producers = list(self._producers)
        return any(producer.busy() for producer in producers)


#: The process's one registry (one clock is installed at a time).
IN_FLIGHT: Final = InFlight()
