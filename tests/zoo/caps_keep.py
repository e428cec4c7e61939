"""Capabilities that keep a tape alive across code changes: ``patched()``, update, live
re-record, shrink, and ``corpus --minimize``.

Each program has the same variants of its code (see its docstring): ``changed`` (a
request reworded: update), ``new_call`` (a new process call: live), ``patched`` (that call
behind ``sessiontape.patched``), ``broken`` (one task behaves otherwise: shrink).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import sessiontape
from sessiontape.reduce import signature_of_mismatch

from .harness import Cell


def processes(tape: Path) -> list[sessiontape.ProcessCall]:
    recording = sessiontape.load(tape)
    return [e for e in recording.calls if isinstance(e, sessiontape.ProcessCall)]


def patched(cell: Cell) -> None:
    """An old tape replays the old path under code that asks ``patched(id)``; a tape
    recorded by that code holds the id and replays the new path."""
    old = cell.recorded()
    assert not sessiontape.load(old).patches
    replayed = cell.replay_api(old, variant="patched")
    assert replayed.report.ok, replayed.report.render()
    new = cell.fresh("tapes") / "patched.jsonl"
    cell.record_api(new, variant="patched")
    assert sessiontape.load(new).patches, "the new tape names no change id"
    assert len(processes(new)) > len(processes(old))
    replayed = cell.replay_api(new, variant="patched")
    assert replayed.report.ok, replayed.report.render()
    assert replayed.report.consumed == replayed.report.loaded


def update_api(cell: Cell) -> None:
    """``replay(path, update=True)`` rewrites the changed requests; the tape then replays
    today's code; a second update writes nothing."""
    tape = cell.recorded()
    before = tape.read_bytes()
    updated = cell.replay_api(tape, variant="changed", update=True)
    assert updated.report.ok, updated.report.render()
    assert updated.report.rewrites, "update found nothing to rewrite"
    assert tape.read_bytes() != before
    again = cell.replay_api(tape, variant="changed")
    assert again.report.ok, again.report.render()
    after = tape.read_bytes()
    second = cell.replay_api(tape, variant="changed", update=True)
    assert second.report.ok, second.report.render()
    assert not second.report.rewrites
    assert tape.read_bytes() == after


def update_pytest(cell: Cell) -> None:
    """``pytest --replay X --sessiontape-update`` does what the API does."""
    tape = cell.recorded(into=cell.project.path / "tapes")
    before = tape.read_bytes()
    result, _ = cell.pytest("--replay", str(tape), "--sessiontape-update", variant="changed")
    result.assert_outcomes(passed=1)
    assert "1 tape(s) rewritten" in result.stdout.str()
    assert tape.read_bytes() != before
    result, _ = cell.pytest("--replay", str(tape), variant="changed")
    result.assert_outcomes(passed=1)
    after = tape.read_bytes()
    result, _ = cell.pytest("--replay", str(tape), "--sessiontape-update", variant="changed")
    result.assert_outcomes(passed=1)
    assert tape.read_bytes() == after


def live(cell: Cell) -> None:
    """``live=["process"]`` with update re-records every process for real (the new call
    included); the new calls carry their real times; a second run with no code change
    changes no byte; the tape then replays the new code with nothing spawned."""
    tape = cell.recorded()
    before = processes(tape)
    first = cell.replay_api(tape, variant="new_call", world=True, live=["process"], update=True)
    assert first.report.ok, first.report.render()
    after = processes(tape)
    assert len(after) > len(before)
    recording = sessiontape.load(tape)
    assert recording.end is not None
    start, end = recording.header.ts_ns, recording.end.ts_ns
    for entry in after:
        assert start <= entry.ts_ns <= end, f"seq {entry.seq} starts outside the session"
        assert entry.ts_ns + entry.duration_ns <= end, f"seq {entry.seq} ends after the session"
    written = tape.read_bytes()
    second = cell.replay_api(tape, variant="new_call", world=True, live=["process"], update=True)
    assert second.report.ok, second.report.render()
    assert tape.read_bytes() == written, "a second live re-record with no change rewrote the tape"
    replayed = cell.replay_api(tape, variant="new_call")
    assert replayed.report.ok, replayed.report.render()


