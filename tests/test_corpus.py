"""The regression corpus as CI sees it: ``pytest cassettes/``, serially and with xdist."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import sessiontape
from sessiontape import ProcessCall

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "cassettes"
TAPES = sorted(CORPUS.glob("*.jsonl"))

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def corpus(pytester: pytest.Pytester) -> Path:
    """A copy of the corpus and the root conftest that replays it."""
    shutil.copy(ROOT / "conftest.py", pytester.path / "conftest.py")
    target = pytester.path / "cassettes"
    shutil.copytree(CORPUS, target)
    return target


def _alter_commit_message(path: Path) -> ProcessCall:
    """Change the message of one recorded ``git commit``; return the entry altered."""
    recording = sessiontape.load(path)
    commits = [e for e in recording.calls if isinstance(e, ProcessCall) and "commit" in e.argv]
    victim = commits[-1]
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        entry = json.loads(line)
        if entry["seq"] == victim.seq:
            entry["argv"][-1] += " (reworded)"
            lines[i] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return victim


def test_the_corpus_has_the_documented_tapes() -> None:
    assert [p.name for p in TAPES] == [
        "gardener-conflict.jsonl",
        "gardener-crash.jsonl",
        "gardener-full.jsonl",
        "gardener-happy.jsonl",
        "gardener-review.jsonl",
    ]
    crash = sessiontape.load(CORPUS / "gardener-crash.jsonl")
    assert crash.crashed
    assert crash.error is not None
    assert crash.error.type.endswith("GardenerCrash")


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_corpus_replays_green(corpus: Path, pytester: pytest.Pytester, xdist: list[str]) -> None:
    result = pytester.runpytest_subprocess("cassettes", "-p", "no:randomly", *xdist)
    result.assert_outcomes(passed=len(TAPES))


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_one_altered_line_fails_exactly_that_item(
    corpus: Path, pytester: pytest.Pytester, xdist: list[str]
) -> None:
    victim = _alter_commit_message(corpus / "gardener-review.jsonl")
    result = pytester.runpytest_subprocess("cassettes", "-p", "no:randomly", "-rf", *xdist)
    result.assert_outcomes(passed=len(TAPES) - 1, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*diverged at seq {victim.seq} ({victim.worker}, process): argument_mismatch*",
            "FAILED cassettes/gardener-review.jsonl::gardener-review*",
        ]
    )
