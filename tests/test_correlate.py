"""What is found made up (and correlated), what never is, and how correlations are served."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

import sessiontape
from sessiontape import Noise
from sessiontape.replayer import MASKED, compare
from sessiontape.replayer._correlate import Correlations, Found, detect
from sessiontape.replayer._timegaps import TimeGaps
from sessiontape.report import Correlation, ReplayReport


class Echo:
    def echo(self, text: str) -> str:
        return text


@pytest.fixture(scope="module")
def tape(tmp_path_factory: pytest.TempPathFactory) -> sessiontape.Recording:
    path = tmp_path_factory.mktemp("gaps") / "two.jsonl"
    with sessiontape.record(path) as recording:
        echo = recording.boundary("echo", Echo(), methods=["echo"])
        echo.echo("first")
        echo.echo("second")
    return sessiontape.load(path)


@pytest.fixture(scope="module")
def gaps(tape: sessiontape.Recording) -> TimeGaps:
    return TimeGaps(tape)


def found(
    gaps: TimeGaps,
    recorded: Any,
    today: Any,
    *,
    later: Iterable[str] = (),
    before: Iterable[str] = (),
    noise: Noise | None = None,
) -> list[Found]:
    return detect(
        recorded,
        today,
        path=(),
        noise=noise or Noise(),
        worker="main",
        gaps=gaps,
        answers=lambda: later,
        earlier=lambda: before,
    ).found


def test_a_made_up_token_echoed_later_is_correlated(gaps: TimeGaps) -> None:
    got = found(
        gaps,
        {"argv": ["cli", '{"request_id": "req_1_59c4d3cb"}']},
        {"argv": ["cli", '{"request_id": "req_1_70f1a216"}']},
        later=['{"response": {"request_id": "req_1_59c4d3cb"}}'],
    )
    assert got == [Found("argv[1]", "59c4d3cb", "70f1a216", "detected")]


def test_a_uuid_is_one_value(gaps: TimeGaps) -> None:
    then, now = "550e8400-e29b-41d4-a716-446655440000", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
    got = found(gaps, {"id": then}, {"id": now}, later=[f"made {then}"])
    assert got == [Found("id", then, now, "detected")]


@pytest.mark.parametrize(
    ("then", "now", "later", "before"),
    [
        ("id 59c4d3cb", "id 70f1a216", ["nothing echoes it"], []),  # nobody echoes it
        ("id 59c4d3cb", "id 70f1a216", ["id 59c4d3cb"], ["you are 59c4d3cb"]),  # an answer gave it
        ("fence function", "fence variable", ["function"], []),  # a word changed
        ("build-20240501", "build-20240502", ["build-20240501"], []),  # a number moved by one
        ("id 59c4d3", "id 70f1a2", ["id 59c4d3"], []),  # too short
        ("id abcdefgh", "id zyxwvuts", ["id abcdefgh"], []),  # no digit on either side
        ("id 59c4d3cb", "id 59c4d3cc", ["id 59c4d3cb"], []),  # one character apart
    ],
)
def test_what_is_never_correlated(
    gaps: TimeGaps, then: str, now: str, later: list[str], before: list[str]
) -> None:
    assert found(gaps, {"a": then}, {"a": now}, later=later, before=before) == []


def test_a_pattern_names_a_value_whatever_it_looks_like(gaps: TimeGaps) -> None:
    noise = Noise(patterns=[(r"run-\w+", "run-X")])
    got = found(gaps, ["run-blue 59c4d3cb"], ["run-pink 70f1a216"], noise=noise)
    assert got == [Found("[0]", "run-blue", "run-pink", "pattern")]


def test_a_token_inside_a_pattern_match_is_the_patterns(gaps: TimeGaps) -> None:
    noise = Noise(patterns=[(r"id [0-9a-f]{8}", "id X")])
    got = found(gaps, "id 59c4d3cb", "id 70f1a216", later=["id 59c4d3cb"], noise=noise)
    assert got == [Found("", "id 59c4d3cb", "id 70f1a216", "pattern")]


def test_correlations_are_served_in_texts_bytes_and_json_and_noted() -> None:
    correlations = Correlations()
    assert not correlations.pairs
    correlations.add("process", "main", 3, [Found("input", "59c4d3cb", "70f1a216", "detected")])
    correlations.add("agent", "w1", 4, [Found("args[0]", 'say "hi"', 'say "ho"', "pattern")])
    assert correlations.answer("process", "main", 3, "stdout", "ack 59c4d3cb\n") == "ack 70f1a216\n"
    assert correlations.answer("process", "main", 5, "chunks[1]", b"59c4d3cb") == b"70f1a216"
    assert correlations.answer("process", "w1", 6, "stdout", "59c4d3cb") == "59c4d3cb"  # its worker
    raw = b'{"said": "say \\"hi\\""}'
    assert correlations.json("agent", "w1", 4, "result", raw) == b'{"said": "say \\"ho\\""}'
    assert correlations.request("process", "main", {"argv": ["x", "59c4d3cb"]}) == {
        "argv": ["x", "70f1a216"]
    }
    process, agent = correlations.report()
    assert process.served == ["seq 3 stdout", "seq 5 chunks[1]"]
    assert agent.served == ["seq 4 result"]
    assert process.render() == (
        "seq 3 (main, process.input): '59c4d3cb' -> '70f1a216' (detected), served in "
        "seq 3 stdout, seq 5 chunks[1]"
    )


def test_the_report_lists_and_round_trips_correlations() -> None:
    clock = Correlation(
        seq=2, worker="main", boundary="log", path="args[0].at", recorded=1.5, today=1.25,
        how="clock",
    )  # fmt: skip
    made = Correlation(
        seq=1, worker="main", boundary="process", path="chunks[0].data", recorded="59c4d3cb",
        today="70f1a216", how="detected", served=["seq 1 chunks[1]"],
    )  # fmt: skip
    report = ReplayReport(
        cassette="t.jsonl", run_id="r", ok=True, strict=False, loaded=2, consumed=2,
        unconsumed=0, extra=0, correlations=[made, clock],
    )  # fmt: skip
    assert ReplayReport.from_json(report.to_json()).correlations == [made, clock]
    lines = report.render().splitlines()
    assert lines[2:5] == [
        "2 values made up today or read between calls, followed:",
        "  seq 1 (main, process.chunks[0].data): '59c4d3cb' -> '70f1a216' (detected), "
        "served in seq 1 chunks[1]",
        "  seq 2 (main, log.args[0].at): 1.25 read between the same calls as the recorded "
        "1.5: matched",
    ]


@pytest.mark.parametrize(
    ("mask", "path", "value", "expected"),
    [
        ("process.chunks[0].data", ("chunks", 0, "data"), "x", MASKED),
        ("process.chunks[*].data", ("chunks", 4, "data"), "x", MASKED),
        ("process.chunks", ("chunks", 4, "data"), "x", MASKED),
        ("process.chunks[1].data", ("chunks", 4, "data"), "x", "x"),
        ("process.input", ("chunks", 0, "data"), "x", "x"),
        ("process.input", ("input",), "x", MASKED),
    ],
)
def test_a_mask_applies_to_the_part_of_a_request_it_names(
    mask: str, path: tuple[str | int, ...], value: str, expected: str
) -> None:
    assert Noise([mask]).apply("process", value, path) == expected


def test_a_part_compares_with_noise_and_names_its_path() -> None:
    noise = Noise(patterns=[(r"id \w+", "id X")])
    path = ("chunks", 2, "data")
    assert compare("process", "id a\n", "id b\n", noise=noise, path=path) == ([], 0)
    diffs, total = compare("process", "x\n", "y\n", noise=noise, path=path)
    assert (total, [d.path for d in diffs]) == (1, ["chunks[2].data"])


def test_times_in_the_same_gap_match_and_others_do_not(
    gaps: TimeGaps, tape: sessiontape.Recording
) -> None:
    first, second = tape.calls
    start = tape.header.ts_ns
    first_end = first.ts_ns + first.duration_ns
    before = (start + first.ts_ns) // 2  # between the session's start and the first call
    between = (first_end + second.ts_ns) // 2  # between the two calls
    assert gaps.same("main", before / 1e9, start / 1e9)  # the virtual clock at the start
    assert gaps.same("main", between / 1e9, first_end / 1e9)  # ... after the first call
    assert not gaps.same("main", before / 1e9, first_end / 1e9)  # another gap
    assert gaps.same("main", between, first_end)  # ns
    assert gaps.same("main", str(between / 1e9), str(first_end / 1e9))  # as text
    assert not gaps.same("main", True, False)
    assert not gaps.same("main", "12", "13")  # seconds in 1970: outside the tape
    assert not gaps.same("other worker", between / 1e9, first_end / 1e9)
