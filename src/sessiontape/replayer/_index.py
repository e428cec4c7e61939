"""The tape indexed for replay: one FIFO queue per (boundary, worker).

Calls recorded *inside* a substituted call (the ``claude`` process an agent turn spawned)
are left out: replay answers the outer call from the tape, so the inner ones never happen.
Verify-boundary calls are also listed per store in their recorded global order, which
replay keeps (see ``_order.py``).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Final

from ..cassette import (
    BOUNDARY_PROCESS,
    BOUNDARY_STORE,
    LAZY_KINDS,
    PRESET_BOUNDARIES,
    BoundaryKind,
    Call,
    CallEntry,
    Recording,
)

if TYPE_CHECKING:
    from ._select import Selectors

__all__ = ["QueueKey", "TapeIndex"]

#: ``(boundary, worker)``: the key of one replay queue.
QueueKey = tuple[str, str]

_SUBSTITUTE: Final = BoundaryKind.SUBSTITUTE.value
#: The presets' boundaries by exact entry type (both forms: as loaded, and for replay).
_PRESET: Final[dict[type, str]] = PRESET_BOUNDARIES | {
    lazy: PRESET_BOUNDARIES[public]
    for lazy, public in LAZY_KINDS.items()
    if public in PRESET_BOUNDARIES
}
#: The store's entry types (both forms): verified in recorded order, not substituted.
_STORE_KINDS: Final = frozenset(kind for kind, name in _PRESET.items() if name == BOUNDARY_STORE)


class TapeIndex:
    """The calls of a recording in per-(boundary, worker) queues, built in one pass."""

    __slots__ = ("hidden", "last_seq", "loaded", "parked", "queues", "verify_order")

    def __init__(self, recording: Recording, *, live: Selectors | None = None) -> None:
        queues: dict[QueueKey, deque[CallEntry]] = {}
        substituted: set[int] = set()
        hidden: set[int] = set()
        verify_order: dict[str, list[int]] = {}
        # The presets' queues by entry type, then worker, and each store's order list:
        # no key to build and nothing to allocate per entry (this loop runs over every
        # call of the tape).
        preset_queues: dict[type, dict[str, deque[CallEntry]]] = {}
        store_orders: dict[str, list[int]] = {}
        add_substituted = substituted.add
        for entry in recording.calls:
            parent = entry.parent
            if parent is not None and (parent in substituted or parent in hidden):
                hidden.add(entry.seq)
                continue
            kind = type(entry)
            by_worker = preset_queues.get(kind)
            if by_worker is None:
                boundary = _PRESET.get(kind)
                if boundary is None:
                    self._add_call(entry, queues, substituted, verify_order)  # type: ignore[arg-type]
                    continue
                by_worker = preset_queues[kind] = {}
            queue = by_worker.get(entry.worker)
            if queue is None:
                key = (_PRESET[kind], entry.worker)
                # Both forms of a kind (as loaded, and for replay) share the queue.
                queue = queues.get(key)
                if queue is None:
                    queue = queues[key] = deque()
                by_worker[entry.worker] = queue
            queue.append(entry)
            if kind in _STORE_KINDS:
                store = entry.store  # type: ignore[union-attr]
                order = store_orders.get(store)
                if order is None:
                    order = store_orders[store] = verify_order.setdefault(store, [])
                order.append(entry.seq)
            else:
                add_substituted(entry.seq)
        #: The queues, consumed from the left as calls are served.
        self.queues = queues
        #: Seqs of calls nested in substituted calls: never expected on replay.
        self.hidden = hidden
        #: Per store (or verify boundary), the seqs of its calls in recorded order.
        self.verify_order = verify_order
        #: How many calls there are to replay.
        self.loaded = sum(len(q) for q in queues.values())
        #: The seq of the last call of each queue, for "exhausted" messages.
        self.last_seq = {key: q[-1].seq for key, q in queues.items()}
        #: The recorded process calls a live re-record runs again, out of the queues.
        self.parked: dict[QueueKey, deque[CallEntry]] = {}
        if live is not None:
            self._park(live)

    def _park(self, live: Selectors) -> None:
        # A live process call never takes its recorded entry (it runs for real), so the
        # entries the selectors pick leave the queues: in one shared with calls served
        # from the tape (``process:git`` among other programs), they would stand in the
        # way. Left over at the end, they are reported unconsumed, and the re-record
        # drops them. Only processes: every wiring of that boundary can run live, and a
        # picked agent or worker takes its whole queue.
        for key, queue in self.queues.items():
            if key[0] != BOUNDARY_PROCESS:
                continue
            picked = deque(e for e in queue if live.picks_entry(e))
            if picked:
                self.queues[key] = deque(e for e in queue if not live.picks_entry(e))
                self.parked[key] = picked

    def remaining(self) -> list[tuple[QueueKey, deque[CallEntry]]]:
        """Every queue's calls not served (the parked ones included), for the report."""
        return [*self.queues.items(), *self.parked.items()]

    @staticmethod
    def _add_call(
        entry: Call,
        queues: dict[QueueKey, deque[CallEntry]],
        substituted: set[int],
        verify_order: dict[str, list[int]],
    ) -> None:
        """Queue a call of a user-defined boundary (its name and mode on the entry)."""
        boundary = entry.boundary
        if entry.mode == _SUBSTITUTE:
            substituted.add(entry.seq)
        else:
            verify_order.setdefault(boundary, []).append(entry.seq)
        key = (boundary, entry.worker)
        queue = queues.get(key)
        if queue is None:
            queue = queues[key] = deque()
        queue.append(entry)
