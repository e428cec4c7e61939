"""Chaos in pytest on a second user's program (``backlog_app.py``), as users run it
(pytester), serial and under ``-n 2``: issue 29's defects 8 and 9.

* chaos, then ``--sessiontape-chaos-save``, then a plain ``pytest --replay`` of the saved
  tapes: each fails with the failure chaos found, first and alone, and validates;
* an inadmissible schedule is a skipped item with its reason, the summary says what made
  most of them inadmissible and names the mask that admits them, and the mask works when
  pasted.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from pathlib import Path

import pytest

from sessiontape.cli import main

from . import backlog_app
from .test_plugin_chaos import SUMMARY, run, summary, verdicts

XDIST = ((), ("-n", "2"))


def project_of(pytester: pytest.Pytester, *, shout: bool) -> pytest.Pytester:
    pytester.makepyfile(backlog_app=Path(backlog_app.__file__).read_text(encoding="utf-8"))
    pytester.makeconftest(backlog_app.CONFTEST)
    tapes = pytester.path / "tapes"
    tapes.mkdir()
    with tempfile.TemporaryDirectory() as repo:
        backlog_app.record(tapes / "backlog.jsonl", Path(repo) / "repo", shout=shout)
    return pytester


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return project_of(pytester, shout=False)


@pytest.fixture
def shouting(pytester: pytest.Pytester) -> pytest.Pytester:
    """The program whose agent request names the worker in capitals: not its own name."""
    return project_of(pytester, shout=True)


def skipped(result: pytest.RunResult) -> dict[int, str]:
    """The inadmissible schedules' reasons, by seed (from ``-rs``)."""
    found = {}
    for line in result.outlines:
        match = re.match(
            r"SKIPPED \[1\] tapes/backlog\.jsonl: inadmissible schedule \(seed (\d+)\): (.*)",
            line,
        )
        if match:
            found[int(match.group(1))] = match.group(2)
    return found


@pytest.mark.parametrize("xdist", XDIST, ids=["serial", "xdist"])
def test_chaos_then_save_then_plain_replay_fails_first_and_alone(
    project: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    chaos = run(
        project,
        "--replay",
        "tapes/backlog.jsonl",
        "--sessiontape-chaos",
        "30",
        "--sessiontape-chaos-save",
        "found",
        "-rA",
        *xdist,
    )
    failed = sorted(
        int(re.search(r"chaos-(\d+)", n).group(1))  # type: ignore[union-attr]
        for n, v in verdicts(chaos).items()
        if v == "FAILED"
    )
    assert failed, "30 schedules found no race"
    assert int(summary(chaos).group(2)) == 30  # every schedule admissible
    saved = sorted(p.name for p in (project.path / "found").iterdir())
    assert saved == sorted(f"backlog.chaos-{s}.jsonl" for s in failed)
    for name in saved:
        assert main(["validate", str(project.path / "found" / name)]) == 0
    plain = run(project, "--replay", "found", "-rA", *xdist)
    assert verdicts(plain) == {f"found/{n}::{n[: -len('.jsonl')]}": "FAILED" for n in saved}
    text = plain.stdout.str() + plain.stderr.str()
    # Each saved schedule fails with the one failure chaos found: one mismatch, no more.
    assert text.count("\nmismatch: invariant_violated at ") == len(saved), text
    assert text.count("an invariant does not hold after the call at seq ") == len(saved)
    assert "claimed twice: ['t" in text
    assert "mismatch 1 of" not in text
    assert "unexpected_call" not in text
    assert "UnrecordedCallError" not in text
    assert "Exception in thread" not in text
    assert "saved schedule: a chaos schedule of backlog.jsonl (seed " in text


@pytest.mark.parametrize("xdist", XDIST, ids=["serial", "xdist"])
def test_inadmissible_schedules_are_skipped_and_the_summary_names_the_mask(
    shouting: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    args = ("--replay", "tapes/backlog.jsonl", "--sessiontape-chaos", "20", "-rs", *xdist)
    result = run(shouting, *args)
    reasons = skipped(result)
    match = summary(result)
    assert len(reasons) == 20 - int(match.group(2)) >= 10
    for reason in reasons.values():
        assert reason.startswith("worker 'worker-")
        assert (
            "made an agent call that no recorded call answers: execute({'worker': 'WORKER-"
            in reason
        )
        assert (
            "differs at args[0].worker: if that is noise, add the mask 'agent.args[0].worker'"
            in reason
        )
    assert "PASSED" not in result.stdout.str()  # an inadmissible schedule is not a pass
    line = next(li for li in result.outlines if "inadmissible schedules" in li)
    first = min(reasons)
    assert line == (
        f"sessiontape chaos: {len(reasons)} inadmissible schedules (not failures; shown as "
        "skipped), all of them stopped at an agent call execute that no recorded call "
        f"answers; the first, backlog.jsonl seed {first}: {reasons[first]}"
    )
    # The mask it names, pasted: every schedule admissible, and the race found.
    pasted = re.search(r"\(pytest (-o '[^']+')\)", line)
    assert pasted is not None
    assert pasted.group(1) == "-o 'sessiontape_noise=agent.args[0].worker'"
    if xdist:
        return  # the pasted mask is the same serial and under xdist: run once, serial
    masked = run(shouting, *args, *shlex.split(pasted.group(1)))
    assert skipped(masked) == {}
    again = summary(masked)
    assert (again.group(1), again.group(2)) == ("20", "20")
    assert int(again.group(3)) >= 1
    assert "inadmissible schedules" not in masked.stdout.str()
    assert SUMMARY.search(line) is None  # the second line is not the first's pattern
