"""The summary table of a run: one row per figure, its baseline, ratio, target and the
figure of the run before.

Every figure is a ratio against a baseline measured in the same run. ``TARGETS`` holds the
bounds of DESIGN.md's "Numbers" and issue 13, by figure id; a row's id is unique in a
run and stays the same from run to run as long as it measures the same thing, so that
the previous run's figure can stand beside it (:func:`attach_previous`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Final, NamedTuple

__all__ = ["MIN_MODULES", "TARGETS", "Target", "attach_previous", "figures", "met"]


class Target(NamedTuple):
    """A bound on a figure's value: ``value <op> bound``, and how the table writes it."""

    op: str
    bound: float
    text: str


#: DESIGN.md "Numbers" and issue 13, by figure id.
TARGETS: Final[dict[str, Target]] = {
    "replay_call_us": Target("<=", 5.0, "≤ 5 µs"),
    "replay_agent_us": Target("<=", 5.0, "≤ 5 µs"),
    "replay_store_us": Target("<=", 5.0, "≤ 5 µs"),
    "replay_user_us": Target("<=", 5.0, "≤ 5 µs"),
    "fixed_cost_ms": Target("<=", 1.0, "≤ 1 ms"),
    "corpus_ratio": Target("<=", 1.5, "≤ 1.5× trivial tests"),
    "corpus_xdist_ratio": Target("<", 1.0, "< 1× serial"),
    "e2e_wall_s": Target("<=", 3.0, "≤ 3 s on 2 cores"),
    "e2e_ratio_msgspec": Target("<=", 2.5, "≤ 2.5× msgspec"),
    "replay_peak_rss": Target("<=", 1.5, "≤ 1.5× the file"),
    "load_mb_s": Target(">=", 200.0, "≥ 200 MB/s"),
    "record_full_us": Target("<=", 10.0, "≤ 10 µs"),
    "record_standard_us": Target("<=", 10.0, "≤ 10 µs"),
    "record_threads_us": Target("<=", 10.0, "≤ 10 µs"),
    "orchestrator_sleeping_overhead_pct": Target("<=", 5.0, "≤ 5 %"),
    "orchestrator_overhead_pct": Target("<=", 5.0, "≤ 5 %"),
    "disabled_ns": Target("<=", 100.0, "≤ 100 ns"),
    "report_size_ratio": Target("<=", 0.5, "≤ 0.5× the tape"),
    "report_time_ratio": Target("<=", 3.0, "≤ 3× load"),
    "startup_entry_ms": Target("<=", 5.0, "≤ 5 ms"),
    "startup_run_ratio": Target("<=", 1.05, "≤ 1.05× -p no:sessiontape"),
    "startup_record_none_ms": Target("<=", 10.0, "≤ 10 ms"),
    "update_ratio": Target("<=", 3.0, "≤ 3× plain replay"),
    "explain_s": Target("<=", 60.0, "≤ 60 s on 2 cores"),
    "fork_budget_ratio": Target("<=", 1.2, "≤ 1.2× (plain replay + writing the branch), CPU"),
}

#: The fixed-cost target holds in a process with at least this many modules loaded.
MIN_MODULES: Final = 600

_OPS: Final[dict[str, Callable[[float, float], bool]]] = {
    "<=": lambda value, bound: value <= bound,
    ">=": lambda value, bound: value >= bound,
    "<": lambda value, bound: value < bound,
}

Row = dict[str, Any]
Results = dict[str, Any]


def met(fid: str | None, value: float | None) -> bool | None:
    """Whether ``value`` meets figure ``fid``'s target (``None``: no target, no value)."""
    if value is None or fid not in TARGETS:
        return None
    op, bound, _ = TARGETS[fid]
    return _OPS[op](value, bound)


