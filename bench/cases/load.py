"""Figure 3: cassette load throughput (MB/s) and peak memory against the file size.

Each tape is loaded in a fresh interpreter: peak RSS is the peak after the first load
minus the peak before it (``VmHWM``, which is ``ru_maxrss`` for this process image alone;
the file's bytes, the decoded entries and the indexes all count). Then, in the same
interpreter, ``sessiontape.load`` and msgspec alone (read the file, ``decode_lines`` into
the public entry types with the GC paused) take turns, and their median times are
compared. msgspec's own peak RSS is taken in another fresh interpreter.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

import sessiontape

from .common import in_subprocess, median, now_ns, peak_rss_bytes

__all__ = ["child_load", "run"]


def _timed(load: Callable[[], Any]) -> tuple[int, int]:
    """Nanoseconds of one ``load()`` from a collected heap, and how many entries it gave."""
    gc.collect()
    start = now_ns()
    loaded = load()
    elapsed = now_ns() - start
    return elapsed, len(loaded)


def child_load(path: str, repeat: int, msgspec_only: bool = False) -> dict[str, Any]:
    """Peak RSS of a first load (``sessiontape.load``, or msgspec alone), then ``repeat``
    rounds each timing one ``sessiontape.load`` and one msgspec decode."""
    decoder = msgspec.json.Decoder(sessiontape.Entry)

    def eager() -> Any:
        data = Path(path).read_bytes()
        gc.disable()
        try:
            return decoder.decode_lines(data)
        finally:
            gc.enable()

    loaders = {"sessiontape": lambda: sessiontape.load(path), "msgspec": eager}
    gc.collect()
    base = peak_rss_bytes()
    first, entries = _timed(loaders["msgspec" if msgspec_only else "sessiontape"])
    peak = peak_rss_bytes()
    times: dict[str, list[int]] = {kind: [] for kind in loaders}
    for _ in range(repeat):
        for kind, load in loaders.items():
            times[kind].append(_timed(load)[0])
    return {
        "rss_base_bytes": base,
        "rss_peak_bytes": peak,
        "rss_delta_bytes": peak - base,
        "first_ns": first,
        "load_ns": times["sessiontape"],
        "msgspec_ns": times["msgspec"],
        "entries": entries,
    }


def run(*, tapes: dict[str, dict[str, Any]], repeat: int) -> dict[str, Any]:
    """For each tape: sessiontape.load and msgspec alone, MB/s and peak RSS / file size."""
    out: dict[str, Any] = {}
    for name, tape in tapes.items():
        size = tape["bytes"]
        ours = in_subprocess("cases.load:child_load", path=tape["path"], repeat=repeat)
        raw = in_subprocess("cases.load:child_load", path=tape["path"], repeat=0, msgspec_only=True)
        load_ns = median(ours["load_ns"])
        raw_ns = median(ours["msgspec_ns"])
        out[name] = {
            "file_bytes": size,
            "entries": ours["entries"],
            "load_ns": load_ns,
            "load_mb_per_s": size / 1e6 / (load_ns / 1e9),
            "msgspec_ns": raw_ns,
            "msgspec_mb_per_s": size / 1e6 / (raw_ns / 1e9),
            "load_to_msgspec": load_ns / raw_ns,
            "peak_rss_delta_bytes": ours["rss_delta_bytes"],
            "peak_rss_to_file": ours["rss_delta_bytes"] / size,
            "msgspec_peak_rss_delta_bytes": raw["rss_delta_bytes"],
            "msgspec_peak_rss_to_file": raw["rss_delta_bytes"] / size,
            "repeat": repeat,
        }
    return out
