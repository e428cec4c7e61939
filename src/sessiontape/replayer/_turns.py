"""Turns: the verify boundaries' calls (store mutations) of a replay, each store's in its
recorded order.

One :class:`~._order.Sequencer` per store holds the order; :class:`Turns` holds them and
what the engine asks of them but on every call: report an ``order_mismatch`` when the
call waited for never comes, pass over a recorded call today's code skipped, and let go
of the calls a worker that stopped (told a call has no recorded answer, or dead) will not
make. A call's wait for its turn, and the end of its turn, are the engine's
(``ReplayEngine.wait_turn``, ``turn_done``): they run on every store call, and go to the
store's sequencer directly.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from .._context import worker_var
from ..cassette import CallEntry
from ..report import MismatchKind
from ._order import Progress, Sequencer, order_broken, verify_name

__all__ = ["Turns"]


class Turns:
    """The recorded orders of a replay's stores (see the module's documentation)."""

    def __init__(
        self,
        orders: Mapping[str, Sequence[int]],
        timeout: float,
        progress: Progress,
        queues: Mapping[tuple[str, str], deque[CallEntry]],
        mismatch: Callable[..., None],
        *,
        skip_missing: bool,
    ) -> None:
        #: Each store's order, by name. The engine's per-call methods (``wait_turn``,
        #: ``turn_done``) read it themselves: a Python call of ``Turns`` between the
        #: engine and a store's ``Sequencer`` costs every store call two frames.
        self.sequencers: Final = {
            name: Sequencer(seqs, timeout, progress) for name, seqs in orders.items()
        }
        #: Whether the order goes on past a recorded call that never comes (an update:
        #: today's code no longer makes it, it is dropped) instead of breaking.
        self.skip_missing: Final = skip_missing
        self._queues = queues
        self._mismatch = mismatch
        #: Workers whose calls not yet made no longer hold up the order (:meth:`stopped`).
        self._abandoned: set[str] = set()

    def broke(self, name: str, boundary: str, seq: int, waited_on: int) -> None:
        """Report the order of store ``name`` broken: its call ``seq`` waited in vain for
        the recorded call ``waited_on`` (``seq`` itself: it came too late). A call waits
        for its turn in ``ReplayEngine.wait_turn``, on :attr:`sequencers`; with
        :attr:`skip_missing` the order goes on past a call that never comes instead."""
        self._mismatch(
            MismatchKind.ORDER_MISMATCH,
            seq=waited_on,
            worker=worker_var.get(),  # the calling worker's, asked only for the report
            boundary=boundary,
            message=order_broken(name, seq, waited_on),
        )

    def wait_all(self, name: str) -> None:
        """Wait until every recorded call of store ``name`` has run (see
        ``Sequencer.wait_all``): the turn of a call the recording lacks, from a worker with
        none of that store's recorded calls left."""
        sequencer = self.sequencers.get(name)
        if sequencer is not None:
            sequencer.wait_all()

    def done(self, name: str, seq: int) -> None:
        """The recorded call ``seq`` of store ``name`` has run: let the next one through.
        (``ReplayEngine.turn_done`` runs this inline.)"""
        sequencer = self.sequencers.get(name)
        if sequencer is not None:
            sequencer.done(seq)

    def skipped(self, entry: CallEntry) -> None:
        """A recorded call was skipped (today's code no longer makes it): a verify call's
        turn is over, so the calls after it in the recorded order are not kept waiting."""
        name = verify_name(entry)
        if name is not None:
            self.done(name, entry.seq)

    def stopped(self, worker: str) -> None:
        """``worker`` was told a call has no recorded answer, or its thread died: the
        replay has failed, and the verify calls it has not made yet most likely never
        come. A call waiting for its turn behind one of them stops waiting now, as it
        would once the order timeout ran out (an ``order_mismatch`` naming that call),
        instead of waiting the timeout out."""
        if not self.sequencers or worker in self._abandoned:
            return
        self._abandoned.add(worker)
        # list() copies in one step (C code, under the GIL): another thread of the same
        # worker may be taking from these queues.
        seqs: list[Any] = [
            entry.seq
            for (_, owner), queue in list(self._queues.items())
            if owner == worker
            for entry in list(queue)
        ]
        for sequencer in self.sequencers.values():
            sequencer.abandon(seqs)
