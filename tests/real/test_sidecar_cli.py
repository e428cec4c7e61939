"""``slice``, ``scrub`` and ``show`` keep, rewrite and mention sidecar payloads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import sessiontape
from sessiontape import Blob, ProcessCall
from sessiontape.cli import main

from .conftest import PY

#: Its tapes are recorded with redact=False: they hold a token on purpose.
pytestmark = pytest.mark.writes_invalid_tapes

SECRET = "ghp_" + "k7Qm2Xv9Lp4Rt8Wz3Nb6Hc1Jd5Fg0Ys2Ea7U"  # "a" * 36 would be a placeholder, kept


def _tape(path: Path) -> None:
    code = f"import sys; sys.stdout.write(('x' * 99 + '\\n') * 1000 + '{SECRET}\\n')"
    with sessiontape.record(path, redact=False) as tape:
        runner = tape.process_runner()
        with sessiontape.worker("w1"):
            runner.run([PY, "-c", code])
        with sessiontape.worker("w2"):
            runner.run([PY, "-c", "print('small')"])


def _stdout(path: Path) -> Blob:
    call = sessiontape.load(path).entries_for("process")[0]
    assert isinstance(call, ProcessCall)
    assert isinstance(call.stdout, Blob)
    assert call.stdout.sidecar
    return call.stdout


def test_slice_copies_the_sidecar_payloads_it_keeps(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    _tape(tape)
    out = tmp_path / "w1.jsonl"
    assert main(["slice", str(tape), "--worker", "w1", "-o", str(out)]) == 0
    blob = _stdout(out)
    copied = out.parent / "w1.jsonl.blobs" / blob.sha256.replace(":", "-")
    assert copied.read_bytes().endswith(SECRET.encode() + b"\n")
    assert copied.stat().st_mode & 0o777 == 0o600
    assert main(["validate", "--no-secrets-check", str(out)]) == 0


def test_scrub_rewrites_a_sidecar_payload_under_its_new_digest(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    _tape(tape)
    before = _stdout(tape)
    out = tmp_path / "clean.jsonl"
    assert main(["scrub", str(tape), "-o", str(out)]) == 0
    after = _stdout(out)
    assert after.sha256 != before.sha256
    data = (tmp_path / "clean.jsonl.blobs" / after.sha256.replace(":", "-")).read_bytes()
    assert SECRET.encode() not in data
    assert b"[REDACTED:github]" in data
    assert after.size == len(data)


def test_show_mentions_sidecar_payloads(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    _tape(tape)
    shown = subprocess.run(
        [sys.executable, "-m", "sessiontape", "show", str(tape)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "[in the sidecar: stdout 100041 B]" in shown
