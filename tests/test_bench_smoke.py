"""The benchmark suite runs: on tiny tapes, with well-formed results.

Nothing here is timed or compared with a target (the numbers live in BENCHMARKS.md); the
tests only make sure ``bench/run.py`` and every case keep working as the library changes.
The cases run in groups, one test each, so that ``-n 2`` spreads them over both cores.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
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


def _timed(timing: dict[str, Any]) -> bool:
    return _positive(timing["median_ns"]) and timing["min_ns"] <= timing["max_ns"]


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


def _check_recording(res: dict[str, Any]) -> None:
    for level in ("full", "standard"):
        assert _timed(res["record"][level]["recorded"])
        assert _timed(res["record"][level]["inner"])
    threads = res["record"]["threads"]
    assert threads["threads"] == 2
    assert _positive(threads["recorded_per_call_ns"])
    assert _positive(threads["inner_per_call_ns"])
    for key in ("orchestrator", "orchestrator_instant"):
        orch = res["record"][key]
        assert _positive(orch["plain_ns"])
        assert _positive(orch["recorded_ns"])
        assert orch["calls_recorded"] > 0
        # The run's fixed costs, each timed, and together a part of the recorded run.
        fixed = orch["fixed_ns"]
        assert set(fixed) == {"setup_ns", "store_ns", "finish_ns"}
        assert all(_positive(ns) for ns in fixed.values())
        assert sum(fixed.values()) < orch["recorded_ns"]
    assert res["disabled"]["runner_is_inner"] is True
    assert _timed(res["disabled"]["failed_writer"])


def _check_replay(res: dict[str, Any]) -> None:
    for key in ("sessiontape", "sessiontape_patch_time_false", "sessiontape_no_paths", "deque",
                "patch_subprocess", "patch_subprocess_binary", "patch_subprocess_check_output",
                "patch_subprocess_read", "patch_subprocess_pump", "popen_floor_init",
                "popen_floor_pipes"):  # fmt: skip
        assert _timed(res["replay_call"][key]), key
    assert set(res["boundaries"]) == {"agent", "store", "user"}
    for boundary in res["boundaries"].values():
        assert _timed(boundary["sessiontape"])
        assert _timed(boundary["floor"])
        assert boundary["calls_per_batch"] == 40


def _check_corpus(res: dict[str, Any]) -> None:
    corpus = res["corpus"]
    assert corpus["fixed"]["modules"] > 0
    assert _timed(corpus["fixed"]["default"])
    assert _timed(corpus["fixed"]["patch_time_false"])
    assert corpus["corpus"]["items"] == 4
    assert _positive(corpus["corpus"]["cassette_items_s"])
    assert _positive(corpus["corpus"]["trivial_items_s"])
    assert corpus["big_corpus"]["items"] == 6
    assert _positive(corpus["big_corpus"]["serial_ns"])
    assert _positive(corpus["big_corpus"]["xdist_2_ns"])


def _check_whole_tapes(res: dict[str, Any]) -> None:
    e2e = res["end_to_end"]
    for key in ("replay_wall_ns", "replay_cpu_ns", "msgspec_read_decode_wall_ns",
                "ratio_to_msgspec", "time_compression", "recorded_duration_ns",
                "replay_peak_rss_delta_bytes"):  # fmt: skip
        assert _positive(e2e[key]), key
    assert set(e2e["serve_us_per_call_by_kind"]) == {"process", "agent", "store"}
    assert {"function", "ncalls", "tottime_s"} <= set(e2e["profile"][0])
    memory = res["memory"]
    assert memory["entries"] == 500  # the stand-in for the 1,000,000-entry tape
    assert memory["replay_calls"] > 0
    for key in ("replay", "load", "msgspec"):
        assert _positive(memory[f"{key}_peak_rss_bytes"]), key


def _check_load_and_report(res: dict[str, Any]) -> None:
    assert set(res["load"]) == {"small", "medium", "long"}
    for load in res["load"].values():
        assert _positive(load["load_mb_per_s"])
        assert _positive(load["msgspec_mb_per_s"])
        assert load["peak_rss_delta_bytes"] >= 0
    rep = res["report"]
    assert rep["entries"] == 300
    for key in ("page_bytes", "tape_bytes", "size_ratio", "load_ns", "report_ns", "time_ratio"):
        assert _positive(rep[key]), key


def _check_startup(res: dict[str, Any]) -> None:
    st = res["startup"]
    assert "sessiontape" in st["plugins"]
    imp = st["importtime"]
    assert _positive(imp["pytest_ms"])
    assert _positive(imp["entry_ms"]["sessiontape"])
    assert imp["modules"]["sessiontape"] == "sessiontape.plugin"
    runs = st["pytest"]
    assert _positive(runs["all_s"])
    assert set(runs["without_s"]) == set(st["plugins"])
    off = st["record_none"]
    assert _positive(off["bare_s"])
    assert _positive(off["record_none_s"])
    assert _positive(off["importtime_ms"])


def _check_update(res: dict[str, Any]) -> None:
    up = res["update"]
    assert up["rewrites"] == up["edited"]  # every edited call rewritten, nothing else
    assert up["unchanged_written"] is False  # no change, no write
    for key in ("update_ns", "plain_ns", "unchanged_ns", "ratio", "unchanged_ratio"):
        assert _positive(up[key]), key


#: Each group of cases, how its results are checked, and the targets its rows carry.
def _check_shrink(res: dict[str, Any]) -> None:
    shrink = res["shrink"]
    for run in (shrink["shrink"], shrink["budget"]):
        assert run["valid"]
        assert _positive(run["wall_ns"])
    assert _positive(shrink["shrink"]["candidates"])
    assert shrink["shrink"]["entries_after"] < shrink["shrink"]["entries_before"]
    # Under its budget (seconds of real time) shrink stops with the best tape so far: on a
    # loaded machine, the budget can run out before a candidate is judged (seen in CI).
    budget = shrink["budget"]
    assert budget["entries_after"] <= budget["entries_before"]
    assert shrink["shrink"]["entries_after"] <= 2 * shrink["shrink"]["smallest"]
    minimize = shrink["minimize"]
    assert minimize["kept"] == 1
    assert _positive(minimize["replay_ns"])
    assert _positive(minimize["minimize_ns"])
    candidate = shrink["candidate"]
    assert candidate["candidates"] == len(candidate["ratios"]) > 0
    assert candidate["ratios"] == sorted(candidate["ratios"])
    assert candidate["ratio_max"] == candidate["ratios"][-1]
    assert 0 <= candidate["over_3"] <= candidate["candidates"]
    for key in ("plain_ns", "plain_min_ns", "plain_max_ns", "ratio_median", "shrink_ratio"):
        assert _positive(candidate[key]), key
    assert candidate["shrink"]["valid"]


def _check_explain(res: dict[str, Any]) -> None:
    ex = res["explain"]
    assert ex["workers"] == 3
    assert ex["entries"] == 3 * (12 + 3 + 2) + 1  # calls, bumps, the done-counter, the end
    assert "another outcome than recorded" in ex["failure"]
    assert 0 < ex["point"] <= ex["decisions"]
    # The race is the done-counter's: a worker's read ran before another's write.
    assert re.fullmatch(r"(w\d)'s `read_done\(\)` ran before (?!\1)w\d's `write_done\(\d\)`",
                        ex["deciding"]), ex["deciding"]  # fmt: skip
    assert ex["schedules"] > ex["estimates"] >= 2
    for key in ("explain_ns", "explain_cpu_ns", "schedule_ns", "ratio", "per_schedule_ratio"):
        assert _positive(ex[key]), key
    assert ex["schedule_min_ns"] <= ex["schedule_ns"] <= ex["schedule_max_ns"]


def _check_fork(res: dict[str, Any]) -> None:
    fk = res["fork"]
    # 4 workers of 12 process calls and 3 store calls each.
    assert fk["entries"] == 4 * (12 + 3)
    assert 0 < fk["seq"] < fk["entries"]
    # The tape answers every process call after the fork; nothing runs live.
    assert fk["live"] == 0
    assert 0 < fk["from_tape"] < fk["after"]
    for clock in ("", "_cpu"):
        for key in ("replay", "fork", "write"):
            assert _positive(fk[f"{key}{clock}_ns"]), key + clock
        for key in ("ratio", "budget_ratio"):
            assert fk[f"{key}{clock}_min"] <= fk[f"{key}{clock}"] <= fk[f"{key}{clock}_max"]
        # Each round's budget adds the write to the replay: below that round's fork / replay.
        assert 0 < fk[f"budget_ratio{clock}_min"] < fk[f"ratio{clock}_max"]


GROUPS: dict[str, tuple[tuple[str, ...], Callable[[dict[str, Any]], None], set[str]]] = {
    "recording": (
        ("disabled", "record"),
        _check_recording,
        {
            "record_full_us",
            "record_standard_us",
            "record_threads_us",
            "orchestrator_overhead_pct",
            "orchestrator_sleeping_overhead_pct",
            "disabled_ns",
        },
    ),
    "replay": (
        ("replay_call", "boundaries"),
        _check_replay,
        {"replay_call_us", "replay_agent_us", "replay_store_us", "replay_user_us"},
    ),
    "corpus": (("corpus",), _check_corpus, {"fixed_cost_ms", "corpus_ratio", "corpus_xdist_ratio"}),
    "whole_tapes": (
        ("end_to_end", "memory"),
        _check_whole_tapes,
        {"e2e_wall_s", "e2e_ratio_msgspec", "replay_peak_rss"},
    ),
    "load_and_report": (
        ("load", "report"),
        _check_load_and_report,
        {"load_mb_s", "report_size_ratio", "report_time_ratio"},
    ),
    "startup": (
        ("startup",),
        _check_startup,
        {"startup_entry_ms", "startup_run_ratio", "startup_record_none_ms"},
    ),
    "shrink": (("shrink",), _check_shrink, set()),
    "update": (("update",), _check_update, {"update_ratio"}),
    "explain": (("explain",), _check_explain, {"explain_s"}),
    "fork": (("fork",), _check_fork, {"fork_budget_ratio"}),
}


def test_the_groups_cover_every_case_and_target(bench: ModuleType) -> None:
    from figures import TARGETS

    assert sorted(c for cases, _, _ in GROUPS.values() for c in cases) == sorted(bench.ALL_CASES)
    assert set().union(*(targets for _, _, targets in GROUPS.values())) == set(TARGETS)


@pytest.mark.parametrize("group", list(GROUPS))
def test_cases_run_and_render(bench: ModuleType, tmp_path: Path, group: str) -> None:
    from figures import TARGETS
    from gaps import what_it_would_take
    from render import render_markdown

    cases, check, targets = GROUPS[group]
    results = bench.run_suite(
        "tiny", workdir=tmp_path, cases=cases, others=False, log=lambda _: None
    )

    assert set(results["results"]) == set(cases)
    check(results["results"])
    rows = results["figures"]
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids))
    assert targets <= set(ids)
    for row in rows:
        assert row["value"] is not None, row
        assert math.isfinite(row["value"]), row
        assert row["met"] in (True, False, None)
        if row["id"] in TARGETS:
            # Met or not in this run, the analysis of an unmet target must render.
            assert what_it_would_take(row, results).strip(), row
    results["command"] = "python bench/run.py"
    json.dumps(results)  # the JSON file is written from exactly this
    text = render_markdown(results)
    assert "## Summary" in text
    assert "## Machine" in text
    assert "| figure | sessiontape | baseline |" in text
    assert "## Targets not met, and what it would take" in text


def _row(fid: str | None, figure: str, value: float) -> dict[str, Any]:
    return {"id": fid, "figure": figure, "value": value, "unit": "µs", "ratio": None, "met": None}


def test_previous_figures_stand_beside_by_id(bench: ModuleType, tmp_path: Path) -> None:
    from figures import attach_previous

    rows = [
        _row("replay_call_us", "replay of one process call", 1.5),
        _row("orchestrator_overhead_pct", "orchestrator (sleeps instant)", 40.0),
        _row("replay_agent_us", "replay of one agent turn", 8.0),
    ]
    # An earlier run of schema 1 repeated one id; its text tells the two apart.
    earlier = [
        _row("replay_call_us", "replay of one process call, as worded then", 1.8),
        _row("orchestrator_overhead_pct", "orchestrator (as shipped)", 1.0),
        _row("orchestrator_overhead_pct", "orchestrator (sleeps instant)", 44.0),
        _row(None, "a row without an id", 3.0),
    ]

    attach_previous(rows, earlier)

    assert [row["previous"] and row["previous"]["value"] for row in rows] == [1.8, 44.0, None]


def test_a_run_shows_the_saved_run_of_its_mode_beside_it(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "saved.json"
    earlier = _row("disabled_ns", "disabled recorder, per call", 50.0) | {"unit": "ns"}
    saved.write_text(json.dumps({"mode": "quick", "command": "c", "started_at": "t",
                                 "machine": {}, "figures": [earlier]}))  # fmt: skip
    out, markdown = tmp_path / "out.json", tmp_path / "out.md"

    work = str(tmp_path / "work")
    code = bench.main(["--quick", "--only", "disabled", "--workdir", work, "--compare",
                       str(saved), "--out", str(out), "--markdown", str(markdown)])  # fmt: skip

    assert code == 0
    rows = {row["id"]: row for row in json.loads(out.read_text())["figures"]}
    assert rows["disabled_ns"]["previous"]["value"] == 50.0
    assert rows["failed_writer_ns"]["previous"] is None
    table = [line for line in markdown.read_text().splitlines() if line.startswith("| ")]
    assert table[0].endswith("| previous |")
    assert next(line for line in table if "disabled recorder" in line).endswith("| 50.00 ns |")
    assert next(line for line in table if "failed writer" in line).endswith("| — |")
    assert "## Summary" in capsys.readouterr().out
    assert bench.read_previous(saved, "full", "x") is None  # another mode's sizes differ


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


# -- bench/run.py --against REV ---------------------------------------------------------


def _both_this_checkout() -> tuple[Any, Any]:
    """Two "trees" that are both this checkout in this interpreter: the comparison's
    machinery end to end, without building environments."""
    import trees

    root = BENCH.parent
    return (
        trees.Tree("this tree", root, Path(sys.executable)),
        trees.Tree("again", root, Path(sys.executable)),
    )


def test_against_times_both_trees_in_turns(bench: ModuleType, tmp_path: Path) -> None:
    import against

    new, old = _both_this_checkout()
    order: list[str] = []
    result = against.compare(
        new, old, mode="tiny", pairs=3, only=["record"], log=lambda line: order.append(line)
    )
    # Each pair runs both trees back to back, the first of the pair flipping each time.
    assert [line.split("(")[1] for line in order] == [
        "this tree first)...",
        "again first)...",
        "this tree first)...",
    ]
    ids = [row["id"] for row in result["figures"]]
    assert ids == ["record_full_us", "record_standard_us", "record_threads_us"]
    for row in result["figures"]:
        assert row["pairs"] == 3
        assert len(row["new_all"]) == len(row["old_all"]) == 3
        ratios = [a / b for a, b in zip(row["new_all"], row["old_all"], strict=True)]
        assert row["ratio"]["median"] == sorted(ratios)[1]
        assert row["ratio"]["min"] <= row["ratio"]["q1"] <= row["ratio"]["median"]
        assert row["ratio"]["median"] <= row["ratio"]["q3"] <= row["ratio"]["max"]
    table = against.render_table(result)
    assert table.splitlines()[0].startswith("| figure | again | this tree | this tree / again |")
    assert len(table.splitlines()) == 2 + 3


def test_against_runs_every_case_in_a_child_of_the_tree_under_test(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import against

    # Each child writes its tapes in a temporary folder of its own and removes it when it
    # exits: a comparison of many pairs once left hundreds of folders behind.
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    new, _ = _both_this_checkout()
    measured = {m.name for m in against.MEASUREMENTS}
    assert measured == {"record", "replay_call", "boundaries", "corpus", "fork", "startup"}
    for m in against.MEASUREMENTS:
        if m.name in ("record", "startup"):
            continue  # record: above; startup: dozens of whole pytest runs
        got = against.run_child(new, m.target, m.kwargs["tiny"], tmp_path)
        assert {f.id for f in m.figures} <= set(got), m.name
        assert all(_positive(got[f.id]) for f in m.figures), got
        assert list(temporary.iterdir()) == [], m.name


def test_a_child_refuses_to_measure_another_tree(bench: ModuleType, tmp_path: Path) -> None:
    # Named a tree whose sessiontape is not the one imported: it says so, measuring nothing.
    child = BENCH / "cases" / "_child.py"
    elsewhere = tmp_path / "src"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, str(child), "cases.paired:recording", "{}"],
        env={**os.environ, "SESSIONTAPE_BENCH_TREE": str(elsewhere)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert f"not the one in {elsewhere}" in done.stderr


def test_an_exported_revision_is_the_commit_s_files(bench: ModuleType, tmp_path: Path) -> None:
    import trees

    root = BENCH.parent
    sha = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    dest = tmp_path / "tree"
    trees._export(root, sha, dest)
    committed = subprocess.run(
        ["git", "-C", str(root), "show", f"{sha}:pyproject.toml"],
        capture_output=True,
        check=True,
    ).stdout
    assert (dest / "pyproject.toml").read_bytes() == committed
    assert (dest / "src" / "sessiontape" / "__init__.py").is_file()
    assert not (dest / ".git").exists()


def test_the_pins_are_this_environment_without_the_trees(bench: ModuleType) -> None:
    from importlib import metadata

    import trees

    pins = trees.pinned_requirements()
    assert f"pytest=={metadata.version('pytest')}" in pins
    assert f"msgspec=={metadata.version('msgspec')}" in pins
    assert not [p for p in pins if p.startswith(("sessiontape==", "pip=="))]


def test_against_patches_the_summary_and_its_section(bench: ModuleType) -> None:
    import against

    result = {
        "old": "abc1234",
        "new": "this tree",
        "method": "time",
        "pairs": 3,
        "command": "python bench/run.py --against abc1234",
        "started_at": "2026-11-27T00:00:00+00:00",
        "checkout": "def5678",
        "load": "0.5, 0.5, 0.5",
        "figures": [
            {
                "id": "startup_run_ratio",
                "figure": "one-test pytest run / `-p no:sessiontape` (CPU)",
                "unit": "×",
                "old": against.spread([1.10, 1.12, 1.08]),
                "new": against.spread([1.02, 1.03, 1.01]),
                "ratio": against.spread([0.93, 0.92, 0.94]),
                "pairs": 3,
            }
        ],
    }
    page = (
        "# t\n\n## Summary\n\n| figure | sessiontape | met |\n|---|---|---|\n"
        "| one-test pytest run, sessiontape installed but unused | 1.02 × | yes |\n"
        "| cassette load throughput | 360 MB/s | yes |\n\n## Machine\n\n- 2 cores\n"
    )
    once = against.patch_markdown(page, result)
    assert against.patch_markdown(once, result) == once  # a second run replaces, not adds
    lines = once.splitlines()
    assert lines[4] == "| figure | sessiontape | met | against the previous release (abc1234) |"
    assert lines[5] == "|---|---|---|---|"
    assert lines[6].endswith("| 1.02 × | yes | 0.93× (0.93–0.94) |")
    assert lines[7].endswith("| 360 MB/s | yes | — |")
    section = once[once.index(against.BEGIN) : once.index(against.END)]
    assert "## Against the previous release (abc1234)" in section
    assert "| one-test pytest run / `-p no:sessiontape` (CPU) | 1.10× | 1.02× | **0.930×**" in (
        section
    )
    assert once.index(against.END) < once.index("## Machine")


def test_the_instruction_counts_replay_each_boundary_in_a_child(
    bench: ModuleType, tmp_path: Path
) -> None:
    import against

    new, _ = _both_this_checkout()
    figures, _ = against._COUNTED["boundaries"]
    assert [f.id for f in figures] == ["replay_agent_ir", "replay_store_ir", "replay_user_ir"]
    for kind in ("agent", "store", "user"):
        kwargs = {"kind": kind, "calls": 5, "tape_calls": 12}
        got = against.run_child(new, "cases.paired:replay_boundary_calls", kwargs, tmp_path)
        assert got == {"calls": 5.0}, kind
    kwargs = {"kind": "user", "calls": 13, "tape_calls": 12}
    with pytest.raises(RuntimeError, match="holds 12 calls, fewer than 13"):
        against.run_child(new, "cases.paired:replay_boundary_calls", kwargs, tmp_path)


def test_a_measurement_the_old_tree_cannot_make_is_left_out_and_said(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import against
    import trees

    new = trees.Tree("this tree", tmp_path / "new", tmp_path / "new-python")
    old = trees.Tree("abc1234", tmp_path / "old", tmp_path / "old-python")
    ran: list[tuple[str, str]] = []

    def child(tree: Any, target: str, kwargs: Any, cwd: Path) -> dict[str, float]:
        ran.append((tree.label, target))
        if target.endswith("fork_branch") and tree is old:
            return {}  # what paired.fork_branch gives in a tree from before fork
        return {
            f.id: 2.0 if tree is new else 1.0
            for m in against.MEASUREMENTS
            if m.target == target
            for f in m.figures
        }

    monkeypatch.setattr(against, "run_child", child)
    result = against.compare(new, old, mode="quick", pairs=3, only=["fork", "replay_call"])
    assert result["lacking"] == {"fork": "abc1234"}
    assert {row["id"] for row in result["figures"]} == {"replay_call_us", "replay_call_floor_ratio"}
    assert all(row["ratio"]["median"] == 2.0 for row in result["figures"])
    # tried once in both trees, then not again
    assert sum(1 for _, target in ran if target.endswith("fork_branch")) == 2
    result.update(command="c", started_at="t", checkout="x", load="0")
    assert "No fork figures: abc1234 has no fork." in "\n".join(against.render_section(result))


def test_the_fork_measurement_gives_nothing_in_a_tree_without_fork(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cases import paired

    import sessiontape.cassette

    monkeypatch.delattr(sessiontape.cassette, "write_new_cassette")
    assert paired.fork_branch(workers=2, calls=4, every=2, rounds=1) == {}


def test_the_cache_keeps_the_environments_last_used_and_nothing_it_did_not_finish(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trees

    monkeypatch.setenv("SESSIONTAPE_BENCH_CACHE", str(tmp_path))
    done = ".sessiontape-bench-complete"

    def finished(folder: str, name: str, used: int) -> Path:
        path = tmp_path / folder / name
        path.mkdir(parents=True)
        (path / done).write_text(name)
        os.utime(path / done, (used, used))
        return path

    shas = [f"{n:x}" * 40 for n in range(1, 7)]  # six commits, used in this order
    envs = [finished("venvs", f"{sha[:24]}-digest{n}", 1000 + n) for n, sha in enumerate(shas)]
    exports = [finished("trees", sha, 1000 + n) for n, sha in enumerate(shas)]
    checkout = finished("venvs", "checkout-abc-digest", 2000)
    half_built = tmp_path / "venvs" / "1234-half"
    half_built.mkdir()
    stranger = tmp_path / "trees" / "notes"
    stranger.mkdir()
    # The run compares the checkout with the oldest commit, least recently used.
    in_use = (
        trees.Tree("this tree", tmp_path / "src-tree", checkout / "bin" / "python"),
        trees.Tree("old", exports[0], envs[0] / "bin" / "python"),
    )
    removed = trees.evict(in_use, lambda _line: None, kept=4)
    left = sorted(p.name for p in (tmp_path / "venvs").iterdir())
    # the run's two and the two others used last; the half-built one is not ours to judge
    assert left == sorted(
        [checkout.name, envs[0].name, envs[4].name, envs[5].name, half_built.name]
    )
    assert sorted(p.name for p in (tmp_path / "trees").iterdir()) == sorted(
        [shas[0], shas[4], shas[5], "notes"]
    )
    assert sorted(removed) == sorted([*envs[1:4], *exports[1:4]])