def _row(
    fid: str,
    figure: str,
    value: float,
    unit: str,
    baseline: str,
    baseline_value: float | None,
    ratio: float | None,
    note: str = "",
) -> Row:
    return {
        "id": fid,
        "figure": figure,
        "value": value,
        "unit": unit,
        "baseline": baseline,
        "baseline_value": baseline_value,
        "ratio": ratio,
        "target": TARGETS[fid].text if fid in TARGETS else "—",
        "met": met(fid, value),
        "note": note,
    }


def _us(timing: dict[str, Any]) -> float:
    return float(timing["median_ns"]) / 1000


#: The rows of ``patch_subprocess()``'s replay: (id, variant, baseline variant, figure,
#: baseline, whether the ratio is the baseline's time over ours, note).
_PATCHED_ROWS: Final = (
    (
        "patch_subprocess_vs_pytest_subprocess",
        "patch_subprocess",
        "pytest_subprocess",
        "`subprocess.run` replayed under patch_subprocess() vs pytest-subprocess",
        "pytest-subprocess",
        True,
        "ratio = their time / ours; ours is a real Popen, its pipes made only if the "
        "program touches them",
    ),
    (
        "patch_subprocess_vs_popen",
        "patch_subprocess",
        "popen_floor_init",
        "`subprocess.run` replayed under patch_subprocess() vs CPython's own cost",
        "`Popen()` + `wait()`, spawn stubbed",
        False,
        "ratio = ours / CPython's; the floor no replay of a real Popen goes under",
    ),
    (
        "patch_subprocess_pump",
        "patch_subprocess_pump",
        "patch_subprocess",
        "a stdin conversation replayed under patch_subprocess() (the pump path)",
        "`subprocess.run`, fast path",
        False,
        "ratio = pump path / fast path; a thread feeds real pipes chunk by chunk",
    ),
)

#: The other boundaries' per-call rows: (boundary, id, figure, floor).
_BOUNDARY_ROWS: Final = (
    (
        "agent",
        "replay_agent_us",
        "replay of one agent turn (request aligned, StepResult decoded, clock)",
        "floor: bare deque + request compare",
    ),
    (
        "store",
        "replay_store_us",
        "replay of one store mutation (run for real, arguments and result verified)",
        "floor: the real mutation + compare",
    ),
    (
        "user",
        "replay_user_us",
        "replay of one call on a user boundary (`tape.boundary`, substitute)",
        "floor: bare deque + request compare",
    ),
)


def _process_rows(rc: Results, results: Results) -> Iterable[Row]:
    ours, floor = _us(rc["sessiontape"]), _us(rc["deque"])
    yield _row(
        "replay_call_us",
        "replay of one process call (fake runner, alignment, clock)",
        ours,
        "µs",
        "floor: bare deque + argv compare",
        floor,
        ours / floor,
    )


def _boundary_rows(bd: Results, results: Results) -> Iterable[Row]:
    for boundary, fid, figure, baseline in _BOUNDARY_ROWS:
        mine, base = _us(bd[boundary]["sessiontape"]), _us(bd[boundary]["floor"])
        yield _row(fid, figure, mine, "µs", baseline, base, mine / base)


def _comparison_rows(rc: Results, results: Results) -> Iterable[Row]:
    """The process replay beside other tools, and ``patch_subprocess()`` beside them."""
    ours = _us(rc["sessiontape"])
    psp = rc.get("pytest_subprocess")
    if psp:
        theirs = _us(psp)
        yield _row(
            "replay_vs_pytest_subprocess",
            "replay of one process call vs pytest-subprocess",
            ours,
            "µs",
            "pytest-subprocess",
            theirs,
            theirs / ours,
            "ratio = their time / ours",
        )
    for fid, key, base_key, figure, baseline, inverse, note in _PATCHED_ROWS:
        if rc.get(key) and rc.get(base_key):
            mine, theirs = _us(rc[key]), _us(rc[base_key])
            ratio = theirs / mine if inverse else mine / theirs
            yield _row(fid, figure, mine, "µs", baseline, theirs, ratio, note)
    vcr = rc.get("vcrpy")
    if vcr:
        theirs = _us(vcr)
        yield _row(
            "replay_vs_vcrpy",
            f"replay of one call vs vcrpy ({vcr['interactions']} interactions)",
            ours,
            "µs",
            "vcrpy per interaction",
            theirs,
            theirs / ours,
            "ratio = their time / ours",
        )


