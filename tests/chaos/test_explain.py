"""``explain``: the decision after which a chaos failure was certain, named by two calls.

Each planted race is found by chaos from ten base seeds (the gardener's, slower to
replay, from two); ``explain`` then keeps the failing schedule's first k decisions, lets
the random strategy choose the rest, and must name the pair of calls the race is about:
a double claim is decided when one worker's ``next_pending()`` runs before the other's
``take`` of the task it was told (the task in the failure's message); a lost update when
one worker reads the counter before the other writes it; a timeout racing a completion
when the reaper's ``time_out`` of the task runs before its worker's ``finish`` of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

import pytest

import sessiontape
from sessiontape import Schedule, UsageError

from .races import Planted, record_all

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Planted]:
    return record_all(tmp_path_factory.mktemp("planted"))


def _explained(subject: Planted, base: int) -> tuple[sessiontape.Explanation, str]:
    seed = subject.first_found(base, 100)
    assert seed is not None, f"{subject.program}/{subject.race}: not found from {base}"
    explanation = sessiontape.explain(_runner(subject), Schedule(seed=seed))
    assert explanation.deciding is not None, explanation.render()
    return explanation, explanation.deciding.named()


def _runner(subject: Planted) -> Callable[[Schedule], sessiontape.ChaosResult]:
    def run(schedule: Schedule) -> sessiontape.ChaosResult:
        result = subject.run(schedule).chaos
        assert result is not None
        return result

    return run


def _task(failure: str) -> str:
    """The task a failure's message names."""
    found = re.search(r"\['([a-z]+)'\]|job '([a-z]+)'|task '([a-z]+)'", failure)
    assert found is not None, failure
    return next(group for group in found.groups() if group)


#: The pair each race is decided by, per program: {task} is the task the failure names.
PAIRS = {
    ("jobs", "double_claim"): r"(w[12])'s `next_pending\(\)` ran before (?!\1)(w[12])'s "
    r"`take\('{task}', '\2'\)`",
    ("jobs", "lost_update"): r"(w[12])'s `read_count\(\)` ran before (?!\1)w[12]'s "
    r"`write_count\(\d\)`",
    ("jobs", "timeout"): r"reaper's `time_out\('{task}'\)` ran before w[12]'s "
    r"`finish\('{task}', 'job {task}'\)`",
    ("gardener", "double_claim"): r"(worker-[12])'s `next_pending\(\)` ran before "
    r"(?!\1)(worker-[12])'s `take\('{task}', '\2'\)`",
    ("gardener", "lost_update"): r"(worker-[12])'s `read_merged\(\)` ran before "
    r"(?!\1)worker-[12]'s `write_merged\(\d\)`",
}


#: Ten base seeds: the issue's "across 10 base seeds" (0, 1000, ..., 9000).
TEN: Final = tuple(range(0, 10_000, 1_000))


@pytest.mark.parametrize(
    ("program", "race", "bases"),
    [
        ("jobs", "double_claim", TEN),
        ("jobs", "lost_update", TEN),
        ("jobs", "timeout", TEN),
        ("gardener", "double_claim", (0, 1000)),
        ("gardener", "lost_update", (0, 1000)),
    ],
)
def test_explain_names_the_pair_of_calls_that_decided_the_race(
    planted: dict[tuple[str, str], Planted],
    program: str,
    race: str,
    bases: tuple[int, ...],
) -> None:
    subject = planted[(program, race)]
    for base in bases:
        explanation, named = _explained(subject, base)
        pattern = PAIRS[(program, race)]
        if "{task}" in pattern:
            pattern = pattern.replace("{task}", _task(explanation.failure))
        assert re.fullmatch(pattern, named), (base, explanation.render())
        # The estimates bracket the point: certain from it on, not certain just before.
        by_kept = {e.kept: e for e in explanation.estimates}
        assert by_kept[explanation.point].doomed
        assert not by_kept[explanation.point - 1].doomed
        assert explanation.schedules == 1 + sum(
            e.runs + e.inadmissible
            for e in explanation.estimates
            if e.kept != explanation.decisions
        )


def test_the_gardeners_timeout_is_decided_between_the_reaper_and_a_worker(
    planted: dict[tuple[str, str], Planted],
) -> None:
    explanation, named = _explained(planted[("gardener", "timeout")], 0)
    deciding = explanation.deciding
    assert deciding is not None
    pair = {deciding.worker, deciding.other_worker}
    assert "reaper" in pair, named
    assert pair - {"reaper"} <= {"worker-1", "worker-2"}, named
    assert _task(explanation.failure) in named


def test_the_same_seeds_give_the_same_explanation(
    planted: dict[tuple[str, str], Planted],
) -> None:
    subject = planted[("jobs", "double_claim")]
    seed = subject.first_found(0, 100)
    assert seed is not None
    first = sessiontape.explain(_runner(subject), Schedule(seed=seed))
    second = sessiontape.explain(_runner(subject), Schedule(seed=seed))
    assert first.to_dict() == second.to_dict()
    assert first.render() == second.render()
    other = sessiontape.explain(_runner(subject), Schedule(seed=seed), seed=7)
    assert other.point == first.point  # another sample, the same answer
    assert other.seed == 7


