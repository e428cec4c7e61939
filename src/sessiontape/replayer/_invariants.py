"""Invariants a project declares: checks of its own state after every verify-boundary call.

An invariant is a function of no arguments (a closure over the application's state, or the
``sessiontape_invariant`` hook bound to the replayed stores). It holds when it returns
``None`` or ``True``; it is violated when it returns ``False`` or a message, or raises
``AssertionError``. Replay checks them only when some are declared: a replay without
invariants runs no check at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._context import worker_var
from ..report import MismatchKind
from ._outcome import Outcome

__all__ = ["Invariant", "Invariants", "violation"]

#: A declared invariant: ``None``/``True`` when it holds, ``False`` or a message when not.
Invariant = Callable[[], Any]


def _name(check: Invariant) -> str:
    return str(getattr(check, "__qualname__", None) or getattr(check, "__name__", repr(check)))


def violation(checks: Iterable[Invariant]) -> str | None:
    """The first violated invariant's message, or ``None`` when they all hold."""
    for check in checks:
        try:
            result = check()
        except AssertionError as exc:
            return str(exc) or f"the invariant {_name(check)} failed an assertion"
        except Exception as exc:
            return f"the invariant {_name(check)} raised {type(exc).__qualname__}: {exc}"
        if result is None or result is True:
            continue
        if result is False:
            return f"the invariant {_name(check)} does not hold"
        if isinstance(result, str):
            if result:
                return result
            continue
        if isinstance(result, Iterable):
            # The hook's results: one per implementation.
            for item in result:
                if item is False:
                    return "a sessiontape_invariant hook says an invariant does not hold"
                if isinstance(item, str) and item:
                    return item
            continue
        return f"the invariant {_name(check)} returned {result!r}, not None, a bool or a message"
    return None


class Invariants:
    """A plain replay's declared invariants, reporting violations to its outcome."""

    def __init__(self, outcome: Outcome) -> None:
        self._outcome = outcome
        self._checks: list[Invariant] = []
        self._reported: set[str] = set()

    def add(self, check: Invariant) -> None:
        self._checks.append(check)

    def checking(self, turn_done: Callable[[str, int], None]) -> Callable[[str, int], None]:
        """``turn_done`` checking the invariants first (the call's turn is still held, so
        no other verify call runs while they are checked)."""

        def checked_turn_done(name: str, seq: int) -> None:
            try:
                self.check(name, seq)
            finally:
                turn_done(name, seq)

        return checked_turn_done

    def check(self, boundary: str, seq: int | None) -> None:
        """Report a violated invariant, once per message, where it was first seen."""
        message = violation(self._checks)
        if message is None or message in self._reported:
            return
        self._reported.add(message)
        after = f" after the call at seq {seq}" if seq is not None else " at the end"
        self._outcome.collect(
            MismatchKind.INVARIANT_VIOLATED,
            seq=seq,
            worker=worker_var.get(),
            boundary=boundary,
            message=f"an invariant does not hold{after}: {message}",
            actual={"message": message},
        )
