"""The reviewed list of CPython tests that cannot pass on replay is well-formed: every
entry names a known reason and a detail, and matches a test the interpreter has."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import replay_exclusions  # noqa: E402 (beside this file, not a package)
import run_conformance as run  # noqa: E402


def test_every_entry_gives_a_known_reason_and_a_detail() -> None:
    assert replay_exclusions.EXCLUDED
    for pattern, (reason, detail) in replay_exclusions.EXCLUDED.items():
        assert reason in replay_exclusions.REASONS, pattern
        assert detail.strip(), pattern


@pytest.mark.skipif(
    importlib.util.find_spec("test.test_subprocess") is None,
    reason="this interpreter ships without CPython's test package",
)
def test_every_entry_and_the_quick_slice_match_tests_of_this_interpreter() -> None:
    ids = run.collect(quick=False, keyword=None)
    shorts = [i.split(".", 1)[1] for i in ids]
    unmatched = [
        pattern
        for pattern in replay_exclusions.EXCLUDED
        if not any(run.fnmatch.fnmatchcase(s, pattern) for s in shorts)
    ]
    assert set(unmatched) <= set(replay_exclusions.SOME_VERSIONS), unmatched
    quick = run.collect(quick=True, keyword=None)
    assert 0 < len(quick) < len(ids)
    # The slice is of tests that can pass on replay.
    assert not [i for i in quick if run.excluded(i) is not None]