def _corpus_rows(c: Results, results: Results) -> Iterable[Row]:
    fixed = c["fixed"]
    ours, base = fixed["default"]["median_ns"] / 1e6, fixed["patch_time_false"]["median_ns"] / 1e6
    row = _row(
        "fixed_cost_ms",
        f"fixed cost of one replay (enter, one call, finish), {fixed['modules']} modules loaded",
        ours,
        "ms",
        "the same, `patch_time=False`",
        base,
        ours / base,
    )
    if fixed["modules"] < MIN_MODULES:
        row.update(met=None, note=f"fewer than {MIN_MODULES} modules: the target does not apply")
    yield row
    small = c["corpus"]
    ratio = small["cassette_items_s"] / small["trivial_items_s"]
    yield _row(
        "corpus_ratio",
        f"{small['items']} tiny cassettes through pytest vs {small['items']} trivial tests "
        "(setup + call + teardown)",
        ratio,
        "×",
        "the trivial tests (ms)",
        small["trivial_items_s"] * 1000,
        ratio,
        f"cassettes {small['cassette_items_s'] * 1000:.1f} ms; median item "
        f"{small['cassette_median_s'] * 1e3:.2f} vs {small['trivial_median_s'] * 1e3:.2f} ms; "
        f"first item {small['cassette_first_s'] * 1e3:.1f} ms; once per process, at the end "
        f"of collection: {small.get('set_up_once_s', 0.0) * 1e3:.1f} ms",
    )
    big = c["big_corpus"]
    ratio = big["xdist_2_ns"] / big["serial_ns"]
    yield _row(
        "corpus_xdist_ratio",
        f"{big['items']} cassettes through pytest: `-n 2` / serial (whole run)",
        ratio,
        "×",
        "serial (s)",
        big["serial_ns"] / 1e9,
        ratio,
        f"`-n 2` {big['xdist_2_ns'] / 1e9:.2f} s",
    )


def _e2e_rows(e2e: Results, results: Results) -> Iterable[Row]:
    wall = e2e["replay_wall_ns"] / 1e9
    base = e2e["msgspec_read_decode_wall_ns"] / 1e9
    entries = results["tapes"]["long"]["entries"]
    yield _row(
        "e2e_wall_s",
        f"{entries:,}-entry session tape end to end",
        wall,
        "s",
        "msgspec read + decode",
        base,
        wall / base,
    )
    yield _row(
        "e2e_ratio_msgspec",
        "end to end / msgspec decoding the file",
        wall / base,
        "×",
        "msgspec read + decode",
        base,
        wall / base,
        f"CPU-time ratio {e2e['ratio_to_msgspec_cpu']:.2f}×",
    )
    yield _row(
        "e2e_time_compression",
        "time compression (recorded / replay duration)",
        e2e["time_compression"],
        "×",
        "recorded duration",
        e2e["recorded_duration_ns"] / 3.6e12,
        e2e["time_compression"],
        "baseline in hours",
    )


def _memory_rows(m: Results, results: Results) -> Iterable[Row]:
    floor = m["msgspec_rss_to_file"]
    for fid, key, what in (
        ("replay_peak_rss", "replay", "a whole replay"),
        # Informational: load() hands out the public entries, every payload decoded; a
        # replay loads lazily (cassette.load_for_replay), which is what the target is for.
        ("load_peak_rss", "load", "`sessiontape.load` (eager; not a target)"),
    ):
        value = m[f"{key}_rss_to_file"]
        yield _row(
            fid,
            f"peak RSS of {what} / file size ({m['entries']:,} entries)",
            value,
            "×",
            "msgspec's eager decode / file",
            floor,
            value / floor,
            f"{m[f'{key}_peak_rss_bytes'] / 1e6:,.1f} MB for a {m['file_bytes'] / 1e6:,.1f} MB "
            "file",
        )


