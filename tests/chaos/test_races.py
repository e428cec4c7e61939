"""Chaos replay finds races production did not hit, and reports them reproducibly.

Each program is recorded with its gaps closed (no race fires), and replays green under
chaos that way; with one gap open, a few hundred schedules find the race. The full
measure (20 base seeds of 100 schedules each, and 1,000 schedules over the corpus) is in
``tests/chaos/reliability.py``, run by ``nox -s reliability``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sessiontape
from sessiontape import MismatchKind, Schedule

from . import racy_gardener, racy_jobs
from .races import PROGRAMS, RACES, Planted, found, record_all

# The racy programs' workers die of the races they hit: expected here.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")

#: Base seeds tried here (the reliability run tries 20), each with up to 100 schedules.
BASES = (0, 1000, 2000)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Planted]:
    return record_all(tmp_path_factory.mktemp("planted"))


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("race", RACES)
def test_chaos_finds_the_planted_race(
    planted: dict[tuple[str, str], Planted], program: str, race: str
) -> None:
    subject = planted[(program, race)]
    recording = sessiontape.load(subject.cassette)
    # Recorded where the race did not fire: the recorded outcome is the right one.
    assert recording.end is not None
    assert recording.end.outcome["count" if program == "jobs" else "merged_counter"] == len(
        recording.end.outcome["done" if program == "jobs" else "completed"]
    )
    seeds = [subject.first_found(base, 100) for base in BASES]
    assert None not in seeds, f"{program}/{race}: not found from base seeds {BASES}: {seeds}"


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_closed_gaps_raise_no_false_alarm(
    planted: dict[tuple[str, str], Planted], program: str
) -> None:
    subject = planted[(program, "double_claim")]
    closed = Planted(program, "none", subject.cassette, subject.work)
    for seed in range(12):
        for strategy in ("pct", "random"):
            result = closed.run(Schedule(seed=seed, strategy=strategy)).chaos
            assert result is not None
            assert result.verdict.value == "passed", result.render()


def _failing(subject: Planted) -> int:
    seed = subject.first_found(0, 100)
    assert seed is not None
    return seed


@pytest.mark.parametrize("race", RACES)
def test_a_failing_seed_gives_a_byte_identical_report(
    planted: dict[tuple[str, str], Planted], race: str
) -> None:
    subject = planted[("gardener", race)]
    seed = _failing(subject)
    first = subject.run(Schedule(seed=seed)).chaos
    second = subject.run(Schedule(seed=seed)).chaos
    assert first is not None
    assert second is not None
    assert first.render() == second.render()
    assert first.to_dict() == second.to_dict()
    assert f"seed {seed}, strategy pct, depth 3" in first.render()


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("race", RACES)
def test_a_saved_schedule_replays_in_plain_mode_and_fails_the_same_way(
    planted: dict[tuple[str, str], Planted], program: str, race: str, tmp_path: Path
) -> None:
    # Every gap open: no lock of the program's own spans two store calls, so the order
    # of the store calls (which a plain replay keeps) decides the interleaving.
    subject = planted[(program, race)]
    seed = subject.first_found(0, 100, open_race="all")
    assert seed is not None
    tape = subject.run(Schedule(seed=seed), open_race="all")
    failure = tape.chaos.failure if tape.chaos else None
    assert failure is not None
    saved = tape.save_chaos(tmp_path / "saved.jsonl")
    assert oct(saved.stat().st_mode & 0o777) == "0o600"
    for _ in range(2):
        plain = Planted(program, race, saved, subject.work).run(None, open_race="all")
        assert plain.report is not None
        kinds = {m.kind: m for m in plain.report.mismatches}
        if failure.kind.value == "invariant":
            assert failure.message in kinds[MismatchKind.INVARIANT_VIOLATED].message
        elif failure.kind.value == "outcome":
            assert MismatchKind.OUTCOME_MISMATCH in kinds
            diff = kinds[MismatchKind.OUTCOME_MISMATCH].diffs[0]
            assert diff.path in failure.message
        else:
            died = kinds[MismatchKind.APPLICATION_ERROR]
            assert failure.message.split(": ", 1)[1] in died.message


def test_a_worker_that_claims_another_task_gets_that_tasks_answers(
    planted: dict[tuple[str, str], Planted],
) -> None:
    """In the race-free program, tasks go to whichever worker asks first: some schedules
    give a worker calls another worker recorded, answered from that worker's queue."""
    subject = planted[("gardener", "double_claim")]
    closed = Planted("gardener", "none", subject.cassette, subject.work)
    recording = sessiontape.load(subject.cassette)
    recorded_by = {e.seq: e.worker for e in recording.calls}
    swapped = 0
    for seed in range(10):
        result = closed.run(Schedule(seed=seed, strategy="random")).chaos
        assert result is not None
        assert result.verdict.value == "passed", result.render()
        swapped += sum(
            1
            for c in result.calls
            if c.seq is not None and c.boundary != "store" and recorded_by[c.seq] != c.worker
        )
    assert swapped > 0


def test_the_racy_programs_are_what_they_say(planted: dict[tuple[str, str], Planted]) -> None:
    """The gaps are real: the racy gardener's store has no guard against a double claim."""
    assert racy_gardener.RACES == racy_jobs.RACES == RACES
    assert found("double_claim", _claimed_twice())


def _claimed_twice() -> sessiontape.ChaosResult:
    return sessiontape.ChaosResult(
        cassette="x.jsonl",
        seed=1,
        strategy="pct",
        depth=3,
        verdict=sessiontape.report.ChaosVerdict.FAILED,
        failure=sessiontape.report.ChaosFailure(
            kind=sessiontape.report.FailureKind.INVARIANT, message="tasks claimed twice: ['a']"
        ),
    )
