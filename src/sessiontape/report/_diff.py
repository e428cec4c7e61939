"""The field-level diff whose paths can be pasted into a noise mask, and the nearest
recorded candidate for a request that matched nothing."""

from __future__ import annotations

import enum
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ._model import Candidate, FieldDiff
from ._values import MISSING, ValueKind, safe_repr, struct_fields, value_kind

__all__ = ["NEAREST_SCAN_LIMIT", "diff_values", "diff_values_counted", "nearest_candidate"]

NEAREST_SCAN_LIMIT: Final = 5000

# A single-line string shorter than this is shown whole, so an offset hint adds nothing.
_DETAIL_MIN_LEN: Final = 20
# Characters of context on each side of the first differing offset in a detail hint.
_WINDOW: Final = 12


def _join_key(path: str, key: Any) -> str:
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}" if path else key
    # JSON quoting, because a tape's keys are JSON strings and a mask parser can read it back.
    return f"{path}[{json.dumps(str(key), ensure_ascii=False)}]"


def _safe_equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        # Array-likes refuse bool(); their repr is the best equality we can offer.
        return safe_repr(a) == safe_repr(b)


#: Types whose equal values never differ for the walk (unlike numbers: ``True == 1``).
_PLAIN: Final = frozenset({str, type(None)})


class _OverBudget(Exception):
    """Raised inside a diff walk once the count passes ``stop_after``."""


class _Differ:
    """One diff walk: keeps the first ``limit`` diffs and counts all of them."""

    __slots__ = ("count", "diffs", "limit", "stop_after")

    def __init__(self, limit: int, stop_after: int | None = None) -> None:
        self.diffs: list[FieldDiff] = []
        self.count = 0
        self.limit = limit
        self.stop_after = stop_after

    @property
    def keeping(self) -> bool:
        # Once the limit is reached no later diff is stored, so paths need not be built.
        return self.count < self.limit

    def add(self, path: str, expected: Any, actual: Any, detail: str | None = None) -> None:
        if self.keeping:
            self.diffs.append(FieldDiff(path, expected, actual, detail))
        self.count += 1
        if self.stop_after is not None and self.count > self.stop_after:
            raise _OverBudget

    def walk(self, expected: Any, actual: Any, path: str) -> None:
        if expected is actual:
            return
        kind = type(expected)
        if kind is type(actual) and kind in _PLAIN and expected == actual:
            # Two equal strings (or Nones): no diff, and no kinds to look up. Most fields
            # of two requests are these, and nearest_candidate walks thousands of requests.
            return
        ke, ka = value_kind(expected), value_kind(actual)
        if ke is ValueKind.STRUCT or ka is ValueKind.STRUCT:
            if ke is ka and type(expected) is not type(actual):
                self.add(path, expected, actual)
                return
            # A live Struct against its decoded dict form compares field by field.
            if ke is ValueKind.STRUCT:
                expected, ke = struct_fields(expected), ValueKind.MAP
            if ka is ValueKind.STRUCT:
                actual, ka = struct_fields(actual), ValueKind.MAP
        if ke is not ka:
            self.add(path, expected, actual)
        elif ke is ValueKind.MAP:
            self._walk_map(expected, actual, path)
        elif ke is ValueKind.SEQ:
            self._walk_seq(expected, actual, path)
        elif ke is ValueKind.STR or ke is ValueKind.BYTES:
            if expected != actual:
                detail = _text_detail(expected, actual) if self.keeping else None
                self.add(path, expected, actual, detail)
        elif ke is ValueKind.NUM:
            if expected != actual and not (
                isinstance(expected, float)
                and isinstance(actual, float)
                and math.isnan(expected)
                and math.isnan(actual)
            ):
                self.add(path, expected, actual)
        elif ke is ValueKind.NONE:
            return
        elif not _safe_equal(expected, actual):
            self.add(path, expected, actual)

    def _walk_map(self, expected: Mapping[Any, Any], actual: Mapping[Any, Any], path: str) -> None:
        for key, value in expected.items():
            sub = _join_key(path, key) if self.keeping else ""
            if key in actual:
                self.walk(value, actual[key], sub)
            else:
                self.add(sub, value, MISSING)
        for key, value in actual.items():
            if key not in expected:
                self.add(_join_key(path, key) if self.keeping else "", MISSING, value)

    def _walk_seq(self, expected: Sequence[Any], actual: Sequence[Any], path: str) -> None:
        common = min(len(expected), len(actual))
        for i in range(common):
            self.walk(expected[i], actual[i], f"{path}[{i}]" if self.keeping else "")
        for i in range(common, len(expected)):
            self.add(f"{path}[{i}]", expected[i], MISSING)
        for i in range(common, len(actual)):
            self.add(f"{path}[{i}]", MISSING, actual[i])


