"""Shared set-up of the test suite."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

import sessiontape
import sessiontape.tape

pytest_plugins = ["pytester"]

# pytester puts sys.modules back as it was after each in-process run, dropping the modules
# first imported inside it. sessiontape's fronts are lazy: they import a module on first
# access and keep what it gave, so a module dropped that way would be imported again later,
# as a second copy of its classes. Every public name is loaded here, before any test, so
# the suite holds one copy of each. (tests/test_startup.py checks what a fresh interpreter
# loads, in subprocesses.)
for _front in (sessiontape, sessiontape.tape):
    for _name in _front.__all__:
        getattr(_front, _name)


@pytest.fixture(autouse=True)
def _no_tape_left_open() -> Iterator[None]:
    """A test that leaves a tape open leaves threading.Thread.start patched and the
    derived thread names counting on, and so breaks the tests that run after it in the
    same process: it fails here, under its own name."""
    from sessiontape import _context

    yield
    left = _context._installed
    if left:
        # Put the process back first, so that only this test fails.
        _context._installed = 0
        threading.Thread.start = _context._REAL_START  # type: ignore[method-assign]
        ThreadPoolExecutor.submit = _context._REAL_SUBMIT  # type: ignore[method-assign,assignment]
        pytest.fail(f"the test left {left} tape(s) open: close every tape it creates")
