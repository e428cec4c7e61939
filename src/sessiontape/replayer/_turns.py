"""Turns: the verify boundaries' calls (store mutations) of a replay, each store's in its
recorded order.

One :class:`~._order.Sequencer` per store holds the order; :class:`Turns` is what the
engine asks of them: wait for a call's turn (reporting an ``order_mismatch`` when the call
waited for never comes), end a turn, pass over a recorded call today's code skipped, and
let go of the calls a worker that stopped (told a call has no recorded answer, or dead)
will not make.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
    ) -> None:
        self._sequencers = {
            name: Sequencer(seqs, timeout, progress) for name, seqs in orders.items()
        }
        self._queues = queues
        self._mismatch = mismatch
        #: Workers whose calls not yet made no longer hold up the order (:meth:`stopped`).
        self._abandoned: set[str] = set()

    def wait(self, name: str, boundary: str, seq: int, *, skip_missing: bool) -> None:
        """Wait until the recorded call ``seq`` of store ``name`` is next in its order.

        With ``skip_missing`` (an update) the order goes on past a recorded call that never
        comes (today's code no longer makes it: it is dropped); otherwise the order is
        reported broken, once."""
        sequencer = self._sequencers.get(name)
        if sequencer is None or sequencer.broken:
            return
        waited_on = sequencer.wait_turn(seq, skip_missing=skip_missing)
        if waited_on is not None:
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
        sequencer = self._sequencers.get(name)
        if sequencer is not None:
            sequencer.wait_all()

    def done(self, name: str, seq: int) -> None:
        """The recorded call ``seq`` of store ``name`` has run: let the next one through."""
        sequencer = self._sequencers.get(name)
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
        if not self._sequencers or worker in self._abandoned:
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
        for sequencer in self._sequencers.values():
            sequencer.abandon(seqs)
