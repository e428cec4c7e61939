"""``sessiontape corpus``: what a corpus of real tapes covers, and ``--minimize``.

A corpus of 220 tapes, each recorded for real, where most repeat a few behaviours (the
same commands with other arguments) and a few behaviours have a single tape. ``--minimize
--move-to`` must keep a subset that replays (``pytest --replay``) every call shape of the
whole corpus, keep the only tape of each shape, move the rest (never delete), and leave
a file that is not a cassette where it is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import sessiontape
from sessiontape.cassette import is_cassette
from sessiontape.cli import main
from sessiontape.report import call_shape

from . import shrinkapps

#: Behaviours repeated by most tapes ({} is each tape's own value: same shape).
COMMON = (
    [["echo", "-n", "{}"]],
    [["printf", "%s\n", "{}"], ["true"]],
    [["sh", "-c", "echo {}"]],
)
#: Behaviours with a single tape each.
RARE = (
    [["ls", "-a", "."]],
    [["uname", "-s"]],
    [["date", "-u"]],
    [["env", "-u", "HOME", "true"]],
)
TAPES = 220


def _shapes(path: Path) -> set[str]:
    return {s for s in map(call_shape, sessiontape.load(path).entries) if s is not None}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A project folder and its corpus of 220 real tapes."""
    root = tmp_path_factory.mktemp("project")
    shrinkapps.make_project(root)
    tapes = root / "corpus"
    for index in range(TAPES):
        if index < len(RARE):
            commands, name = RARE[index], f"rare/tape-{index:03d}.jsonl"
        else:
            behaviour = COMMON[index % len(COMMON)]
            commands = [[a.replace("{}", f"v{index}") for a in argv] for argv in behaviour]
            name = f"common/{index % 7}/tape-{index:03d}.jsonl"
        shrinkapps.record_shapes(tapes / name, commands)
    return root, tapes


