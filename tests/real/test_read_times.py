"""Times a program reads between two calls and sends in a request replay with no mask.

On replay the program reads the virtual clock (the end of the last call served), not what
production read; a time in a request that falls in the same recorded gap between calls
as the recorded one is taken as equal to it, and listed in the report.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import MismatchKind

PY = sys.executable
OK = [PY, "-c", "print('ok')"]

# Looked up at each call, as a program does: the replay clock patches the module's names.
READS: dict[str, Callable[[], Any]] = {
    "time.time()": lambda: time.time(),
    "time.time_ns()": lambda: time.time_ns(),
    "milliseconds": lambda: int(time.time() * 1000),
    "time.monotonic()": lambda: time.monotonic(),
    "datetime.now()": lambda: dt.datetime.now().isoformat(),
    "datetime.now(utc)": lambda: dt.datetime.now(dt.timezone.utc).isoformat(),
}


class Log:
    """A user boundary the program sends what it read to (numbers stay numbers)."""

    def write(self, entry: dict[str, Any]) -> str:
        return "written"


def stamped(tape: Any, read: Callable[[], Any], later: float = 0.0) -> list[Any]:
    """Three processes and three log writes, each stamped with a time read just before
    (``later``: seconds added to the last stamp, on replay)."""
    log = tape.boundary("log", Log(), methods=["write"])
    out = []
    for i in range(3):
        stamp = read()
        if i == 2 and later:
            stamp = type(stamp)(stamp + later) if not isinstance(stamp, str) else stamp
        done = subprocess.run([*OK, str(stamp)], capture_output=True, text=True, check=True)
        out.append(done.stdout)
        out.append(log.write({"step": i, "at": read()}))
    return out


def round_trip(
    tmp_path: Path, program: Callable[[Any], Any], replayed: Callable[[Any], Any] | None = None
) -> tuple[Any, Any, sessiontape.ReplayReport]:
    cassette = tmp_path / "times.jsonl"
    with sessiontape.record(cassette) as tape, tape.patch_subprocess():
        recorded = program(tape)
    with sessiontape.replay(cassette) as tape:
        with tape.patch_subprocess():
            today = (replayed or program)(tape)
        report = tape.finish()
    return recorded, today, report


@pytest.mark.parametrize("read", list(READS))
def test_a_time_read_between_calls_replays_unmasked(tmp_path: Path, read: str) -> None:
    recorded, today, report = round_trip(tmp_path, lambda tape: stamped(tape, READS[read]))
    assert today == recorded == ["ok\n", "written"] * 3
    assert report.ok, report.render()
    clock = [c for c in report.correlations if c.how == "clock"]
    where = {(c.boundary, c.path) for c in clock}
    if read == "milliseconds":
        # A whole millisecond read may equal the virtual one (the end of the call served
        # before it): that read needs no matching, and is not listed. On a quick run all
        # six do (CI, 2026-11-28), so how many are listed is not the test's to say; the
        # other reads are matched every time.
        assert where <= {("process", "argv[3]"), ("log", "args[0].at")}
    else:
        assert where == {("process", "argv[3]"), ("log", "args[0].at")}
    assert all(c.served == [] for c in clock)  # matched, never put into an answer


def test_a_time_outside_its_gap_is_a_mismatch(tmp_path: Path) -> None:
    recorded, today, report = round_trip(
        tmp_path,
        lambda tape: stamped(tape, READS["time.time()"]),
        lambda tape: stamped(tape, READS["time.time()"], later=3600.0),
    )
    assert today == recorded
    (mismatch,) = report.mismatches
    assert mismatch.kind is MismatchKind.ARGUMENT_MISMATCH
    assert mismatch.mask_paths == ["process.argv[3]"]


def test_a_number_that_is_no_time_is_compared_as_it_is(tmp_path: Path) -> None:
    def counted(tape: Any, n: int) -> str:
        return subprocess.run([*OK, str(n)], capture_output=True, text=True).stdout

    _, _, report = round_trip(
        tmp_path, lambda tape: counted(tape, 12345678), lambda tape: counted(tape, 12345679)
    )
    (mismatch,) = report.mismatches
    assert mismatch.mask_paths == ["process.argv[3]"]
    assert report.correlations == []
