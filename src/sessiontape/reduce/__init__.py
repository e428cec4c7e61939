"""Reduction: the smallest tape that still fails the same way, the fewest tapes that cover a
corpus.

Both replay many cassettes, each exactly as ``pytest --replay`` would, in worker processes
that load the project once (:class:`Pool`), and decide from the verdicts
(:class:`Verdict`, :class:`Signature`). :func:`shrink` cuts a failing tape down
(``_search.py`` over the cuts of ``_cuts.py``); :func:`survey` says what each tape of a
corpus covers and which to keep, and :func:`move_out` moves the others away. The
``sessiontape shrink`` and ``sessiontape corpus`` commands parse their options, call these
and report.

Names are imported on first use (``sessiontape._lazy``): the command line imports this
front with every command, and the replay workers' machinery only when one replays.
"""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ._corpus import CorpusResult, CorpusTape, Moved, move_out, survey
    from ._cuts import Cut, Cuts, Unit, simpler_outputs
    from ._errors import ReduceError
    from ._pool import Pool
    from ._search import ShrinkProgress
    from ._shrink import ShrinkResult, check_output, shrink
    from ._tasks import task_windows, task_windows_of
    from ._until import Until
    from ._verdict import Oracle, Signature, Verdict, signature_of_mismatch

#: Each name and the module that defines it, imported on first access.
_EXPORTS: dict[str, str] = {
    "CorpusResult": "._corpus",
    "CorpusTape": "._corpus",
    "Cut": "._cuts",
    "Cuts": "._cuts",
    "Moved": "._corpus",
    "Oracle": "._verdict",
    "Pool": "._pool",
    "ReduceError": "._errors",
    "ShrinkProgress": "._search",
    "ShrinkResult": "._shrink",
    "Signature": "._verdict",
    "Unit": "._cuts",
    "Until": "._until",
    "Verdict": "._verdict",
    "check_output": "._shrink",
    "move_out": "._corpus",
    "shrink": "._shrink",
    "signature_of_mismatch": "._verdict",
    "simpler_outputs": "._cuts",
    "survey": "._corpus",
    "task_windows": "._tasks",
    "task_windows_of": "._tasks",
}

__all__ = [
    "CorpusResult",
    "CorpusTape",
    "Cut",
    "Cuts",
    "Moved",
    "Oracle",
    "Pool",
    "ReduceError",
    "ShrinkProgress",
    "ShrinkResult",
    "Signature",
    "Unit",
    "Until",
    "Verdict",
    "check_output",
    "move_out",
    "shrink",
    "signature_of_mismatch",
    "simpler_outputs",
    "survey",
    "task_windows",
    "task_windows_of",
]

if not TYPE_CHECKING:  # mypy sees the imports above, and no catch-all __getattr__
    __getattr__, __dir__ = exports(__name__, _EXPORTS)
