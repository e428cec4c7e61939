"""An update that meets a call the tape cannot answer fails naming the call and the
``--sessiontape-live`` command that records it, on every path such a call can take
(issue 29, defect 7): a worker thread under ``patch_subprocess()``, an asyncio task, a
user-defined boundary, an agent, and a call whose error leaves the program; each through
the Python API and through pytest. The command works as printed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from . import unanswered_app as app
from ._runs import VIA, Program, Runs

pytestmark = [
    pytest.mark.skipif(shutil.which("echo") is None, reason="echo is not installed"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning"),
]

SOURCE = Path(app.__file__).read_text(encoding="utf-8")

#: Each program, the call it adds today (as the report shows it), and the selector that
#: records it: built from the workers that made it.
CASES = [
    pytest.param("thread", "['echo', 'more', 'worker-2']", "process@worker-2", id="thread"),
    pytest.param("async", "['echo', 'more', 'worker-1']", "process@worker-1", id="async"),
    pytest.param("boundary", "weather.today()", "weather", id="user-boundary"),
    pytest.param("agent", "agent.ask()", "agent", id="agent"),
    pytest.param("main", "['echo', 'two']", "process", id="error-leaves-the-program"),
]


@pytest.fixture(params=VIA)
def runs(request: pytest.FixtureRequest, tmp_path: Path) -> Runs:
    def record(tape: Path, changes: frozenset[str]) -> Any:
        return app.record(tape)

    program = Program(
        record=record,
        run=lambda tape, changes: app.run(tape, changes),
        project={"unanswered_app.py": SOURCE, "conftest.py": app.HOOK},
        changes_env="UNANSWERED_CHANGES",
    )
    return Runs(request.param, program, tmp_path / "tapes" / "t.jsonl", request)


@pytest.mark.parametrize(("mode", "call", "selector"), CASES)
def test_an_unanswered_call_fails_the_update_naming_it_and_the_command(
    mode: str, call: str, selector: str, runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNANSWERED_MODE", mode)
    before = runs.record()
    done = runs.replay(["new"], update=True)
    assert not done.ok
    assert runs.tape.read_bytes() == before  # nothing written
    assert call in done.text
    assert f"--sessiontape-live={selector} --sessiontape-update" in done.text
    if done.error is not None:  # the error that left the program names it too
        notes = getattr(done.error, "__notes__", None) or [str(done.error)]
        assert f"--sessiontape-live={selector} --sessiontape-update" in "".join(notes)
    if runs.via == "pytest":
        pasted = runs.paste(done.command())  # exactly as printed
    else:
        pasted = runs.replay(["new"], flags=done.live_flags())
    assert pasted.ok, pasted.text
    assert runs.replay(["new"]).ok  # the tape now answers today's code