def _load_rows(ld: Results, results: Results) -> Iterable[Row]:
    long_ = ld["long"]
    yield _row(
        "load_mb_s",
        "cassette load throughput (long tape)",
        long_["load_mb_per_s"],
        "MB/s",
        "msgspec read + decode",
        long_["msgspec_mb_per_s"],
        long_["load_mb_per_s"] / long_["msgspec_mb_per_s"],
    )


def _record_rows(rec: Results, results: Results) -> Iterable[Row]:
    for level in ("full", "standard"):
        recorded, inner = _us(rec[level]["recorded"]), _us(rec[level]["inner"])
        yield _row(
            f"record_{level}_us",
            f"recording overhead per call, level {level}",
            rec[level]["overhead_ns"] / 1000,
            "µs",
            "unwrapped inner runner",
            inner,
            recorded / inner,
            f"recorded call {recorded:.2f} µs",
        )
    th = rec.get("threads")
    if th:
        ours, base = th["recorded_per_call_ns"] / 1000, th["inner_per_call_ns"] / 1000
        yield _row(
            "record_threads_us",
            f"recording per call in aggregate at {th['threads']} threads (wall / calls)",
            ours,
            "µs",
            "the same threads, inner runner alone",
            base,
            ours / base,
            f"{th['threads']} × {th['calls_per_thread']:,} calls, level full",
        )
    for fid, key, label in (
        (
            "orchestrator_sleeping_overhead_pct",
            "orchestrator",
            "as shipped: back-offs sleep on tape.clock",
        ),
        ("orchestrator_overhead_pct", "orchestrator_instant", "sleeps instant: CPU work only"),
    ):
        orch = rec.get(key)
        if orch:
            yield _row(
                fid,
                f"example orchestrator with a fake runner, recorded vs not ({label})",
                orch["overhead_ratio"] * 100,
                "%",
                "the same run unrecorded (ms)",
                orch["plain_ns"] / 1e6,
                orch["recorded_ns"] / orch["plain_ns"],
            )


def _report_rows(rep: Results, results: Results) -> Iterable[Row]:
    yield _row(
        "report_size_ratio",
        f"sessiontape report: page size / tape size ({rep['entries']:,} entries)",
        rep["size_ratio"],
        "×",
        "the tape (MB)",
        rep["tape_bytes"] / 1e6,
        rep["size_ratio"],
        f"page {rep['page_bytes'] / 1e6:.1f} MB",
    )
    yield _row(
        "report_time_ratio",
        f"sessiontape report: write time / sessiontape.load ({rep['entries']:,} entries)",
        rep["time_ratio"],
        "×",
        "sessiontape.load (s)",
        rep["load_ns"] / 1e9,
        rep["time_ratio"],
        f"report {rep['report_ns'] / 1e9:.2f} s, load included; CPU ratio {rep['cpu_ratio']:.2f}×",
    )


def _disabled_rows(dis: Results, results: Results) -> Iterable[Row]:
    inner = dis["inner"]["median_ns"]
    yield _row(
        "disabled_ns",
        "disabled recorder, per call",
        dis["disabled_overhead_ns"],
        "ns",
        "the runner itself (ns)",
        inner,
        dis["disabled"]["median_ns"] / inner,
        "process_runner(inner) is inner" if dis["runner_is_inner"] else "wrapper",
    )
    inner = dis["failed_writer_inner"]["median_ns"]
    yield _row(
        "failed_writer_ns",
        "failed writer: active wrapper's fast path, per call",
        dis["failed_writer_overhead_ns"],
        "ns",
        "the runner itself (ns)",
        inner,
        dis["failed_writer"]["median_ns"] / inner,
        "not a target: informational",
    )


