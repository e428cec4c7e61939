"""The failed calls of a tape, classified (``report.classify_error``) and counted.

The commands share one classifier: the project's ``sessiontape_classify_error`` hook,
then the built-in rules. :class:`Failures` gathers what ``stats`` prints: counts per
class, per boundary and per worker, and the last failure of each.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any, Final, final

from ..cassette import CallEntry, Entry, ProcessCall, boundary_of
from ..report import ERROR_CLASSES, classify_error

__all__ = [
    "ERROR_CLASSES",
    "Failures",
    "classifier",
    "error_column",
    "error_counts",
    "failed_rows",
    "failure_text",
]

#: The longest error message ``stats`` repeats (the tape has it whole).
_MESSAGE_WIDTH: Final = 200


def classifier() -> Callable[[Any], str | None]:
    """The error class of an entry (``None`` when it did not fail): the project's
    ``sessiontape_classify_error`` hook first, then the rules of ``report/_classify.py``."""
    from .. import _hooks  # the plugin manager loads entry points: only when asked

    custom = _hooks.error_classifier()
    if custom is None:
        return classify_error
    return lambda entry: classify_error(entry, custom)


def failure_text(call: CallEntry) -> str:
    """How a failed call failed, in a line: ``exit 128``, ``RateLimitError: ...``."""
    if isinstance(call, ProcessCall):
        if call.spawn_error is not None:
            text = f"{call.spawn_error.type}: {call.spawn_error.message}"
        elif call.timed_out:
            text = f"timed out after {call.timeout}s"
        else:
            text = f"exit {call.returncode}"
    else:
        error = call.error
        text = "" if error is None else f"{error.type}: {error.message}"
    return text if len(text) <= _MESSAGE_WIDTH else text[: _MESSAGE_WIDTH - 1] + "…"


@final
class Failures:
    """Failed calls counted per class, per boundary and per worker, with the last of each."""

    def __init__(self, origin: int) -> None:
        self._origin = origin  # the session's monotonic start
        self.total = 0
        self.classes: dict[str, dict[str, Any]] = {}
        self.boundaries: dict[str, dict[str, Any]] = {}
        self.workers: dict[str, dict[str, Any]] = {}

    def add(self, call: CallEntry, error_class: str) -> None:
        """Count one failed call of ``error_class``."""
        self.total += 1
        boundary = boundary_of(call) or "?"
        last = {
            "seq": call.seq,
            "class": error_class,
            "boundary": boundary,
            "worker": call.worker,
            "start_ns": call.mono_ns - self._origin,
            "error": failure_text(call),
        }
        for table, key in (
            (self.classes, error_class),
            (self.boundaries, boundary),
            (self.workers, call.worker),
        ):
            row = table.get(key)
            if row is None:
                row = table[key] = {"count": 0, "classes": {}, "last": None}
            row["count"] += 1
            row["classes"][error_class] = row["classes"].get(error_class, 0) + 1
            row["last"] = last

    def as_dict(self) -> dict[str, Any]:
        """The counts as JSON-ready data (classes in :data:`ERROR_CLASSES` order)."""
        order = {name: i for i, name in enumerate(ERROR_CLASSES)}
        classes = {
            name: {"count": row["count"], "last": row["last"]}
            for name, row in sorted(self.classes.items(), key=lambda kv: order.get(kv[0], 99))
        }
        return {
            "total": self.total,
            "classes": classes,
            "boundaries": self.boundaries,
            "workers": self.workers,
        }


_ERROR_INDEX: Final = {name: i for i, name in enumerate(ERROR_CLASSES)}


def error_column(
    entries: Sequence[Entry],
    statuses: list[int],
    failed: int,
    classify: Callable[[Any], str | None] | None = None,
) -> list[int | None]:
    """Each row's error class, as its index in :data:`ERROR_CLASSES` (``None`` for an
    entry that did not fail). Only the rows whose status is ``failed`` are classified;
    they are found in C, so a million rows without a failure cost milliseconds."""
    column: list[int | None] = [None] * len(statuses)
    rows = list(itertools.compress(range(len(statuses)), map(failed.__eq__, statuses)))
    if not rows:
        return column
    if classify is None:
        classify = classifier()
    for index in rows:
        found = classify(entries[index])
        if found is not None:
            column[index] = _ERROR_INDEX[found]
    return column


def failed_rows(column: list[int | None]) -> list[int]:
    """The rows of an :func:`error_column` that are failed calls (found in C)."""
    if column.count(None) == len(column):
        return []
    is_set = map(operator.is_not, column, itertools.repeat(None))
    return list(itertools.compress(range(len(column)), is_set))


def error_counts(column: list[int | None]) -> dict[str, int]:
    """How many rows of an :func:`error_column` are of each class."""
    counts = dict.fromkeys(ERROR_CLASSES, 0)
    for index in failed_rows(column):
        counts[ERROR_CLASSES[column[index]]] += 1  # type: ignore[index]
    return counts
