"""The section "Targets not met, and what it would take", written from a run's figures.

Every number here comes from the run being rendered: how far a figure is from its
target, and how the run's own breakdowns (phases, per-kind costs, floors, baselines)
divide the distance. Nothing is carried over from an earlier run or written by hand, so
the text stays true as the code it measures changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from figures import TARGETS
from sections import fmt, mb

__all__ = ["what_it_would_take"]

Row = dict[str, Any]
Results = dict[str, Any]


def _distance(row: Row) -> str:
    """How far the row's value is from its bound, in its unit and relative to the value."""
    _, bound, text = TARGETS[row["id"]]
    value, unit = row["value"], row["unit"]
    gap = abs(value - bound)
    way = "to gain" if value < bound else "to shed"
    share = f", {gap / abs(value):.0%} of the figure" if value else ""
    return f"{fmt(value)} {unit} against {text}: {fmt(gap)} {unit} {way}{share}."


#: Which end-to-end serving kind a per-call replay figure is.
_KIND: Final = {
    "replay_call_us": "process",
    "replay_agent_us": "agent",
    "replay_store_us": "store",
}


def _replay_call(row: Row, results: Results) -> str:
    value, floor = row["value"], row["baseline_value"]
    _, bound, _ = TARGETS[row["id"]]
    added = value - floor
    text = (
        f"The floor ({row['baseline'].removeprefix('floor: ')}) takes {floor:.2f} µs of the "
        f"{value:.2f} µs; replay's "
        f"own work is the other {added:.2f} µs per call, and within the target it may be at "
        f"most {bound - floor:.2f} µs ({(added - bound + floor) / added:.0%} less)."
    )
    kind = _KIND.get(row["id"])
    e2e = results["results"].get("end_to_end")
    if kind and e2e and kind in e2e["serve_us_per_call_by_kind"]:
        text += (
            f" In the end-to-end replay of the long tape, with its payloads, each {kind} call "
            f"took {e2e['serve_us_per_call_by_kind'][kind]:.1f} µs."
        )
    return text + "\n"


def _fixed_cost(row: Row, results: Results) -> str:
    value, bare = row["value"], row["baseline_value"]
    clock = value - bare
    text = (
        f"With `patch_time=False` the same replay costs {bare:.3f} ms: installing and "
        f"removing the fake clock is {clock:.3f} ms of the {value:.3f} ms ({clock / value:.0%})."
    )
    if bare > 1.0:
        text += " Even without the clock the replay is over the target."
    else:
        text += f" Within 1 ms, the clock may cost at most {1.0 - bare:.3f} ms per replay."
    return text + "\n"


def _corpus(row: Row, results: Results) -> str:
    small = results["results"]["corpus"]["corpus"]
    cassettes, trivial = small["cassette_items_s"] * 1e3, small["trivial_items_s"] * 1e3
    first = small["cassette_first_s"] * 1e3
    return (
        f"The {small['items']} cassette items took {cassettes:.1f} ms in all against "
        f"{trivial:.1f} ms for the trivial tests; within 1.5× they may take "
        f"{1.5 * trivial:.1f} ms, {cassettes - 1.5 * trivial:.1f} ms less. The first cassette "
        f"item alone took {first:.1f} ms; the set-up done once per process, at the end of "
        f"collection, took {small.get('set_up_once_s', 0.0) * 1e3:.1f} ms; "
        f"the others took {cassettes - first:.1f} ms, {(cassettes - first) / trivial:.2f}× "
        f"the trivial tests. A median cassette item takes {small['cassette_median_s'] * 1e3:.2f}"
        f" ms against {small['trivial_median_s'] * 1e3:.2f} ms.\n"
    )


def _xdist(row: Row, results: Results) -> str:
    big = results["results"]["corpus"]["big_corpus"]
    serial, parallel = big["serial_ns"] / 1e9, big["xdist_2_ns"] / 1e9
    return (
        f"Serially the {big['items']} cassettes took {serial:.2f} s "
        f"({serial / big['items'] * 1e3:.1f} ms per cassette, pytest's start-up included); "
        f"with `-n 2`, {parallel:.2f} s. For `-n 2` to win, its run must fall by more than "
        f"{parallel - serial:.2f} s ({(parallel - serial) / parallel:.0%}): the cost of "
        "starting the workers and shipping items to them has to be less than what the second "
        "core saves.\n"
    )


