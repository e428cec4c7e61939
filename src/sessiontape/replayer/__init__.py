"""The replay engine: queues, alignment, ordering, the virtual clock and the outcome.

Boundaries serve calls through :class:`ReplayEngine` (see ``boundaries/``). It never
imports the recording engine, nor the recording engine it.
"""

from __future__ import annotations

from ._align import Normalize
from ._branching import Fork, ForkStopped, RunLive
from ._chaos import ChaosEngine, ScheduledClock, ScheduleStopped
from ._clock import IGNORED_MODULES, FakeClock
from ._correlate import Correlations
from ._engine import DEFAULT_LOOKAHEAD, DEFAULT_ORDER_TIMEOUT, UNSET, ReplayEngine, prepare
from ._explain import DEFAULT_SAMPLES, DEFAULT_THRESHOLD, explain
from ._fork import ForkEngine
from ._inflight import IN_FLIGHT
from ._invariants import Invariant
from ._match import MASKED, Matcher, Noise, Path, compare
from ._pending import pending_tape
from ._pool import scheduled_pools
from ._rebuild import (
    rebuild_error,
    register_type,
    registered_type,
    resolve_result_type,
    unregister_type,
)
from ._saved import SavedScheduleEngine
from ._schedule import DEFAULT_DEPTH, DEFAULT_STALL_LIMIT, Schedule, Strategy, pct_bound
from ._select import Selector, Selectors
from ._timepatch import lingering, loop_on_clock

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_LOOKAHEAD",
    "DEFAULT_ORDER_TIMEOUT",
    "DEFAULT_SAMPLES",
    "DEFAULT_STALL_LIMIT",
    "DEFAULT_THRESHOLD",
    "IGNORED_MODULES",
    "IN_FLIGHT",
    "MASKED",
    "UNSET",
    "ChaosEngine",
    "Correlations",
    "FakeClock",
    "Fork",
    "ForkEngine",
    "ForkStopped",
    "Invariant",
    "Matcher",
    "Noise",
    "Normalize",
    "Path",
    "ReplayEngine",
    "RunLive",
    "SavedScheduleEngine",
    "Schedule",
    "ScheduleStopped",
    "ScheduledClock",
    "Selector",
    "Selectors",
    "Strategy",
    "compare",
    "explain",
    "lingering",
    "loop_on_clock",
    "pct_bound",
    "pending_tape",
    "prepare",
    "rebuild_error",
    "register_type",
    "registered_type",
    "resolve_result_type",
    "scheduled_pools",
    "unregister_type",
]
