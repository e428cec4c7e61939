"""Figure 3: cassette load throughput (MB/s) and peak memory against the file size.

Each tape is loaded in a fresh interpreter: peak RSS is the peak after the load minus the
peak after the imports (``VmHWM``, which is ``ru_maxrss`` for this process image alone;
the file's bytes, the decoded entries and the indexes all count), and the load time is
the median of several loads in that process. msgspec alone (read the file,
``decode_lines`` with the GC paused) is measured the same way beside it.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import msgspec

import sessiontape

from .common import in_subprocess, median, now_ns, peak_rss_bytes

__all__ = ["child_load", "run"]


def child_load(path: str, repeat: int, msgspec_only: bool = False) -> dict[str, Any]:
    """Peak RSS of the first load, then the load time of ``repeat`` loads."""
    decoder = msgspec.json.Decoder(sessiontape.Entry)

    def load() -> Any:
        if not msgspec_only:
            return sessiontape.load(path)
        data = Path(path).read_bytes()
        gc.disable()
        try:
            return decoder.decode_lines(data)
        finally:
            gc.enable()

    gc.collect()
    base = peak_rss_bytes()
    start = now_ns()
    loaded = load()
    first = now_ns() - start
    peak = peak_rss_bytes()
    entries = len(loaded)
    del loaded
    times = [first]
    for _ in range(repeat - 1):
        gc.collect()
        start = now_ns()
        loaded = load()
        times.append(now_ns() - start)
        del loaded
    return {
        "rss_base_bytes": base,
        "rss_peak_bytes": peak,
        "rss_delta_bytes": peak - base,
        "load_ns": times,
        "entries": entries,
    }


def run(*, tapes: dict[str, dict[str, Any]], repeat: int) -> dict[str, Any]:
    """For each tape: sessiontape.load and msgspec alone, MB/s and peak RSS / file size."""
    out: dict[str, Any] = {}
    for name, tape in tapes.items():
        size = tape["bytes"]
        ours = in_subprocess("cases.load:child_load", path=tape["path"], repeat=repeat)
        raw = in_subprocess(
            "cases.load:child_load", path=tape["path"], repeat=repeat, msgspec_only=True
        )
        load_ns = median(ours["load_ns"])
        raw_ns = median(raw["load_ns"])
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
