"""The planted races, as the tests and the reliability run use them.

Each of the two racy programs (``racy_gardener``, ``racy_jobs``) is recorded with every
gap closed (no race fires), then replayed under chaos schedules with one gap open. A race
is *found* by a schedule that fails in the way that race fails.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import sessiontape

from . import racy_gardener, racy_jobs

PROGRAMS: Final = ("gardener", "jobs")
RACES: Final = ("double_claim", "lost_update", "timeout")


def found(race: str, result: sessiontape.ChaosResult) -> bool:
    """Whether ``result`` is the failure ``race`` causes."""
    failure = result.failure
    if failure is None:
        return False
    if race == "double_claim":
        return "claimed twice" in failure.message
    if race == "lost_update":
        return failure.kind.value == "outcome" and (
            "merged_counter" in failure.message or "count" in failure.message
        )
    # The reaper timed a task out while its worker was completing it: a call of the
    # reaper's that the recording never made (it timed nothing out there).
    timed_out = any(c.worker == "reaper" and c.seq is None for c in result.calls[: failure.after])
    return timed_out and failure.kind.value in ("exception", "invariant")


@dataclass
class Planted:
    """One program recorded race-free, replayable with one race's gap open."""

    program: str
    race: str
    cassette: Path
    work: Path

    def run(
        self, schedule: sessiontape.Schedule | None, *, open_race: str | None = None
    ) -> sessiontape.ReplayTape:
        """Replay with this race's gap open (or ``open_race``: a race, ``"all"``,
        ``"none"``)."""
        race = open_race or self.race
        if self.program == "gardener":
            workdir = Path(tempfile.mkdtemp(dir=self.work))
            return racy_gardener.replay(self.cassette, workdir, schedule, open_race=race)
        return racy_jobs.replay(self.cassette, schedule, open_race=race)

    def first_found(
        self, base: int, budget: int, strategy: str = "pct", *, open_race: str | None = None
    ) -> int | None:
        """The first seed in ``base .. base+budget-1`` whose schedule finds the race."""
        for seed in range(base, base + budget):
            schedule = sessiontape.Schedule(seed=seed, strategy=strategy)
            result = self.run(schedule, open_race=open_race).chaos
            assert result is not None
            if found(self.race, result):
                return seed
        return None


def record_all(directory: Path) -> dict[tuple[str, str], Planted]:
    """Record each program (with and without its reaper) once; one :class:`Planted`
    per (program, race)."""
    tapes: dict[tuple[str, bool], Path] = {}
    for program in PROGRAMS:
        for reaper in (False, True):
            cassette = directory / f"{program}-{'reaper' if reaper else 'plain'}.jsonl"
            if program == "gardener":
                racy_gardener.record(cassette, directory / f"rec-{reaper}", reaper=reaper)
            else:
                racy_jobs.record(cassette, reaper=reaper)
            tapes[(program, reaper)] = cassette
    work = directory / "replays"
    work.mkdir(exist_ok=True)
    return {
        (program, race): Planted(program, race, tapes[(program, race == "timeout")], work)
        for program in PROGRAMS
        for race in RACES
    }