@pytest.fixture
def project(corpus: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The corpus, with its project as the current directory: where ``corpus`` finds the
    replay hook (the project's conftest.py)."""
    monkeypatch.chdir(corpus[0])
    return corpus


def copy_of(source: Path, target: Path, pattern: str = "*") -> Path:
    """``target``: the files under ``source`` that match ``pattern``, in the same layout."""
    for path in sorted(source.rglob(pattern)):
        if path.is_file():
            copy = target / path.relative_to(source)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(path.read_bytes())
    return target


def test_minimize_keeps_a_subset_that_replays_every_shape(
    project: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, source = project
    tapes = copy_of(source, root / "copy")
    notes = tapes / "common" / "notes.jsonl"
    notes.write_text('{"not": "a cassette"}\n')
    shapes = {p: _shapes(p) for p in sorted(tapes.rglob("tape-*.jsonl"))}
    assert len(shapes) == TAPES
    every = set().union(*shapes.values())
    holders: dict[str, list[Path]] = defaultdict(list)
    for path, found in shapes.items():
        for shape in found:
            holders[shape].append(path)
    only = {paths[0].relative_to(tapes).as_posix() for paths in holders.values() if len(paths) == 1}
    assert len(only) == len(RARE)

    moved = tmp_path / "moved"
    args = ["corpus", str(tapes), "--minimize", "--move-to", str(moved), "-n", "2", "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    kept = set(result["keep"])
    assert result["tapes"] == TAPES
    assert result["shapes"] == len(every)
    assert only <= kept  # the only tape of a shape is never moved
    assert len(kept) == len(RARE) + len(COMMON)
    assert set(result["moved"]) == set(result["redundant"])
    assert len(result["moved"]) == TAPES - len(kept)
    # Moved, not deleted: every tape is in one of the two folders, as a cassette.
    left = {p.relative_to(tapes).as_posix() for p in tapes.rglob("tape-*.jsonl")}
    gone = {p.relative_to(moved).as_posix() for p in moved.rglob("*.jsonl")}
    assert left == kept
    assert gone == set(result["moved"])
    assert all(is_cassette(moved / name) for name in gone)
    assert notes.read_text() == '{"not": "a cassette"}\n'
    # What is left replays, as pytest replays it, and covers every shape.
    receipt = tmp_path / "receipt.json"
    replay = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--replay",
            str(tapes),
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-q",
            "--sessiontape-report",
            str(receipt),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert replay.returncode == 0, replay.stdout[-2000:]
    reports = json.loads(receipt.read_text())
    assert len(reports) == len(kept)
    assert all(r["ok"] and r["consumed"] == r["loaded"] for r in reports)
    assert set().union(*(_shapes(tapes / name) for name in kept)) == every


def test_the_report_says_what_the_corpus_covers_and_repeats(
    project: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, tapes = project
    assert main(["corpus", str(tapes), "--dist", "no"]) == 0
    out = capsys.readouterr().out
    every = set().union(*(_shapes(p) for p in tapes.rglob("*.jsonl")))
    assert out.startswith(
        f"{TAPES} tapes -> {len(RARE) + len(COMMON)} keep all {len(every)} call shapes\n"
    )
    assert f"{len(RARE)} shapes have a single tape" in out
    assert "process echo -n" in out
    # Nothing moved without --minimize --move-to.
    assert len(list(tapes.rglob("*.jsonl"))) == TAPES


def test_a_failing_tape_is_reported_and_left_in_place(
    project: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, source = project
    tapes = copy_of(source, tmp_path / "few", "tape-00*.jsonl")
    broken = tapes / "rare" / "tape-001.jsonl"
    # Today's code runs another command than the tape recorded (the header's config says
    # which): the replay fails.
    header, rest = broken.read_text().split("\n", 1)
    broken.write_text(header.replace('"uname"', '"hostname"') + "\n" + rest)
    moved = tmp_path / "moved"
    assert main(["corpus", str(tapes), "--minimize", "--move-to", str(moved)]) == 1
    out = capsys.readouterr().out
    assert "failing  rare/tape-001.jsonl" in out
    assert broken.exists()


def test_move_to_inside_the_corpus_is_refused(
    corpus: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, tapes = corpus
    assert main(["corpus", str(tapes), "--minimize", "--move-to", str(tapes / "old")]) == 2
    assert "is inside" in capsys.readouterr().err


def test_coverage_adds_the_lines_each_replay_runs(
    project: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("coverage")
    root, source = project
    tapes = copy_of(source, tmp_path / "few", "tape-00*.jsonl")
    assert main(["corpus", str(tapes), "--minimize", "--coverage", str(root), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # The program's lines that the replays ran: run_shapes and the replay hook at least.
    assert result["lines"] > 10
    assert len(result["keep"]) >= len(RARE)
    assert main(["corpus", str(tapes), "--coverage", str(root)]) == 0
    assert f"call shapes and {result['lines']:,} lines" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "message"),
    [("x", "'x' is not a whole number (or 'auto')"), ("-1", "'-1' is negative")],
)
def test_a_bad_worker_count_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    assert main(["corpus", str(tmp_path), "-n", value]) == 2
    assert message in capsys.readouterr().err
    out = tmp_path / "o.jsonl"
    assert main(["shrink", str(tmp_path / "t.jsonl"), "-o", str(out), "-j", "0"]) == 2
    assert not out.exists()
    assert "-j/--jobs: give 1 or more" in capsys.readouterr().err


def _reword_a_commit(path: Path) -> None:
    """Change the message of the last recorded ``git commit`` of ``path``: today's code
    then asks for another commit than the tape holds, and its replay fails there."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for index in reversed(range(len(lines))):
        entry = json.loads(lines[index])
        if entry.get("kind") == "process" and "commit" in entry["argv"]:
            entry["argv"][-1] += " (reworded)"
            lines[index] = json.dumps(entry)
            break
    else:
        raise AssertionError(f"{path} records no git commit")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def four_and_one(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Per program, a project and one recorded tape: the gardener, and the ledger (threads,
    a SQLite backlog, git through stdlib subprocess, an agent)."""
    made: dict[str, tuple[Path, Path]] = {}
    for program, record in (
        ("gardener", lambda path, work: shrinkapps.record_garden(path, work, 2, 2)),
        ("ledger", lambda path, work: shrinkapps.record_ledger(path, work, 4, 2)),
    ):
        root = tmp_path_factory.mktemp(program)
        shrinkapps.make_project(root)
        tape = root / "recorded.jsonl"
        record(tape, root / "live")
        made[program] = (root, tape)
    return made


@pytest.mark.parametrize("program", ["gardener", "ledger"])
def test_a_failing_tape_covers_nothing_and_never_stands_in_for_passing_ones(
    four_and_one: dict[str, tuple[Path, Path]],
    program: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Four passing tapes of one program, and a fifth of the same calls whose replay fails:
    # it holds every shape the others hold, so as a cover it would stand in for all four.
    root, recorded = four_and_one[program]
    monkeypatch.chdir(root)
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    for name in ("a", "b", "c", "d", "e"):
        (tapes / f"{name}.jsonl").write_bytes(recorded.read_bytes())
    _reword_a_commit(tapes / "c.jsonl")
    moved = tmp_path / "moved"

    code = main(["corpus", str(tapes), "--minimize", "--move-to", str(moved), "--json"])
    result = json.loads(capsys.readouterr().out)

    assert code == 1
    assert list(result["failing"]) == ["c.jsonl"]
    assert "argument_mismatch" in result["failing"]["c.jsonl"]
    # One passing tape keeps every shape; the three others repeat it. The failing tape is
    # neither kept in their place nor moved out.
    # (Of equal tapes, the cover keeps the last by name.)
    assert result["keep"] == ["e.jsonl"]
    assert result["redundant"] == ["a.jsonl", "b.jsonl", "d.jsonl"]
    assert result["moved"] == ["a.jsonl", "b.jsonl", "d.jsonl"]
    assert result["shapes"] == len(_shapes(recorded))
    assert sorted(p.name for p in tapes.iterdir()) == ["c.jsonl", "e.jsonl"]
    assert sorted(p.name for p in moved.iterdir()) == ["a.jsonl", "b.jsonl", "d.jsonl"]

    # The plain report says the same: the kept tape, the repeats, and the failing one.
    for name in ("a", "b", "d"):
        (moved / f"{name}.jsonl").rename(tapes / f"{name}.jsonl")
    assert main(["corpus", str(tapes), "--minimize"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"5 tapes -> 1 keep all {len(_shapes(recorded))} call shapes"
    assert out[1:5] == [
        "keep     e.jsonl",
        "repeats  a.jsonl",
        "repeats  b.jsonl",
        "repeats  d.jsonl",
    ]
    assert out[5].startswith("failing  c.jsonl: replay of ")
    assert len(out) == 6
