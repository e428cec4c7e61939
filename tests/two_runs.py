"""Two recorded runs of one small program that part at one call: the side-by-side tests'.

Both runs have two workers. Each worker says hello, checks the status and merges its task;
in run B, worker w2 merges another branch (``task/c``, not ``task/b``), pushes it (a call
only B makes) and checks the status again, as run A does. So the runs part at w2's merge:
A's merge is a call only A made, B's merge and push are calls only B made, and every
other call (three of w1's, three of w2's) is made by both. Entries are written with
exact times (a call every 10 ms, each taking 4 ms, by worker), so a test can say where
each is drawn.
"""

from __future__ import annotations

from pathlib import Path

from sessiontape import ProcessCall, SessionEnd, SessionStart
from sessiontape.cassette import encode_entry

MS = 1_000_000

#: Each run's calls, in the order they ran: (worker, argv).
CALLS: dict[str, list[tuple[str, list[str]]]] = {
    "a": [
        ("w1", ["echo", "hello", "w1"]),
        ("w2", ["echo", "hello", "w2"]),
        ("w1", ["git", "status"]),
        ("w2", ["git", "status"]),
        ("w1", ["git", "merge", "task/a"]),
        ("w2", ["git", "merge", "task/b"]),
        ("w2", ["git", "status"]),
    ],
    "b": [
        ("w1", ["echo", "hello", "w1"]),
        ("w2", ["echo", "hello", "w2"]),
        ("w1", ["git", "status"]),
        ("w2", ["git", "status"]),
        ("w1", ["git", "merge", "task/a"]),
        ("w2", ["git", "merge", "task/c"]),
        ("w2", ["git", "push", "origin", "task/c"]),
        ("w2", ["git", "status"]),
    ],
}
#: Calls both runs made, and calls only one made.
PAIRS = 6
ONLY_A = 1
ONLY_B = 2
#: The seq (in both tapes) of w2's merge, where the runs part, and when it started.
PARTING_SEQ = 6
PARTING_NS = 60 * MS


def write_run(path: Path, side: str) -> Path:
    """Write run ``side`` (``a`` or ``b``) to ``path``."""
    entries: list[bytes] = []
    start = SessionStart(seq=0, ts_ns=0, mono_ns=0, run_id=f"run-{side}",
                         recorded_at="2026-01-01T00:00:00+00:00", entrypoint="app run")  # fmt: skip
    entries.append(encode_entry(start))
    seq = 0
    for seq, (worker, argv) in enumerate(CALLS[side], start=1):
        t = seq * 10 * MS
        out = " ".join(argv[1:]) + "\n"
        call = ProcessCall(seq=seq, ts_ns=t, mono_ns=t, worker=worker, argv=argv,
                           returncode=0, stdout=out, stderr="", duration_ns=4 * MS)  # fmt: skip
        entries.append(encode_entry(call))
    end = (seq + 1) * 10 * MS
    session_end = SessionEnd(seq=seq + 1, ts_ns=end, mono_ns=end, outcome={}, duration_ns=end)
    entries.append(encode_entry(session_end))
    path.write_bytes(b"".join(entries))
    return path
