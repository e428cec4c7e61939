"""``sessiontape shrink`` on long tapes of real programs, with one planted failure.

A project folder gets ``shrinkapp.py`` (the programs of ``shrinkapps.py``) and a
``conftest.py`` whose ``sessiontape_replay`` runs them, as a user's project would. The
tapes are recorded for real (git, ``sh``), then a deliberate code change (the ``PLANT``
variable: only one task behaves differently) makes their replay fail, and ``shrink`` must
find a tape of at most twice the entries of the smallest one that shows the failure,
failing the same way when ``pytest --replay`` replays it, and valid. Every replay a worker
ran logs how many real processes it started: none may.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape.cassette import AgentTurn, ProcessCall, StoreMutation
from sessiontape.cli import main
from sessiontape.reduce import shrink, signature_of_mismatch

from . import shrinkapps


@dataclass(frozen=True)
class Project:
    root: Path
    garden: Path
    batch: Path
    ledger: Path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A project with the three programs, their replay hook and their recorded tapes."""
    root = tmp_path_factory.mktemp("project")
    shrinkapps.make_project(root)
    garden, batch = root / "tapes" / "garden.jsonl", root / "tapes" / "batch.jsonl"
    ledger = root / "ledger" / "ledger.jsonl"
    shrinkapps.record_garden(garden, root / "live-garden", tasks=24, workers=3)
    shrinkapps.record_batch(batch, jobs=36, workers=3, steps=57)
    shrinkapps.record_ledger(ledger, root / "live-ledger", tasks=9, workers=3)
    return Project(root, garden, batch, ledger)


@pytest.fixture
def in_project(project: Project, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Run from the project folder (where pytest finds its conftest); log the spawns."""
    monkeypatch.chdir(project.root)
    log = tmp_path / "spawns.log"
    monkeypatch.setenv(shrinkapps.SPAWN_LOG, str(log))
    monkeypatch.delenv(shrinkapps.PLANT, raising=False)
    return log


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _first_mismatch(project: Project, tape: Path, receipt: Path) -> dict[str, Any]:
    """Replay ``tape`` with ``pytest --replay`` in a fresh process; its first mismatch."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--replay",
            str(tape),
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-q",
            "--sessiontape-report",
            str(receipt),
        ],
        cwd=project.root,
        env={**os.environ},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stdout[-2000:]
    (report,) = json.loads(receipt.read_text())
    assert not report["ok"]
    first: dict[str, Any] = report["mismatches"][0]
    return first


