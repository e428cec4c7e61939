"""A store for the tests' small programs: one counter per worker (``tape.store`` wraps it)."""

from __future__ import annotations

__all__ = ["Tally"]


class Tally:
    """One counter per worker; ``bump`` is its one mutation."""

    def __init__(self, counts: dict[str, int] | None = None) -> None:
        self.counts = dict(counts or {})

    def snapshot(self) -> dict[str, int]:
        return dict(self.counts)

    def bump(self, worker: str) -> int:
        self.counts[worker] = self.counts.get(worker, 0) + 1
        return self.counts[worker]
