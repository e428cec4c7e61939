"""Where a race became inevitable: the result of ``explain``, as data and as text.

For a failing chaos schedule, ``explain`` estimates, for some numbers ``k`` of its
scheduling decisions, the probability that a schedule keeping decisions 1..k (and
choosing the rest at random) fails the same way. The *point of no return* is the earliest
decision after which that failure is (nearly) certain; it is named by the two calls whose
order it fixed. Nothing here depends on timing: the same seeds give the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from ._chaos import ChaosDecision

__all__ = ["Estimate", "Explanation"]

#: The row's characters, from "never fails" to "always fails".
_LEVELS: Final = "▁▂▃▄▅▆▇█"


class Estimate(msgspec.Struct, frozen=True, kw_only=True):
    """The failure's probability with the first ``kept`` decisions kept."""

    kept: int
    #: Admissible schedules run, and how many failed the same way.
    runs: int
    failed: int
    #: Schedules the tape could not answer (not counted in ``runs``).
    inadmissible: int = 0
    #: Whether the failure counts as certain here (``failed / runs`` at or above the
    #: threshold, or the sampling stopped once that was clear).
    doomed: bool

    @property
    def probability(self) -> float:
        return self.failed / self.runs if self.runs else 0.0


class Explanation(msgspec.Struct, kw_only=True):
    """Where a failing schedule's failure became certain."""

    cassette: str
    #: The failing schedule (``seed 3, pct depth 3``) and its failure's signature (a
    #: schedule fails the same way when its signature matches this one with quoted values
    #: and numbers masked: ``replayer.same_failure``).
    schedule: str
    failure: str
    #: How many decisions the failing schedule made.
    decisions: int
    #: The estimates made, by ``kept`` (bisection estimates only some).
    estimates: Sequence[Estimate]
    #: The decision (1-based) after which the failure is certain; 0 when it is certain
    #: before any (no decision of this schedule caused it).
    point: int
    #: That decision, named by the calls whose order it fixed.
    deciding: ChaosDecision | None
    #: Schedules run in all (the traced failing one included), per estimate at most,
    #: the sampling seed and the threshold of "certain".
    schedules: int
    samples: int
    seed: int
    threshold: float

    def row(self) -> str:
        """The compact probability row: one character per estimate, in order of ``kept``."""
        return "".join(
            _LEVELS[min(len(_LEVELS) - 1, int(e.probability * (len(_LEVELS) - 1) + 0.5))]
            for e in self.estimates
        )

    def verdict(self) -> str:
        """The one line that answers the question."""
        if self.point == 0 or self.deciding is None:
            return "The failure was certain before any scheduling decision of this schedule."
        return (
            f"The point of no return: decision {self.point} of {self.decisions}: "
            f"{self.deciding.named()}."
        )

    def render(self) -> str:
        lines = [
            f"sessiontape explain: {self.cassette} ({self.schedule}): {self.failure}",
            self.verdict(),
            f"P(same failure) keeping decisions 1..k ({self.row()}):",
        ]
        width = max(4, *(len(str(e.kept)) for e in self.estimates)) if self.estimates else 4
        lines.append("  k " + " ".join(f"{e.kept:>{width}}" for e in self.estimates))
        lines.append("  P " + " ".join(f"{e.probability:>{width}.2f}" for e in self.estimates))
        lines.append("  n " + " ".join(f"{e.runs:>{width}}" for e in self.estimates))
        at = next((i for i, e in enumerate(self.estimates) if e.kept == self.point), None)
        if at is not None and self.deciding is not None:
            # A caret under the point's column (its last character), so the eye finds it.
            lines.append(" " * (4 + at * (width + 1) + width - 1) + "^ the point of no return")
        lines.append(
            f"Ran {self.schedules} schedules: up to {self.samples} per estimate (seed "
            f"{self.seed}), stopping early once an estimate was clearly at or below "
            f"{self.threshold:.0%}; bisection over k."
        )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The explanation as JSON data (the receipt's ``chaos.explain``)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        data["verdict"] = self.verdict()
        data["row"] = self.row()
        return data
