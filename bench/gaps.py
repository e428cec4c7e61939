"""The section "Targets not met, and what it would take", written from a run's figures."""

from __future__ import annotations

from typing import Any

__all__ = ["what_it_would_take"]


def what_it_would_take(row: dict[str, Any], results: dict[str, Any]) -> str:
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