def _shrink(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["shrink", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if code == 0 else {}


def _task_entries(recording: sessiontape.Recording, task: str, claim: str) -> list[int]:
    """The seqs of what one task is: the claim that returned it, up to the last store call
    naming it, on its worker, with everything nested in those calls."""
    start = next(
        e
        for e in recording.calls
        if isinstance(e, StoreMutation)
        and e.operation == claim
        and isinstance(e.result, dict)
        and e.result.get("id") == task
    )
    last = max(
        e.seq
        for e in recording.calls
        if isinstance(e, StoreMutation) and e.worker == start.worker and task in e.args
    )
    return [
        e.seq for e in recording.calls if e.worker == start.worker and start.seq <= e.seq <= last
    ]


def _check_shrunk(
    project: Project,
    tape: Path,
    out: Path,
    figures: dict[str, Any],
    minimum: int,
    log: Path,
    tmp_path: Path,
) -> None:
    original = sessiontape.load(tape)
    shrunk = sessiontape.load(out)
    assert len(shrunk.entries) == figures["entries_after"]
    assert len(shrunk.entries) <= 2 * minimum, (len(shrunk.entries), minimum)
    # Valid: validate passes; seqs from 0 without gaps; every parent kept.
    assert main(["validate", str(out)]) == 0
    assert [e.seq for e in shrunk.entries] == list(range(len(shrunk.entries)))
    seqs = {e.seq for e in shrunk.entries}
    assert all(e.parent is None or e.parent in seqs for e in shrunk.entries)
    # The header says what it was shrunk from.
    made = shrunk.header.shrunk_from
    assert made is not None
    assert (made.run_id, made.entries) == (original.header.run_id, len(original.entries))
    assert made.how
    assert made.failure == figures["failure"]
    # It fails the same way under pytest --replay.
    before = signature_of_mismatch(_first_mismatch(project, tape, tmp_path / "before.json"))
    after = signature_of_mismatch(_first_mismatch(project, out, tmp_path / "after.json"))
    assert after == before
    assert str(before) == figures["failure"]
    # Every candidate replayed in a worker; none started a real process.
    counts = log.read_text().split()
    assert len(counts) >= figures["candidates"] > 10
    assert set(counts) == {"0"}


def test_a_gardener_tape_shrinks_to_the_failing_task(
    project: Project,
    in_project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = sessiontape.load(project.garden)
    assert len(original.worker_ids()) >= 3
    assert len(original.entries) > 400
    before = _digest(project.garden)
    monkeypatch.setenv(shrinkapps.PLANT, "bed-07")
    out = tmp_path / "small.jsonl"
    code, figures = _shrink(str(project.garden), "-o", str(out), "-j", "2", capsys=capsys)
    assert code == 0
    assert _digest(project.garden) == before  # never writes over its input
    # The smallest tape with that failure: the session's own entries (header, the
    # repository's set-up on the main thread, the snapshot of one item, the end), and the
    # failing task's calls.
    task = _task_entries(original, "bed-07", "claim_next")
    session = [e for e in original.entries if e.worker == "main"]
    minimum = len(task) + len(session)
    assert any(isinstance(e, AgentTurn) for e in original.entries if e.seq in task)
    _check_shrunk(project, project.garden, out, figures, minimum, in_project, tmp_path)
    snapshot = sessiontape.load(out).snapshot
    assert [item["id"] for item in snapshot] == ["bed-07"]


def test_a_subprocess_tape_shrinks_to_the_failing_task(
    project: Project,
    in_project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = sessiontape.load(project.batch)
    assert len(original.entries) >= 2000
    assert len(original.worker_ids()) >= 3
    monkeypatch.setenv(shrinkapps.PLANT, "job-17")
    out = tmp_path / "small.jsonl"
    code, figures = _shrink(str(project.batch), "-o", str(out), capsys=capsys)
    assert code == 0
    task = _task_entries(original, "job-17", "claim")
    minimum = len(task) + 3  # the header, the snapshot, the end
    _check_shrunk(project, project.batch, out, figures, minimum, in_project, tmp_path)
    assert figures["entries_before"] == len(original.entries)


def test_a_tape_that_replays_clean_is_refused(
    project: Project, in_project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "small.jsonl"
    assert main(["shrink", str(project.batch), "-o", str(out), "-j", "1"]) == 2
    err = capsys.readouterr().err
    assert "its replay passes" in err
    assert "nothing to shrink" in err
    assert not out.exists()


def test_until_runs_the_users_command(
    project: Project, in_project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "small.jsonl"
    test = "grep -q 'job-05 step 3' {}"
    code, figures = _shrink(str(project.batch), "-o", str(out), "--until", test, capsys=capsys)
    assert figures["failure"] == "until on command: exit 0"
    assert code == 0
    shrunk = sessiontape.load(out)
    assert "job-05 step 3" in out.read_text()
    # The header and the one call that says it; the snapshot is never removed.
    assert len(shrunk.entries) <= 3, [e.seq for e in shrunk.entries]
    assert main(["validate", str(out)]) == 0
    assert not in_project.exists()  # nothing was replayed: the command decided


def test_a_spent_budget_leaves_the_best_tape_so_far(
    project: Project,
    in_project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(shrinkapps.PLANT, "job-17")
    out = tmp_path / "small.jsonl"
    code, figures = _shrink(str(project.batch), "-o", str(out), "--budget", "0", capsys=capsys)
    assert code == 0
    assert figures["budget_spent"]
    assert figures["valid"]
    assert figures["entries_after"] == figures["entries_before"]
    assert main(["validate", str(out)]) == 0


@pytest.fixture
def not_a_cassette(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": 1}\n')
    yield path
    assert path.read_text() == '{"hello": 1}\n'


def test_output_is_never_the_input_nor_a_file_that_is_not_a_cassette(
    project: Project, in_project: Path, not_a_cassette: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _digest(project.batch)
    assert main(["shrink", str(project.batch), "-o", str(project.batch)]) == 2
    assert "never writes over its input" in capsys.readouterr().err
    assert main(["shrink", str(project.batch), "-o", str(not_a_cassette)]) == 2
    assert "not a sessiontape cassette" in capsys.readouterr().err
    assert _digest(project.batch) == before


def test_a_ledger_tape_shrinks_through_the_api_and_joins_the_corpus(
    project: Project,
    in_project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A program that is not the gardener (threads, a SQLite backlog, git through stdlib
    subprocess, an agent), shrunk through the Python API; then, as a user goes on, the
    small tape joins the corpus and ``corpus --minimize`` runs over it."""
    original = sessiontape.load(project.ledger)
    # worker_ids() lists workers in the order of their first call: the threads' start
    # order, which a loaded machine may change.
    assert sorted(original.worker_ids()) == ["main", "worker-0", "worker-1", "worker-2"]
    monkeypatch.setenv(shrinkapps.PLANT, "task-04")
    out = tmp_path / "small.jsonl"
    result = shrink(project.ledger, out, jobs=2)
    assert (result.input, result.output) == (str(project.ledger), str(out))
    assert (result.interrupted, result.budget_spent) == (False, False)
    assert result.search_seconds > 0
    assert result.replay_seconds > 0
    figures = {
        "entries_after": result.entries_after,
        "failure": str(result.failure),
        "candidates": result.candidates,
    }
    assert result.failure.kind == "argument_mismatch"
    assert result.failure.call == "git commit"
    # The smallest tape with that failure: the task's claim and its calls up to the
    # commit, the repository's set-up, the header and the snapshot, and each other
    # worker's claim that finds nothing.
    claim = next(
        e for e in original.calls if isinstance(e, StoreMutation) and e.result == "task-04"
    )
    commit = next(
        e
        for e in original.calls
        if isinstance(e, ProcessCall) and "commit" in e.argv and "task-04: the entry" in e.argv
    )
    task = [e for e in original.calls if e.worker == claim.worker and claim.seq <= e.seq]
    task = [e for e in task if e.seq <= commit.seq]
    setup = [e for e in original.calls if e.worker == "main"]
    minimum = len(task) + len(setup) + 2 + 2
    _check_shrunk(project, project.ledger, out, figures, minimum, in_project, tmp_path)

    # The corpus: the recorded tape, a copy, and the small one. With the planted change
    # still in, each fails: none covers anything, none is kept or moved in another's place.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, source in (("ledger.jsonl", project.ledger), ("copy.jsonl", project.ledger)):
        (corpus / name).write_bytes(source.read_bytes())
    (corpus / "small.jsonl").write_bytes(out.read_bytes())
    moved = tmp_path / "moved"
    minimize = ["corpus", str(corpus), "--minimize", "--move-to", str(moved), "--json"]
    capsys.readouterr()  # what validate printed
    assert main(minimize) == 1
    failing = json.loads(capsys.readouterr().out)
    assert (failing["keep"], failing["redundant"], failing["moved"]) == ([], [], [])
    assert sorted(failing["failing"]) == ["copy.jsonl", "ledger.jsonl", "small.jsonl"]
    # The change reverted: the recorded tapes replay green, and one of them keeps every
    # shape. The small tape was cut after the failure it keeps, so its replay stops there:
    # it is listed as failing and stays, and the copy is moved out.
    monkeypatch.delenv(shrinkapps.PLANT)
    assert main(minimize) == 1
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["keep"] == ["ledger.jsonl"]
    assert fixed["moved"] == fixed["redundant"] == ["copy.jsonl"]
    assert list(fixed["failing"]) == ["small.jsonl"]
    assert sorted(p.name for p in corpus.iterdir()) == ["ledger.jsonl", "small.jsonl"]
