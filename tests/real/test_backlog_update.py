"""Update and live re-record on a program sessiontape did not write (``backlog_app.py``:
threads, a SQLite backlog behind ``tape.store``, real ``git`` through stdlib ``subprocess``
under ``patch_subprocess()``, an agent returning a dataclass), every test both through
the Python API and through pytest (``_runs.py``).

- A renamed and an added store mutation are taken into the tape (issue 29, defect 6).
- Calls no longer made are dropped and the seqs stay gapless (defect 5).
- A new process call fails the update naming the call and a command that records it,
  built from the workers that made it, which works when pasted (defects 7 and 4).
- A live re-record places its calls on the tape's time axis (defect 3), and a second one
  with no code change writes nothing, or only what the world changed (defect 4).
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import ProcessCall, StoreMutation
from sessiontape.cli import main

from . import backlog_app as app
from ._runs import VIA, Program, Runs, sha256

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SOURCE = Path(app.__file__).read_text(encoding="utf-8")
#: Commit dates fixed: the commit shas (and all that shows them) are the same every run.
FIXED_DATE = "2024-05-01T12:00:00+00:00"


@pytest.fixture
def fixed_dates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", FIXED_DATE)


@pytest.fixture(params=VIA)
def runs(request: pytest.FixtureRequest, tmp_path: Path) -> Runs:
    works = iter(range(1000))

    def record(tape: Path, changes: frozenset[str]) -> Any:
        work = tmp_path / "recorded"
        work.mkdir()
        return app.record(tape, work, changes)

    def run(tape: Any, changes: frozenset[str]) -> Any:
        work = tmp_path / f"replayed-{next(works)}"
        work.mkdir()
        tape.set_roots({app.ROOT: str(work)})
        return app.run(tape, work, changes)

    program = Program(
        record=record,
        run=run,
        project={"backlog_app.py": SOURCE, "conftest.py": app.HOOK},
        changes_env="BACKLOG_CHANGES",
    )
    return Runs(request.param, program, tmp_path / "tapes" / "backlog.jsonl", request)


def _lines(tape: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in tape.read_bytes().splitlines()]


def _valid(tape: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    status = main(["validate", str(tape)])
    out = capsys.readouterr().out
    assert status == 0, out
    return out


def _mutations(tape: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for call in sessiontape.load(tape).calls:
        if isinstance(call, StoreMutation):
            found.setdefault(call.worker, []).append(call.operation)
    return found


def test_a_renamed_and_an_added_store_mutation_are_taken_into_the_tape(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    before = runs.record()
    recorded = _mutations(runs.tape)
    assert not runs.replay(["rename", "note"]).ok

    done = runs.replay(["rename", "note"], update=True)
    assert done.ok, done.text
    assert "method: 'claim' -> 'claim_next'" in done.text
    assert "added: {'method': 'note'" in done.text
    today = _mutations(runs.tape)
    for worker, operations in recorded.items():
        renamed = ["claim_next" if op == "claim" else op for op in operations]
        assert today[worker] == [
            x for op in renamed for x in ([op, "note"] if op == "complete" else [op])
        ]
    # Each renamed call keeps its line and seq: only the name changed, up to the first
    # call added (after which seqs move up by one per call added).
    old, new = _lines_of(before), _lines(runs.tape)
    first_added = min(e["seq"] for e in new if e.get("operation") == "note")
    for line in old:
        if line["seq"] < first_added and line["kind"] != "session_start":
            expected = (
                {**line, "operation": "claim_next"} if line.get("operation") == "claim" else line
            )
            assert new[_at(new, line["seq"])] == expected
    _valid(runs.tape, capsys)

    assert runs.replay(["rename", "note"]).ok  # green without the flag
    updated = sha256(runs.tape)
    again = runs.replay(["rename", "note"], update=True)
    assert again.ok, again.text
    assert sha256(runs.tape) == updated  # a second update writes nothing


def _lines_of(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


def _at(lines: list[dict[str, Any]], seq: int) -> int:
    return next(i for i, line in enumerate(lines) if line["seq"] == seq)


def test_calls_no_longer_made_are_dropped_and_seqs_stay_gapless(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _lines_of(runs.record(["branch"]))
    branches = [e["seq"] for e in before if "branch" in (e.get("argv") or [])]
    assert len(branches) == len(app.TASKS)

    done = runs.replay(update=True)
    assert done.ok, done.text
    after = _lines(runs.tape)
    assert len(after) == len(before) - len(branches)
    assert sorted(e["seq"] for e in after) == list(range(len(after)))
    # Seqs stay put up to the first call dropped.
    kept = [e for e in before if e["seq"] < min(branches) and e["kind"] != "session_end"]
    assert [after[_at(after, e["seq"])] for e in kept] == kept
    assert "seqs" not in _valid(runs.tape, capsys)
    assert runs.replay().ok


def test_a_changed_request_rewrites_only_its_lines(runs: Runs) -> None:
    before = runs.record().splitlines()
    done = runs.replay(["message"], update=True)
    assert done.ok, done.text
    after = runs.tape.read_bytes().splitlines()
    assert len(after) == len(before)
    differing = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(differing) == len(app.TASKS)
    for i in differing:
        assert b'"commit","-q","-m","Tidy: ' in after[i]
        assert before[i].replace(b'"-m","', b'"-m","Tidy: ') == after[i]


@pytest.mark.parametrize(
    ("change", "selector"),
    [("status", "process"), ("status2", "process@worker-2")],
    ids=["every-worker", "one-worker"],
)
def test_a_new_process_call_fails_the_update_with_the_command_that_records_it(
    change: str, selector: str, runs: Runs, fixed_dates: None
) -> None:
    before = runs.record()
    done = runs.replay([change], update=True)
    assert not done.ok
    assert runs.tape.read_bytes() == before  # nothing written
    # The call, and the command that records it, built from the workers that made it.
    assert re.search(r"'?status'?,? '?--short", done.text), done.text
    if change == "status2":
        assert f"--sessiontape-live={selector} --sessiontape-update" in done.text
        assert "process@worker-1" not in done.text
    # When every worker makes the new call, the first to die there lets the backlog's
    # recorded order go: another worker may then claim another task than recorded and
    # diverge before its own new call (at the agent), which the run cannot see. The
    # advice covers the workers seen; followed, each run's advice keeps what ran live and
    # adds what it saw, until the tape answers today's code.
    followed: list[str] = []
    for _ in app.WORKERS:
        followed = done.live_flags()
        if runs.via == "pytest":
            done = runs.paste(done.command())  # exactly as printed
        else:
            done = runs.replay([change], flags=followed)
        if done.ok:
            break
    assert done.ok, done.text
    assert followed == [f"--sessiontape-live={selector}", "--sessiontape-update"]
    assert runs.replay([change]).ok  # the recorded tape now answers today's code


def _per_worker_calls(tape: Path) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for call in sessiontape.load(tape).calls:
        found.setdefault(call.worker, []).append(call)
    return found


def test_live_calls_carry_their_real_start_and_duration_on_the_tapes_time_axis(
    runs: Runs, fixed_dates: None, capsys: pytest.CaptureFixture[str]
) -> None:
    runs.record()
    started = time.monotonic_ns()
    done = runs.replay(["status"], live=["process"], update=True)
    took = time.monotonic_ns() - started
    assert done.ok, done.text
    recording = sessiontape.load(runs.tape)
    statuses = [c for c in recording.calls if isinstance(c, ProcessCall) and "status" in c.argv]
    assert len(statuses) == len(app.TASKS)
    for status in statuses:
        # Its real duration: more than nothing, less than the whole run that made it.
        assert 0 < status.duration_ns < took
    for worker, calls in _per_worker_calls(runs.tape).items():
        for before, after in itertools.pairwise(calls):
            # One after the other on the worker's lane: never overlapping, never back.
            assert after.ts_ns >= before.ts_ns + before.duration_ns, (worker, before, after)
            assert after.mono_ns >= before.mono_ns + before.duration_ns, (worker, before, after)
    end = recording.end
    assert end is not None
    start = recording.header.mono_ns
    for call in recording.calls:  # the session lasts until its last call ended
        assert call.ts_ns + call.duration_ns <= end.ts_ns
        assert call.mono_ns + call.duration_ns - start <= end.duration_ns
    capsys.readouterr()
    assert main(["stats", "--json", str(runs.tape)]) == 0
    stats = json.loads(capsys.readouterr().out)
    for name, worker in stats["workers"].items():
        assert 0 < worker["busy_percent"] <= 100, (name, worker)
    # Not even a warning: time runs forwards on every thread.
    assert _valid(runs.tape, capsys) == f"{runs.tape}: valid ({len(recording)} entries)\n"


def _without_place(line: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in line.items() if k not in ("seq", "ts_ns", "mono_ns", "parent")}


def test_live_twice_the_second_run_with_no_code_change_writes_nothing(
    runs: Runs, fixed_dates: None
) -> None:
    before = _lines_of(runs.record())
    first = runs.replay(["status"], live=["process"], update=True)
    assert first.ok, first.text
    after = _lines(runs.tape)
    # The first run changed what the new calls changed: each old call is still there as
    # it was (its seq and time may move after a call added), and the new calls are added.
    kept = [_without_place(e) for e in after]
    for line in before:
        if line["kind"] not in ("session_start", "session_end"):
            assert _without_place(line) in kept, line
    added = [e for e in after if "status" in (e.get("argv") or [])]
    assert len(after) == len(before) + len(added) == len(before) + len(app.TASKS)
    [note] = after[0]["rerecorded"]
    assert (note["segments"], note["added"], note["dropped"]) == (["process"], 6, 0)

    written = sha256(runs.tape)
    second = runs.replay(["status"], live=["process"], update=True)
    assert second.ok, second.text
    assert sha256(runs.tape) == written  # no write at all
    if second.report is not None:
        assert (second.report.rewrites, second.report.rewritten_to) == ([], None)
    else:
        assert "sessiontape update" not in second.text


_SHA = re.compile(r"\b[0-9a-f]{40}\b")


def test_live_again_with_new_commit_dates_changes_only_what_the_shas_changed(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs.record()
    assert runs.replay(["status"], live=["process"], update=True).ok
    before = _lines(runs.tape)
    # The world changed: the commits are made at another time, so their shas differ. (Set,
    # not waited for: commit dates have whole seconds, and two runs may share one.)
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2024-06-02T08:30:00+00:00")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2024-06-02T08:30:00+00:00")
    again = runs.replay(["status"], live=["process"], update=True)
    assert again.ok, again.text
    after = _lines(runs.tape)
    assert [e["seq"] for e in after] == [e["seq"] for e in before]
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed  # new commits, new shas
    for old, new in changed:
        if old["kind"] == "session_start":  # the note of the re-record: when it was made
            assert {k for k in old if old[k] != new[k]} == {"rerecorded"}
            continue
        # Everything else that changed is a sha: what `git rev-parse` printed, and what
        # the backlog was told.
        assert _SHA.sub("<sha>", json.dumps(old)) == _SHA.sub("<sha>", json.dumps(new))
        assert "rev-parse" in (old.get("argv") or []) or old.get("operation") == "complete"
