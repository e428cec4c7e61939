"""Live re-records left pending: ``live=[...]`` with ``update="pending"``. A live call is
scrubbed before it is pending (a secret it printed never reaches the pending file), and
a payload large enough for the sidecar at level ``full`` is there when the change is
accepted."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

import sessiontape
from sessiontape import ProcessCall
from sessiontape.cassette import pending_path, sidecar_dir
from sessiontape.review import decide

from ._programs import PY, validate

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
#: Bytes of output: past the 64 KiB kept inline, so the output goes to the sidecar.
BIG = 100_000


def _payload(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def program(word: str, *, secret: bool = False) -> list[str]:
    """A process that prints ``word`` many times (and a secret, if asked), then one that
    prints a fixed line."""
    code = f"import sys; sys.stdout.write({word!r} * {BIG})"
    if secret:
        code += f"; print(' token=' + {TOKEN!r})"
    return [
        subprocess.run([PY, "-c", code], capture_output=True, text=True).stdout,
        subprocess.check_output([PY, "-c", "print('fixed')"], text=True),
    ]


def test_a_live_change_is_scrubbed_before_it_is_pending_and_accepted_whole(
    tmp_path: Path,
) -> None:
    tape = tmp_path / "t.jsonl"
    with sessiontape.record(tape, level="full") as recording, recording.patch_subprocess():
        program("a")
    assert sidecar_dir(tape).is_dir()  # the big output went to the sidecar
    before = tape.read_bytes()

    live = sessiontape.replay(tape, live=["process"], update="pending")
    with live, live.patch_subprocess():
        today = program("b", secret=True)
    assert today[0].endswith(f" token={TOKEN}\n")  # the live call ran for real
    report = live.report
    assert report is not None
    assert report.pending_to == str(pending_path(tape))
    assert report.pending == ["update"]
    assert tape.read_bytes() == before
    waiting = pending_path(tape).read_text(encoding="utf-8")
    assert TOKEN not in waiting
    assert "[REDACTED" in waiting
    payloads = sorted(sidecar_dir(tape).iterdir())
    assert len(payloads) == 2  # the recorded output and today's
    for payload in payloads:
        data = payload.read_bytes()
        data = gzip.decompress(data) if payload.name.endswith(".gz") else data
        assert TOKEN.encode() not in data
    assert any(
        b"[REDACTED" in gzip.decompress(p.read_bytes())
        if p.name.endswith(".gz")
        else b"[REDACTED" in p.read_bytes()
        for p in payloads
    )

    [(_, ids, saved)] = decide("accept", [], [tape], every=True)
    assert len(ids) == 1
    assert saved.done
    assert validate(tape) == 0
    assert TOKEN not in tape.read_text(encoding="utf-8")
    first = sessiontape.load(tape).calls[0]
    assert isinstance(first, ProcessCall)
    # Served from the tape, with the answer re-recorded live (scrubbed).
    with sessiontape.replay(tape, strict=True) as again, again.patch_subprocess():
        served = program("b", secret=True)
        assert again.finish().ok
    assert served[0].startswith("b" * BIG)
    assert TOKEN not in served[0]
