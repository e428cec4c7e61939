"""Update and live re-record for stdlib programs: ``subprocess`` under ``patch_subprocess()``
and a worker pool running real processes through an injected runner."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import Change, SubprocessRunner

from .conftest import PY, Spawns


def program(word: str, *, drop_last: bool = False) -> Any:
    """A stdlib program: three processes through ``subprocess``, one argument of our own."""
    out = [subprocess.run([PY, "-c", f"print({word!r})"], capture_output=True, text=True).stdout]
    out.append(subprocess.check_output([PY, "-c", "print('middle')"], text=True))
    if not drop_last:
        out.append(subprocess.run([PY, "-c", "print('last')"], capture_output=True).stdout)
    return out


def _record(path: Path, word: str) -> Any:
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        return program(word)


def test_patch_subprocess_update_rewrites_the_argument(tmp_path: Path, spawns: Spawns) -> None:
    cassette = tmp_path / "t.jsonl"
    recorded = _record(cassette, "hello")
    with spawns.counting(), sessiontape.replay(cassette, update=True) as tape:
        with tape.patch_subprocess():
            replayed = program("bonjour")
        report = tape.finish()
    assert spawns.started == []
    assert replayed == recorded  # the recorded answers, today's request
    assert report.ok, report.render()
    [change] = report.rewrites
    assert (change.change, change.field, change.old, change.new) == (
        Change.REQUEST,
        "argv[2]",
        "print('hello')",
        "print('bonjour')",
    )
    updated = cassette.read_bytes()
    with sessiontape.replay(cassette) as tape:
        with tape.patch_subprocess():
            program("bonjour")
        assert tape.finish().ok
    with sessiontape.replay(cassette, update=True) as tape:
        with tape.patch_subprocess():
            program("bonjour")
        assert tape.finish().rewritten_to is None
    assert cassette.read_bytes() == updated


def test_patch_subprocess_update_drops_a_call_no_longer_made(tmp_path: Path) -> None:
    cassette = tmp_path / "t.jsonl"
    _record(cassette, "hello")
    with sessiontape.replay(cassette, update=True) as tape:
        with tape.patch_subprocess():
            program("hello", drop_last=True)
        report = tape.finish()
    assert report.ok, report.render()
    assert [r.change for r in report.rewrites] == [Change.DROPPED]
    assert len(sessiontape.load(cassette).calls) == 2


def pool(runner: Any, word: str, words: dict[str, str] | None = None) -> dict[str, str]:
    """Two named workers, each running two real processes through the injected runner
    (``words``: another word for some worker, today)."""
    out: dict[str, str] = {}

    def work(name: str) -> None:
        mine = (words or {}).get(name, word)
        with sessiontape.worker(name):
            first = runner.run([PY, "-c", f"print({mine!r} + {name!r})"], text=True).stdout
            second = runner.run(["echo", name], text=True).stdout
            out[name] = first + second

    threads = [threading.Thread(target=work, args=(n,)) for n in ("worker-1", "worker-2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


@pytest.mark.parametrize(
    ("selector", "picked", "changed"),
    [
        ("process@worker-2", 2, "worker-2"),
        ("worker-2", 2, "worker-2"),
        ("process:echo", 2, None),
    ],
)
def test_live_selectors_rerecord_only_their_segment(
    selector: str, picked: int, changed: str | None, tmp_path: Path, spawns: Spawns
) -> None:
    cassette = tmp_path / "t.jsonl"
    with sessiontape.record(cassette) as tape:
        pool(tape.process_runner(SubprocessRunner()), "a")
        tape.finish()
    old = cassette.read_bytes().splitlines()
    words = {changed: "b"} if changed is not None else None
    with spawns.counting(), sessiontape.replay(cassette, live=[selector]) as tape:
        today = pool(tape.process_runner(SubprocessRunner()), "a", words)
        report = tape.finish()
    assert report.ok, report.render()
    assert len(spawns.started) == picked  # exactly the live calls ran
    new_path = tmp_path / "t.rerecorded.jsonl"
    if changed is None:
        # The segment ran for real and answered as recorded: nothing to write.
        assert (report.rewrites, report.rewritten_to) == ([], None)
        assert not new_path.exists()
        return
    # The changed call, re-recorded in its place; every other line kept byte for byte.
    assert {(r.worker, r.change) for r in report.rewrites} == {
        (changed, Change.REQUEST),
        (changed, Change.ANSWER),
    }
    new = new_path.read_bytes().splitlines()
    assert len(new) == len(old)
    differing = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    assert b'"rerecorded":[' in new[differing[0]]  # the header's note
    [call] = [i for i in differing if b"print('b' + 'worker-2')" in new[i]]
    assert b"bworker-2" in new[call]
    for i in differing[1:]:
        # Worker-2's calls after a call that took longer than recorded may move later
        # on its lane (and the session's end after them); nothing of worker-1 changes.
        assert b'"worker":"worker-1"' not in old[i]
        if i != call:
            assert _without_time(old[i]) == _without_time(new[i])
    with Spawns().counting() as replayed, sessiontape.replay(new_path) as tape:
        assert pool(tape.process_runner(SubprocessRunner()), "a", words) == today
        assert tape.finish().ok
    assert replayed.started == []


def _without_time(line: bytes) -> dict[str, Any]:
    data = json.loads(line)
    return {k: v for k, v in data.items() if k not in ("ts_ns", "mono_ns", "duration_ns")}


BIG = 100_000  # past the 64 KiB inline limit: kept in the sidecar at level full
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def big_program(runner: Any, word: str) -> list[str]:
    """A big output (sidecar), and a secret in an argument and in an output."""
    big = runner.run([PY, "-c", f"print({word!r} * {BIG})"], text=True).stdout
    secret = runner.run([PY, "-c", f"print('token={TOKEN}')", f"--auth={TOKEN}"], text=True)
    return [big[:10], str(len(big)), secret.stdout.strip()]


def test_update_and_live_keep_sidecars_and_scrub_live_calls(tmp_path: Path) -> None:
    cassette = tmp_path / "t.jsonl"
    with sessiontape.record(cassette) as tape:
        live = big_program(tape.process_runner(SubprocessRunner()), "a")
        tape.finish()
    recorded = [*live[:2], "token=[REDACTED]"]  # what the tape answers: the secret redacted
    assert (tmp_path / "t.jsonl.blobs").is_dir()

    # Live: both calls run for real again; the new tape, beside, has its own sidecar.
    with sessiontape.replay(cassette, live=["process"]) as tape:
        assert big_program(tape.process_runner(SubprocessRunner()), "b")[1] == str(BIG + 1)
        assert tape.finish().ok
    new = tmp_path / "t.rerecorded.jsonl"
    text = new.read_text(encoding="utf-8")
    assert TOKEN not in text  # scrubbed before it was written, as recording does
    for blob in (tmp_path / "t.rerecorded.jsonl.blobs").iterdir():
        assert TOKEN.encode() not in blob.read_bytes()
    with sessiontape.replay(new) as tape:
        replayed = big_program(tape.process_runner(SubprocessRunner()), "b")
        assert tape.finish().ok
    assert replayed[:2] == ["b" * 10, str(BIG + 1)]

    # Update in place: today's argument, the recorded (sidecar) answer.
    with sessiontape.replay(cassette, update=True) as tape:
        assert big_program(tape.process_runner(SubprocessRunner()), "c") == recorded
        report = tape.finish()
    assert report.ok, report.render()
    assert {r.field for r in report.rewrites} == {"argv[2]"}
    assert TOKEN not in cassette.read_text(encoding="utf-8")
    with sessiontape.replay(cassette) as tape:
        assert big_program(tape.process_runner(SubprocessRunner()), "c") == recorded
        assert tape.finish().ok
