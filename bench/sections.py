"""BENCHMARKS.md's detailed sections: one per case (or two related ones), each written
from those cases' results (``results["results"]``) as Markdown lines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

__all__ = ["SECTIONS", "fmt", "mb"]

Results = dict[str, Any]


def fmt(value: float | None, digits: int = 2) -> str:
    """A figure for a table: thousands grouped, fewer decimals as it grows."""
    if value is None:
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def mb(n: float) -> str:
    """Bytes as megabytes."""
    return f"{n / 1e6:,.1f} MB"


def _timing_row(label: str, timing: dict[str, Any]) -> str:
    """``| label | median | best | worst |`` of a per-call timing, in µs."""
    return (
        f"| {label} | {fmt(timing['median_ns'] / 1000)} | {fmt(timing['min_ns'] / 1000)} | "
        f"{fmt(timing['max_ns'] / 1000)} |"
    )


_PROCESS_VARIANTS: Final = {
    "sessiontape": "sessiontape, default (clock installed, cwd under a root)",
    "deque": "floor: bare `collections.deque` + argv compare",
    "sessiontape_patch_time_false": "sessiontape, `patch_time=False`",
    "sessiontape_no_paths": "sessiontape, request without a path",
    "sessiontape_gc_paused": "sessiontape, default, GC paused",
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

_BOUNDARY_LABELS: Final = {
    "agent": "agent turn (`tape.agent(result_type=StepResult).execute`)",
    "store": "store mutation (`tape.store(factory=BenchStore)`, verified)",
    "user": "user boundary (`tape.boundary('api')`, substitute)",
}


def replay_section(res: Results) -> list[str]:
    rc, bd = res.get("replay_call"), res.get("boundaries")
    out = ["## 1. One replayed call on each boundary\n"]
    if rc:
        out += [
            f"{rc['calls_per_batch']} process calls per batch (ten distinct `git` commands "
            "with their outputs, cycled), median of the batches' per-call time; a fresh fake "
            "per batch, built outside the timed region. The default variant and the floor "
            "take turns batch by batch.\n",
            "| variant | median µs/call | best batch | worst batch |",
            "|---|---|---|---|",
        ]
        for key, label in _PROCESS_VARIANTS.items():
            r = rc.get(key)
            if r:
                extra = f" ({r['interactions']} interactions)" if key == "vcrpy" else ""
                out.append(_timing_row(label + extra, r))
        out.append("")
    if bd:
        out += [
            "The other boundaries (`bench/cases/boundaries.py`): tapes recorded through the "
            "real recorder, replayed as the application calls them; each beside its floor "
            "(the next recorded request and result from a `deque`, today's request compared; "
            "for the store, the real mutation and its result compared too), in turns.\n",
            "| boundary | calls per batch | sessiontape µs/call | best | worst | floor µs/call "
            "| ratio |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, label in _BOUNDARY_LABELS.items():
            b = bd.get(name)
            if b:
                ours, floor = b["sessiontape"], b["floor"]
                out.append(
                    f"| {label} | {b['calls_per_batch']} | {fmt(ours['median_ns'] / 1000)} | "
                    f"{fmt(ours['min_ns'] / 1000)} | {fmt(ours['max_ns'] / 1000)} | "
                    f"{fmt(floor['median_ns'] / 1000)} | "
                    f"{ours['median_ns'] / floor['median_ns']:.1f}× |"
                )
        out.append("")
    return out


def end_to_end_section(res: Results) -> list[str]:
    e = res["end_to_end"]
    ph = e["replay_phases_ns"]
    made = e["calls_made"]
    return [
        "## 2. The long tape end to end\n",
        f"Fresh interpreter per run, {e['repeat']} runs, median. The small app loop "
        "(`bench/cases/app.py`) loads the tape, wires `process_runner()`, "
        "`agent(result_type=StepResult)` and `store(factory=BenchStore)`, walks the "
        "recorded calls in seq order, runs each in its worker's own context (one "
        "`contextvars.Context` per worker that entered `sessiontape.worker(id)` once, "
        "as a worker thread does), makes the call with today's paths and token, then "
        "finishes the report (which must pass). Wall time runs from the first byte read "
        "to the tape's objects freed. Before it, each run does the process's one-time "
        "replay set-up, as the pytest plugin does at collection "
        f"(`sessiontape.replayer.prepare()`: {e.get('prepare_ns', 0) / 1e6:.0f} ms, paid "
        "once per process, not per tape).\n",
        "| | wall | CPU |",
        "|---|---|---|",
        f"| sessiontape end to end | {e['replay_wall_ns'] / 1e9:.2f} s | "
        f"{e['replay_cpu_ns'] / 1e9:.2f} s |",
        f"| msgspec read + decode (GC paused) | {e['msgspec_read_decode_wall_ns'] / 1e9:.2f} s"
        f" | {e['msgspec_cpu_ns'] / 1e9:.2f} s |",
        f"| msgspec decode only | {e['msgspec_decode_only_ns'] / 1e9:.2f} s | |",
        f"| ratio | {e['ratio_to_msgspec']:.2f}× | {e['ratio_to_msgspec_cpu']:.2f}× |",
        f"| same, `patch_time=False` (one run) | "
        f"{e['replay_patch_time_false_wall_ns'] / 1e9:.2f} s | |\n",
        f"Served {e['entries_served']:,} calls ({made['process']:,} process, "
        f"{made['agent']:,} agent, {made['store']:,} store; {made['truncated']} process calls "
        "had a payload over the inline limit: aligned and served, then "
        "`TruncatedPayloadError` as designed). Recorded "
        f"{e['recorded_duration_ns'] / 3.6e12:.2f} h, replayed in "
        f"{e['replay_wall_ns'] / 1e9:.2f} s: **{e['time_compression']:,.0f}× time "
        f"compression**. Peak RSS of the replay: {mb(e['replay_peak_rss_delta_bytes'])}, "
        f"{e['replay_peak_rss_delta_bytes'] / e['file_bytes']:.2f}× the file.\n",
        "Where the time goes (median phases, wall):\n",
        "| load | index | serve | finish | teardown (entries freed) |",
        "|---|---|---|---|---|",
        f"| {ph['load_ns'] / 1e9:.2f} s | {ph['index_ns'] / 1e9:.2f} s | "
        f"{ph['serve_ns'] / 1e9:.2f} s | {ph['finish_ns'] / 1e9:.2f} s | "
        f"{ph.get('teardown_ns', 0) / 1e9:.2f} s |\n",
        "Serving cost per call by kind (timed call by call in a separate run): "
        + ", ".join(f"{k} {v:.1f} µs" for k, v in e["serve_us_per_call_by_kind"].items())
        + ".\n",
    ]


def load_section(res: Results) -> list[str]:
    ld, m = res.get("load"), res.get("memory")
    out = [
        "## 3. Load throughput and peak memory\n",
        "Fresh interpreter per measurement; peak RSS is the peak after the work minus the "
        "peak before it (`VmHWM`: `ru_maxrss` of this process image alone, since "
        "`ru_maxrss` survives `exec` and a child of this suite would start at its "
        "parent's peak). The file's bytes, the entries and the indexes all count. Load "
        "times: `sessiontape.load` and msgspec alone take turns in one interpreter, "
        "medians.\n",
    ]
    if ld:
        out += [
            "| tape | file | load | MB/s | msgspec MB/s | load / msgspec | peak RSS | "
            "RSS / file | msgspec RSS / file |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, t in ld.items():
            out.append(
                f"| {name} ({t['entries']:,}) | {mb(t['file_bytes'])} | "
                f"{t['load_ns'] / 1e6:.0f} ms | {t['load_mb_per_s']:.0f} | "
                f"{t['msgspec_mb_per_s']:.0f} | {t['load_to_msgspec']:.2f}× | "
                f"{mb(t['peak_rss_delta_bytes'])} | {t['peak_rss_to_file']:.2f}× | "
                f"{t['msgspec_peak_rss_to_file']:.2f}× |"
            )
        out.append("")
    if m:
        out += [
            f"At {m['entries']:,} entries ({mb(m['file_bytes'])}): a whole replay through the "
            "small app loop, `sessiontape.load`, and msgspec's eager decode of the same bytes "
            "(`Decoder(Entry).decode_lines`, GC paused: the baseline), one fresh interpreter "
            "each.\n",
            "| | peak RSS | / file | / msgspec's | time |",
            "|---|---|---|---|---|",
        ]
        floor = m["msgspec_peak_rss_bytes"]
        for label, key, time_key in (
            ("whole replay (load, serve, finish)", "replay", "replay_wall_ns"),
            ("`sessiontape.load`", "load", "load_ns"),
            ("msgspec eager decode", "msgspec", "msgspec_ns"),
        ):
            peak = m[f"{key}_peak_rss_bytes"]
            out.append(
                f"| {label} | {mb(peak)} | {m[f'{key}_rss_to_file']:.2f}× | "
                f"{peak / floor:.2f}× | {m[time_key] / 1e9:.2f} s |"
            )
        out.append("")
    return out


def record_section(res: Results) -> list[str]:
    r = res["record"]
    out = [
        "## 4. Recording overhead\n",
        "| level | recorded call | inner runner alone | overhead |",
        "|---|---|---|---|",
    ]
    for level in ("full", "standard"):
        out.append(
            f"| {level} | {r[level]['recorded']['median_ns'] / 1000:.2f} µs | "
            f"{r[level]['inner']['median_ns'] / 1000:.2f} µs | "
            f"{r[level]['overhead_ns'] / 1000:.2f} µs |"
        )
    out.append("")
    th = r.get("threads")
    if th:
        out += [
            f'Under threads: {th["threads"]} threads, each in `sessiontape.worker(f"w{{i}}")`, '
            f"make {th['calls_per_thread']:,} calls each through one tape's `process_runner` "
            "(level full) over the trivial inner runner, released together by a barrier; the "
            "aggregate per call is the wall time to the last thread's end and the tape's "
            f"close over all {th['threads'] * th['calls_per_thread']:,} calls. Recorded and "
            f"unrecorded rounds alternate ({th['rounds']} each, median): "
            f"{th['recorded_per_call_ns'] / 1000:.2f} µs per call recorded, "
            f"{th['inner_per_call_ns'] / 1000:.2f} µs on the inner runner alone.\n"
        ]
    first = r["orchestrator"]
    out += [
        f"Orchestrator: {first['orchestrator']} with a fake git runner, recorded at level "
        "full (tape set-up, every call, finish) vs `record(None)`; runs alternate, median.\n",
        "| clock | runs | unrecorded | recorded | calls recorded | overhead | per call |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in ("orchestrator", "orchestrator_instant"):
        o = r.get(key)
        if o:
            per = o["overhead_per_call_ns"]
            out.append(
                f"| {o['clock']} | {o['runs']} | {o['plain_ns'] / 1e6:.1f} ms | "
                f"{o['recorded_ns'] / 1e6:.1f} ms | {o['calls_recorded']} | "
                f"{o['overhead_ratio'] * 100:+.1f} % | "
                + (f"{per / 1000:.1f} µs |" if per is not None else "— |")
            )
    out.append("")
    return out


def disabled_section(res: Results) -> list[str]:
    d = res["disabled"]
    return [
        "## 5. Disabled recorder\n",
        f"`sessiontape.record(None)` with `SESSIONTAPE_RECORD` unset: "
        f"`process_runner(inner) is inner` → {d['runner_is_inner']}, "
        f"`agent(a) is a` → {d['agent_is_adapter']}, `store(s) is s` → "
        f"{d['store_is_store']}. Per call: {d['disabled']['median_ns']:.0f} ns through "
        f"the returned runner vs {d['inner']['median_ns']:.0f} ns calling the runner "
        f"directly (the same function): overhead {d['disabled_overhead_ns']:.0f} ns. "
        f"`record(None)` itself: {d['record_none']['median_ns']:.0f} ns, once per session.\n",
        f"A RecordTape whose writer failed (cassette directory unwritable; one "
        f"`RecordingWarning`): {d['failed_writer']['median_ns']:.0f} ns per call vs "
        f"{d['failed_writer_inner']['median_ns']:.0f} ns for the runner alone, "
        f"{d['failed_writer_overhead_ns']:.0f} ns of fast path.\n",
    ]


def report_section(res: Results) -> list[str]:
    r = res["report"]
    return [
        "## 6. The report page\n",
        f"`sessiontape report` on a {r['entries']:,}-entry tape generated like the ones "
        "above, in one fresh interpreter: after a warm-up, loads and reports alternate "
        f"{r['repeat']} times, medians compared. The report's time includes its own "
        "load; it compresses and writes on a second thread while it packs entries.\n",
        "| | wall | CPU |",
        "|---|---|---|",
        f"| `sessiontape.load` | {r['load_ns'] / 1e9:.2f} s | {r['load_cpu_ns'] / 1e9:.2f} s |",
        f"| `sessiontape report` | {r['report_ns'] / 1e9:.2f} s | "
        f"{r['report_cpu_ns'] / 1e9:.2f} s |",
        f"| ratio | {r['time_ratio']:.2f}× | {r['cpu_ratio']:.2f}× |\n",
        f"The page is {mb(r['page_bytes'])} for a {mb(r['tape_bytes'])} tape "
        f"({r['size_ratio']:.2f}×); the time after the load is "
        f"{r['write_after_load_ratio']:.2f}× the load.\n",
    ]


def corpus_section(res: Results) -> list[str]:
    c = res["corpus"]
    fixed, small, big = c["fixed"], c["corpus"], c["big_corpus"]
    return [
        "## 7. Once per tape: the fixed cost, and corpora through pytest\n",
        f"Fixed cost: a fresh interpreter imports modules until it holds {fixed['modules']}, "
        "then replays a one-call tape over and over (`sessiontape.replay(path)` entered, "
        "one process call, `finish()`, exit); median of the replays, beside the same with "
        "`patch_time=False` (no fake clock installed).\n",
        "| | median | best | worst |",
        "|---|---|---|---|",
        *(
            f"| {label} | {fixed[key]['median_ns'] / 1e6:.3f} ms | "
            f"{fixed[key]['min_ns'] / 1e6:.3f} ms | {fixed[key]['max_ns'] / 1e6:.3f} ms |"
            for label, key in (("default", "default"), ("`patch_time=False`", "patch_time_false"))
        ),
        "",
        f"A corpus: one pytest session holds {small['items']} one-call cassettes (collected as "
        f"items, replayed through a `sessiontape_replay` hook) and {small['items']} trivial "
        "tests; a small plugin sums each item's setup, call and teardown, so collection and "
        f"start-up count for neither ({small['rounds']} session(s), median).\n",
        "| | all items | median item | first item |",
        "|---|---|---|---|",
        f"| cassettes | {small['cassette_items_s'] * 1e3:.1f} ms | "
        f"{small['cassette_median_s'] * 1e3:.2f} ms | {small['cassette_first_s'] * 1e3:.2f} ms |",
        f"| trivial tests | {small['trivial_items_s'] * 1e3:.1f} ms | "
        f"{small['trivial_median_s'] * 1e3:.2f} ms | |\n",
        "Once per pytest process that collected cassette items, at the end of collection, "
        "the plugin does the replay set-up the first replay would otherwise pay (importing "
        "freezegun, the first search of every loaded module for copies of the time "
        f"functions): {small.get('set_up_once_s', 0.0) * 1e3:.1f} ms, counted in no item.\n",
        f"Across cores: {big['items']} copies of the shipped gardener cassettes replayed by "
        "their hook, the whole `pytest` run timed, serially and with `-n 2` in turns "
        f"({big['rounds']} of each, median): serial {big['serial_ns'] / 1e9:.2f} s, "
        f"`-n 2` {big['xdist_2_ns'] / 1e9:.2f} s.\n",
    ]


def startup_section(res: Results) -> list[str]:
    s = res["startup"]
    imp, runs, off = s["importtime"], s["pytest"], s["record_none"]
    dists = sorted(imp["entry_ms"], key=lambda d: (d != "sessiontape", d))
    return [
        "## 8. Start-up: installed, imported, unused\n",
        "Fresh interpreters, bytecode cached, the variants taking turns "
        f"({s['rounds']} rounds, medians). Every plugin below is installed in the bench "
        "session and loaded by every `pytest` run. Entry point: `python -X importtime -c "
        '"import pytest; import ENTRY"`, the cumulative time of what the entry point '
        f"imports beyond pytest's own imports (pytest itself: {imp['pytest_ms']:.1f} ms). "
        "Whole run: a one-test project, `pytest -q -p no:cacheprovider`, beside the same "
        "run with `-p no:NAME`; the plugin's cost is the paired difference (wall, and CPU "
        "time of the child).\n",
        "| plugin | entry point | import (median) | import (best) | whole run: cost | CPU |",
        "|---|---|---|---|---|---|",
        *(
            f"| {d} | `{imp['modules'][d]}` | {imp['entry_ms'][d]:.1f} ms | "
            f"{imp['entry_best_ms'][d]:.1f} ms | {runs['cost_ms'][d]:+.1f} ms | "
            f"{runs['cost_cpu_ms'][d]:+.1f} ms |"
            for d in dists
        ),
        "",
        f"The one-test run with everything loaded: {runs['all_s'] * 1e3:.0f} ms "
        f"({runs['all_cpu_s'] * 1e3:.0f} ms CPU, best {runs['all_cpu_best_s'] * 1e3:.0f} ms); "
        f"with `-p no:sessiontape`: {runs['without_s']['sessiontape'] * 1e3:.0f} ms "
        f"({runs['without_cpu_s']['sessiontape'] * 1e3:.0f} ms CPU, best "
        f"{runs['without_cpu_best_s']['sessiontape'] * 1e3:.0f} ms); {runs['pairs']} runs "
        "of each of these two, the other variants 1 per round. The per-plugin differences "
        "of the table rest on one run per round and carry the machine's noise (compare "
        "pytest-randomly's, whose import costs under a millisecond); sessiontape's figure in "
        "the summary rests on every pair.\n",
        '`python -c "import sessiontape; sessiontape.record(None)"` (recording off, the '
        f"production default): {off['record_none_s'] * 1e3:.1f} ms against "
        f"{off['bare_s'] * 1e3:.1f} ms for `python -c pass` (medians), a paired difference "
        f"of {off['overhead_ms']:.1f} ms; best runs {off['best_overhead_ms']:.1f} ms apart "
        f"({off['best_overhead_cpu_ms']:.1f} ms of CPU). `-X importtime` counts "
        f"{off['importtime_ms']:.1f} ms (best {off['importtime_best_ms']:.1f} ms) for "
        "sessiontape's modules and what they import (`datetime`, `enum`).\n",
        "On the shared 2 cores, a fresh process's wall time is mostly its wait for a core, "
        "and that noise only ever adds: the summary's start-up figures are the best "
        "`-X importtime` of the rounds, and the CPU time (user + system) the whole processes "
        "used; the wall-clock medians stand here beside them.\n",
    ]


def explain_section(res: Results) -> list[str]:
    ex = res["explain"]
    return [
        "## 9. Explain: where a race became inevitable\n",
        f"A threading program of {ex['workers']} workers (process calls and store calls, "
        "`bench/cases/explain.py`) with one planted race: a worker that is done adds itself "
        "to a shared counter in two store calls, a gap the recording closed. Recorded once "
        f"({ex['entries']:,} entries; the threads' real order while recording, so the "
        "failing seed and the decisions can differ from run to run); PCT seed "
        f"{ex['failing_seed']} was the first to fail "
        f"({ex['failure']}). `sessiontape.explain` on that schedule, in the same "
        "interpreter as its baseline: the median of "
        f"{2 * ex['rounds']} PCT schedules of the same tape, half before explain and half "
        "after.\n",
        "| | value |",
        "|---|---|",
        f"| explain, wall (CPU) | {ex['explain_ns'] / 1e9:.2f} s "
        f"({ex['explain_cpu_ns'] / 1e9:.2f} s) |",
        f"| schedules explain ran (estimates) | {ex['schedules']} ({ex['estimates']}) |",
        f"| one chaos schedule: median (best, worst) | {ex['schedule_ns'] / 1e6:.1f} ms "
        f"({ex['schedule_min_ns'] / 1e6:.1f}, {ex['schedule_max_ns'] / 1e6:.1f}) |",
        f"| explain / one schedule | {ex['ratio']:.0f}× |",
        f"| explain per schedule it ran / one schedule | {ex['per_schedule_ratio']:.2f}× |",
        f"| point of no return | decision {ex['point']} of {ex['decisions']}: "
        f"{ex['deciding'] or 'certain before any decision'} |",
        "",
    ]


def fork_section(res: Results) -> list[str]:
    fk = res["fork"]
    return [
        "## 10. Fork: another answer at one call, the tape answering the rest\n",
        f"The same kind of program as explain's ({fk['workers']} threading workers, process "
        "calls and store calls, `bench/cases/fork.py`), recorded once "
        f"({fk['entries']:,} entries). The fork parts at seq {fk['seq']}, the middle of the "
        "tape, with another stdout the program does not read, and may not run anything live: "
        f"the tape answered {fk['from_tape']} of the {fk['after']} entries after it (the "
        "others are the store's calls, which run for real on replay, and the session's end), "
        "and the branch tape is written beside the original and validated, as every fork "
        "does. Its baseline is a plain replay of the whole tape; the two take turns "
        f"{fk['rounds']} times in one interpreter.\n",
        "| | value |",
        "|---|---|",
        f"| plain replay, median | {fk['replay_ns'] / 1e6:.1f} ms |",
        f"| fork (the branch written), median | {fk['fork_ns'] / 1e6:.1f} ms |",
        f"| fork / plain replay: median (best, worst pair) | {fk['ratio']:.2f}× "
        f"({fk['ratio_min']:.2f}, {fk['ratio_max']:.2f}) |",
        f"| run live | {fk['live']} |",
        "",
    ]


#: The detailed sections in the order BENCHMARKS.md shows them, each with the cases it
#: reports on (it is shown when any of them ran).
SECTIONS: Final[tuple[tuple[tuple[str, ...], Callable[[Results], list[str]]], ...]] = (
    (("replay_call", "boundaries"), replay_section),
    (("end_to_end",), end_to_end_section),
    (("load", "memory"), load_section),
    (("record",), record_section),
    (("disabled",), disabled_section),
    (("report",), report_section),
    (("corpus",), corpus_section),
    (("startup",), startup_section),
    (("explain",), explain_section),
    (("fork",), fork_section),
)
