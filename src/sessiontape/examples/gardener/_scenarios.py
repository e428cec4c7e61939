"""The gardener's scenarios: a starting repository, a backlog and the agent's script.

Each scenario is plain data. Tasks are dealt to workers round-robin (a task's
``affinity``), so which worker does which task never depends on thread timing: that is
what lets a replay give each worker the calls it recorded, in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from ._agent import TaskScript

__all__ = ["SCENARIOS", "Scenario", "get_scenario"]

#: The repository every scenario starts from (read-only: scenarios share it).
GARDEN: Final[Mapping[str, str]] = MappingProxyType(
    {
        "README.md": "# The garden\n\nTended by gardener workers.\n",
        "settings.ini": "[garden]\ncolor = red\nsize = small\nwater = weekly\n",
    }
)
_PAINTED = "[garden]\ncolor = {}\nsize = small\nwater = weekly\n"


@dataclass(frozen=True)
class _Job:
    """A task definition and the agent's script for it."""

    id: str
    title: str
    script: TaskScript


def _roses(review_rounds: int = 0) -> _Job:
    files = {"beds/roses.txt": "roses: 12\nspacing: 40cm\n"}
    return _Job("roses", "Plant a bed of roses", TaskScript(files, review_rounds=review_rounds))


def _tulips(review_rounds: int = 0) -> _Job:
    files = {"beds/tulips.txt": "tulips: 30\n"}
    return _Job("tulips", "Plant tulips by the gate", TaskScript(files, review_rounds))


def _paint(color: str, review_rounds: int = 0) -> _Job:
    files = {"settings.ini": _PAINTED.format(color)}
    return _Job(f"paint-{color}", f"Paint the fence {color}", TaskScript(files, review_rounds))


_README = _Job(
    "readme",
    "Document the watering schedule",
    TaskScript({"README.md": GARDEN["README.md"] + "Water weekly, daily in July.\n"}),
)
_COMPOST = _Job(
    "compost",
    "Build a compost heap on the lawn",
    TaskScript({"beds/compost.txt": "compost: 1 heap\n"}, transient_errors=1, outcome="fail"),
)
_HEDGE = _Job(
    "hedge", "Prune the hedge", TaskScript({"beds/hedge.txt": "pruned\n"}, outcome="crash")
)


@dataclass(frozen=True)
class Scenario:
    """A named gardener run: the repository it starts from, its tasks and their script."""

    name: str
    description: str
    jobs: tuple[_Job, ...]
    files: Mapping[str, str] = field(default_factory=lambda: GARDEN)

    @property
    def script(self) -> dict[str, TaskScript]:
        """The :class:`ScriptedAgent` script for this scenario's tasks."""
        return {job.id: job.script for job in self.jobs}

    def backlog(self, workers: int) -> list[dict[str, Any]]:
        """The tasks to seed the store with, dealt to ``workers`` workers round-robin."""
        return [
            {
                "id": job.id,
                "title": job.title,
                "priority": index,
                "affinity": f"worker-{index % workers + 1}",
                "payload": {"files": sorted(job.script.files)},
            }
            for index, job in enumerate(self.jobs)
        ]


SCENARIOS: Final[Mapping[str, Scenario]] = {
    scenario.name: scenario
    for scenario in (
        Scenario(
            "happy",
            "three tasks, each approved at the first review",
            (_roses(), _tulips(), _README),
        ),
        Scenario(
            "review",
            "the review loop: one task needs one round of changes, another two",
            (_roses(review_rounds=1), _tulips(review_rounds=2), _README),
        ),
        Scenario(
            "conflict",
            "two tasks repaint the same line; the second merge conflicts and is resolved",
            (_paint("green"), _paint("blue"), _roses()),
        ),
        Scenario(
            "crash",
            "the reviewer answers a state the orchestrator has no transition for",
            (_roses(), _HEDGE, _tulips()),
        ),
        Scenario(
            "full",
            "six tasks on three workers: reviews, a conflict, a retry and a failure",
            (
                _roses(),
                _paint("green"),
                _paint("blue", review_rounds=1),
                _tulips(review_rounds=1),
                _COMPOST,
                _README,
            ),
        ),
    )
}


def get_scenario(name: str) -> Scenario:
    """The scenario called ``name``, with an error listing the valid names."""
    try:
        return SCENARIOS[name]
    except KeyError:
        valid = ", ".join(repr(n) for n in SCENARIOS)
        raise ValueError(f"unknown gardener scenario {name!r}; use one of {valid}") from None
