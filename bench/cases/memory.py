"""Figure 3b: peak memory at 1,000,000 entries, against the file and msgspec's eager decode.

Three fresh interpreters read the same generated tape: one replays it end to end through
the small app loop (:func:`cases.app.replay_session`: load, index, serve every call,
finish), one runs ``sessiontape.load`` on it, and one decodes it with msgspec alone
(``Decoder(Entry).decode_lines`` on the file's bytes, GC paused: every entry decoded
eagerly into the public entry types, the baseline). Each reports its peak RSS above what
it held before (``VmHWM``), compared with the file's size.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .common import in_subprocess

__all__ = ["run"]


def run(*, path: str, file_bytes: int, workdir: Path) -> dict[str, Any]:
    """Peak RSS over file size of a whole replay, a load and msgspec's eager decode."""
    replay = in_subprocess("cases.end_to_end:child_replay", path=path, workdir=os.fspath(workdir))
    load = in_subprocess("cases.load:child_load", path=path, repeat=0)
    eager = in_subprocess("cases.load:child_load", path=path, repeat=0, msgspec_only=True)
    return {
        "file_bytes": file_bytes,
        "entries": load["entries"],
        "replay_peak_rss_bytes": replay["rss_delta_bytes"],
        "replay_wall_ns": replay["wall_ns"],
        "replay_calls": replay["consumed"],
        "load_peak_rss_bytes": load["rss_delta_bytes"],
        "load_ns": load["first_ns"],
        "msgspec_peak_rss_bytes": eager["rss_delta_bytes"],
        "msgspec_ns": eager["first_ns"],
        "replay_rss_to_file": replay["rss_delta_bytes"] / file_bytes,
        "load_rss_to_file": load["rss_delta_bytes"] / file_bytes,
        "msgspec_rss_to_file": eager["rss_delta_bytes"] / file_bytes,
    }
