"""Live re-record of a stdlib program under ``patch_subprocess()``: the processes a selector
picks run for real (``subprocess``, pipes, asyncio), every other one comes from the tape,
and the new tape replays green with no process at all."""

from __future__ import annotations

import asyncio
import importlib
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import Change, ProcessCall

from .conftest import PY, Spawns

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")


def program(word: str, *, fetch: bool = False) -> dict[str, list[str]]:
    """Two named workers; each runs a Python child, an ``echo`` and a ``cat`` fed over a
    pipe, all through ``subprocess``. With ``fetch``, today's code adds an ``echo fetch``
    call in worker-2 that no tape recorded."""
    out: dict[str, list[str]] = {}

    def work(name: str) -> None:
        with sessiontape.worker(name):
            got = [
                subprocess.run(
                    [PY, "-c", f"print({word!r})"], capture_output=True, text=True
                ).stdout
            ]
            if fetch and name == "worker-2":
                got.append(subprocess.check_output(["echo", "fetch", name], text=True))
            got.append(subprocess.check_output(["echo", name], text=True))
            with subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as cat:
                got.append(cat.communicate(f"{word} via cat".encode())[0].decode())
            out[name] = got

    threads = [threading.Thread(target=work, args=(n,)) for n in ("worker-1", "worker-2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def _record(path: Path, word: str) -> dict[str, list[str]]:
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        out = program(word)
        tape.finish()
    return out


def _fields(call: ProcessCall, **override: Any) -> dict[str, Any]:
    return {f: override.get(f, getattr(call, f)) for f in call.__struct_fields__}


@pytest.mark.parametrize(
    ("selector", "picked"),
    [
        ("process:echo", lambda c: c.argv[0] == "echo"),
        ("process@worker-2", lambda c: c.worker == "worker-2"),
        ("worker-1", lambda c: c.worker == "worker-1"),
        ("process", lambda c: True),
    ],
    ids=["program", "boundary-at-worker", "worker", "boundary"],
)
def test_live_patch_subprocess_runs_only_the_selected_processes_and_writes_no_change(
    selector: str, picked: Any, tmp_path: Path, spawns: Spawns
) -> None:
    cassette = tmp_path / "t.jsonl"
    recorded = _record(cassette, "a")
    before = cassette.read_bytes()
    old = sessiontape.load(cassette)
    with spawns.counting(), sessiontape.replay(cassette, live=[selector]) as tape:
        with tape.patch_subprocess():
            today = program("a")
        report = tape.finish()
    assert report.ok, report.render()
    assert today == recorded
    expected = [c for c in old.calls if picked(c)]
    assert len(spawns.started) == len(expected) > 0  # exactly the live processes ran
    # Each ran for real and asked and got what the tape holds: nothing to write.
    assert (report.rewrites, report.rewritten_to) == ([], None)
    assert not (tmp_path / "t.rerecorded.jsonl").exists()
    assert cassette.read_bytes() == before


def test_live_rerecords_what_changed_in_place(tmp_path: Path, spawns: Spawns) -> None:
    cassette = tmp_path / "t.jsonl"
    _record(cassette, "a")
    old = sessiontape.load(cassette)
    with spawns.counting(), sessiontape.replay(cassette, live=["process"]) as tape:
        with tape.patch_subprocess():
            today = program("b")  # another word: the Python child and cat answer otherwise
        report = tape.finish()
    assert report.ok, report.render()
    assert len(spawns.started) == len(old.calls)
    new_path = tmp_path / "t.rerecorded.jsonl"
    assert report.rewritten_to == str(new_path)
    changed = {(r.seq, r.change, r.field) for r in report.rewrites}
    pythons = [c.seq for c in old.calls if c.argv[1:2] == ["-c"]]  # type: ignore[union-attr]
    cats = [c.seq for c in old.calls if c.argv == ["cat"]]  # type: ignore[union-attr]
    assert changed == {
        *((seq, Change.REQUEST, "argv[2]") for seq in pythons),
        *((seq, Change.ANSWER, "stdout") for seq in pythons),
        *((seq, Change.REQUEST, "input") for seq in cats),
        *((seq, Change.ANSWER, "stdout") for seq in cats),
    }
    new = sessiontape.load(new_path)
    assert [e.seq for e in new.entries] == [e.seq for e in old.entries]  # seqs stay put
    [note] = new.header.rerecorded or []
    assert (note.segments, note.added, note.dropped) == (["process"], 0, 0)
    for call in new.calls:
        assert isinstance(call, ProcessCall)
        before = old.by_seq(call.seq)
        assert isinstance(before, ProcessCall)
        if call.seq not in pythons + cats:
            # The echo calls: as recorded, every field, but their time may move later on
            # their worker's lane when the call before them took longer than recorded.
            assert _fields(call, ts_ns=0, mono_ns=0) == _fields(before, ts_ns=0, mono_ns=0)
            assert call.ts_ns >= before.ts_ns
    # The piped conversation of a live cat was recorded: stdin and stdout both.
    for seq in cats:
        cat = new.by_seq(seq)
        assert isinstance(cat, ProcessCall)
        assert (cat.input, cat.stdout) == ("b via cat", "b via cat")

    with Spawns().counting() as replayed, sessiontape.replay(new_path, strict=True) as tape:
        with tape.patch_subprocess():
            assert program("b") == today
        assert tape.finish().ok
    assert replayed.started == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_live_records_a_new_process_call_the_tape_cannot_answer(
    tmp_path: Path, spawns: Spawns
) -> None:
    cassette = tmp_path / "t.jsonl"
    _record(cassette, "a")
    # Without live, today's new call fails the replay: the tape has no answer for it.
    with sessiontape.replay(cassette, update=True) as tape, tape.patch_subprocess():
        program("a", fetch=True)  # worker-2 dies of the UnrecordedCallError
    report = tape.report
    assert report is not None
    assert not report.ok
    assert report.rewritten_to is None
    assert "--sessiontape-live=process@worker-2" in report.render()

    before = cassette.read_bytes()
    with spawns.counting(), sessiontape.replay(cassette, live=["process:echo@worker-2"]) as tape:
        with tape.patch_subprocess():
            today = program("a", fetch=True)
        report = tape.finish()
    assert report.ok, report.render()
    assert today["worker-2"][1] == "fetch worker-2\n"
    assert len(spawns.started) == 2  # worker-2's two echo calls, the new one included
    assert cassette.read_bytes() == before  # beside, not over
    new_path = tmp_path / "t.rerecorded.jsonl"
    # The new call added; worker-2's other echo asked and got what was recorded: kept.
    [added] = report.rewrites
    assert (added.change, added.new["argv"]) == (Change.ADDED, ["echo", "fetch", "worker-2"])
    new = sessiontape.load(new_path)
    worker2 = [c.argv[1:] for c in new.calls if c.worker == "worker-2"]  # type: ignore[union-attr]
    assert worker2 == [
        ["-c", "print('a')"],
        ["fetch", "worker-2"],
        ["worker-2"],
        [],
    ]

    with Spawns().counting() as replayed, sessiontape.replay(new_path) as tape:
        with tape.patch_subprocess():
            assert program("a", fetch=True) == today
        assert tape.finish().ok
    assert replayed.started == []


async def _async_program() -> list[bytes]:
    """Two asyncio subprocesses: ``echo`` and a Python child."""
    echo = await asyncio.create_subprocess_exec("echo", "hi", stdout=asyncio.subprocess.PIPE)
    child = await asyncio.create_subprocess_exec(
        PY, "-c", "print('py')", stdout=asyncio.subprocess.PIPE
    )
    return [(await echo.communicate())[0], (await child.communicate())[0]]


def test_live_asyncio_subprocesses_under_patch_subprocess(
    tmp_path: Path, spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "t.jsonl"
    with sessiontape.record(cassette) as tape, tape.patch_subprocess():
        recorded = asyncio.run(_async_program())
        tape.finish()
    assert recorded == [b"hi\n", b"py\n"]
    # Today's world: an echo that answers otherwise (one on PATH before the real one).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "echo").write_text('#!/bin/sh\nprintf "hello\\n"\n', encoding="utf-8")
    (bin_dir / "echo").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    with spawns.counting(), sessiontape.replay(cassette, live=["process:echo"]) as tape:
        with tape.patch_subprocess():
            today = asyncio.run(_async_program())
        report = tape.finish()
    assert report.ok, report.render()
    assert today == [b"hello\n", b"py\n"]
    assert len(spawns.started) == 1  # the live echo; the Python child came from the tape
    assert [(r.change, r.field) for r in report.rewrites] == [(Change.ANSWER, "stdout")]
    recorded = today
    new_path = tmp_path / "t.rerecorded.jsonl"
    with Spawns().counting() as replayed, sessiontape.replay(new_path) as tape:
        with tape.patch_subprocess():
            assert asyncio.run(_async_program()) == recorded
        assert tape.finish().ok
    assert replayed.started == []


TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def secret_program(word: str = "a") -> str:
    """A process given a secret in an argument, printing it back (with ``word``)."""
    return subprocess.check_output(
        [PY, "-c", "import sys; print(sys.argv[2] + ' token=' + sys.argv[1])", TOKEN, word],
        text=True,
    )


def test_a_live_process_is_scrubbed_before_it_is_written(tmp_path: Path) -> None:
    cassette = tmp_path / "t.jsonl"
    with sessiontape.record(cassette) as tape, tape.patch_subprocess():
        secret_program()
        tape.finish()
    with sessiontape.replay(cassette, live=["process"]) as tape, tape.patch_subprocess():
        assert secret_program("b") == f"b token={TOKEN}\n"  # the live call ran for real
    report = tape.report
    assert report is not None
    assert report.ok, report.render()
    new = tmp_path / "t.rerecorded.jsonl"
    assert TOKEN not in new.read_text(encoding="utf-8")
    [call] = sessiontape.load(new).calls
    assert isinstance(call, ProcessCall)
    assert "[REDACTED" in call.argv[3]
    assert "[REDACTED" in str(call.stdout)


#: A project whose application takes no runner: ``subprocess`` under ``patch_subprocess()``.
_STDLIB_APP = """
import os
import subprocess
import sys

import sessiontape


def main(tape):
    out = []
    with tape.patch_subprocess():
        for name in ("w1", "w2"):
            with sessiontape.worker(name):
                word = os.environ.get("APP_WORD", "hello")
                out.append(subprocess.check_output(["echo", word, name], text=True))
                out.append(subprocess.check_output([sys.executable, "-c", "print(1)"], text=True))
    return out


def sessiontape_replay(tape, recording):
    return main(tape)
"""


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_live_over_pytest_for_a_patch_subprocess_program(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    pytester.makeconftest(_STDLIB_APP)
    (pytester.path / "corpus").mkdir()
    pytester.makepyfile(stdlib_app=_STDLIB_APP)
    pytester.syspathinsert()
    monkeypatch.delitem(sys.modules, "stdlib_app", raising=False)
    app = importlib.import_module("stdlib_app")  # the application, recorded in this process
    monkeypatch.delitem(sys.modules, "stdlib_app")
    for name in ("a", "b"):
        with sessiontape.record(pytester.path / "corpus" / f"{name}.jsonl") as tape:
            tape.finish(app.main(tape))
    monkeypatch.setenv("APP_WORD", "bonjour")  # today's code passes another word to echo
    args = ("-p", "no:randomly", "--replay", "corpus", "--sessiontape-live=process:echo")
    result = pytester.runpytest_subprocess(*args, *xdist)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["2 tape(s) rewritten, 0 not written; * change(s)"])
    for name in ("a", "b"):
        new = sessiontape.load(pytester.path / "corpus" / f"{name}.rerecorded.jsonl")
        echoes = [c.argv for c in new.calls if c.argv[0] == "echo"]  # type: ignore[union-attr]
        assert echoes == [["echo", "bonjour", "w1"], ["echo", "bonjour", "w2"]]
    rerecorded = ("--replay", "corpus/a.rerecorded.jsonl", "--replay", "corpus/b.rerecorded.jsonl")
    pytester.runpytest_subprocess("-p", "no:randomly", *rerecorded).assert_outcomes(passed=2)
