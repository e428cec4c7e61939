"""A replayed process's end, as the program sees it through the pipes the pump feeds.

When a real process exits, its stdin closes with its output: a program that has read
the output to its end and writes again gets EPIPE. The pump ends a replayed process the
same way every time (stdin first), so a program's next write after the end never
depends on which thread the machine runs first.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from sessiontape.boundaries._popen import _pump

#: Real seconds a wait below may take before the test calls it hung.
BOUND = 60.0


def test_a_write_after_the_end_of_the_output_finds_the_process_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    wrote = threading.Event()
    found: list[str] = []

    def program() -> None:
        """Read the output to its end, then write once more."""
        while os.read(out_r, 1024):
            pass
        try:
            os.write(stdin_w, b"more\n")
            found.append("written")
        except BrokenPipeError:
            found.append("gone")
        wrote.set()

    real = _pump.close_quietly

    def close_quietly(*fds: Any) -> None:
        # The program runs as soon as the output ends, before the pump goes on.
        for fd in fds:
            real(fd)
            if fd == out_w:
                assert wrote.wait(BOUND)

    monkeypatch.setattr(_pump, "close_quietly", close_quietly)
    pump = _pump.Pump(
        [("stdout", "answer\n")],
        stdin=stdin_r,
        outputs={"stdout": out_w, "stderr": None},
        decode=lambda index, payload: str(payload).encode(),
        ends_by_itself=True,
        name="test",
    )
    reader = threading.Thread(target=program)
    reader.start()
    try:
        pump.start()
        reader.join(BOUND)
        assert not reader.is_alive()
        assert found == ["gone"]
    finally:
        pump.stop(BOUND)
        for fd in (stdin_w, out_r):
            os.close(fd)