def _first_mismatch(cell: Cell, tape: Path, variant: str) -> dict[str, object]:
    receipt = cell.fresh("receipt") / "receipt.json"
    result, _ = cell.pytest(
        "--replay", str(tape), f"--sessiontape-report={receipt}", variant=variant
    )
    result.assert_outcomes(failed=1)
    (report,) = json.loads(receipt.read_text(encoding="utf-8"))
    first: dict[str, object] = report["mismatches"][0]
    return first


def shrink(cell: Cell) -> None:
    """``sessiontape shrink`` of a tape whose replay fails under the ``broken`` variant: a
    smaller tape, valid, failing the same way, and nothing spawned while shrinking."""
    tape = cell.recorded(into=cell.project.path / "tapes")
    small = cell.project.path / "small.jsonl"
    done, lines = cell.command(
        "shrink",
        str(tape),
        "-o",
        str(small),
        "-j",
        "2",
        "--budget",
        "300",
        "--json",
        variant="broken",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(done.stdout)
    assert figures["entries_after"] < figures["entries_before"]
    assert len(sessiontape.load(small).entries) == figures["entries_after"]
    assert any(line.startswith("ran ") for line in lines)
    original = signature_of_mismatch(_first_mismatch(cell, tape, "broken"))
    shrunk = signature_of_mismatch(_first_mismatch(cell, small, "broken"))
    assert shrunk == original


def _corpus(cell: Cell, *, extra: str) -> tuple[Path, Path]:
    """A corpus of ``a`` and ``b``, the same tape, and ``extra``: ``c``, a tape of the
    ``patched`` code's new path (a superset of their call shapes), or ``d``, the same calls
    as ``a`` but another recorded outcome (an incident's tape: today's code ends
    otherwise), whose replay fails. Returns the folder and a folder for what is moved out."""
    folder = cell.project.path / "tapes"
    cell.recorded(into=folder).rename(folder / "a.jsonl")
    shutil.copy(folder / "a.jsonl", folder / "b.jsonl")
    if extra == "c":
        cell.record_api(folder / "c.jsonl", variant="patched")
    else:
        lines = (folder / "a.jsonl").read_text(encoding="utf-8").splitlines()
        end = json.loads(lines[-1])
        assert end["kind"] == "session_end"
        end["outcome"] = {"incident": "the run ended otherwise"}
        lines[-1] = json.dumps(end, separators=(",", ":"))
        (folder / "d.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder, cell.project.path / "attic"


def corpus_minimize(cell: Cell) -> None:
    """``corpus --minimize`` keeps the tape whose call shapes cover the others' (the new
    path adds one); ``--move-to`` moves the two it covers, and only them."""
    folder, attic = _corpus(cell, extra="c")
    args = ("corpus", str(folder), "--minimize", "-n", "2", "--json")
    done, _ = cell.command(*args, variant="patched")
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(done.stdout)
    assert found["failing"] == {}, found
    assert (found["keep"], sorted(found["redundant"])) == (["c.jsonl"], ["a.jsonl", "b.jsonl"])
    done, _ = cell.command(*args, "--move-to", str(attic), variant="patched")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(json.loads(done.stdout)["moved"]) == ["a.jsonl", "b.jsonl"]
    assert sorted(p.name for p in attic.iterdir()) == ["a.jsonl", "b.jsonl"]
    assert sorted(p.name for p in folder.iterdir()) == ["c.jsonl"]


def corpus_failing(cell: Cell) -> None:
    """A failing tape in the corpus is reported failing and covers nothing (README,
    corpus): one of the two identical passing tapes is kept, the other moved, and the
    failing one is neither kept in a passing one's place nor moved."""
    folder, attic = _corpus(cell, extra="d")
    args = ("corpus", str(folder), "--minimize", "--move-to", str(attic), "-n", "2", "--json")
    done, _ = cell.command(*args)
    assert done.returncode == 1, done.stdout + done.stderr
    found = json.loads(done.stdout)
    assert sorted(found["failing"]) == ["d.jsonl"], found
    assert found["keep"] in (["a.jsonl"], ["b.jsonl"]), found
    (repeat,) = found["redundant"]
    assert found["moved"] == [repeat]
    assert sorted(p.name for p in attic.iterdir()) == [repeat]
    assert (folder / "d.jsonl").is_file()
