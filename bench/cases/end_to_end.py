"""Figure 2: the 8-hour tape replayed end to end by the small app loop.

Load, index, serve every call, finish the report: wall time (and CPU time, steadier on a
busy machine) of :func:`cases.app.replay_session`, against msgspec alone reading and
decoding the same file (``Decoder(Entry).decode_lines``, GC paused). Each run happens in
a fresh interpreter. Time compression is the recorded duration over the replay's.

Before the clock starts, the child does the process's one-time replay set-up, as the
pytest plugin does at collection (``sessiontape.replayer.prepare()``: importing
freezegun, finding the modules to patch): a regression corpus pays it once per process,
not per tape. Its time is kept beside the figure (``prepare_ns``).
"""

from __future__ import annotations

import cProfile
import gc
import os
import pstats
import tempfile
from pathlib import Path
from typing import Any

import msgspec

import sessiontape
from sessiontape.replayer import prepare

from .app import replay_session
from .common import cpu_ns, in_subprocess, median, now_ns, peak_rss_bytes

__all__ = ["child_decode", "child_replay", "run"]


def _roots(workdir: str) -> dict[str, str]:
    return {"repo": tempfile.mkdtemp(prefix="bench-e2e-", dir=workdir)}


def child_replay(
    path: str, workdir: str, patch_time: bool = True, per_kind: bool = False
) -> dict[str, Any]:
    """One end-to-end replay; asserts it served every call and passed.

    Also its peak RSS: the peak after the replay minus the peak before it (``VmHWM``;
    see :func:`cases.common.peak_rss_bytes`)."""
    phases: dict[str, int] = {}
    kinds: dict[str, int] | None = {} if per_kind else None
    start = now_ns()
    prepare()
    prepared = now_ns() - start
    gc.collect()
    rss_base = peak_rss_bytes()
    wall0, cpu0 = now_ns(), cpu_ns()
    report, made = replay_session(
        path, roots=_roots(workdir), patch_time=patch_time, phases=phases, kinds_ns=kinds
    )
    wall, cpu = now_ns() - wall0, cpu_ns() - cpu0
    rss_peak = peak_rss_bytes()
    # What follows the report: the tape and its 260k entries freed as the loop's locals go.
    phases["teardown_ns"] = wall - sum(phases.values())
    if not report.ok or report.consumed != report.loaded:
        raise AssertionError(
            f"the replay did not pass: ok={report.ok} loaded={report.loaded} "
            f"consumed={report.consumed} mismatches={report.mismatches[:3]!r}"
        )
    return {
        "wall_ns": wall,
        "cpu_ns": cpu,
        "prepare_ns": prepared,
        "phases_ns": phases,
        "made": made,
        "kinds_ns": kinds,
        "loaded": report.loaded,
        "consumed": report.consumed,
        "recorded_duration_ns": report.recorded_duration_ns,
        "rss_delta_bytes": rss_peak - rss_base,
        "gc_enabled": gc.isenabled(),
    }


def child_decode(path: str) -> dict[str, Any]:
    """msgspec alone: read the file and decode every line with the GC paused."""
    decoder = msgspec.json.Decoder(sessiontape.Entry)
    wall0, cpu0 = now_ns(), cpu_ns()
    data = Path(path).read_bytes()
    read = now_ns()
    gc.disable()
    try:
        entries = decoder.decode_lines(data)
    finally:
        gc.enable()
    done = now_ns()
    return {
        "read_ns": read - wall0,
        "decode_ns": done - read,
        "wall_ns": done - wall0,
        "cpu_ns": cpu_ns() - cpu0,
        "entries": len(entries),
    }


def child_profile(path: str, workdir: str, top: int = 18) -> list[dict[str, Any]]:
    """The functions an end-to-end replay spends its time in (cProfile, by own time)."""
    profiler = cProfile.Profile()
    profiler.enable()
    replay_session(path, roots=_roots(workdir))
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = []
    total = stats.total_tt  # type: ignore[attr-defined]
    for (filename, line, name), (_, ncalls, tottime, cumtime, _) in sorted(
        stats.stats.items(),  # type: ignore[attr-defined]
        key=lambda item: item[1][2],
        reverse=True,
    )[:top]:
        where = filename
        for marker in ("/src/", "/bench/", "site-packages/"):
            if marker in filename:
                where = filename.split(marker, 1)[1]
                break
        rows.append(
            {
                "function": f"{where}:{line}({name})",
                "ncalls": ncalls,
                "tottime_s": round(tottime, 4),
                "cumtime_s": round(cumtime, 4),
                "share": round(tottime / total, 4) if total else 0.0,
            }
        )
    return rows


def run(
    *, path: str, file_bytes: int, repeat: int, workdir: Path, profile: bool = True
) -> dict[str, Any]:
    """Alternate fresh-process replays and decodes; medians, ratio and a breakdown."""
    replays, decodes = [], []
    for _ in range(repeat):
        decodes.append(in_subprocess("cases.end_to_end:child_decode", path=path))
        replays.append(
            in_subprocess("cases.end_to_end:child_replay", path=path, workdir=os.fspath(workdir))
        )
    untimed = in_subprocess(
        "cases.end_to_end:child_replay", path=path, workdir=os.fspath(workdir), patch_time=False
    )
    breakdown = in_subprocess(
        "cases.end_to_end:child_replay", path=path, workdir=os.fspath(workdir), per_kind=True
    )
    wall = median([r["wall_ns"] for r in replays])
    cpu = median([r["cpu_ns"] for r in replays])
    decode_wall = median([d["wall_ns"] for d in decodes])
    decode_only = median([d["decode_ns"] for d in decodes])
    decode_cpu = median([d["cpu_ns"] for d in decodes])
    recorded = replays[0]["recorded_duration_ns"]
    made = breakdown["made"]
    per_kind_us = {
        kind: round(breakdown["kinds_ns"][kind] / made[kind] / 1000, 2)
        for kind in ("process", "agent", "store")
        if made.get(kind)
    }
    out: dict[str, Any] = {
        "file_bytes": file_bytes,
        "entries_served": replays[0]["consumed"],
        "calls_made": made,
        "repeat": repeat,
        "replay_wall_ns": wall,
        "replay_cpu_ns": cpu,
        "replay_wall_all_ns": [r["wall_ns"] for r in replays],
        "replay_phases_ns": {
            k: median([r["phases_ns"][k] for r in replays]) for k in replays[0]["phases_ns"]
        },
        "replay_patch_time_false_wall_ns": untimed["wall_ns"],
        "prepare_ns": median([r["prepare_ns"] for r in replays]),
        "replay_peak_rss_delta_bytes": median([r["rss_delta_bytes"] for r in replays]),
        "msgspec_read_decode_wall_ns": decode_wall,
        "msgspec_decode_only_ns": decode_only,
        "msgspec_cpu_ns": decode_cpu,
        "ratio_to_msgspec": wall / decode_wall,
        "ratio_to_msgspec_decode_only": wall / decode_only,
        "ratio_to_msgspec_cpu": cpu / decode_cpu,
        "recorded_duration_ns": recorded,
        "time_compression": recorded / wall,
        "serve_us_per_call_by_kind": per_kind_us,
        "gc": "enabled (the library pauses it while decoding)",
    }
    if profile:
        out["profile"] = in_subprocess(
            "cases.end_to_end:child_profile", path=path, workdir=os.fspath(workdir)
        )
    return out
