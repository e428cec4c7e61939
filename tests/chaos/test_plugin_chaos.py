"""``pytest --replay X --sessiontape-chaos N``: items per schedule, the summary, xdist,
reproduction, saving, the receipt, and option errors; as users run it (pytester)."""

from __future__ import annotations

import json
import re

import pytest

SUMMARY = re.compile(
    r"sessiontape chaos: (\d+) schedules run, (\d+) admissible \(\d+%\), (\d+) failed, "
    r"(\d+) distinct failures(; PCT depth 3: .*)?$"
)

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *args)


def verdicts(result: pytest.RunResult) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in result.outlines:
        match = re.match(r"(PASSED|FAILED|ERROR) (\S+)", line)
        if match:
            found[match.group(2)] = match.group(1)
    return found


def summary(result: pytest.RunResult) -> re.Match[str]:
    for line in result.outlines:
        match = SUMMARY.search(line)
        if match:
            return match
    raise AssertionError("no chaos summary line:\n" + result.stdout.str())


def failure_text(result: pytest.RunResult, seed: int) -> str:
    text = result.stdout.str()
    start = text.index(f"sessiontape chaos: jobs.jsonl: failed (seed {seed},")
    return text[start : text.index("Reproduce:", start)]


def test_each_schedule_is_an_item_and_the_summary_counts_them(project: pytest.Pytester) -> None:
    result = run(project, "--replay", "tapes/jobs.jsonl", "--sessiontape-chaos", "20", "-rA")
    found = verdicts(result)
    assert sorted(found) == sorted(f"tapes/jobs.jsonl::jobs[chaos-{s}]" for s in range(20))
    failed = [n for n, v in found.items() if v == "FAILED"]
    assert failed, "20 schedules of the racy program found no race"
    match = summary(result)
    assert int(match.group(1)) == 20
    assert int(match.group(3)) == len(failed)
    assert 1 <= int(match.group(4)) <= len(failed)
    assert (
        "Reproduce: pytest --replay tapes/jobs.jsonl --sessiontape-chaos-seed"
        in result.stdout.str()
    )
    header = "sessiontape chaos: 20 schedule(s) per cassette, seeds 0..19, strategy pct, depth 3"
    assert header in result.stdout.str()


def test_under_xdist_the_same_schedules_fail(project: pytest.Pytester) -> None:
    args = ("--replay", "tapes/jobs.jsonl", "--sessiontape-chaos", "16", "-rA")
    serial = run(project, *args)
    spread = run(project, *args, "-n", "2")
    assert verdicts(serial) == verdicts(spread)
    assert summary(serial).group(0) == summary(spread).group(0)


def _a_failing_seed(project: pytest.Pytester) -> int:
    result = run(project, "--replay", "tapes/jobs.jsonl", "--sessiontape-chaos", "30", "-rA")
    failed = sorted(
        int(re.search(r"chaos-(\d+)", n).group(1))  # type: ignore[union-attr]
        for n, v in verdicts(result).items()
        if v == "FAILED"
    )
    assert failed
    return failed[0]


def test_one_seed_runs_one_schedule_and_reports_byte_identically(
    project: pytest.Pytester,
) -> None:
    seed = _a_failing_seed(project)
    args = ("--replay", "tapes/jobs.jsonl", "--sessiontape-chaos-seed", str(seed), "-rA")
    first = run(project, *args)
    second = run(project, *args)
    assert verdicts(first) == {f"tapes/jobs.jsonl::jobs[chaos-{seed}]": "FAILED"}
    assert failure_text(first, seed) == failure_text(second, seed)
    reproduce = (
        f"Reproduce: pytest --replay tapes/jobs.jsonl --sessiontape-chaos-seed {seed} "
        "--sessiontape-chaos-strategy pct --sessiontape-chaos-depth 3"
    )
    assert reproduce in first.stdout.str()


def test_a_saved_schedule_fails_in_plain_replay(project: pytest.Pytester) -> None:
    seed = _a_failing_seed(project)
    result = run(
        project,
        "--replay",
        "tapes/jobs.jsonl",
        "--sessiontape-chaos-seed",
        str(seed),
        "--sessiontape-chaos-save",
        "found",
    )
    saved = project.path / "found" / f"jobs.chaos-{seed}.jsonl"
    assert saved.is_file()
    assert f"Saved as found/jobs.chaos-{seed}.jsonl" in result.stdout.str()
    kind = re.search(r"^(invariant|outcome|exception)", failure_text(result, seed).splitlines()[1])
    assert kind is not None
    plain = run(project, "--replay", str(saved), "-rA")
    assert verdicts(plain) == {f"found/jobs.chaos-{seed}.jsonl::jobs.chaos-{seed}": "FAILED"}
    expected = {
        "invariant": "invariant_violated",
        "outcome": "outcome_mismatch",
        "exception": "application_error",
    }[kind.group(1)]
    assert expected in plain.stdout.str()


def test_the_receipt_holds_the_schedule(project: pytest.Pytester) -> None:
    run(
        project,
        "--replay",
        "tapes/jobs.jsonl",
        "--sessiontape-chaos",
        "3",
        "--sessiontape-report",
        "receipt.json",
    )
    receipts = json.loads((project.path / "receipt.json").read_text(encoding="utf-8"))
    assert len(receipts) == 3
    for receipt in receipts:
        chaos = receipt["chaos"]
        assert chaos["strategy"] == "pct"
        assert chaos["verdict"] in ("passed", "failed", "inadmissible")
        assert chaos["schedule"]
        orders = [item["order"] for item in chaos["schedule"]]
        assert orders == list(range(1, len(orders) + 1))
        for item in chaos["schedule"]:
            assert set(item) == {"seq", "worker", "boundary", "order"}


def test_without_chaos_options_a_cassette_is_one_plain_item(project: pytest.Pytester) -> None:
    result = run(project, "--replay", "tapes/jobs.jsonl", "-rA")
    assert list(verdicts(result)) == ["tapes/jobs.jsonl::jobs"]
    assert "sessiontape chaos:" not in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--sessiontape-chaos", "0"), "'0' is not a number of schedules"),
        (("--sessiontape-chaos-seed", "-3"), "'-3' is not a seed"),
        (("--sessiontape-chaos-strategy", "fifo"), "unknown chaos strategy 'fifo'"),
        (("--sessiontape-chaos-depth", "0"), "'0' is not a PCT depth"),
        (("--sessiontape-chaos-stall-limit", "-1"), "'-1' is not a positive number of seconds"),
    ],
)
def test_bad_option_values_are_usage_errors(
    project: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    result = run(project, "--replay", "tapes/jobs.jsonl", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


@pytest.mark.parametrize(
    "args",
    [
        ("--sessiontape-chaos", "3", "--sessiontape-update"),
        ("--sessiontape-chaos-seed", "7", "--sessiontape-live=process"),
    ],
)
def test_chaos_never_rewrites_a_tape(project: pytest.Pytester, args: tuple[str, ...]) -> None:
    """A schedule is not today's code in production's order: update and live are refused
    before anything runs, and the tape keeps every byte."""
    tape = project.path / "tapes" / "jobs.jsonl"
    before = tape.read_bytes()
    result = run(project, "--replay", "tapes/jobs.jsonl", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "never rewrites" in result.stderr.str()
    assert tape.read_bytes() == before
    assert sorted(p.name for p in tape.parent.iterdir()) == ["jobs.jsonl"]
