"""Shards: a corpus split over N CI jobs, balanced by how long each tape took to replay.

As pytest-split balances tests by their stored durations, each tape counts the replay time
an earlier receipt gives it (``pytest --sessiontape-report``, merged over shards with
``sessiontape receipts merge``); a tape no receipt knows counts the median of those that
are known, or 1 when none is. Every job computes the same split from the same listing and
receipts, so the N shards cover the corpus once, with no coordinator.
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .._errors import UsageError

__all__ = ["Durations", "Shard", "Sharded", "parse_shard", "split"]

_NS_PER_S: Final = 1e9


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``i/N`` with 1 <= i <= N; an ``argparse`` type (its error becomes a usage error)."""
    index, sep, count = text.strip().partition("/")
    try:
        shard = Shard(int(index), int(count))
    except ValueError:
        shard = None
    if not sep or shard is None or not 1 <= shard.index <= shard.count:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a shard; write i/N with 1 <= i <= N, such as 2/4 for the second "
            "of four CI jobs."
        )
    return shard


class Durations:
    """Replay durations in seconds from receipts, by run id and by cassette file name."""

    def __init__(self, by_run: Mapping[str, float], by_name: Mapping[str, float]) -> None:
        self.by_run = dict(by_run)
        self.by_name = dict(by_name)
        known = list(self.by_run.values()) or list(self.by_name.values())
        self.default = statistics.median(known) if known else 1.0

    @classmethod
    def from_receipts(cls, paths: Iterable[str | Path]) -> Durations:
        """Read receipts (the object ``ReplayReport.to_json()`` writes, or the list
        ``pytest --sessiontape-report`` writes); the last report of a tape wins."""
        by_run: dict[str, float] = {}
        by_name: dict[str, float] = {}
        for path in paths:
            for report in _reports(Path(path)):
                seconds = report.get("replay_duration_ns")
                if not isinstance(seconds, int) or seconds < 0:
                    continue
                if isinstance(run := report.get("run_id"), str):
                    by_run[run] = seconds / _NS_PER_S
                if isinstance(cassette := report.get("cassette"), str):
                    by_name[Path(cassette).name] = seconds / _NS_PER_S
        return cls(by_run, by_name)

    def of(self, name: str, run_id: str | None) -> float:
        if run_id is not None and run_id in self.by_run:
            return self.by_run[run_id]
        return self.by_name.get(Path(name).name, self.default)


def _reports(path: Path) -> list[dict[str, Any]]:
    try:
        parsed = json.loads(path.read_bytes())
    except OSError as exc:
        raise UsageError(
            f"cannot read the durations receipt {path}: {exc.strerror or exc}. Check the "
            "path, or leave the option out to weigh every tape the same."
        ) from None
    except ValueError as exc:
        raise UsageError(f"{path} is not a replay receipt: it is not JSON ({exc}).") from None
    items = parsed if isinstance(parsed, list) else [parsed]
    return [item for item in items if isinstance(item, dict)]


@dataclass(frozen=True)
class Sharded:
    """The tapes of one shard, and how the whole split came out."""

    names: tuple[str, ...]
    #: The expected replay time of every shard, in seconds, in shard order.
    loads: tuple[float, ...]


def split(tapes: Sequence[tuple[str, str | None]], shard: Shard, durations: Durations) -> Sharded:
    """The tapes (``(name, run_id)``) that fall to ``shard``.

    Longest first, each to the shard with the least time so far (ties: the lower shard);
    names break ties between equal durations, so every job gets the same answer.
    """
    weighed = sorted(((durations.of(n, r), n) for n, r in tapes), key=lambda t: (-t[0], t[1]))
    heap = [(0.0, i) for i in range(shard.count)]
    members: list[list[str]] = [[] for _ in range(shard.count)]
    loads = [0.0] * shard.count
    for seconds, name in weighed:
        load, index = heapq.heappop(heap)
        members[index].append(name)
        loads[index] = load + seconds
        heapq.heappush(heap, (loads[index], index))
    return Sharded(tuple(sorted(members[shard.index - 1])), tuple(loads))