def _first_difference(a: Sequence[Any], b: Sequence[Any]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _window(text: str | bytes, at: int) -> str:
    start = max(0, at - _WINDOW)
    end = at + _WINDOW
    shown = repr(text[start:end])
    return f"{'...' if start > 0 else ''}{shown}{'...' if end < len(text) else ''}"


def _text_detail(expected: str | bytes, actual: str | bytes) -> str | None:
    """Where two differing strings (or byte strings) part, or ``None`` if they are short."""
    if (
        isinstance(expected, str)
        and isinstance(actual, str)
        and ("\n" in expected or "\n" in actual)
    ):
        return _line_detail(expected, actual)
    if max(len(expected), len(actual)) < _DETAIL_MIN_LEN:
        return None
    at = _first_difference(expected, actual)
    return (
        f"first difference at offset {at}: "
        f"expected {_window(expected, at)} got {_window(actual, at)}"
    )


def _line_detail(expected: str, actual: str) -> str:
    # keepends, so that a changed or missing line ending counts as a difference too.
    lines_e = expected.splitlines(keepends=True)
    lines_a = actual.splitlines(keepends=True)
    n = _first_difference(lines_e, lines_a)
    line_e = lines_e[n] if n < len(lines_e) else None
    line_a = lines_a[n] if n < len(lines_a) else None
    if line_e is None or line_a is None or max(len(line_e), len(line_a)) <= 2 * _WINDOW:
        shown_e = "<end of text>" if line_e is None else repr(line_e)
        shown_a = "<end of text>" if line_a is None else repr(line_a)
        return f"first difference at line {n + 1}: expected {shown_e} got {shown_a}"
    col = _first_difference(line_e, line_a)
    return (
        f"first difference at line {n + 1}, column {col + 1}: "
        f"expected {_window(line_e, col)} got {_window(line_a, col)}"
    )


def diff_values_counted(
    expected: Any, actual: Any, path: str = "", *, limit: int = 50
) -> tuple[list[FieldDiff], int]:
    """Like :func:`diff_values`, and also return how many differing fields there are in all.

    The difference between the total and the length of the list is the number of diffs the
    ``limit`` cut off; it goes into :attr:`Mismatch.omitted_diffs`.
    """
    differ = _Differ(limit)
    differ.walk(expected, actual, path)
    return differ.diffs, differ.count


def diff_values(expected: Any, actual: Any, path: str = "", *, limit: int = 50) -> list[FieldDiff]:
    """The field-level differences between a recorded value and an actual one.

    Works over JSON-like data (dicts, lists, tuples, strings, numbers, booleans, ``None``,
    bytes; msgspec Structs compare field by field). Paths join dict keys with ``.`` and list
    indexes with ``[i]``, starting from ``path``; keys that are not identifiers are written
    ``["a key"]``. A key or index present on one side only gives a diff whose other side is
    :data:`MISSING`. Differing strings give one diff, never one per character, with a
    ``detail`` hint where they part. Lists compare position by position. ``True`` and ``1``
    differ (JSON tells them apart); ``1`` and ``1.0`` do not, and neither do two NaNs.

    At most ``limit`` diffs are returned; :func:`diff_values_counted` also gives the total.
    """
    return diff_values_counted(expected, actual, path, limit=limit)[0]


def nearest_candidate(
    actual_request: dict[str, Any],
    candidates: Iterable[tuple[int, str, dict[str, Any], str]],
) -> Candidate | None:
    """The recorded call whose request differs from ``actual_request`` in the fewest fields.

    ``candidates`` are ``(seq, worker, request, summary)``; ties go to the lowest ``seq``;
    ``None`` when there are none. Only the first :data:`NEAREST_SCAN_LIMIT` (5000) candidates
    are looked at, so pass the likeliest first (same boundary, nearby seqs). Counting stops
    for a candidate as soon as it is worse than the best so far, which keeps a scan of a few
    thousand small requests in the low milliseconds.
    """
    best: tuple[int, int, str, str] | None = None  # (distance, seq, worker, summary)
    for seq, worker, request, summary in itertools.islice(candidates, NEAREST_SCAN_LIMIT):
        # A tie with a lower seq still wins, so only a strictly larger count can stop early.
        differ = _Differ(limit=0, stop_after=None if best is None else best[0])
        try:
            differ.walk(request, actual_request, "")
        except _OverBudget:
            continue
        if best is None or (differ.count, seq) < (best[0], best[1]):
            best = (differ.count, seq, worker, summary)
    if best is None:
        return None
    distance, seq, worker, summary = best
    return Candidate(seq=seq, worker=worker, summary=summary, distance=distance)
