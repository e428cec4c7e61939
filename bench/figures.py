"""The summary table of a run: one row per figure, its baseline, ratio and target.

Every figure is a ratio against a baseline measured in the same run; ``TARGETS`` holds
the bounds of DESIGN.md's "Numbers", by figure id.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["TARGETS", "figures"]

#: The targets of DESIGN.md "Numbers" and issue 5, by figure id.
TARGETS: Final[dict[str, tuple[str, float, str]]] = {
    # id: (comparison, bound, as written)
    "replay_call_us": ("<=", 5.0, "≤ 5 µs"),
    "replay_vs_pytest_subprocess": (">=", 2.0, "≥ 2× faster"),
    "e2e_wall_s": ("<=", 3.0, "≤ 3 s on 2 cores"),
    "e2e_ratio_msgspec": ("<=", 3.0, "≤ 3× msgspec"),
    "load_mb_s": (">=", 200.0, "≥ 200 MB/s"),
    "peak_rss_ratio": ("<=", 3.0, "≤ 3× file size"),
    "record_full_us": ("<=", 20.0, "≤ 20 µs"),
    "record_standard_us": ("<=", 20.0, "≤ 20 µs"),
    "orchestrator_overhead_pct": ("<=", 5.0, "≤ 5 %"),
    "disabled_ns": ("<=", 100.0, "≤ 100 ns"),
    "report_size_ratio": ("<=", 0.5, "≤ 0.5× the tape"),
    "report_time_ratio": ("<=", 3.0, "≤ 3× load"),
}


def _met(fid: str, value: float | None) -> bool | None:
    if value is None or fid not in TARGETS:
        return None
    op, bound, _ = TARGETS[fid]
    return value <= bound if op == "<=" else value >= bound


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def _row(
    fid: str | None,
    figure: str,
    value: float | None,
    unit: str,
    baseline: str,
    baseline_value: float | None,
    ratio: float | None,
    note: str = "",
) -> dict[str, Any]:
    target = TARGETS[fid][2] if fid in TARGETS else "—"
    return {
        "id": fid,
        "figure": figure,
        "value": value,
        "unit": unit,
        "baseline": baseline,
        "baseline_value": baseline_value,
        "ratio": ratio,
        "target": target,
        "met": _met(fid, value if fid != "replay_vs_pytest_subprocess" else ratio) if fid else None,
        "note": note,
    }


#: The rows of ``patch_subprocess()``'s replay: (variant, baseline variant, figure,
#: baseline, whether the ratio is the baseline's time over ours, note).
_PATCHED_ROWS: Final = (
    (
        "patch_subprocess",
        "pytest_subprocess",
        "`subprocess.run` replayed under patch_subprocess() vs pytest-subprocess",
        "pytest-subprocess",
        True,
        "ratio = their time / ours; ours is a real Popen, its pipes made only if the "
        "program touches them",
    ),
    (
        "patch_subprocess",
        "popen_floor_init",
        "`subprocess.run` replayed under patch_subprocess() vs CPython's own cost",
        "`Popen()` + `wait()`, spawn stubbed",
        False,
        "ratio = ours / CPython's; the floor no replay of a real Popen goes under",
    ),
    (
        "patch_subprocess_pump",
        "patch_subprocess",
        "a stdin conversation replayed under patch_subprocess() (the pump path)",
        "`subprocess.run`, fast path",
        False,
        "ratio = pump path / fast path; a thread feeds real pipes chunk by chunk",
    ),
)


def _patch_subprocess_rows(rc: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for key, base_key, figure, baseline, inverse, note in _PATCHED_ROWS:
        ours, base = rc.get(key), rc.get(base_key)
        if ours and base:
            mine, theirs = ours["median_ns"] / 1000, base["median_ns"] / 1000
            ratio = theirs / mine if inverse else mine / theirs
            rows.append(_row(None, figure, mine, "µs", baseline, theirs, ratio, note))
    return rows


def figures(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary table: one row per figure, with its baseline, ratio and target."""
    res = results["results"]
    rows: list[dict[str, Any]] = []
    rc = res.get("replay_call")
    if rc:
        ours = rc["sessiontape"]["median_ns"] / 1000
        floor = rc["deque"]["median_ns"] / 1000
        rows.append(
            _row(
                "replay_call_us",
                "replay of one process call (fake runner, alignment, clock)",
                ours,
                "µs",
                "bare deque fake",
                floor,
                ours / floor,
            )
        )
        psp = rc.get("pytest_subprocess")
        if psp:
            theirs = psp["median_ns"] / 1000
            rows.append(
                _row(
                    "replay_vs_pytest_subprocess",
                    "replay of one process call vs pytest-subprocess",
                    ours,
                    "µs",
                    "pytest-subprocess",
                    theirs,
                    theirs / ours,
                    "ratio = their time / ours",
                )
            )
        rows += _patch_subprocess_rows(rc)
        vcr = rc.get("vcrpy")
        if vcr:
            theirs = vcr["median_ns"] / 1000
            rows.append(
                _row(
                    None,
                    f"replay of one call vs vcrpy ({vcr['interactions']} interactions)",
                    ours,
                    "µs",
                    "vcrpy per interaction",
                    theirs,
                    theirs / ours,
                    "ratio = their time / ours",
                )
            )
    e2e = res.get("end_to_end")
    if e2e:
        wall = e2e["replay_wall_ns"] / 1e9
        base = e2e["msgspec_read_decode_wall_ns"] / 1e9
        entries = results["tapes"]["long"]["entries"]
        rows.append(
            _row(
                "e2e_wall_s",
                f"{entries:,}-entry session tape end to end",
                wall,
                "s",
                "msgspec read + decode",
                base,
                wall / base,
            )
        )
        rows.append(
            _row(
                "e2e_ratio_msgspec",
                "end to end / msgspec decoding the file",
                wall / base,
                "×",
                "msgspec read + decode",
                base,
                wall / base,
                f"CPU-time ratio {e2e['ratio_to_msgspec_cpu']:.2f}×",
            )
        )
        rows.append(
            _row(
                None,
                "time compression (recorded / replay duration)",
                e2e["time_compression"],
                "×",
                "recorded duration",
                e2e["recorded_duration_ns"] / 3.6e12,
                None,
                "baseline in hours",
            )
        )
    ld = res.get("load")
    if ld and "long" in ld:
        long_ = ld["long"]
        rows.append(
            _row(
                "load_mb_s",
                "cassette load throughput (long tape)",
                long_["load_mb_per_s"],
                "MB/s",
                "msgspec read + decode",
                long_["msgspec_mb_per_s"],
                long_["load_mb_per_s"] / long_["msgspec_mb_per_s"],
            )
        )
        worst = max(ld.values(), key=lambda t: t["peak_rss_to_file"])
        rows.append(
            _row(
                "peak_rss_ratio",
                "peak RSS of a load / file size (worst tape)",
                worst["peak_rss_to_file"],
                "×",
                "msgspec alone",
                worst["msgspec_peak_rss_to_file"],
                _ratio(worst["peak_rss_to_file"], worst["msgspec_peak_rss_to_file"]),
                f"{worst['entries']:,}-entry tape",
            )
        )
    rec = res.get("record")
    if rec:
        for level in ("full", "standard"):
            over = rec[level]["overhead_ns"] / 1000
            inner = rec[level]["inner"]["median_ns"] / 1000
            rows.append(
                _row(
                    f"record_{level}_us",
                    f"recording overhead per call, level {level}",
                    over,
                    "µs",
                    "unwrapped inner runner",
                    inner,
                    None,
                    f"recorded call {rec[level]['recorded']['median_ns'] / 1000:.2f} µs",
                )
            )
        for key, label in (
            ("orchestrator", "as shipped: back-offs sleep on tape.clock"),
            ("orchestrator_instant", "sleeps instant: CPU work only"),
        ):
            orch = rec.get(key)
            if orch:
                rows.append(
                    _row(
                        "orchestrator_overhead_pct",
                        f"example orchestrator with a fake runner, recorded vs not ({label})",
                        orch["overhead_ratio"] * 100,
                        "%",
                        "the same run unrecorded (ms)",
                        orch["plain_ns"] / 1e6,
                        orch["recorded_ns"] / orch["plain_ns"],
                    )
                )
    rep = res.get("report")
    if rep:
        rows.append(
            _row(
                "report_size_ratio",
                f"sessiontape report: page size / tape size ({rep['entries']:,} entries)",
                rep["size_ratio"],
                "×",
                "the tape (MB)",
                rep["tape_bytes"] / 1e6,
                rep["size_ratio"],
                f"page {rep['page_bytes'] / 1e6:.1f} MB",
            )
        )
        rows.append(
            _row(
                "report_time_ratio",
                f"sessiontape report: write time / sessiontape.load ({rep['entries']:,} entries)",
                rep["time_ratio"],
                "×",
                "sessiontape.load (s)",
                rep["load_ns"] / 1e9,
                rep["time_ratio"],
                f"report {rep['report_ns'] / 1e9:.2f} s, load included; CPU ratio "
                f"{rep['cpu_ratio']:.2f}×",
            )
        )
    dis = res.get("disabled")
    if dis:
        rows.append(
            _row(
                "disabled_ns",
                "disabled recorder, per call",
                dis["disabled_overhead_ns"],
                "ns",
                "the runner itself (ns)",
                dis["inner"]["median_ns"],
                None,
                "process_runner(inner) is inner" if dis["runner_is_inner"] else "wrapper",
            )
        )
        rows.append(
            _row(
                None,
                "failed writer: active wrapper's fast path, per call",
                dis["failed_writer_overhead_ns"],
                "ns",
                "the runner itself (ns)",
                dis["failed_writer_inner"]["median_ns"],
                None,
                "not a target: informational",
            )
        )
    return rows
