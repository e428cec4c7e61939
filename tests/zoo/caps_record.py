"""Capabilities: recording switched on from outside, replay everywhere, and recording off.

Each function takes a :class:`harness.Cell` and asserts one capability on its program.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

import sessiontape

from .harness import Cell, record_outside
from .matrix import HERE, TOKEN

#: How many runs of a program start together in ``off_concurrent``, and in how many fresh
#: interpreters.
CONCURRENT_RUNS = 16
CONCURRENT_ROUNDS = 3


def kinds(recording: sessiontape.Recording) -> set[str]:
    return {type(e).__struct_config__.tag for e in recording.entries}  # type: ignore[misc]


def json_ready(value: Any) -> Any:
    return json.loads(json.dumps(value))


def replays_elsewhere(cell: Cell, tape: Path, variant: str = "default") -> None:
    """``tape`` replays in another directory, with nothing on the PATH and no process
    started, the report clean and the program's outcome the recorded one."""
    recording = sessiontape.load(tape)
    assert recording.header.entrypoint == cell.module.ENTRYPOINT
    assert kinds(recording) >= cell.program.kinds, kinds(recording)
    assert recording.end is not None, f"{tape} has no session_end"
    replayed = cell.replay_api(tape, variant=variant)
    assert replayed.report.ok, replayed.report.render()
    assert replayed.report.consumed == replayed.report.loaded > 0
    assert json_ready(replayed.outcome) == recording.end.outcome


def record_env(cell: Cell) -> None:
    tape = cell.fresh("tapes") / "env.jsonl"
    record_outside(cell.program, tape, cell.fresh("then"), how="env")
    replays_elsewhere(cell, tape)


def record_flag(cell: Cell) -> None:
    tape = cell.fresh("tapes") / "flag.jsonl"
    record_outside(cell.program, tape, cell.fresh("then"), how="flag")
    replays_elsewhere(cell, tape)


def record_in_workdir(cell: Cell) -> None:
    """Recorded from its own work directory (``tool --workdir .``), replayed from another
    cwd and work directory."""
    workdir = cell.fresh("then")
    tape = cell.fresh("tapes") / "here.jsonl"
    record_outside(cell.program, tape, workdir, how="env", cwd=workdir)
    replays_elsewhere(cell, tape)


def record_api(cell: Cell) -> None:
    tape = cell.fresh("tapes") / "api.jsonl"
    cell.record_api(tape)
    replays_elsewhere(cell, tape)


def _ran(lines: list[str], count: int, variant: str = "default") -> None:
    ran = [line for line in lines if line.startswith("ran ")]
    assert len(ran) == count, lines


def replay_pytest(cell: Cell) -> None:
    tape = cell.recorded(into=cell.project.path / "tapes")
    result, lines = cell.pytest("--replay", str(tape), "-rA")
    result.assert_outcomes(passed=1)
    _ran(lines, 1)


def xdist(cell: Cell) -> None:
    folder = cell.project.path / "tapes"
    first = cell.recorded(into=folder)
    first.rename(folder / "a.jsonl")
    cell.recorded(into=folder).rename(folder / "b.jsonl")
    result, lines = cell.pytest("--replay", str(folder), "-n", "2", "-rA")
    result.assert_outcomes(passed=2)
    assert "2 workers [2 items]" in result.stdout.str()
    _ran(lines, 2)


FIXTURE_TEST = """
import {module}


def test_program(tape, tmp_path):
    tape.set_roots({{"work": str(tmp_path)}})
    {module}.run(tape, tmp_path, **{options!r})
"""


def replay_fixture(cell: Cell) -> None:
    """The ``tape`` fixture: ``--record-session`` records, a plain run replays, each in its
    own temporary directory (``--basetemp``)."""
    project = cell.project
    module = cell.program.module
    project.makepyfile(test_app=FIXTURE_TEST.format(module=module, options=cell.program.options))
    recorded, _ = cell.pytest("--record-session", f"--basetemp={cell.fresh('bt')}", world=True)
    recorded.assert_outcomes(passed=1)
    tape = project.path / "cassettes" / "test_app" / "test_program.jsonl"
    assert sessiontape.load(tape).end is not None
    before = tape.read_bytes()
    replayed, _ = cell.pytest(f"--basetemp={cell.fresh('bt')}", "-rA")
    replayed.assert_outcomes(passed=1)
    assert tape.read_bytes() == before


def off_concurrent(cell: Cell) -> None:
    """Recording off, ``CONCURRENT_RUNS`` runs of the program start together (threads, or
    tasks for an asyncio program) in a fresh interpreter, ``CONCURRENT_ROUNDS`` times: no
    exception anywhere, and every run ends as a recorded run ends."""
    expected = None
    if not cell.program.world:  # a shared fake world makes runs differ (rate limits)
        expected = sessiontape.load(cell.shelf.tape(cell.program)).end
    for _ in range(CONCURRENT_ROUNDS):
        base = cell.fresh("runs")
        with cell.live_world(base):
            done = subprocess.run(
                [
                    sys.executable,
                    str(HERE / "first_use.py"),
                    str(cell.program.path),
                    str(CONCURRENT_RUNS),
                    str(base),
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=600,
            )
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        assert found["errors"] == [], found["errors"][0]
        assert len(found["outcomes"]) == CONCURRENT_RUNS
        if expected is not None:
            assert all(json_ready(o) == expected.outcome for o in found["outcomes"])


def token(cell: Cell) -> None:
    """The token in the environment, argv and output of the program's processes is
    redacted wherever sessiontape writes: in the tape, and in its sidecar (payloads over
    16 bytes go there). ``Cell.check_written`` then finds no byte of it on disk."""
    tape = cell.fresh("tapes") / "token.jsonl"
    cell.record_api(tape, max_inline_bytes=16)
    recording = sessiontape.load(tape)
    places = {"env": 0, "argv": 0, "output": 0}
    sidecar = tape.parent / (tape.name + ".blobs")
    blobs = b"".join(p.read_bytes() for p in sidecar.iterdir()) if sidecar.is_dir() else b""
    assert blobs, "nothing went to the sidecar"
    for entry in recording.calls:
        if not isinstance(entry, sessiontape.ProcessCall):
            continue
        fields = msgspec.to_builtins(entry)
        places["env"] += "[REDACTED" in json.dumps(fields["env"])
        places["argv"] += "[REDACTED" in json.dumps(fields["argv"])
        outputs = [fields.get("stdout"), fields.get("stderr"), fields.get("chunks")]
        places["output"] += "[REDACTED" in json.dumps(outputs)
    places["output"] += blobs.count(b"[REDACTED")
    assert all(places.values()), f"the token was not where the program puts it: {places}"
    assert TOKEN.encode() not in tape.read_bytes() + blobs
    replays_elsewhere(cell, tape)
