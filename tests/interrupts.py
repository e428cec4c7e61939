"""Ctrl-C as at an interactive terminal, whatever started the test run.

A command started in the background by a shell without job control (``pytest ... &`` in
a script, ``nohup``, ``setsid bash -c '... &'``, some CI runners) starts with SIGINT
ignored, as POSIX asks of such shells, and every process it starts inherits that: Python
then installs no ``KeyboardInterrupt`` handler, and a SIGINT does nothing. A test about
what Ctrl-C does (shrink keeping its best tape, ``serve`` stopping cleanly, a child's exit
code after SIGINT) sets the terminal's state first, in its process and so in the children
it starts: a caught signal is reset to its default at exec, and a Python child then
installs its ``KeyboardInterrupt`` handler as it does at a terminal.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ctrl_c_interrupts"]


@contextmanager
def ctrl_c_interrupts() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` in this process, and children started in the
    block are interruptible; the handler before is put back after."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("ctrl_c_interrupts() sets a signal handler: the main thread only")
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
