"""``sessiontape stats``: counts, time per boundary, worker and command, agent tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import sessiontape
from sessiontape.cli._stats import busy_ns

if TYPE_CHECKING:
    from .conftest import Cli, Recorder


def test_stats_text(cli: Cli, cassette: Path) -> None:
    run_id = sessiontape.load(cassette).header.run_id
    result = cli("stats", cassette)
    assert result.code == 0
    assert result.lines == [
        f"{cassette}: run {run_id} (app run), level full, complete",
        "duration 33.0ms, 15 entries, 2 worker(s)",
        "",
        "kind            entries",
        "session_start         1",
        "store_snapshot        1",
        "store_mutation        4",
        "process               6",
        "agent_turn            2",
        "session_end           1",
        "",
        "worker    calls    busy  busy%",
        "worker-1      6  16.0ms  48.5%",
        "worker-2      6  16.0ms  48.5%",
        "",
        "boundary  calls   total    mean     max  wall%",
        "agent         2  20.0ms  10.0ms  10.0ms  60.6%",
        "process       6  12.0ms   2.0ms   2.0ms  36.4%",
        "store         4   4.0ms   1.0ms   1.0ms  12.1%",
        "",
        "command       count  total   mean    max",
        "claude            2  4.0ms  2.0ms  2.0ms",
        "git checkout      2  4.0ms  2.0ms  2.0ms",
        "git merge         2  4.0ms  2.0ms  2.0ms",
        "",
        "agent  turns    time  tokens in  tokens out     cost",
        "agent      2  20.0ms        200          40  $0.0200",
        "",
        "rate              per minute  peak  peak minute",
        "boundary process         6.0     6            0",
        "boundary store           4.0     4            0",
        "boundary agent           2.0     2            0",
        "program git              4.0     4            0",
        "program claude           2.0     2            0",
        "agent tokens           240.0   240            0",
    ]


def test_stats_json(cli: Cli, record_session: Recorder) -> None:
    path = record_session(table={"git merge task/t2": (1, "CONFLICT\n", 30)})
    result = cli("stats", path, "--json")
    assert result.code == 0
    stats = json.loads(result.out)
    assert stats["duration_ns"] == 61_000_000
    assert stats["crashed"] is False
    assert stats["kinds"]["process"] == 6
    assert stats["commands"]["git merge"] == {
        "count": 2, "total_ns": 32_000_000, "mean_ns": 16_000_000, "max_ns": 30_000_000,
    }  # fmt: skip
    assert list(stats["commands"]) == ["git merge", "claude", "git checkout"]  # by total time
    assert stats["boundaries"]["process"]["wall_percent"] == round(100 * 40 / 61, 1)
    assert stats["workers"]["worker-2"] == {
        "calls": 6, "busy_ns": 44_000_000, "busy_percent": round(100 * 44 / 61, 1),
    }  # fmt: skip
    assert stats["agents"]["agent"] == {
        "turns": 2, "turns_with_usage": 2, "errors": 0, "total_ns": 20_000_000,
        "input_tokens": 200, "output_tokens": 40, "cache_read_tokens": 0,
        "cache_write_tokens": 0, "cost_usd": 0.02,
    }  # fmt: skip


def test_stats_of_a_crashed_tape(cli: Cli, record_session: Recorder) -> None:
    path = record_session(crash_after=1)
    result = cli("stats", path)
    assert result.code == 0
    assert result.lines[0].endswith("level full, crashed")
    # A crashed tape lasts until its last entry ends: the error at +16ms.
    assert result.lines[1] == "duration 16.0ms, 9 entries, 1 worker(s)"


def test_busy_time_counts_overlaps_once() -> None:
    assert busy_ns([(0, 10), (5, 15), (20, 25), (21, 22)]) == 20
    assert busy_ns([]) == 0


def test_stats_json_keeps_its_shape(cli: Cli, cassette: Path) -> None:
    stats = json.loads(cli("stats", cassette, "--json").out)
    assert list(stats) == [
        "cassette", "run_id", "entrypoint", "level", "crashed", "duration_ns", "entries",
        "kinds", "workers", "boundaries", "commands", "agents", "errors", "rates",
    ]  # fmt: skip


def test_stats_rates_per_minute_and_the_peak(cli: Cli, record_session: Recorder) -> None:
    # The first merge takes 70 s: what follows it starts in the run's second minute.
    path = record_session(table={"git merge task/t1": (0, "merged\n", 70_000)})
    stats = json.loads(cli("stats", path, "--json").out)
    rates = stats["rates"]
    assert stats["duration_ns"] == 70_031_000_000
    assert rates["minutes"] == 1.17
    # 12 calls over 1.17 minutes; 7 of them in the second minute.
    assert rates["calls"] == {"calls": 12, "per_minute": 10.28, "peak_minute": 1, "peak": 7}
    assert rates["boundaries"]["store"] == {
        "calls": 4, "per_minute": 3.43, "peak_minute": 1, "peak": 3,
    }  # fmt: skip
    # A tie goes to the earlier minute.
    assert rates["boundaries"]["process"]["peak_minute"] == 0
    assert rates["programs"] == {
        "git": {"calls": 4, "per_minute": 3.43, "peak_minute": 0, "peak": 2},
        "claude": {"calls": 2, "per_minute": 1.71, "peak_minute": 0, "peak": 1},
    }
    assert rates["agent_tokens"] == {
        "tokens": 240, "per_minute": 205.62, "peak_minute": 0, "peak": 120,
    }  # fmt: skip