def _startup_rows(st: Results, results: Results) -> Iterable[Row]:
    imp, runs, off = st["importtime"], st["pytest"], st["record_none"]
    # Best of the rounds: start-up noise on a shared machine only ever adds (medians are in
    # the start-up section).
    entry = imp["entry_best_ms"]["sessiontape"]
    yield _row(
        "startup_entry_ms",
        "pytest11 entry point import, beyond pytest's own (`-X importtime`, best of rounds)",
        entry,
        "ms",
        "pytest-randomly's, the smallest (ms)",
        imp["entry_best_ms"]["pytest-randomly"],
        entry / imp["entry_best_ms"]["pytest-randomly"],
        "others: "
        + ", ".join(
            f"{dist} {ms:.1f} ms"
            for dist, ms in sorted(imp["entry_best_ms"].items())
            if dist != "sessiontape"
        ),
    )
    # Whole processes by the CPU time they used (user + system, from the kernel): on the
    # shared 2 cores, wall time mostly measures the wait for a core. Wall medians stand in
    # the note and in the start-up section.
    without_cpu = runs["without_cpu_best_s"]["sessiontape"]
    cpu_ratio = runs["all_cpu_best_s"] / without_cpu
    median_ratio = runs["all_cpu_s"] / runs["without_cpu_s"]["sessiontape"]
    wall_ratio = runs["all_s"] / runs["without_s"]["sessiontape"]
    yield _row(
        "startup_run_ratio",
        "one-test pytest run, sessiontape installed but unused (CPU time, best runs)",
        cpu_ratio,
        "×",
        "the run with -p no:sessiontape (ms of CPU, best)",
        without_cpu * 1000,
        cpu_ratio,
        f"{runs['pairs']} pairs; medians: CPU {median_ratio:.3f}×, wall {wall_ratio:.3f}×; "
        "every plugin of the bench session loaded",
    )
    yield _row(
        "startup_record_none_ms",
        "`import sessiontape` + `record(None)`, over a bare interpreter (CPU time, best runs)",
        off["best_overhead_cpu_ms"],
        "ms",
        "a bare interpreter (ms of CPU, best)",
        off["bare_cpu_best_s"] * 1000,
        (off["bare_cpu_best_s"] + off["best_overhead_cpu_ms"] / 1000) / off["bare_cpu_best_s"],
        f"-X importtime: best {off['importtime_best_ms']:.1f} ms; wall: best runs "
        f"{off['best_overhead_ms']:.1f} ms apart, paired median {off['overhead_ms']:.1f} ms",
    )


def _update_rows(up: Results, results: Results) -> Iterable[Row]:
    entries = results["tapes"]["medium"]["entries"]
    yield _row(
        "update_ratio",
        f"update of a {entries:,}-entry tape / its plain replay",
        up["ratio"],
        "×",
        "plain replay (s)",
        up["plain_ns"] / 1e9,
        up["ratio"],
        f"{up['rewrites']} calls rewritten; update {up['update_ns'] / 1e9:.2f} s; with "
        f"nothing to change {up['unchanged_ratio']:.2f}× and "
        f"{'a write' if up['unchanged_written'] else 'no write'}",
    )


def _explain_rows(ex: Results, results: Results) -> Iterable[Row]:
    yield _row(
        "explain_s",
        f"explain of a failing chaos schedule of a {ex['entries']:,}-entry, "
        f"{ex['workers']}-worker tape",
        ex["explain_ns"] / 1e9,
        "s",
        "one chaos schedule of the same tape (ms)",
        ex["schedule_ns"] / 1e6,
        ex["ratio"],
        f"{ex['schedules']} schedules ({ex['estimates']} estimates), "
        f"{ex['per_schedule_ratio']:.2f}× one schedule each; point of no return: decision "
        f"{ex['point']} of {ex['decisions']}",
    )


