"""The benchmark suite runs: on tiny tapes, in-process, with well-formed results.

Nothing here is timed or compared with a target (the numbers live in BENCHMARKS.md); the
test only makes sure ``bench/run.py`` keeps working as the library changes.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import sessiontape

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """``bench/run.py`` imported as a module (the suite is a folder of scripts)."""
    sys.path.insert(0, str(BENCH))
    try:
        import run

        yield run
    finally:
        sys.path.remove(str(BENCH))


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def test_generated_tape_loads_and_replays_through_the_app_loop(
    bench: ModuleType, tmp_path: Path
) -> None:
    import gen
    from cases.app import replay_session

    info = gen.generate(tmp_path / "tape.jsonl", 300, workers=3)
    recording = sessiontape.load(info.path)
    assert len(recording) == info.entries == 300
    assert not recording.crashed
    assert info.kinds["process"] + info.kinds["agent_turn"] + info.kinds["store_mutation"] == 297
    assert len(recording.worker_ids()) == 3
    nested = [e for e in recording.calls if e.parent is not None]
    assert nested, "agent turns run nested claude processes"

    phases: dict[str, int] = {}
    report, made = replay_session(info.path, roots={"repo": str(tmp_path)}, phases=phases)

    assert report.ok, report.mismatches[:3]
    assert report.consumed == report.loaded == len(recording.calls) - len(nested)
    assert made["process"] + made["agent"] + made["store"] == report.consumed
    assert set(phases) == {"load_ns", "index_ns", "serve_ns", "finish_ns"}
    assert all(_positive(v) for v in phases.values())


def test_suite_results_and_report(bench: ModuleType, tmp_path: Path) -> None:
    results = bench.run_suite("tiny", workdir=tmp_path, others=False, log=lambda _: None)
    res = results["results"]

    assert set(res) == {"disabled", "record", "replay_call", "end_to_end", "load", "report"}
    for key in ("sessiontape", "sessiontape_patch_time_false", "sessiontape_no_paths", "deque",
                "patch_subprocess", "patch_subprocess_binary", "patch_subprocess_check_output",
                "patch_subprocess_read", "patch_subprocess_pump", "popen_floor_init",
                "popen_floor_pipes"):  # fmt: skip
        assert _positive(res["replay_call"][key]["median_ns"]), key
    e2e = res["end_to_end"]
    for key in ("replay_wall_ns", "replay_cpu_ns", "msgspec_read_decode_wall_ns",
                "ratio_to_msgspec", "time_compression", "recorded_duration_ns"):  # fmt: skip
        assert _positive(e2e[key]), key
    assert set(e2e["serve_us_per_call_by_kind"]) == {"process", "agent", "store"}
    assert e2e["profile"]
    assert {"function", "ncalls", "tottime_s"} <= set(e2e["profile"][0])
    for name in ("small", "medium", "long"):
        load = res["load"][name]
        assert _positive(load["load_mb_per_s"])
        assert _positive(load["msgspec_mb_per_s"])
        assert load["peak_rss_delta_bytes"] >= 0
    for level in ("full", "standard"):
        assert _positive(res["record"][level]["recorded"]["median_ns"])
        assert _positive(res["record"][level]["inner"]["median_ns"])
    for key in ("orchestrator", "orchestrator_instant"):
        orch = res["record"][key]
        assert _positive(orch["plain_ns"])
        assert _positive(orch["recorded_ns"])
        assert orch["calls_recorded"] > 0
    assert res["disabled"]["runner_is_inner"] is True
    rep = res["report"]
    assert rep["entries"] == 300
    for key in ("page_bytes", "tape_bytes", "size_ratio", "load_ns", "report_ns", "time_ratio"):
        assert _positive(rep[key]), key
    assert results["tapes"]["report"]["entries"] == 300
    assert _positive(res["disabled"]["failed_writer"]["median_ns"])

    ids = {row["id"] for row in results["figures"]}
    assert set(bench.TARGETS) <= ids | {"replay_vs_pytest_subprocess"}
    for row in results["figures"]:
        assert row["value"] is not None, row
        assert math.isfinite(row["value"]), row
        assert row["met"] in (True, False, None)

    results["command"] = "python bench/run.py"
    json.dumps(results)  # the JSON file is written from exactly this
    text = bench.render_markdown(results)
    assert "## Summary" in text
    assert "## Machine" in text
    assert "| figure | sessiontape | baseline |" in text
    assert "## 6. The report page" in text


def test_against_pytest_subprocess(bench: ModuleType) -> None:
    pytest.importorskip("pytest_subprocess")
    from cases import replay_call

    requests = replay_call.requests_for(20, "/tmp/bench-repo")
    result = replay_call.pytest_subprocess_per_call(requests, batches=2)

    assert result is not None
    assert _positive(result["median_ns"])
    assert result["calls"] == 40


def test_against_vcrpy(bench: ModuleType, tmp_path: Path) -> None:
    pytest.importorskip("vcr")
    pytest.importorskip("requests")
    from cases import replay_call

    result = replay_call.vcrpy_per_interaction(5, tmp_path, batches=1)

    assert result is not None
    assert _positive(result["median_ns"])
    assert result["interactions"] == 5
    assert (tmp_path / "vcr_cassette.yaml").exists()
