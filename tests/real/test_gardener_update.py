"""Update on the bundled gardener, every test through the Python API and through pytest
(``_runs.py``), over copies of the shipped corpus: a renamed and an added store
mutation are taken into the tape (issue 29, defect 6), and a new process call fails the
update naming the call and a command that records it, which works as printed (defects 4
and 7).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import StoreMutation
from sessiontape.examples.gardener import WORK_ROOT, run_session

from . import _changes
from ._changes import FETCH, RENAME, STORE, changed_gardener
from ._runs import VIA, Program, Runs, sha256

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning"),
]

CORPUS = Path(__file__).resolve().parents[2] / "cassettes"
#: A project replaying gardener tapes with today's changes (named in GARDENER_CHANGES).
HOOK = """
import os

import pytest

from _changes import changed_gardener
from sessiontape.examples.gardener import replay_hook as sessiontape_replay

_today = tuple(c for c in os.environ.get("GARDENER_CHANGES", "").split(",") if c)
if _today:
    changed_gardener(pytest.MonkeyPatch(), _today, guarded=False)
"""


def _program(name: str, tmp_path: Path) -> Program:
    works = iter(range(1000))

    def record(tape: Path, changes: frozenset[str]) -> Any:
        shutil.copy(CORPUS / name, tape)

    def run(tape: Any, changes: frozenset[str]) -> Any:
        work = tmp_path / f"work-{next(works)}"
        tape.set_roots({WORK_ROOT: str(work)})
        with pytest.MonkeyPatch.context() as monkeypatch:
            changed_gardener(monkeypatch, tuple(sorted(changes)), guarded=False)
            return run_session(tape, work)

    return Program(
        record=record,
        run=run,
        project={
            "conftest.py": HOOK,
            "_changes.py": Path(_changes.__file__).read_text(encoding="utf-8"),
        },
        changes_env="GARDENER_CHANGES",
    )


@pytest.fixture(params=VIA)
def runs(request: pytest.FixtureRequest, tmp_path: Path) -> Runs:
    name = "gardener-happy.jsonl"
    return Runs(request.param, _program(name, tmp_path), tmp_path / "tapes" / name, request)


def _operations(tape: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for call in sessiontape.load(tape).calls:
        if isinstance(call, StoreMutation):
            found.setdefault(call.worker, []).append(call.operation)
    return found


def test_a_renamed_and_an_added_store_mutation_on_the_gardener(runs: Runs) -> None:
    runs.record()
    recorded = _operations(runs.tape)
    assert any("mark_in_progress" in ops for ops in recorded.values())
    changes = [RENAME, STORE]
    assert not runs.replay(changes).ok

    done = runs.replay(changes, update=True)
    assert done.ok, done.text
    # Renamed in place; a record_attempt added before each completion.
    assert _operations(runs.tape) == {
        worker: [
            new
            for op in ops
            for new in (
                ["record_attempt", op]
                if op == "mark_complete"
                else ["start_work" if op == "mark_in_progress" else op]
            )
        ]
        for worker, ops in recorded.items()
    }
    assert runs.replay(changes).ok
    updated = sha256(runs.tape)
    assert runs.replay(changes, update=True).ok
    assert sha256(runs.tape) == updated


def test_a_new_git_call_fails_the_update_with_a_command_that_records_it(runs: Runs) -> None:
    before = runs.record()
    done = runs.replay([FETCH], update=True)
    assert not done.ok
    assert runs.tape.read_bytes() == before
    assert "fetch" in done.text
    # Every worker that merges fetches, and main set the repository up: all of process.
    assert "--sessiontape-live=process --sessiontape-update" in done.text
    if runs.via == "pytest":
        pasted = runs.paste(done.command())
    else:
        pasted = runs.replay([FETCH], flags=done.live_flags())
    assert pasted.ok, pasted.text
    assert runs.replay([FETCH]).ok
