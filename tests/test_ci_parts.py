"""``--part=K/N`` (tests/conftest.py): CI spreads the fast slice over its interpreters
with it, so the parts must hold every test exactly once, whatever order pytest-randomly
gives each process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Two modules of the fast slice, quick to collect.
MODULES = ("tests/test_clock.py", "tests/test_clock_holds.py")


def _collected(*args: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *args, *MODULES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    return done.returncode, ids


def test_the_parts_hold_every_test_once_in_any_order() -> None:
    code, whole = _collected("-p", "no:randomly")
    assert code == 0
    assert len(whole) > 30
    parts = []
    for k, seed in ((1, "1"), (2, "2"), (3, "3")):  # each part dealt in another order
        code, ids = _collected(f"--part={k}/3", f"--randomly-seed={seed}")
        assert code == 0
        parts.append(set(ids))
    assert sum(len(p) for p in parts) == len(whole)
    assert set().union(*parts) == set(whole)
    # Dealt like cards: no part is more than one test larger than another.
    assert max(len(p) for p in parts) - min(len(p) for p in parts) <= 1


def test_a_part_that_is_not_k_of_n_is_a_usage_error() -> None:
    for value in ("4/3", "a/b"):  # out of range, not a fraction
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", f"--part={value}", MODULES[0]],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 4, (value, done.stdout, done.stderr)
        assert f"--part={value}: want K/N with 1 <= K <= N" in done.stderr
