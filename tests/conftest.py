"""Shared set-up of the test suite."""

from __future__ import annotations

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