def test_a_forced_prefix_reruns_the_failing_schedule_and_tracing_changes_nothing(
    planted: dict[tuple[str, str], Planted],
) -> None:
    subject = planted[("jobs", "lost_update")]
    seed = subject.first_found(0, 100)
    assert seed is not None
    plain = subject.run(Schedule(seed=seed)).chaos
    traced = subject.run(Schedule(seed=seed, trace=True)).chaos
    assert plain is not None
    assert traced is not None
    assert plain.decisions == ()
    assert len(traced.decisions) > 0
    assert traced.schedule() == plain.schedule()
    assert traced.signature == plain.signature
    forced = tuple(d.chosen for d in traced.decisions)
    # Every decision forced, and another strategy and seed: the same run.
    again = subject.run(Schedule(seed=seed + 1, strategy="random", prefix=forced)).chaos
    assert again is not None
    assert again.schedule() == plain.schedule()
    assert again.signature == plain.signature


def test_explain_refuses_a_schedule_that_does_not_fail(
    planted: dict[tuple[str, str], Planted],
) -> None:
    subject = planted[("jobs", "double_claim")]
    closed = Planted("jobs", "none", subject.cassette, subject.work)
    with pytest.raises(UsageError, match="did not fail \\(passed\\): there is no failure"):
        sessiontape.explain(_runner(closed), Schedule(seed=0))


def test_the_terminal_row_marks_the_point_of_no_return() -> None:
    """The compact row reads left to right by decisions kept, and a caret under the
    point's column says which estimate it is."""
    from sessiontape.report import ChaosDecision, Estimate, Explanation

    deciding = ChaosDecision(
        index=16, chosen=0, others=(1,), worker="w1", call="next_pending()",
        other=1, other_worker="w2", other_call="take('delta', 'w2')",
    )  # fmt: skip
    runs = ((0, 3, 2), (14, 2, 1), (15, 1, 0), (16, 8, 8), (29, 1, 1))
    explanation = Explanation(
        cassette="jobs.jsonl", schedule="seed 1, pct depth 3", failure="invariant: twice",
        decisions=29, point=16, deciding=deciding, schedules=16, samples=8, seed=0,
        threshold=0.95,
        estimates=[Estimate(kept=k, runs=n, failed=f, doomed=f == n) for k, n, f in runs],
    )  # fmt: skip
    assert explanation.render().splitlines()[1:7] == [
        "The point of no return: decision 16 of 29: w1's `next_pending()` ran before w2's "
        "`take('delta', 'w2')`.",
        "P(same failure) keeping decisions 1..k (▆▅▁██):",
        "  k    0   14   15   16   29",
        "  P 0.67 0.50 0.00 1.00 1.00",
        "  n    3    2    1    8    1",
        "                      ^ the point of no return",
    ]


@pytest.mark.parametrize("between", [(), (("process", "echo w0 done"),)])
def test_a_read_is_named_by_the_write_of_the_thread_that_read_before_it(
    between: tuple[tuple[str, str], ...],
) -> None:
    """A lost update among three workers: w0 read the counter and waits to write it back;
    w2 reads it now. Of the threads w2 passed over, the decision is about w0 (which made
    the same call, and writes next, after what it does between), not w1, passed over
    first but busy elsewhere."""
    from sessiontape.replayer._decisions import decisions_of
    from sessiontape.replayer._forcing import Decision

    calls = [
        ("w0", "store", "read_done()"),
        ("w1", "process", "echo w1 1"),
        ("w2", "store", "read_done()"),
        ("w2", "store", "write_done(1)"),
        ("w1", "store", "bump('w1')"),
        *(("w0", boundary, text) for boundary, text in between),
        ("w0", "store", "write_done(1)"),
    ]
    workers = {1: "w0", 2: "w1", 3: "w2"}
    decision = Decision(step=5, chosen=3, others=(2, 1), last=3, mark=2)

    (named,) = decisions_of(
        [decision], workers, [c[0] for c in calls], lambda i: (calls[i][2], calls[i][1])
    )

    assert named.named() == "w2's `read_done()` ran before w0's `write_done(1)`"
    assert (named.other, named.other_worker) == (1, "w0")


def test_a_schedule_that_forces_its_decisions_is_explained_as_it_ran(
    planted: dict[tuple[str, str], Planted],
) -> None:
    """A failing schedule given with a prefix (``Schedule(prefix=...)``: its decisions
    forced, another seed and strategy) runs as the schedule it forces: explain traces it
    with its prefix, and explains it as it does the schedule it came from."""
    subject = planted[("jobs", "double_claim")]
    seed = subject.first_found(0, 100)
    assert seed is not None
    traced = subject.run(Schedule(seed=seed, trace=True)).chaos
    assert traced is not None
    forced = Schedule(
        seed=seed + 1, strategy="random", prefix=tuple(d.chosen for d in traced.decisions)
    )
    unforced = subject.run(Schedule(seed=seed + 1, strategy="random")).chaos
    assert unforced is not None
    assert not unforced.failed  # without its prefix, that seed passes

    explained = sessiontape.explain(_runner(subject), forced)

    original = sessiontape.explain(_runner(subject), Schedule(seed=seed))
    assert explained.schedule == f"seed {seed + 1}, random"
    assert {**explained.to_dict(), "schedule": None} == {**original.to_dict(), "schedule": None}