def _e2e(row: Row, results: Results) -> str:
    e = results["results"]["end_to_end"]
    ph, per_kind, made = e["replay_phases_ns"], e["serve_us_per_call_by_kind"], e["calls_made"]
    base = e["msgspec_read_decode_wall_ns"] / 1e9
    decode = e["msgspec_decode_only_ns"] / 1e9
    _, bound, _ = TARGETS[row["id"]]
    budget = bound * base if row["id"] == "e2e_ratio_msgspec" else bound
    fixed = sum(ph.get(k, 0) for k in ("load_ns", "index_ns", "finish_ns", "teardown_ns")) / 1e9
    rest = max(budget - fixed, 0.0)
    calls = max(1, e["entries_served"])
    spent = {kind: us * made.get(kind, 0) / 1e6 for kind, us in per_kind.items()}
    total = sum(spent.values()) or 1.0
    shares = ", ".join(
        f"{kind} {per_kind[kind]:.1f} µs × {made.get(kind, 0):,} = {s:.2f} s ({s / total:.0%})"
        for kind, s in spent.items()
    )
    return (
        f"Load {ph['load_ns'] / 1e9:.2f} s (msgspec's decode alone {decode:.2f} s, reading the "
        f"file {base - decode:.2f} s), index {ph['index_ns'] / 1e9:.2f} s, serving "
        f"{ph['serve_ns'] / 1e9:.2f} s for {calls:,} calls "
        f"({ph['serve_ns'] / calls / 1000:.1f} µs each on average), finish "
        f"{ph['finish_ns'] / 1e9:.2f} s, freeing the tape's objects "
        f"{ph.get('teardown_ns', 0) / 1e9:.2f} s. The budget is {budget:.2f} s; less the "
        f"phases other than serving ({fixed:.2f} s), serving would have to fit in "
        f"{rest:.2f} s, {rest / calls * 1e6:.1f} µs per call. Serving by kind (timed call by "
        f"call): {shares}.\n"
    )


def _peak_rss(row: Row, results: Results) -> str:
    m = results["results"]["memory"]
    peak, size, eager = m["replay_peak_rss_bytes"], m["file_bytes"], m["msgspec_peak_rss_bytes"]
    text = (
        f"At {m['entries']:,} entries the peak is {mb(peak)} for a {mb(size)} file; msgspec's "
        f"eager decode of the same bytes alone peaks at {mb(eager)} ({eager / size:.2f}× the "
        "file)"
    )
    text += f", `sessiontape.load` (every payload decoded) at {mb(m['load_peak_rss_bytes'])}"
    if eager > 1.5 * size:
        text += (
            ". A replay keeps outputs and results undecoded until served and maps a long "
            "tape; what it holds beyond that is the decoded requests and the replay's own "
            "state"
        )
    else:
        text += f". Within 1.5× the peak may be at most {mb(1.5 * size)}."
    return text + "\n"


def _load(row: Row, results: Results) -> str:
    t = results["results"]["load"]["long"]
    return (
        f"msgspec alone reads and decodes the long tape at {t['msgspec_mb_per_s']:.0f} MB/s; "
        f"`sessiontape.load` takes {t['load_to_msgspec']:.2f}× its time.\n"
    )


def _record(row: Row, results: Results) -> str:
    r = results["results"]["record"]
    one = r["full"]["overhead_ns"] / 1000
    th = r.get("threads")
    if row["id"] == "record_threads_us" and th:
        return (
            f"On one thread the overhead is {one:.2f} µs per call; {th['threads']} threads "
            f"together take {th['recorded_per_call_ns'] / 1000:.2f} µs per call, "
            f"{th['recorded_per_call_ns'] / 1000 / one:.2f}× that.\n"
        )
    level = r["standard" if row["id"] == "record_standard_us" else "full"]
    return (
        f"A recorded call takes {level['recorded']['median_ns'] / 1000:.2f} µs against "
        f"{level['inner']['median_ns'] / 1000:.2f} µs for the inner runner called directly.\n"
    )


