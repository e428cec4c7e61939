"""The same wiring runs in every mode: the three tapes have one surface for the application.

Everything an application's wiring may call is declared on ``Tape``; each of
``RecordTape``, ``ReplayTape`` and ``DisabledTape`` has all of it, with the same kind of
member (property or method) and the same parameters. What a tape has beyond it is
listed here with what it is for (looking at a recording or a replay, not wiring), so a
method added to one tape fails this test until it is declared for all three, or here.

Then the wiring that failed (``tape.set_roots`` while recording: ``AttributeError:
'RecordTape' object has no attribute 'set_roots'``) runs in all three modes (and through
the ``tape`` fixture: ``tests/plugin/test_set_roots.py``).
"""

from __future__ import annotations

import inspect
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape.tape import ReplayTape, Tape
from sessiontape.tape._disabled import DisabledTape
from sessiontape.tape._record import RecordTape

#: What each tape has beyond the wiring, and why it is not wiring.
BEYOND_THE_WIRING: dict[type[Tape], set[str]] = {
    # What a test or a tool asks of a replay: its settings, what it served, its chaos,
    # what its fork did.
    ReplayTape: {
        "recording",
        "strict",
        "noise",
        "lookahead",
        "loaded",
        "scrubber",
        "chaos",
        "save_chaos",
        "fork",
    },
    # What a recording is: where it writes, how much it keeps, how far it got.
    RecordTape: {
        "path",
        "level",
        "scrubber",
        "codec",
        "run_id",
        "moved_to",
        "active",
        "counts",
        "record_error",
    },
    DisabledTape: set(),
}
TAPES = list(BEYOND_THE_WIRING)


def _public(cls: type) -> set[str]:
    """The public members of ``cls``, its declared attributes (``mode: Mode``) included."""
    names = set(dir(cls)) | {n for c in cls.__mro__ for n in vars(c).get("__annotations__", {})}
    return {name for name in names if not name.startswith("_")}


def _shape(cls: type, name: str) -> tuple[str, list[tuple[str, Any, bool]]]:
    """What ``cls.name`` is to a caller: a property, or a method and its parameters
    (name, kind, whether it has a default)."""
    member = inspect.getattr_static(cls, name, None)  # None: declared only (``mode: Mode``)
    if isinstance(member, property):
        return "property", []
    if not callable(member) and not isinstance(member, (staticmethod, classmethod)):
        return "attribute", []
    signature = inspect.signature(getattr(cls, name))
    params = [(p.name, p.kind, p.default is not p.empty) for p in signature.parameters.values()]
    return "method", params


WIRING = sorted(_public(Tape))


def test_the_wiring_is_what_an_application_calls() -> None:
    assert {"set_roots", "roots", "report", "process_runner", "finish", "close"} <= set(WIRING)


@pytest.mark.parametrize("cls", TAPES, ids=lambda c: c.__name__)
def test_a_tape_has_the_wiring_and_only_declared_extras(cls: type[Tape]) -> None:
    assert set(WIRING) <= _public(cls)
    assert _public(cls) - set(WIRING) == BEYOND_THE_WIRING[cls]


@pytest.mark.parametrize("name", WIRING)
def test_each_member_of_the_wiring_has_one_shape_in_every_mode(name: str) -> None:
    shapes = {cls.__name__: _shape(cls, name) for cls in TAPES}
    assert shapes == dict.fromkeys(shapes, _shape(Tape, name))


# -- set_roots, the same wiring in every mode ------------------------------------------------


def _program(tape: Tape) -> str:
    """Wiring that learns its work directory after the tape exists: a fresh one per run."""
    work = tempfile.mkdtemp(prefix="surface-")
    try:
        tape.set_roots({"work": work})
        runner = tape.process_runner()
        with sessiontape.worker("w1"):
            out = runner.run(
                [sys.executable, "-c", "import os; print(os.getcwd())"], cwd=work, text=True
            ).stdout
        assert os.path.samefile(out.strip(), work)
        tape.finish({"ok": True})
    finally:
        os.rmdir(work)
    return work


def test_set_roots_runs_in_every_mode_and_writes_placeholders_while_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    with sessiontape.record(path) as tape:
        recorded_in = _program(tape)
    (call,) = sessiontape.load(path).calls
    assert isinstance(call, sessiontape.ProcessCall)
    assert call.cwd == "{work}"
    assert call.stdout == "{work}\n"
    assert recorded_in not in path.read_text(encoding="utf-8")

    with sessiontape.replay(path) as replayed:
        _program(replayed)
    assert replayed.report is not None
    assert replayed.report.ok, replayed.report.render()

    monkeypatch.delenv(sessiontape.ENV_VAR, raising=False)
    with sessiontape.record(None) as disabled:
        assert disabled.mode is sessiontape.Mode.DISABLED
        work = _program(disabled)
        assert disabled.roots.as_dict()["work"] == work
        assert disabled.report is None


def test_set_roots_while_recording_takes_effect_from_the_next_entry(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    work = tmp_path / "work"
    work.mkdir()
    with sessiontape.record(path) as tape:
        runner = tape.process_runner()
        argv = [sys.executable, "-c", "pass"]
        runner.run(argv, cwd=str(work))
        tape.set_roots({"work": str(work)})
        runner.run(argv, cwd=str(work))
        tape.finish()
    before, after = sessiontape.load(path).calls
    assert isinstance(before, sessiontape.ProcessCall)
    assert isinstance(after, sessiontape.ProcessCall)
    assert (before.cwd, after.cwd) == ("{tmp}" + str(work)[len(tempfile.gettempdir()) :], "{work}")
