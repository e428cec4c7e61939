"""Capabilities of chaos replay: finding a planted race, saving it as a regression tape,
and finding nothing where there is nothing."""

from __future__ import annotations

import json
import re

import sessiontape

from .harness import Cell

#: Schedules a planted race must be found within, and a clean program must pass.
SCHEDULES = 100
SUMMARY = re.compile(r"sessiontape chaos: (\d+) schedules run, (\d+) admissible .*?, (\d+) failed")


def first_failing_seed(cell: Cell, variant: str) -> tuple[int, sessiontape.ChaosResult] | None:
    """The first of ``SCHEDULES`` seeds whose schedule fails under ``variant``."""
    tape = cell.shelf.tape(cell.program)
    for seed in range(SCHEDULES):
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
