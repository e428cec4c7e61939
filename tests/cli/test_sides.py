"""Two runs side by side: the pairs of matching calls, the fork point, and the commands
that show them (``serve A --against B``, ``report A --against B``, ``GET /api/sides``).

The runs are ``tests/two_runs.py``'s: they part at w2's merge (another branch in B), and B
pushes once more; every other call is made by both.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import pytest

import sessiontape
import two_runs
from sessiontape import ForkedFrom
from sessiontape.cli._sides import pair_calls, sides_data
from sessiontape.cli._viewdata import build_rows
from sessiontape.cli._viewer import embedded

from .test_serve import Running, serve  # noqa: F401  (the fixture)

if TYPE_CHECKING:
    from .conftest import Cli


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    return (
        two_runs.write_run(tmp_path / "a.jsonl", "a"),
        two_runs.write_run(tmp_path / "b.jsonl", "b"),
    )


def _argv(recording: sessiontape.Recording, seq: int) -> list[str]:
    return next(list(c.argv) for c in recording.calls if c.seq == seq)  # type: ignore[union-attr]


def test_calls_both_runs_made_are_paired_and_the_rest_are_one_runs_only(
    runs: tuple[Path, Path],
) -> None:
    a, b = (sessiontape.load(p) for p in runs)
    pairs = pair_calls(a, b)
    assert len(pairs) == two_runs.PAIRS
    # Each pair asks the same of the same worker; w2's last status pairs across the push.
    for sa, sb in pairs:
        assert _argv(a, sa) == _argv(b, sb)
    assert pairs[-1] == (7, 8)
    only_a = {c.seq for c in a.calls} - {sa for sa, _ in pairs}
    only_b = {c.seq for c in b.calls} - {sb for _, sb in pairs}
    assert [_argv(a, s) for s in sorted(only_a)] == [["git", "merge", "task/b"]]
    assert [_argv(b, s) for s in sorted(only_b)] == [
        ["git", "merge", "task/c"],
        ["git", "push", "origin", "task/c"],
    ]


def test_the_fork_point_is_where_diff_finds_the_runs_part(runs: tuple[Path, Path]) -> None:
    a, b = (sessiontape.load(p) for p in runs)
    data = sides_data(a, build_rows(a), b, build_rows(b))
    assert data["fork"] == {
        "source": "diverged",
        "a_seq": two_runs.PARTING_SEQ,
        "b_seq": two_runs.PARTING_SEQ,
        "a_ns": two_runs.PARTING_NS,
        "b_ns": two_runs.PARTING_NS,
        "text": "the runs part at seq 6 (w2 process, call 3): the requests differ",
    }
    assert (data["only_a"], data["only_b"], data["differences"]) == (1, 2, 1)
    assert data["a"]["name"] == "a.jsonl"
    assert data["b"]["columns"]["text"][7] == "git push origin task/c -> exit 0"
    # A run against itself does not part.
    same = sides_data(a, build_rows(a), a, build_rows(a))
    assert (same["fork"], same["only_a"], same["only_b"]) == (None, 0, 0)
    assert len(same["pairs"]) == len(a.calls)


def test_a_recorded_fork_is_the_fork_point(runs: tuple[Path, Path]) -> None:
    a, b = (sessiontape.load(p) for p in runs)
    forked = ForkedFrom(tape="a.jsonl", sha256="0" * 64, seq=4, answer={"x": 1})
    b.header = msgspec.structs.replace(b.header, forked_from=forked)
    data = sides_data(a, build_rows(a), b, build_rows(b))
    assert data["fork"] == {
        "source": "forked_from",
        "a_seq": 4,
        "b_seq": 4,
        "a_ns": 40 * two_runs.MS,
        "b_ns": 40 * two_runs.MS,
        "text": "B was forked from a.jsonl at seq 4 (another answer given)",
    }
    assert data["b"]["forked_from"] == {
        "tape": "a.jsonl",
        "sha256": "0" * 64,
        "seq": 4,
        "answer": {"x": 1},
    }


def test_report_against_writes_the_side_by_side_page(
    runs: tuple[Path, Path], tmp_path: Path, cli: Cli
) -> None:
    out = tmp_path / "sides.html"
    result = cli("report", runs[0], "--against", runs[1], "-o", out)
    assert result.code == 0, result.err
    assert result.out.startswith(
        f"wrote {out}: 6 matching calls joined, 1 only in A, 2 only in B; the runs part at "
        "seq 6 (w2 process, call 3): the requests differ; "
    )
    blobs = embedded(out.read_text(encoding="utf-8"))
    assert list(blobs) == ["st-sides"]
    data = json.loads(blobs["st-sides"])
    assert data["pairs"] == [list(p) for p in pair_calls(*map(sessiontape.load, runs))]
    assert "<title>sessiontape: a.jsonl and b.jsonl side by side</title>" in out.read_text()


def test_report_against_refuses_a_receipt_and_the_same_tape(
    runs: tuple[Path, Path], tmp_path: Path, cli: Cli
) -> None:
    out = tmp_path / "sides.html"
    both = cli("report", runs[0], "--against", runs[1], "--receipt", runs[0], "-o", out)
    assert both.code == 2
    assert "--receipt marks one replay's mismatches, and --against shows two runs" in both.err
    same = cli("report", runs[0], "--against", runs[0], "-o", out)
    assert same.code == 2
    assert f"{runs[0]} is {runs[0]} itself: name another cassette." in same.err
    assert not out.exists()


def test_the_api_serves_two_cassettes_side_by_side(
    runs: tuple[Path, Path],
    serve: Callable[..., Running],  # noqa: F811
) -> None:
    api = serve(*runs)
    status, data = api.get("/api/sides?a=a.jsonl&b=b.jsonl")
    assert status == 200
    assert (len(data["pairs"]), data["only_a"], data["only_b"]) == (6, 1, 2)
    assert data["fork"]["a_seq"] == two_runs.PARTING_SEQ
    assert api.get("/api/cassettes")[1]["against"] is None
    assert api.get("/api/sides?a=a.jsonl&b=nope.jsonl") == (
        404,
        {"error": "no cassette named 'nope.jsonl'; GET /api/cassettes lists them."},
    )
    assert api.get("/api/sides?a=a.jsonl") == (
        400,
        {"error": "name both cassettes: /api/sides?a=NAME&b=NAME."},
    )


def test_serve_against_wants_one_cassette_before_it(
    runs: tuple[Path, Path], tmp_path: Path, cli: Cli
) -> None:
    folder = cli("serve", tmp_path, "--against", runs[1], "--port", "0")
    assert folder.code == 2
    assert (
        "--against B shows two cassettes side by side: name one cassette A before it "
        "(sessiontape serve A.jsonl --against B.jsonl)." in folder.err
    )
    same = cli("serve", runs[0], "--against", runs[0], "--port", "0")
    assert same.code == 2
    assert f"{runs[0]} is {runs[0]} itself: name another cassette to compare with." in same.err
