"""The zoo matrix: every program of the zoo through every capability that applies to it.

One test per cell (``<program>-<capability>``); ``matrix.py`` says which cells exist,
which fail today for a known defect, and which form the fast slice.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import pytest

from . import caps_chaos, caps_fork, caps_keep, caps_look, caps_record, caps_review
from .harness import Cell, Shelf
from .matrix import CAPABILITIES, FAST, FLAKY, KNOWN, NOT_APPLICABLE, PROGRAMS, ZooProgram, cells

CAPABILITY: dict[str, Callable[[Cell], None]] = {}
for _module in (caps_record, caps_keep, caps_review, caps_chaos, caps_look, caps_fork):
    for _name in CAPABILITIES:
        if hasattr(_module, _name):
            CAPABILITY[_name] = getattr(_module, _name)


def test_the_matrix_names_only_cells_that_exist() -> None:
    """Every capability has its function; every mark and every fast cell is a cell."""
    assert sorted(CAPABILITY) == sorted(CAPABILITIES)
    names = [p.name for p in PROGRAMS]
    assert len(set(names)) == len(names)
    every = {(p, c) for p in names for c in CAPABILITIES}
    for table in (KNOWN, FLAKY, NOT_APPLICABLE):
        assert set(table) <= every
    marked = set(KNOWN) | set(FLAKY) | set(FAST)
    assert not marked & set(NOT_APPLICABLE)
    assert not set(KNOWN) & set(FLAKY)
    assert not set(FAST) & (set(KNOWN) | set(FLAKY)), "the fast slice must gate"


@pytest.mark.parametrize(("program", "capability"), cells())
def test_cell(
    program: ZooProgram,
    capability: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    shelf: Shelf,
) -> None:
    cell = Cell(program, tmp_path, monkeypatch, request, shelf)
    try:
        CAPABILITY[capability](cell)
        cell.check_written()
    finally:
        # What a failed run left behind (an asyncio transport of a closed loop) is
        # finalized here, not while pytest parses source to show the failure: on CPython
        # 3.11 a finalizer running inside ast.parse raises SystemError ("AST constructor
        # recursion depth mismatch") and takes the xdist worker down.
        gc.collect()