def _fork_rows(fk: Results, results: Results) -> Iterable[Row]:
    what = (
        f"a fork at seq {fk['seq']} of a {fk['entries']:,}-entry, {fk['workers']}-worker tape "
        "(another answer there, nothing run live; the branch written and validated)"
    )
    spread = f"over {fk['rounds']} rounds, median of the per-round ratios"
    answered = (
        f"{fk['from_tape']} of the {fk['after']} entries after the fork answered by the "
        f"tape, {fk['live']} run live"
    )
    yield _row(
        "fork_budget_ratio",
        f"{what} / a plain replay of it plus writing its branch as any tape is written (CPU time)",
        fk["budget_ratio_cpu"],
        "×",
        "plain replay + write of the branch (ms of CPU)",
        (fk["replay_cpu_ns"] + fk["write_cpu_ns"]) / 1e6,
        fk["budget_ratio_cpu"],
        f"CPU: fork {fk['fork_cpu_ns'] / 1e6:.1f} ms, replay {fk['replay_cpu_ns'] / 1e6:.1f} "
        f"ms, write {fk['write_cpu_ns'] / 1e6:.1f} ms; ratio {fk['budget_ratio_cpu_min']:.2f}–"
        f"{fk['budget_ratio_cpu_max']:.2f}× {spread}; wall: {fk['budget_ratio']:.2f}× "
        f"({fk['budget_ratio_min']:.2f}–{fk['budget_ratio_max']:.2f}×); {answered}",
    )
    yield _row(
        "fork_ratio",
        f"{what} / a plain replay of it",
        fk["ratio"],
        "×",
        "a plain replay of the whole tape (ms)",
        fk["replay_ns"] / 1e6,
        fk["ratio"],
        f"fork {fk['fork_ns'] / 1e6:.1f} ms; ratio {fk['ratio_min']:.2f}–{fk['ratio_max']:.2f}× "
        f"{spread}; CPU time {fk['ratio_cpu']:.2f}×; not a target: the branch's write lies "
        "between the two",
    )


#: The summary's rows in table order: each case's rows, built from its results.
_ROWS: Final[tuple[tuple[str, Callable[[Results, Results], Iterable[Row]]], ...]] = (
    ("replay_call", _process_rows),
    ("boundaries", _boundary_rows),
    ("replay_call", _comparison_rows),
    ("corpus", _corpus_rows),
    ("end_to_end", _e2e_rows),
    ("update", _update_rows),
    ("explain", _explain_rows),
    ("fork", _fork_rows),
    ("memory", _memory_rows),
    ("load", _load_rows),
    ("record", _record_rows),
    ("report", _report_rows),
    ("disabled", _disabled_rows),
    ("startup", _startup_rows),
)


def figures(results: Results) -> list[Row]:
    """The summary table: one row per figure, with its baseline, ratio and target."""
    res = results["results"]
    rows = [row for case, build in _ROWS if case in res for row in build(res[case], results)]
    repeated = [fid for fid, n in Counter(row["id"] for row in rows).items() if n > 1]
    if repeated:
        raise AssertionError(f"figure ids must be unique in a run; repeated: {repeated}")
    return rows


def attach_previous(rows: list[Row], earlier: list[Row]) -> None:
    """Give each row the figure of the same id in ``earlier`` (an earlier run's rows) as
    ``row["previous"]``, or ``None`` where the id is new.

    Runs written before ids were unique repeated some; such an id is matched together
    with the figure's text.
    """
    seen = Counter(old.get("id") for old in earlier)
    by_key: dict[Any, Row] = {}
    for then in earlier:
        fid = then.get("id")
        if fid is not None:
            by_key[fid if seen[fid] == 1 else (fid, then["figure"])] = then
    for row in rows:
        old = by_key.get(row["id"]) or by_key.get((row["id"], row["figure"]))
        row["previous"] = (
            None if old is None else {k: old.get(k) for k in ("value", "unit", "ratio", "met")}
        )
