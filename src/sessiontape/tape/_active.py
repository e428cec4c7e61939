"""Which tape is running, found from any thread: what ``sessiontape.patched()`` asks.

The ambient worker and parent live in contextvars, which a new thread does not inherit;
a change marker must answer the same in the thread that made the tape, in any thread the
application starts and inside asyncio tasks. So the tapes in use are kept here too, in a
process-wide list: the tape made in the caller's own context wins, and otherwise the one
made last that is still open.
"""

from __future__ import annotations

import threading
import weakref
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final

from .._errors import UsageError

if TYPE_CHECKING:
    from ._base import Tape

__all__ = ["activate", "active_tape", "deactivate", "patched"]

_lock = threading.Lock()
#: The tapes open in this process, oldest first.
_open: list[Tape] = []
#: The tape made in this context (and the contexts copied from it), held weakly: a closed
#: tape and its recording are not kept alive by the context that made them.
_own: Final[ContextVar[weakref.ref[Tape] | None]] = ContextVar("sessiontape_tape", default=None)


def activate(tape: Tape) -> None:
    """Note ``tape`` as open (the tapes call it when they are made)."""
    with _lock:
        _open.append(tape)
    _own.set(weakref.ref(tape))


def deactivate(tape: Tape) -> None:
    """Note ``tape`` as closed (idempotent)."""
    with _lock:
        for i in range(len(_open) - 1, -1, -1):
            if _open[i] is tape:
                del _open[i]
                break


def active_tape() -> Tape | None:
    """The tape the calling code runs under, or ``None`` outside any tape."""
    ref = _own.get()
    own = ref() if ref is not None else None
    with _lock:
        if own is not None and any(t is own for t in _open):
            return own
        return _open[-1] if _open else None


def patched(change_id: str) -> bool:
    """Whether the code is to take the path of the deliberate change ``change_id``.

    Guard a change of behaviour with it, so that tapes recorded before the change keep
    replaying the old path::

        if sessiontape.patched("fetch-before-merge"):
            runner.run(["git", "fetch", "origin"], cwd=repo)

    While recording it returns ``True`` and the tape notes that the code knew the id (a
    ``patched`` entry). On replay it returns ``True`` only when the tape was recorded by
    code that knew the id. Outside any tape (production without recording) it returns
    ``True``. It may be called from any thread and from asyncio code.
    """
    if not isinstance(change_id, str) or not change_id:
        raise UsageError(f"patched() takes a non-empty str id, got {change_id!r}.")
    tape = active_tape()
    return True if tape is None else tape.patched(change_id)
