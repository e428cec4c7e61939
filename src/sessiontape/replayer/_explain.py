"""Explain a failing chaos schedule: the decision after which its failure was certain.

A client of the chaos scheduler, not a second scheduler: it runs the failing schedule
once more with ``Schedule(trace=True)`` (the scheduler notes each decision), then runs
schedules that force the first ``k`` of those decisions (``Schedule(prefix=...)``) and
let the random strategy choose the rest, seeded, and counts how many fail the same way
(see :func:`same_failure`). ``run(schedule)`` runs the application under a schedule and
gives its :class:`ChaosResult`, so the same engine serves the pytest plugin (through the
project's ``sessiontape_replay`` hook) and a program's own tests.

Cheap by its structure: keeping more decisions can only make the failure more certain
(as a rule), so the earliest certain ``k`` is found by bisection over ``k``; and an
estimate stops sampling as soon as its side of the threshold is clear (enough failures
to be certain, or too many passes to become so).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Final

from .._errors import UsageError
from ..report import ChaosResult, ChaosVerdict, Estimate, Explanation
from ._schedule import Schedule, Strategy

__all__ = ["DEFAULT_SAMPLES", "DEFAULT_THRESHOLD", "explain", "same_failure"]

#: Schedules per estimate.
DEFAULT_SAMPLES: Final = 20
#: The share of schedules failing the same way at which the failure counts as certain.
DEFAULT_THRESHOLD: Final = 0.95
#: Quoted values and numbers in a failure's message.
_VALUES: Final = re.compile(r"'[^']*'|\"[^\"]*\"|\d+")
#: Inadmissible schedules do not count; past this many per sample, the estimate stops.
_ATTEMPTS_PER_SAMPLE: Final = 3


def explain(
    run: Callable[[Schedule], ChaosResult],
    schedule: Schedule,
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    threshold: float = DEFAULT_THRESHOLD,
) -> Explanation:
    """Where the failure of ``schedule`` (a failing chaos schedule) became certain.

    ``run(schedule)`` replays the tape under a schedule; ``samples`` schedules at most per
    estimate, seeded from ``seed`` (the same seeds give the same explanation).
    """
    if samples < 1:
        raise UsageError(f"explain needs at least one schedule per estimate, got {samples}.")
    if not 0 < threshold <= 1:
        raise UsageError(f"explain's threshold must be in (0, 1], got {threshold!r}.")
    traced = run(dataclasses.replace(schedule, trace=True))  # with its prefix: as it failed
    if not traced.failed:
        raise UsageError(
            f"{traced.cassette} under {schedule.label} did not fail "
            f"({traced.verdict.value}): there is no failure to explain. Explain a schedule "
            "that fails: pytest --replay TAPE --sessiontape-chaos N finds them."
        )
    target = same_failure(traced)
    forced = tuple(d.chosen for d in traced.decisions)
    needed = math.ceil(threshold * samples)
    estimates: dict[int, Estimate] = {}
    counter = [1]

    def estimate(kept: int) -> Estimate:
        runs = failed = inadmissible = 0
        while runs < samples and inadmissible < _ATTEMPTS_PER_SAMPLE * samples:
            attempt = runs + inadmissible
            result = run(
                Schedule(
                    seed=_seed(seed, kept, attempt),
                    strategy=Strategy.RANDOM,
                    stall_limit=schedule.stall_limit,
                    prefix=forced[:kept],
                )
            )
            counter[0] += 1
            if result.verdict is ChaosVerdict.INADMISSIBLE:
                inadmissible += 1
                continue
            runs += 1
            failed += result.failed and same_failure(result) == target
            if failed >= needed or runs - failed > samples - needed:
                break  # its side of the threshold is clear
        found = Estimate(
            kept=kept,
            runs=runs,
            failed=failed,
            inadmissible=inadmissible,
            doomed=runs > 0 and failed >= min(needed, math.ceil(threshold * runs)),
        )
        estimates[kept] = found
        return found

    # With every decision kept the run is the failing one (nothing is left to choose):
    # the traced run is that estimate's one sample.
    estimates[len(forced)] = Estimate(kept=len(forced), runs=1, failed=1, doomed=True)

    if estimate(0).doomed:
        point = 0
    else:
        low, high = 0, len(forced)
        while high - low > 1:
            middle = (low + high) // 2
            if estimate(middle).doomed:
                high = middle
            else:
                low = middle
        point = high
    deciding = traced.decisions[point - 1] if point else None
    return Explanation(
        cassette=traced.cassette,
        schedule=schedule.label,
        failure=traced.signature,
        decisions=len(forced),
        estimates=[estimates[k] for k in sorted(estimates)],
        point=point,
        deciding=deciding,
        schedules=counter[0],
        samples=samples,
        seed=seed,
        threshold=threshold,
    )


def same_failure(result: ChaosResult) -> str:
    """What makes two failures the same: the oracle and its message, with quoted values
    and numbers masked (the same race hitting another task, or losing another count, is
    the same failure)."""
    return _VALUES.sub("…", result.signature)


def _seed(seed: int, kept: int, attempt: int) -> int:
    """The seed of an estimate's ``attempt``-th schedule: distinct per (seed, kept,
    attempt), and the same on every machine."""
    return (seed * 1_000_003 + kept) * 1_009 + attempt
