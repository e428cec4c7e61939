"""``nox -s reliability`` writes its figures into RELIABILITY.md between two markers."""

from __future__ import annotations

import shutil
from pathlib import Path

from . import reliability

FIGURES = {
    "when": "2026-01-01", "machine": "2 cores", "seconds": 300.0,
    "fuzz": {
        "mutation_cases": 104_000, "mutation_loaded": 30_000, "mutation_refused": 74_000,
        "mutation_failures": [], "slowest_s": 0.05, "by_mutation": {"truncate": 9},
        "hypothesis_cases": 12_000, "hypothesis_loaded": 2_000, "hypothesis_failures": [],
    },
    "kills": {"trials": 200, "torn": 7, "lines_min": 90, "lines_max": 900, "failures": []},
    "update_kills": {"points": 60, "old": 50, "new": 10, "finish_ms": 80.0, "failures": []},
    "accept_kills": {"points": 60, "old": 40, "new": 20, "finish_ms": 90.0, "failures": []},
    "faults": {"cases": 61, "by_fault": {"full disk": 14}, "failures": []},
    "stress": {"rounds": 5, "threads": 16, "calls": 80_000, "failures": []},
    "secrets": {
        "shapes": 41, "places": 20, "seeds": 3, "pairs": 2460, "leaks": 0,
        "leaks_by_kind": {"jwt": 0}, "leaks_by_place": {"argv": 0},
    },
    "scrub_us": {"prose": 0.8},
}  # fmt: skip


def test_the_figures_go_between_the_markers(tmp_path: Path) -> None:
    doc = tmp_path / "RELIABILITY.md"
    shutil.copy(reliability.ROOT / "RELIABILITY.md", doc)
    before = doc.read_text()
    block = reliability.render(FIGURES)
    reliability.write_into(doc, block)
    after = doc.read_text()
    head, tail = before.split(reliability.BEGIN)[0], before.split(reliability.END)[1]
    assert after == head + block + tail
    assert "| 116,000 fuzzed tapes (104,000 mutations of real cassettes, 12,000 from " in block
    assert "2,460 (secret, place) pairs: 41 shapes × 20 places × 3 instances | 0 |" in block
    assert (
        "| a killed accept leaves the old tape or the new one, whole; accepting again "
        "completes | 60 kill -9 points over an accept's writing of 90 ms (40 left the old "
        "tape, 20 the new one) | 0 |"
    ) in block
    assert (
        "| 60 kill -9 points over an update's finish of 80 ms (50 left the old tape, 10 the "
        "new one) | 0 |" in block
    )
    assert reliability.failures_of(FIGURES) == []
