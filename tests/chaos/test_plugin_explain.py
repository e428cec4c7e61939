"""``--sessiontape-chaos-explain`` and ``sessiontape explain RECEIPT``, as users run them.

The racy jobs program (every gap open) fails under some chaos schedules; explaining one
names the decision after which its failure was certain, by two calls of two workers, shows
the probability row and says how many schedules ran; the receipt carries it, and the
command reads a receipt, replays through the project's hook and prints the same.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from .test_plugin_chaos import run, verdicts

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")

POINT = re.compile(
    r"The point of no return: decision (\d+) of (\d+): (w[12]|reaper)'s `[^`]+` ran before "
    r"(w[12]|reaper)'s (`[^`]+`|next call \(not reached before the failure\))\."
)
RAN = re.compile(r"Ran (\d+) schedules: up to (\d+) per estimate \(seed 0\)")


def _failing_seed(project: pytest.Pytester) -> int:
    result = run(project, "--replay", "tapes/jobs.jsonl", "--sessiontape-chaos", "20", "-rA")
    failed = sorted(
        int(re.search(r"chaos-(\d+)", n).group(1))  # type: ignore[union-attr]
        for n, v in verdicts(result).items()
        if v == "FAILED"
    )
    assert failed, result.stdout.str()
    return failed[0]


def test_a_failing_schedule_is_explained_in_its_failure_and_its_receipt(
    project: pytest.Pytester,
) -> None:
    seed = _failing_seed(project)
    result = run(
        project,
        "--replay",
        "tapes/jobs.jsonl",
        "--sessiontape-chaos-seed",
        str(seed),
        "--sessiontape-chaos-explain-samples",
        "8",
        "--sessiontape-report",
        "receipt.json",
    )
    text = result.stdout.str()
    point = POINT.search(text)
    assert point is not None, text
    assert point.group(3) != point.group(4)
    assert 1 <= int(point.group(1)) <= int(point.group(2))
    ran = RAN.search(text)
    assert ran is not None, text
    assert int(ran.group(2)) == 8
    assert "P(same failure) keeping decisions 1..k" in text
    receipt = json.loads((project.path / "receipt.json").read_text(encoding="utf-8"))
    (item,) = receipt
    explained = item["chaos"]["explain"]
    assert explained["point"] == int(point.group(1))
    assert explained["schedules"] == int(ran.group(1))
    assert explained["samples"] == 8
    assert explained["verdict"] in text


def test_the_explain_command_reads_a_receipt_and_prints_the_point_of_no_return(
    project: pytest.Pytester,
) -> None:
    seed = _failing_seed(project)
    run(
        project,
        "--replay",
        "tapes/jobs.jsonl",
        "--sessiontape-chaos-seed",
        str(seed),
        "--sessiontape-report",
        "chaos.json",
    )
    shown = project.run(
        sys.executable, "-m", "sessiontape", "explain", "chaos.json", "--samples", "6"
    )
    assert shown.ret == 0, shown.stderr.str()
    assert POINT.search(shown.stdout.str()) is not None, shown.stdout.str()
    as_json = project.run(
        sys.executable, "-m", "sessiontape", "explain", "chaos.json", "--samples", "6", "--json"
    )
    assert as_json.ret == 0, as_json.stderr.str()
    data = json.loads(as_json.stdout.str())
    assert data["samples"] == 6
    assert f"seed {seed}, pct depth 3" == data["schedule"]
    assert data["verdict"] in shown.stdout.str()


def test_explain_wants_a_failing_schedule(project: pytest.Pytester) -> None:
    result = run(project, "--replay", "tapes/jobs.jsonl", "--sessiontape-chaos-explain")
    assert result.ret == 4
    assert (
        "--sessiontape-chaos-explain explains failing chaos schedules: give "
        "--sessiontape-chaos N or --sessiontape-chaos-seed S with it." in result.stderr.str()
    )
    (project.path / "empty.json").write_text("[]", encoding="utf-8")
    shown = project.run(sys.executable, "-m", "sessiontape", "explain", "empty.json")
    assert shown.ret == 2
    assert "empty.json holds no failing chaos schedule: explain needs one." in shown.stderr.str()


def test_a_saved_schedule_is_explained_on_the_tape_it_came_from(
    project: pytest.Pytester,
) -> None:
    seed = _failing_seed(project)
    run(
        project,
        "--replay",
        "tapes/jobs.jsonl",
        "--sessiontape-chaos-seed",
        str(seed),
        "--sessiontape-chaos-save",
        "found",
    )
    saved = f"found/jobs.chaos-{seed}.jsonl"
    assert (project.path / saved).is_file()
    # Not beside it, nor here: the command says how to name it.
    lost = project.run(sys.executable, "-m", "sessiontape", "explain", saved)
    assert lost.ret == 2
    assert (
        f"{saved} was saved from jobs.jsonl, which is neither here nor beside it. Name it: "
        f"sessiontape explain {saved} --tape PATH/jobs.jsonl" in lost.stderr.str()
    )
    shown = project.run(
        sys.executable,
        "-m",
        "sessiontape",
        "explain",
        saved,
        "--tape",
        "tapes/jobs.jsonl",
        "--samples",
        "6",
        "--json",
    )
    assert shown.ret == 0, shown.stderr.str()
    data = json.loads(shown.stdout.str())
    assert data["schedule"] == f"seed {seed}, pct depth 3"
    assert POINT.search(data["verdict"]) is not None, data["verdict"]