def _orchestrator(row: Row, results: Results) -> str:
    r = results["results"]["record"]
    o = r["orchestrator_instant" if row["id"] == "orchestrator_overhead_pct" else "orchestrator"]
    calls = max(1, o["calls_recorded"])
    own = o["plain_ns"] / calls / 1000
    added = (o["recorded_ns"] - o["plain_ns"]) / calls / 1000
    text = (
        f"Unrecorded, the run does {own:.0f} µs of its own work per boundary call; recorded, "
        f"it takes {added:.0f} µs more per call (the whole session: tape set-up, every "
        f"entry, finish). Under 5 % would allow {own * 0.05:.1f} µs per recorded call; the "
        f"per-call overhead measured above on one thread is "
        f"{r['full']['overhead_ns'] / 1000:.1f} µs.\n"
    )
    fixed = o.get("fixed_ns") or {}
    if fixed:
        total = sum(fixed.values())
        parts = ", ".join(
            f"{label} {fixed[key] / 1e6:.2f} ms"
            for key, label in (
                ("setup_ns", "opening the tape and writing its header"),
                ("store_ns", "the store's snapshot taken and written"),
                ("finish_ns", "finishing and closing"),
            )
            if key in fixed
        )
        per_entry = (o["recorded_ns"] - o["plain_ns"] - total) / calls / 1000
        text += (
            f"\nOf the {(o['recorded_ns'] - o['plain_ns']) / 1e6:.2f} ms a recorded run adds, "
            f"{total / 1e6:.2f} ms does not grow with the run ({parts}): "
            f"{total / o['plain_ns'] * 100:.0f} % of the unrecorded run on its own. The rest is "
            f"{per_entry:.0f} µs per entry, where the per-call figure above is "
            f"{r['full']['overhead_ns'] / 1000:.1f} µs: each of the run's entries holds texts "
            "the scrubber has not seen before (commit messages, paths, prompts) and must "
            "scan for secrets, where the per-call figure repeats one request; and three "
            "worker threads share one writer.\n"
        )
    return text


def _report(row: Row, results: Results) -> str:
    r = results["results"]["report"]
    return (
        f"The report took {r['report_ns'] / 1e9:.2f} s of wall time against "
        f"{r['load_ns'] / 1e9:.2f} s for the load, and {r['report_cpu_ns'] / 1e9:.2f} s of CPU "
        f"against {r['load_cpu_ns'] / 1e9:.2f} s ({r['cpu_ratio']:.2f}×); its own load is "
        f"one of those, and what follows it is {r['write_after_load_ratio']:.2f}× a load. "
        f"The page is {r['page_bytes'] / 1e6:.1f} MB for a {r['tape_bytes'] / 1e6:.1f} MB "
        "tape.\n"
    )


def _explain(row: Row, results: Results) -> str:
    ex = results["results"]["explain"]
    _, bound, _ = TARGETS[row["id"]]
    each = ex["explain_ns"] / ex["schedules"] / 1e9
    return (
        f"Explain ran {ex['schedules']} schedules at {each * 1e3:.1f} ms each "
        f"({ex['per_schedule_ratio']:.2f}× one plain schedule of the tape). Within "
        f"{bound:.0f} s, {bound / each:.0f} schedules of that cost fit: fewer schedules "
        "(fewer estimates, or fewer samples per estimate) or cheaper ones.\n"
    )


_ANALYSES: Final[dict[str, Callable[[Row, Results], str]]] = {
    "replay_call_us": _replay_call,
    "replay_agent_us": _replay_call,
    "replay_store_us": _replay_call,
    "replay_user_us": _replay_call,
    "fixed_cost_ms": _fixed_cost,
    "corpus_ratio": _corpus,
    "corpus_xdist_ratio": _xdist,
    "e2e_wall_s": _e2e,
    "e2e_ratio_msgspec": _e2e,
    "replay_peak_rss": _peak_rss,
    "load_mb_s": _load,
    "record_full_us": _record,
    "record_standard_us": _record,
    "record_threads_us": _record,
    "orchestrator_overhead_pct": _orchestrator,
    "orchestrator_sleeping_overhead_pct": _orchestrator,
    "report_time_ratio": _report,
    "report_size_ratio": _report,
    "explain_s": _explain,
}


def what_it_would_take(row: Row, results: Results) -> str:
    """What the run's numbers say about an unmet target: the distance, then its parts."""
    analyse = _ANALYSES.get(row["id"])
    distance = _distance(row) + "\n"
    return distance + "\n" + analyse(row, results) if analyse is not None else distance
