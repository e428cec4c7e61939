"""Capabilities of chaos replay: finding a planted race, saving it as a regression tape,
finding nothing where there is nothing, and naming the decision that made the race
certain (``explain``)."""

from __future__ import annotations

import json
import re
from typing import Any

import sessiontape

from .harness import Cell

#: Schedules a planted race must be found within, and a clean program must pass.
SCHEDULES = 100
SUMMARY = re.compile(r"sessiontape chaos: (\d+) schedules run, (\d+) admissible .*?, (\d+) failed")


def first_failing_seed(
    cell: Cell, variant: str, base: int = 0
) -> tuple[int, sessiontape.ChaosResult] | None:
    """The first of ``SCHEDULES`` seeds from ``base`` whose schedule fails under ``variant``."""
    tape = cell.shelf.tape(cell.program)
    for seed in range(base, base + SCHEDULES):
        replayed = cell.replay_api(tape, variant=variant, schedule=sessiontape.Schedule(seed=seed))
        result = replayed.tape.chaos
        assert result is not None
        if result.failed:
            return seed, result
    return None


def chaos_race(cell: Cell) -> None:
    """``pytest --replay X --sessiontape-chaos 100`` under the ``racy`` code finds the
    planted race: schedules fail, and the failure names it."""
    race = cell.program.race
    assert race is not None
    tape = cell.recorded(into=cell.project.path / "tapes")
    result, _ = cell.pytest(
        "--replay", str(tape), "--sessiontape-chaos", str(SCHEDULES), "-q", variant="racy"
    )
    summary = SUMMARY.search(result.stdout.str())
    assert summary is not None, result.stdout.str()[-3000:]
    assert int(summary.group(1)) == SCHEDULES
    assert int(summary.group(3)) >= 1, f"{SCHEDULES} schedules did not find the race"
    assert race in result.stdout.str()


def chaos_save(cell: Cell) -> None:
    """A failing schedule saved with ``--sessiontape-chaos-save`` fails in plain replay
    with the failure chaos found, first."""
    race = cell.program.race
    assert race is not None
    found = first_failing_seed(cell, "racy")
    assert found is not None, f"{SCHEDULES} schedules did not find the race"
    seed, _ = found
    tape = cell.recorded(into=cell.project.path / "tapes")
    folder = cell.project.path / "found"
    result, _ = cell.pytest(
        "--replay",
        str(tape),
        "--sessiontape-chaos-seed",
        str(seed),
        "--sessiontape-chaos-save",
        str(folder),
        variant="racy",
    )
    result.assert_outcomes(failed=1)
    (saved,) = folder.glob("*.jsonl")
    receipt = cell.fresh("receipt") / "receipt.json"
    result, _ = cell.pytest(
        "--replay", str(saved), f"--sessiontape-report={receipt}", "-rA", variant="racy"
    )
    result.assert_outcomes(failed=1)
    (report,) = json.loads(receipt.read_text(encoding="utf-8"))
    first = report["mismatches"][0]
    assert first["kind"] == "invariant_violated", report["mismatches"][:3]
    assert race in json.dumps(first)


def chaos_clean(cell: Cell) -> None:
    """Under the code as recorded, no schedule of ``SCHEDULES`` fails, and most are
    admissible (a run of inadmissible schedules proves nothing)."""
    tape = cell.shelf.tape(cell.program)
    verdicts: dict[str, int] = {}
    for seed in range(SCHEDULES):
        replayed = cell.replay_api(tape, schedule=sessiontape.Schedule(seed=seed))
        result = replayed.tape.chaos
        assert result is not None
        assert not result.failed, result.render()
        verdicts[result.verdict.value] = verdicts.get(result.verdict.value, 0) + 1
    assert verdicts.get("passed", 0) >= SCHEDULES // 2, verdicts


#: Base seeds the explain cell finds the race from: 0, 1000, ..., 9000.
BASES = tuple(range(0, 10_000, 1_000))
#: The pair of calls each program's planted race is decided by, as ``explain`` names it
#: (``{task}``: the task the failure names). A double claim is decided when one worker's
#: ``next_ready()`` runs before another's ``claim`` of the task that worker was told; a
#: lost update when one pool task (named by submission order) reads the total before
#: another writes it back. The asyncio program has none yet: chaos does not schedule its
#: tasks (zoo defect E), so no explanation of its race has been seen to write one from.
DECIDING: dict[str, str] = {
    "threads": r"(worker-[1-3])'s `next_ready\(\)` ran before (?!\1)(worker-[1-3])'s "
    r"`claim\('{task}', '\2'\)`",
    "pool": r"(main/[1-4])'s `read_total\(\)` ran before (?!\1)main/[1-4]'s "
    r"`write_total\(\d+, \d\)`",
}


def explain(cell: Cell) -> None:
    """From each of 10 base seeds, chaos finds the planted race under the ``racy`` code and
    ``sessiontape.explain`` names the pair of calls that decided it, in the program's
    terms; its estimates bracket the point (certain from it on, not just before). The
    first base's failing schedule, explained through pytest
    (``--sessiontape-chaos-explain``), puts the same explanation in the receipt."""
    race = cell.program.race
    assert race is not None
    tape = cell.shelf.tape(cell.program)

    def run(schedule: sessiontape.Schedule) -> sessiontape.ChaosResult:
        result = cell.replay_api(tape, variant="racy", schedule=schedule).tape.chaos
        assert result is not None
        return result

    first: tuple[int, dict[str, Any]] | None = None
    for base in BASES:
        found = first_failing_seed(cell, "racy", base)
        assert found is not None, f"{SCHEDULES} schedules from {base} did not find the race"
        seed, result = found
        assert race in result.signature, result.render()
        explained = sessiontape.explain(run, sessiontape.Schedule(seed=seed))
        assert explained.deciding is not None, explained.render()
        assert cell.program.name in DECIDING, (
            f"no deciding pair written for {cell.program.name} (caps_chaos.DECIDING); "
            f"explain named: {explained.deciding.named()}"
        )
        pattern = DECIDING[cell.program.name]
        if "{task}" in pattern:
            task = re.search(r"\['([^']+)'\]", explained.failure)
            assert task is not None, explained.failure
            pattern = pattern.replace("{task}", task.group(1))
        assert re.fullmatch(pattern, explained.deciding.named()), (base, explained.render())
        by_kept = {e.kept: e for e in explained.estimates}
        assert by_kept[explained.point].doomed, (base, explained.render())
        assert not by_kept[explained.point - 1].doomed, (base, explained.render())
        first = first or (seed, explained.to_dict())
    assert first is not None
    seed, data = first
    receipt = cell.fresh("receipt") / "receipt.json"
    ran, _ = cell.pytest(
        "--replay",
        str(cell.recorded(into=cell.project.path / "tapes")),
        "--sessiontape-chaos-seed",
        str(seed),
        "--sessiontape-chaos-explain",
        f"--sessiontape-report={receipt}",
        variant="racy",
    )
    ran.assert_outcomes(failed=1)
    (item,) = json.loads(receipt.read_text(encoding="utf-8"))
    assert item["chaos"]["explain"] == json.loads(json.dumps(data))
