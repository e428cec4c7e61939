"""sessiontape's benchmark suite: hours of session replayed in seconds, measured side by side.

One command runs everything and writes the results::

    python bench/run.py                  # full suite: BENCHMARKS.json + BENCHMARKS.md
    python bench/run.py --quick          # small sizes, a minute; prints the table only
    python bench/run.py --quick --out q.json --markdown q.md

It generates synthetic session tapes (``bench/gen.py``: 10k and 100k entries and an
eight-hour session of 260k), then measures, each figure against a baseline taken in the
same run: one replayed process call (vs a bare deque, pytest-subprocess and vcrpy), the
eight-hour tape end to end (vs msgspec decoding the file), load throughput and peak
memory (vs the file size), recording overhead (vs the unwrapped runner, and on the
example orchestrator's run), the cost of a disabled recorder, and ``sessiontape report``
on a 120k-entry tape (vs the tape's size and load time). Tapes are generated only for
the cases that read them. The checkout's ``src/`` is measured, whatever sessiontape is
installed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

BENCH: Final = Path(__file__).resolve().parent
ROOT: Final = BENCH.parent
for _path in (ROOT / "src", BENCH):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import gen  # noqa: E402
from cases import common, disabled, end_to_end, load, record, replay_call, report  # noqa: E402

__all__ = ["PROFILES", "TARGETS", "figures", "main", "render_markdown", "run_suite"]

#: Sizes and repetitions per mode. ``tiny`` is what the smoke test runs.
PROFILES: Final[dict[str, dict[str, Any]]] = {
    "full": {
        "tapes": {"small": (10_000, None), "medium": (100_000, None), "long": (260_000, 8.0)},
        "workers": 8,
        "calls": 1000,
        "batches": 40,
        "vcr_interactions": 1000,
        "vcr_batches": 3,
        "e2e_repeat": 3,
        "load_repeat": 3,
        "orchestrator_runs": 15,
        "disabled_calls": 10_000,
        "report_entries": 120_000,
        "report_repeat": 5,
    },
    "quick": {
        "tapes": {"small": (2_000, None), "medium": (5_000, None), "long": (20_000, None)},
        "workers": 4,
        "calls": 500,
        "batches": 10,
        "vcr_interactions": 100,
        "vcr_batches": 2,
        "e2e_repeat": 1,
        "load_repeat": 2,
        "orchestrator_runs": 3,
        "disabled_calls": 2000,
        "report_entries": 20_000,
        "report_repeat": 2,
    },
    "tiny": {
        "tapes": {"small": (200, None), "medium": (300, None), "long": (400, None)},
        "workers": 3,
        "calls": 50,
        "batches": 3,
        "vcr_interactions": 10,
        "vcr_batches": 1,
        "e2e_repeat": 1,
        "load_repeat": 1,
        "orchestrator_runs": 1,
        "disabled_calls": 200,
        "report_entries": 300,
        "report_repeat": 1,
    },
}

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

ALL_CASES: Final = ("disabled", "record", "replay_call", "end_to_end", "load", "report")
#: The cases that read the generated tapes of a profile's ``tapes``.
_TAPE_CASES: Final = ("end_to_end", "load")


def _met(fid: str, value: float | None) -> bool | None:
    if value is None or fid not in TARGETS:
        return None
    op, bound, _ = TARGETS[fid]
    return value <= bound if op == "<=" else value >= bound


def run_suite(
    mode: str = "full",
    *,
    workdir: Path,
    cases: tuple[str, ...] = ALL_CASES,
    others: bool = True,
    log: Any = print,
) -> dict[str, Any]:
    """Generate the tapes and run ``cases``; return the results (see ``figures``)."""
    prof = PROFILES[mode]
    began = time.perf_counter()
    results: dict[str, Any] = {
        "schema": 1,
        "mode": mode,
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": None,
        "machine": common.machine(str(ROOT)),
        "profile": {
            k: (v if k != "tapes" else {n: list(t) for n, t in v.items()}) for k, v in prof.items()
        },
        "tapes": {},
        "results": {},
    }
    for name, (entries, hours) in prof["tapes"].items():
        if not set(cases) & set(_TAPE_CASES):
            break
        log(f"generating the {name} tape ({entries:,} entries)...")
        info = gen.generate(
            workdir / f"{name}.jsonl", entries, workers=prof["workers"], hours=hours
        )
        results["tapes"][name] = asdict(info)
    res = results["results"]
    if "disabled" in cases:
        log("disabled recorder...")
        res["disabled"] = disabled.run(
            calls=prof["disabled_calls"], batches=prof["batches"], workdir=workdir
        )
    if "record" in cases:
        log("recording overhead...")
        res["record"] = record.run(
            calls=prof["calls"],
            batches=prof["batches"],
            orchestrator_runs=prof["orchestrator_runs"],
            workdir=workdir,
        )
    if "replay_call" in cases:
        log("one replayed call (sessiontape, deque, pytest-subprocess, vcrpy)...")
        res["replay_call"] = replay_call.run(
            calls=prof["calls"],
            batches=prof["batches"],
            vcr_interactions=prof["vcr_interactions"],
            vcr_batches=prof["vcr_batches"],
            workdir=workdir,
            others=others,
        )
    if "end_to_end" in cases:
        long_tape = results["tapes"]["long"]
        log(f"the long tape end to end ({long_tape['entries']:,} entries)...")
        res["end_to_end"] = end_to_end.run(
            path=long_tape["path"],
            file_bytes=long_tape["bytes"],
            repeat=prof["e2e_repeat"],
            workdir=workdir,
        )
    if "load" in cases:
        log("load throughput and peak memory...")
        res["load"] = load.run(tapes=results["tapes"], repeat=prof["load_repeat"])
    if "report" in cases:
        entries = prof["report_entries"]
        log(f"generating the report tape ({entries:,} entries)...")
        info = gen.generate(workdir / "report.jsonl", entries, workers=prof["workers"])
        results["tapes"]["report"] = asdict(info)
        log("sessiontape report against sessiontape.load...")
        res["report"] = report.run(path=info.path, workdir=workdir, repeat=prof["report_repeat"])
    results["figures"] = figures(results)
    results["duration_s"] = round(time.perf_counter() - began, 1)
    return results


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


# -- markdown --------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def render_markdown(results: dict[str, Any]) -> str:
    """BENCHMARKS.md: the summary table, the machine, the details and the profiles."""
    m = results["machine"]
    res = results["results"]
    out: list[str] = []
    add = out.append
    add("# sessiontape benchmarks\n")
    add(
        "Hours of session replayed in seconds, measured side by side. Every figure is "
        "compared with a baseline measured in the same run; ratios are what to read on a "
        "busy machine.\n"
    )
    add(
        f"Reproduce: `{results['command']}` in an environment with the `bench` extra "
        "(`pip install -e '.[bench]'`), or `nox -s bench`, from a clean checkout; it "
        "measures the checkout's `src/`. "
        f"This run: mode `{results['mode']}`, {results['started_at']}, "
        f"{results['duration_s']} s.\n"
    )
    add("## Summary\n")
    previous = results.get("previous")
    before = {r["figure"]: r for r in previous["figures"]} if previous else {}
    add(
        "| figure | sessiontape | baseline | baseline value | ratio | target | met |"
        + (" before |" if previous else "")
    )
    add("|---|---|---|---|---|---|---|" + ("---|" if previous else ""))
    for row in results["figures"]:
        met = {True: "yes", False: "**no**", None: "—"}[row["met"]]
        note = f" ({row['note']})" if row["note"] else ""
        old = before.get(row["figure"])
        then = f" {_fmt(old['value'])} {old['unit']} |" if old else (" — |" if previous else "")
        add(
            f"| {row['figure']}{note} | {_fmt(row['value'])} {row['unit']} | {row['baseline']} "
            f"| {_fmt(row['baseline_value'])} | {_fmt(row['ratio'])} | {row['target']} | {met} |"
            + then
        )
    add("")
    if previous:
        revision = previous["machine"]["git_revision"]
        add(
            f"*before*: {previous['label']} (`{previous['command']}`, "
            f"{previous['started_at']}" + (f", checkout {revision}" if revision else "") + ").\n"
        )
    add("## Machine\n")
    pk = m["packages"]
    add(f"- {m['nproc']} cores (`nproc`), {m['cpu_model']}; {m['platform']}")
    add(
        f"- Python {m['python']} ({m['python_implementation']}); GC enabled "
        f"{m['gc_enabled']}, thresholds {m['gc_thresholds']}"
    )
    add("- " + ", ".join(f"{k} {v}" for k, v in pk.items() if v))
    add(
        f"- load average at start: {m['loadavg_1m_at_start']} (1 min), "
        f"{m['loadavg_5m_at_start']} (5 min): the cores are shared with other work, so "
        "absolute times are noisy; baselines are measured in the same run."
    )
    add(f"- checkout: {m['git_revision']}\n")
    add("## Tapes\n")
    add(
        "Generated by `bench/gen.py` (entries written with `encode_entry`, lines in the "
        "order a recorder writes them): workers claim tasks from a store, run `git` "
        "(status, diff, log, merge, worktrees), ask an agent (each turn runs a nested "
        "`claude` process with kilobytes of stream-json output, some over the 64 KiB "
        "inline limit and kept as digests), and back off (gaps in the timestamps). Paths "
        "are recorded as `{repo}` placeholders, `gh` calls carry a redacted token in their "
        "environment, texts read like prose, code and logs (so the secret scanner has "
        "work to do), and each agent turn holds the `claude` call it ran (one entry in "
        "seven), which replay does not expect. The process counts below include those.\n"
    )
    add(
        "| tape | entries | file | per entry | workers | recorded | process / agent / store "
        "| over 64 KiB (digests) |"
    )
    add("|---|---|---|---|---|---|---|---|")
    for name, t in results["tapes"].items():
        k = t["kinds"]
        add(
            f"| {name} | {t['entries']:,} | {_mb(t['bytes'])} | "
            f"{t['bytes'] / t['entries'] / 1000:.1f} kB | {t['workers']} | "
            f"{t['recorded_duration_ns'] / 3.6e12:.2f} h | {k['process']:,} / "
            f"{k['agent_turn']:,} / {k['store_mutation']:,} | {t['truncated_payloads']} |"
        )
    add("")
    if "replay_call" in res:
        rc = res["replay_call"]
        add("## 1. One replayed process call\n")
        add(
            f"{rc['calls_per_batch']} calls per batch (ten distinct `git` commands with "
            "their outputs, cycled), median of the batches' per-call time; a fresh fake "
            "per batch, built outside the timed region.\n"
        )
        add("| variant | median µs/call | best batch | worst batch |")
        add("|---|---|---|---|")
        labels = {
            "sessiontape": "sessiontape, default (clock installed, cwd under a root)",
            "sessiontape_patch_time_false": "sessiontape, `patch_time=False`",
            "sessiontape_no_paths": "sessiontape, request without a path",
            "sessiontape_gc_paused": "sessiontape, default, GC paused",
            "deque": "bare `collections.deque` fake",
            "patch_subprocess": "sessiontape `patch_subprocess()` (`subprocess.run`, real Popen)",
            "patch_subprocess_binary": "`patch_subprocess()`, `subprocess.run` in binary mode",
            "patch_subprocess_check_output": "`patch_subprocess()`, `subprocess.check_output`",
            "patch_subprocess_read": "`patch_subprocess()`, `Popen` and `stdout.read()`",
            "patch_subprocess_pump": "`patch_subprocess()`, a stdin conversation (the pump)",
            "popen_floor_init": "CPython: `Popen(...)` + `wait()`, spawn stubbed, no pipes",
            "popen_floor_pipes": "CPython: `subprocess.run` text capture, spawn stubbed",
            "pytest_subprocess": "pytest-subprocess (`subprocess.run` on `FakeProcess`)",
            "vcrpy": "vcrpy, per HTTP interaction",
        }
        for key, label in labels.items():
            r = rc.get(key)
            if r:
                extra = f" ({r['interactions']} interactions)" if key == "vcrpy" else ""
                add(
                    f"| {label}{extra} | {_fmt(r['median_ns'] / 1000)} | "
                    f"{_fmt(r['min_ns'] / 1000)} | {_fmt(r['max_ns'] / 1000)} |"
                )
        add("")
    if "end_to_end" in res:
        e = res["end_to_end"]
        ph = e["replay_phases_ns"]
        add("## 2. The long tape end to end\n")
        add(
            f"Fresh interpreter per run, {e['repeat']} runs, median. The small app loop "
            "(`bench/cases/app.py`) loads the tape, wires `process_runner()`, "
            "`agent(result_type=StepResult)` and `store(factory=BenchStore)`, walks the "
            "recorded calls in seq order, runs each in its worker's own context (one "
            "`contextvars.Context` per worker that entered `sessiontape.worker(id)` once, "
            "as a worker thread does), makes the call with today's paths and token, then "
            "finishes the report (which must pass). Wall time runs from the first byte read "
            "to the tape's objects freed.\n"
        )
        add("| | wall | CPU |")
        add("|---|---|---|")
        add(
            f"| sessiontape end to end | {e['replay_wall_ns'] / 1e9:.2f} s | "
            f"{e['replay_cpu_ns'] / 1e9:.2f} s |"
        )
        add(
            f"| msgspec read + decode (GC paused) | {e['msgspec_read_decode_wall_ns'] / 1e9:.2f} s"
            f" | {e['msgspec_cpu_ns'] / 1e9:.2f} s |"
        )
        add(f"| msgspec decode only | {e['msgspec_decode_only_ns'] / 1e9:.2f} s | |")
        add(f"| ratio | {e['ratio_to_msgspec']:.2f}× | {e['ratio_to_msgspec_cpu']:.2f}× |")
        add(
            f"| same, `patch_time=False` (one run) | "
            f"{e['replay_patch_time_false_wall_ns'] / 1e9:.2f} s | |\n"
        )
        add(
            f"Served {e['entries_served']:,} calls ({e['calls_made']['process']:,} process, "
            f"{e['calls_made']['agent']:,} agent, {e['calls_made']['store']:,} store; "
            f"{e['calls_made']['truncated']} process calls had a payload over the inline "
            f"limit: aligned and served, then `TruncatedPayloadError` as designed). "
            f"Recorded {e['recorded_duration_ns'] / 3.6e12:.2f} h, replayed in "
            f"{e['replay_wall_ns'] / 1e9:.2f} s: **{e['time_compression']:,.0f}× time "
            "compression**.\n"
        )
        add("Where the time goes (median phases, wall):\n")
        add("| load | index | serve | finish | teardown (entries freed) |")
        add("|---|---|---|---|---|")
        add(
            f"| {ph['load_ns'] / 1e9:.2f} s | {ph['index_ns'] / 1e9:.2f} s | "
            f"{ph['serve_ns'] / 1e9:.2f} s | {ph['finish_ns'] / 1e9:.2f} s | "
            f"{ph.get('teardown_ns', 0) / 1e9:.2f} s |\n"
        )
        pk = e["serve_us_per_call_by_kind"]
        add(
            "Serving cost per call by kind (timed call by call in a separate run): "
            + ", ".join(f"{k} {v:.1f} µs" for k, v in pk.items())
            + ".\n"
        )
    if "load" in res:
        add("## 3. Load throughput and peak memory\n")
        add(
            "Fresh interpreter per tape; peak RSS is the peak after the load minus the peak "
            "after the imports (`VmHWM`: `ru_maxrss` of this process image alone, since "
            "`ru_maxrss` survives `exec` and a child of this suite would start at its "
            "parent's peak). The file's bytes, the entries and the indexes all count.\n"
        )
        add(
            "| tape | file | load | MB/s | msgspec MB/s | load / msgspec | peak RSS | "
            "RSS / file | msgspec RSS / file |"
        )
        add("|---|---|---|---|---|---|---|---|---|")
        for name, t in res["load"].items():
            add(
                f"| {name} ({t['entries']:,}) | {_mb(t['file_bytes'])} | "
                f"{t['load_ns'] / 1e6:.0f} ms | {t['load_mb_per_s']:.0f} | "
                f"{t['msgspec_mb_per_s']:.0f} | {t['load_to_msgspec']:.2f}× | "
                f"{_mb(t['peak_rss_delta_bytes'])} | {t['peak_rss_to_file']:.2f}× | "
                f"{t['msgspec_peak_rss_to_file']:.2f}× |"
            )
        add("")
    if "record" in res:
        r = res["record"]
        add("## 4. Recording overhead\n")
        add("| level | recorded call | inner runner alone | overhead |")
        add("|---|---|---|---|")
        for level in ("full", "standard"):
            add(
                f"| {level} | {r[level]['recorded']['median_ns'] / 1000:.2f} µs | "
                f"{r[level]['inner']['median_ns'] / 1000:.2f} µs | "
                f"{r[level]['overhead_ns'] / 1000:.2f} µs |"
            )
        add("")
        first = r["orchestrator"]
        add(
            f"Orchestrator: {first['orchestrator']} with a fake git runner, recorded at level "
            "full (tape set-up, every call, finish) vs `record(None)`; runs alternate, "
            "median.\n"
        )
        add("| clock | runs | unrecorded | recorded | calls recorded | overhead | per call |")
        add("|---|---|---|---|---|---|---|")
        for key in ("orchestrator", "orchestrator_instant"):
            o = r.get(key)
            if o:
                per = (
                    f"{o['overhead_per_call_ns'] / 1000:.1f} µs"
                    if o["overhead_per_call_ns"] is not None
                    else "—"
                )
                add(
                    f"| {o['clock']} | {o['runs']} | {o['plain_ns'] / 1e6:.1f} ms | "
                    f"{o['recorded_ns'] / 1e6:.1f} ms | {o['calls_recorded']} | "
                    f"{o['overhead_ratio'] * 100:+.1f} % | {per} |"
                )
        add("")
    if "disabled" in res:
        d = res["disabled"]
        add("## 5. Disabled recorder\n")
        add(
            f"`sessiontape.record(None)` with `SESSIONTAPE_RECORD` unset: "
            f"`process_runner(inner) is inner` → {d['runner_is_inner']}, "
            f"`agent(a) is a` → {d['agent_is_adapter']}, `store(s) is s` → "
            f"{d['store_is_store']}. Per call: {d['disabled']['median_ns']:.0f} ns through "
            f"the returned runner vs {d['inner']['median_ns']:.0f} ns calling the runner "
            f"directly (the same function): overhead {d['disabled_overhead_ns']:.0f} ns. "
            f"`record(None)` itself: {d['record_none']['median_ns']:.0f} ns, once per "
            "session.\n"
        )
        add(
            f"A RecordTape whose writer failed (cassette directory unwritable; one "
            f"`RecordingWarning`): {d['failed_writer']['median_ns']:.0f} ns per call vs "
            f"{d['failed_writer_inner']['median_ns']:.0f} ns for the runner alone, "
            f"{d['failed_writer_overhead_ns']:.0f} ns of fast path.\n"
        )
    if "report" in res:
        r = res["report"]
        add("## 6. The report page\n")
        add(
            f"`sessiontape report` on a {r['entries']:,}-entry tape generated like the ones "
            "above, in one fresh interpreter: after a warm-up, loads and reports alternate "
            f"{r['repeat']} times, medians compared. The report's time includes its own "
            "load; it compresses and writes on a second thread while it packs entries.\n"
        )
        add("| | wall | CPU |")
        add("|---|---|---|")
        add(f"| `sessiontape.load` | {r['load_ns'] / 1e9:.2f} s | {r['load_cpu_ns'] / 1e9:.2f} s |")
        add(
            f"| `sessiontape report` | {r['report_ns'] / 1e9:.2f} s | "
            f"{r['report_cpu_ns'] / 1e9:.2f} s |"
        )
        add(f"| ratio | {r['time_ratio']:.2f}× | {r['cpu_ratio']:.2f}× |\n")
        add(
            f"The page is {r['page_bytes'] / 1e6:.1f} MB for a {r['tape_bytes'] / 1e6:.1f} MB "
            f"tape ({r['size_ratio']:.2f}×); the time after the load is "
            f"{r['write_after_load_ratio']:.2f}× the load.\n"
        )
    unmet = [row for row in results["figures"] if row["met"] is False]
    add("## Targets not met, and what it would take\n")
    if not unmet:
        add("Every target is met in this run.\n")
    for row in unmet:
        add(f"### {row['figure']}: {_fmt(row['value'])} {row['unit']} (target {row['target']})\n")
        add(_analysis(row, results))
    if "end_to_end" in res and res["end_to_end"].get("profile"):
        add("### Profile of the end-to-end replay (cProfile, by own time)\n")
        add(
            "cProfile slows the run several-fold and inflates small functions; read it "
            "for proportions.\n"
        )
        add("| function | calls | own s | cumulative s | share |")
        add("|---|---|---|---|---|")
        for p in res["end_to_end"]["profile"]:
            add(
                f"| `{p['function']}` | {p['ncalls']:,} | {p['tottime_s']:.3f} | "
                f"{p['cumtime_s']:.3f} | {p['share'] * 100:.1f} % |"
            )
        add("")
    add("## Method\n")
    add(
        "- Timer: `time.perf_counter_ns`, held out of freezegun's reach (the default replay "
        "patches time). Every per-call figure is the median of batches' per-call times "
        "after warm-up batches; whole-tape figures are medians of runs in fresh "
        "interpreters.\n"
        "- GC: left enabled everywhere (as users run), except the msgspec baselines, which "
        "pause it while decoding as `sessiontape.load` does; figure 1 also shows a "
        "GC-paused variant.\n"
        "- The 2 cores are shared with other work: absolute times move between runs by "
        "tens of percent; the CPU-time column and the same-run ratios are steadier.\n"
        "- No timed assertion anywhere in the test suite: `tests/test_bench_smoke.py` runs "
        "this code on tiny tapes and checks the shape of the results only.\n"
    )
    return "\n".join(out)


def _analysis(row: dict[str, Any], results: dict[str, Any]) -> str:
    """What the numbers say about an unmet target (written from this run's figures)."""
    res = results["results"]
    fid = row["id"]
    if fid in ("e2e_wall_s", "e2e_ratio_msgspec") and "end_to_end" in res:
        e = res["end_to_end"]
        ph = e["replay_phases_ns"]
        pk = e["serve_us_per_call_by_kind"]
        made = e["calls_made"]
        base = e["msgspec_read_decode_wall_ns"] / 1e9
        decode = e["msgspec_decode_only_ns"] / 1e9
        budget = 3.0 * base if fid == "e2e_ratio_msgspec" else 3.0
        fixed = sum(ph.get(k, 0) for k in ("load_ns", "index_ns", "finish_ns", "teardown_ns"))
        rest = budget - fixed / 1e9
        calls = max(1, e["entries_served"])
        per_call = ", ".join(f"{k} {v:.1f} µs × {made.get(k, 0):,}" for k, v in pk.items())
        if fid == "e2e_ratio_msgspec":
            return (
                f"Same breakdown as above. Three times msgspec's {base:.2f} s is {budget:.2f} s: "
                f"less the fixed phases, serving would have to fit in {max(rest, 0):.2f} s, "
                f"{max(rest, 0) / calls * 1e6:.1f} µs per call. msgspec decodes this tape at "
                f"{e['file_bytes'] / 1e6 / decode:.0f} MB/s because much of it is long strings; "
                "what replay adds is per call, not per byte, so a tape of the same calls with "
                "smaller payloads would fare worse on this ratio and better on the absolute "
                "time.\n"
            )
        return (
            f"Load {ph['load_ns'] / 1e9:.2f} s (of which msgspec's decode {decode:.2f} s and "
            f"reading the file {base - decode:.2f} s; the rest orders the entries by seq "
            f"and indexes them), index {ph['index_ns'] / 1e9:.2f} s (one queue per worker "
            f"and boundary, and installing the fake clock), serving "
            f"{ph['serve_ns'] / 1e9:.2f} s for {calls:,} calls "
            f"({ph['serve_ns'] / calls / 1000:.1f} µs each on average: {per_call}), finish "
            f"{ph['finish_ns'] / 1e9:.2f} s and freeing the {e['file_bytes'] / 1e6:.0f} MB "
            f"tape's objects {ph.get('teardown_ns', 0) / 1e9:.2f} s. Within a "
            f"{budget:.2f} s budget, serving would have to fit in {max(rest, 0):.2f} s, "
            f"{max(rest, 0) / calls * 1e6:.1f} µs per call.\n\n"
            "Process calls are close to that. Agent turns and store mutations are not: "
            "replay normalises every actual request and result the way the recorder did "
            "(`to_data`, then every string through the secret regexes and the path "
            "placeholders) before comparing it with the tape; a kilobyte prompt alone takes "
            "about 5 µs in the secret scanner, and a store call scrubs its arguments and its "
            "result (without scrubbing it would take about a third less). What would close "
            "the gap: (1) compare the raw request with the recorded one first and scrub only "
            "the strings that differ (the rule the process fast path already applies to "
            "argv; a semantic change: a raw value equal to the recorded one would match even "
            "where today's scrubber would rewrite it, so it is left to the design's owner); "
            "(2) `msgspec.Struct(gc=False)` entry types and tuples for argv, so the loaded "
            "tape is neither traversed by the GC nor as slow to free (an `_entries.py` "
            "change); (3) indexing the queues while decoding rather than in a second "
            "pass.\n"
        )
    if fid == "report_time_ratio" and "report" in res:
        r = res["report"]
        load_s, report_s = r["load_ns"] / 1e9, r["report_ns"] / 1e9
        cpu_s, load_cpu_s = r["report_cpu_ns"] / 1e9, r["load_cpu_ns"] / 1e9
        return (
            f"The report took {report_s:.2f} s of wall time against {load_s:.2f} s for the "
            f"load, and {cpu_s:.2f} s of CPU against {load_cpu_s:.2f} s: "
            f"{r['cpu_ratio']:.2f}× the load's CPU time, whatever the machine is doing. "
            "Its own load is one of those; packing every entry (the "
            "row's text, its fields with big values clipped, encoded once by msgspec) and "
            "building the columns is about as much again, on the main thread; deflating and "
            "writing the page is the rest, on a second thread that zlib lets run beside the "
            "packing. So the wall time comes near three loads only when a second core is "
            "free; on a machine busy with other work it rises toward the CPU ratio. Meeting "
            "the target there would take less CPU, not more overlap: a page with the rows "
            "alone (details fetched from `serve`, or unpacked from a slimmer blob) would be "
            "about two loads; clipping recorded values at 200 rather than 400 characters "
            "saves about a sixth of the compression.\n"
        )
    if fid == "replay_call_us":
        return (
            "The per-call path is the queue head comparison, two clock moves and the "
            "result's construction; see the profile below for the split.\n"
        )
    if fid == "orchestrator_overhead_pct" and "record" in res:
        key = "orchestrator_instant" if "instant" in row["figure"] else "orchestrator"
        o = res["record"][key]
        calls = max(1, o["calls_recorded"])
        own = o["plain_ns"] / calls / 1000
        added = (o["recorded_ns"] - o["plain_ns"]) / calls / 1000
        return (
            f"With its sleeps instant, the gardener does {own:.0f} µs of its own work per "
            f"boundary call (SQLite, files, three threads); recording adds {added:.0f} µs "
            "per call: the call's entry built, its arguments and result converted and "
            "scrubbed, encoded, and written with one `write` per entry under the writer's "
            "lock, three threads contending for that lock and for the GIL the write "
            f"releases. Under 5 % would take {own * 0.05:.1f} µs per recorded call: only by "
            "moving encoding and writing off the calling thread (a writer thread fed by a "
            "queue), which the design's 'flushed per entry' rules out today. With the "
            "back-offs the shipped wiring really sleeps, the same cost is lost in the "
            "run's noise (row above).\n"
        )
    return "See the detailed section above.\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few repetitions (about a minute)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON results (default: BENCHMARKS.json in a full run of every case)",
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        default=None,
        help="Markdown report (default: BENCHMARKS.md in a full run of every case)",
    )
    parser.add_argument(
        "--only",
        default=",".join(ALL_CASES),
        help=f"comma-separated cases to run (default all: {','.join(ALL_CASES)})",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where to write the tapes (default: a temporary directory)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--render",
        type=Path,
        default=None,
        metavar="RESULTS.json",
        help="measure nothing: write the Markdown report (--markdown) of a saved run",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="OLD.json",
        help="add the figures of an earlier run's JSON as a 'before' column",
    )
    parser.add_argument(
        "--compare-label",
        default="the same suite run on the previous checkout",
        help="how the 'before' column is described",
    )
    args = parser.parse_args(argv)
    cases = tuple(c.strip() for c in args.only.split(",") if c.strip())
    unknown = sorted(set(cases) - set(ALL_CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {list(ALL_CASES)}")
    if args.render is not None:
        saved = json.loads(args.render.read_text(encoding="utf-8"))
        text = render_markdown(saved)
        if args.markdown is not None:
            args.markdown.write_text(text + "\n", encoding="utf-8")
        else:
            print(text)
        return 0
    mode = "quick" if args.quick else "full"
    out, markdown = args.out, args.markdown
    # Only a full run of every case replaces the committed report; a partial run (--only)
    # prints its table and writes files only when asked to.
    partial = set(cases) != set(ALL_CASES)
    if mode == "full" and not partial and out is None and markdown is None:
        out, markdown = ROOT / "BENCHMARKS.json", ROOT / "BENCHMARKS.md"
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sessiontape-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        results = run_suite(
            mode,
            workdir=workdir,
            cases=cases,
            log=lambda msg: print(f"[bench] {msg}", file=sys.stderr, flush=True),
        )
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    command = ["python", "bench/run.py"]
    if args.quick:
        command.append("--quick")
    if args.only != ",".join(ALL_CASES):
        command += ["--only", args.only]
    results["command"] = shlex.join(command)
    for path in results["tapes"].values():
        path["path"] = os.path.basename(path["path"])
    if args.compare is not None:
        old = json.loads(args.compare.read_text(encoding="utf-8"))
        results["previous"] = {
            "label": args.compare_label,
            "command": old.get("command"),
            "started_at": old.get("started_at"),
            "machine": {"git_revision": old.get("machine", {}).get("git_revision")},
            "figures": old.get("figures", []),
        }
    if out is not None:
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    text = render_markdown(results)
    if markdown is not None:
        markdown.write_text(text + "\n", encoding="utf-8")
    summary = text.split("## Machine")[0]
    print(summary)
    gc.collect()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
