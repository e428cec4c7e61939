"""A schedule's calls are described when first read, and read the same as if described at once.

Describing every call of a long tape cost a good part of a schedule, and most schedules
pass without anyone reading their calls; so the result holds them undescribed until asked.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest

import sessiontape
from sessiontape.report import ChaosCall, DescribedCalls

from . import racy_jobs

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


@pytest.fixture(scope="module")
def cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("described") / "jobs.jsonl"
    racy_jobs.record(path, reaper=False)
    return path


def _result(cassette: Path, seed: int) -> sessiontape.ChaosResult:
    tape = racy_jobs.replay(cassette, sessiontape.Schedule(seed=seed), open_race="none")
    assert tape.chaos is not None
    return tape.chaos


def test_calls_are_described_on_first_read_only(cassette: Path) -> None:
    result = _result(cassette, 3)
    assert result.verdict.value == "passed", result.render()
    calls = result.calls
    assert isinstance(calls, DescribedCalls)
    described: list[int] = []
    real = calls._describe
    assert real is not None

    def counted() -> list[ChaosCall]:
        described.append(1)
        return real()

    calls._describe = counted
    assert described == []  # nothing read yet: nothing described
    recording = sessiontape.load(cassette)
    assert len(calls) == len(recording.calls)
    assert described == [1]
    # Read again, in every way a report reads them: described once, the same list.
    assert [c.order for c in calls] == list(range(1, len(recording.calls) + 1))
    assert calls[-1] == list(calls)[-1]
    assert calls[:2] == list(calls)[:2]
    assert result.to_dict()["schedule"] == result.schedule()
    assert described == [1]


def test_lazy_calls_equal_the_calls_described_at_once(cassette: Path) -> None:
    first, second = _result(cassette, 5), _result(cassette, 5)
    listed = list(second.calls)
    assert first.calls == listed
    assert first.calls == second.calls
    eager = sessiontape.ChaosResult(
        cassette=first.cassette,
        seed=first.seed,
        strategy=first.strategy,
        depth=first.depth,
        verdict=first.verdict,
        steps=first.steps,
        threads=first.threads,
        calls=listed,
    )
    assert eager.render() == first.render()
    assert eager.to_dict() == first.to_dict()
    # The last calls of each worker carry their text; the others are not described.
    assert any(c.call for c in listed)
    by_worker = {c.worker for c in listed}
    assert sum(1 for c in listed if c.call) <= 8 * len(by_worker)
    assert first.calls != listed[:-1]


def test_a_result_pickles_and_copies_with_its_calls(cassette: Path) -> None:
    result = _result(cassette, 2)
    for again in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result)):
        assert again.calls == list(result.calls)
        assert again.render() == result.render()
