"""The replay report: structured data first, readable text second.

The replay engine builds a :class:`ReplayReport` out of :class:`Mismatch` objects; this module
owns the data model, the field-level diff whose paths can be pasted into a noise mask, the
nearest-candidate search, the JSON form (a receipt a CI job can keep) and the text form (what
a failing pytest item shows).
"""

from __future__ import annotations

import base64
import enum
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import msgspec

__all__ = [
    "MISSING",
    "MISSING_TEXT",
    "NEAREST_SCAN_LIMIT",
    "Candidate",
    "FieldDiff",
    "Mismatch",
    "MismatchKind",
    "ReplayReport",
    "compute_ok",
    "diff_values",
    "diff_values_counted",
    "mask_path",
    "nearest_candidate",
    "suggest_next_step",
    "summarize_value",
]


class MismatchKind(str, enum.Enum):
    """How a replayed call departed from the recording."""

    #: The request differs from the recorded one at the head of its queue.
    ARGUMENT_MISMATCH = "argument_mismatch"
    #: A call on a boundary/worker queue that never had any recorded entry.
    UNEXPECTED_CALL = "unexpected_call"
    #: The queue ran out: the code made more calls than were recorded.
    EXHAUSTED = "exhausted"
    #: A recorded entry was never requested.
    UNCONSUMED = "unconsumed"
    #: A verify boundary's real result differs from the recorded one.
    STORE_MISMATCH = "store_mismatch"
    #: The session ended with a different outcome than recorded.
    OUTCOME_MISMATCH = "outcome_mismatch"
    #: The recorded crash was not reproduced, or a different exception was raised.
    ERROR_MISMATCH = "error_mismatch"
    #: A verify-boundary call came in a different global order than recorded.
    ORDER_MISMATCH = "order_mismatch"


class _Missing:
    """The type of :data:`MISSING`; a singleton that survives copy and pickle."""

    __slots__ = ()
    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return MISSING_TEXT

    def __reduce__(self) -> str:
        return "MISSING"


#: How :data:`MISSING` is written in JSON and in the text report.
MISSING_TEXT: Final = "<missing>"

#: Stands for the side of a :class:`FieldDiff` where a key or list index does not exist.
MISSING: Final = _Missing()

#: :func:`nearest_candidate` looks at no more than this many candidates.
NEAREST_SCAN_LIMIT: Final = 5000

# A single-line string shorter than this is shown whole, so an offset hint adds nothing.
_DETAIL_MIN_LEN: Final = 20
# Characters of context on each side of the first differing offset in a detail hint.
_WINDOW: Final = 12


class FieldDiff(msgspec.Struct, frozen=True):
    """One differing field: where it is, and its recorded (``expected``) and actual values.

    ``path`` uses the noise-mask syntax without the boundary prefix (``argv[3]``,
    ``env.HOME``, ``result.items[0]["a key"]``); see :func:`mask_path`. A side that has no
    such key or index holds :data:`MISSING`. ``detail`` is a short hint for strings that are
    too long to compare by eye: where they first differ.
    """

    path: str
    expected: Any
    actual: Any
    detail: str | None = None


class Candidate(msgspec.Struct, frozen=True):
    """The recorded call closest to a request that matched nothing, as a hint for the reader."""

    seq: int
    worker: str
    summary: str
    #: Number of differing fields between the request and this recorded call.
    distance: int


class Mismatch(msgspec.Struct, frozen=True):
    """One divergence between the replayed run and the recording.

    ``seq`` is the recorded entry's sequence number, ``None`` when there is no recorded entry
    (an unexpected call, a call past the end of its queue). ``message`` is one full sentence;
    ``next_step`` is one line telling the reader what to do (see :func:`suggest_next_step`).
    ``omitted_diffs`` counts the field diffs cut from ``diffs`` by the diff limit.
    """

    kind: MismatchKind
    seq: int | None
    worker: str
    boundary: str
    message: str
    expected: Any = None
    actual: Any = None
    diffs: list[FieldDiff] = []
    nearest: Candidate | None = None
    next_step: str = ""
    omitted_diffs: int = 0

    @property
    def mask_paths(self) -> list[str]:
        """The paths of ``diffs`` prefixed with the boundary, ready to paste into a noise mask."""
        return [mask_path(self.boundary, d.path) for d in self.diffs]


# --------------------------------------------------------------------------------------------
# Field diff


def mask_path(boundary: str, path: str) -> str:
    """Join a boundary name and a field path into a noise-mask path (``process.argv[3]``)."""
    if not path:
        return boundary
    if path.startswith("["):
        return f"{boundary}{path}"
    return f"{boundary}.{path}"


def _join_key(path: str, key: Any) -> str:
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}" if path else key
    # JSON quoting, because a tape's keys are JSON strings and a mask parser can read it back.
    return f"{path}[{json.dumps(str(key), ensure_ascii=False)}]"


class _Kind(enum.IntEnum):
    MAP = 0
    SEQ = 1
    STR = 2
    BYTES = 3
    NUM = 4
    BOOL = 5
    NONE = 6
    STRUCT = 7
    OTHER = 8


# Exact-type lookup first: it is the common case and keeps bool apart from int.
_KIND_OF_TYPE: Final[dict[type, _Kind]] = {
    dict: _Kind.MAP,
    list: _Kind.SEQ,
    tuple: _Kind.SEQ,
    str: _Kind.STR,
    bytes: _Kind.BYTES,
    bytearray: _Kind.BYTES,
    int: _Kind.NUM,
    float: _Kind.NUM,
    bool: _Kind.BOOL,
    type(None): _Kind.NONE,
}


def _kind(value: Any) -> _Kind:
    kind = _KIND_OF_TYPE.get(type(value))
    if kind is not None:
        return kind
    if isinstance(value, bool):
        return _Kind.BOOL
    if isinstance(value, msgspec.Struct):
        return _Kind.STRUCT
    if isinstance(value, Mapping):
        return _Kind.MAP
    if isinstance(value, (list, tuple)):
        return _Kind.SEQ
    if isinstance(value, str):
        return _Kind.STR
    if isinstance(value, (bytes, bytearray)):
        return _Kind.BYTES
    if isinstance(value, (int, float)):
        return _Kind.NUM
    return _Kind.OTHER


def _struct_fields(value: msgspec.Struct) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__struct_fields__}


def _safe_equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        # Array-likes refuse bool(); their repr is the best equality we can offer.
        return _safe_repr(a) == _safe_repr(b)


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
        ke, ka = _kind(expected), _kind(actual)
        if ke is _Kind.STRUCT or ka is _Kind.STRUCT:
            if ke is ka and type(expected) is not type(actual):
                self.add(path, expected, actual)
                return
            # A live Struct against its decoded dict form compares field by field.
            if ke is _Kind.STRUCT:
                expected, ke = _struct_fields(expected), _Kind.MAP
            if ka is _Kind.STRUCT:
                actual, ka = _struct_fields(actual), _Kind.MAP
        if ke is not ka:
            self.add(path, expected, actual)
        elif ke is _Kind.MAP:
            self._walk_map(expected, actual, path)
        elif ke is _Kind.SEQ:
            self._walk_seq(expected, actual, path)
        elif ke is _Kind.STR or ke is _Kind.BYTES:
            if expected != actual:
                detail = _text_detail(expected, actual) if self.keeping else None
                self.add(path, expected, actual, detail)
        elif ke is _Kind.NUM:
            if expected != actual and not (
                isinstance(expected, float)
                and isinstance(actual, float)
                and math.isnan(expected)
                and math.isnan(actual)
            ):
                self.add(path, expected, actual)
        elif ke is _Kind.NONE:
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


# --------------------------------------------------------------------------------------------
# Next steps


def _quote_list(items: Sequence[str]) -> str:
    quoted = [f"'{item}'" for item in items]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + f" and {quoted[-1]}"


def _plain_list(items: Sequence[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"


# More paths than this make the one-line hint unreadable; the diff lines list them all.
_MAX_SUGGESTED_MASKS: Final = 3


def suggest_next_step(
    kind: MismatchKind, boundary: str, worker: str, diffs: Sequence[FieldDiff]
) -> str:
    """A one-line next step for a mismatch of ``kind`` on ``boundary`` in ``worker``."""
    rerecord = f"re-record worker '{worker}'"
    if kind is MismatchKind.ARGUMENT_MISMATCH:
        paths = list(dict.fromkeys(d.path for d in diffs))
        if not paths:
            return (
                f"Compare the request with the recorded one; if the change is intended, {rerecord}."
            )
        shown = paths[:_MAX_SUGGESTED_MASKS]
        masks = _quote_list([mask_path(boundary, p) for p in shown])
        if len(paths) == 1:
            return f"If {paths[0]} is noise, add the mask {masks}; otherwise {rerecord}."
        if len(paths) <= _MAX_SUGGESTED_MASKS:
            return (
                f"If {_plain_list(paths)} are noise, add the masks {masks}; otherwise {rerecord}."
            )
        return (
            f"If these {len(paths)} fields are noise, add masks such as {masks}; "
            f"otherwise {rerecord}."
        )
    if kind is MismatchKind.UNEXPECTED_CALL:
        return (
            f"The code now calls '{boundary}' in worker '{worker}', which the recording never did; "
            f"if the new call is intended, {rerecord}."
        )
    if kind is MismatchKind.EXHAUSTED:
        return (
            f"The code makes more '{boundary}' calls in worker '{worker}' than were recorded; "
            f"check for a loop that runs longer than before, or {rerecord} if that is intended."
        )
    if kind is MismatchKind.UNCONSUMED:
        return (
            f"The code stopped calling '{boundary}' in worker '{worker}' before the recording did; "
            f"check for an early exit or a skipped step, or {rerecord} if that is intended."
        )
    if kind is MismatchKind.STORE_MISMATCH:
        return (
            f"The real '{boundary}' returned something other than the recording; look for a logic "
            f"change in the store code or a different seeded snapshot, or {rerecord} if intended."
        )
    if kind is MismatchKind.OUTCOME_MISMATCH:
        return (
            "The session ended with a different outcome; find the first divergence that led "
            "there, or re-record the session if the new outcome is correct."
        )
    if kind is MismatchKind.ERROR_MISMATCH:
        return (
            "The recorded crash was not reproduced the same way; if the bug is fixed, "
            "re-record to update the regression tape, otherwise compare the exceptions."
        )
    return (
        f"The '{boundary}' calls came in a different order than recorded; check for a change in "
        f"locking or scheduling between workers, or re-record if the new order is correct."
    )


# --------------------------------------------------------------------------------------------
# Text helpers


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:
        return f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"


# Nesting deeper than this is shown as '...': the text report is a hint, the JSON is exact.
_MAX_REPR_DEPTH: Final = 8


def _bounded_repr(value: Any, budget: int, depth: int = 0) -> str:
    """A repr that stops building once it is about ``budget`` characters long.

    Keeps insertion order (``reprlib`` sorts dict keys) and never reprs a huge value whole.
    """
    if isinstance(value, bytearray):
        value = bytes(value)
    if isinstance(value, (str, bytes)):
        if len(value) <= budget:
            return repr(value)
        half = max(1, budget // 2)
        head, tail = repr(value[:half]), repr(value[-half:])
        if head[-1] == tail[-1]:
            # Same quote character: show one literal with the middle elided.
            opener = 2 if isinstance(value, bytes) else 1
            return f"{head[:-1]}...{tail[opener:]}"
        return f"{head}...{tail}"
    kind = _kind(value)
    if kind not in (_Kind.MAP, _Kind.SEQ, _Kind.STRUCT):
        return _safe_repr(value)
    if depth >= _MAX_REPR_DEPTH:
        return "..."
    parts: list[str] = []
    used = 0
    if kind is _Kind.SEQ:
        items: Iterable[str] = (_bounded_repr(v, budget - used, depth + 1) for v in value)
    elif kind is _Kind.MAP:
        items = (
            f"{_bounded_repr(k, budget, depth + 1)}: {_bounded_repr(v, budget - used, depth + 1)}"
            for k, v in value.items()
        )
    else:
        items = (
            f"{name}={_bounded_repr(v, budget - used, depth + 1)}"
            for name, v in _struct_fields(value).items()
        )
    for item in items:
        if used >= budget:
            parts.append("...")
            break
        parts.append(item)
        used += len(item) + 2
    body = ", ".join(parts)
    if kind is _Kind.STRUCT:
        return f"{type(value).__name__}({body})"
    if kind is _Kind.MAP:
        return f"{{{body}}}" if type(value) is dict else f"{type(value).__name__}({{{body}}})"
    if isinstance(value, tuple):
        return f"({body},)" if len(parts) == 1 and len(value) == 1 else f"({body})"
    return f"[{body}]"


def summarize_value(v: Any, width: int = 80) -> str:
    """A repr of ``v`` no longer than ``width`` characters, cut in the middle with ``...``.

    Cutting in the middle keeps both ends, which is where paths, ids and closing brackets are.
    """
    text = _bounded_repr(v, max(width, 8))
    if len(text) <= width:
        return text
    keep = max(width - 3, 2)
    head = (keep + 1) // 2
    return f"{text[:head]}...{text[len(text) - (keep - head) :]}"


def _format_duration(ns: int) -> str:
    if ns < 1_000_000:
        return f"{ns / 1000:.0f} µs"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.1f} ms"
    seconds = ns / 1_000_000_000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    return f"{minutes}m {secs:02d}s"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


class _Style:
    """ANSI styling that turns into plain text when colour is off."""

    __slots__ = ("color",)

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def bad(self, text: str) -> str:
        return self._wrap("1;31", text)

    def good(self, text: str) -> str:
        return self._wrap("1;32", text)

    def expected(self, text: str) -> str:
        return self._wrap("32", text)

    def actual(self, text: str) -> str:
        return self._wrap("31", text)

    def hint(self, text: str) -> str:
        return self._wrap("1;33", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)


# --------------------------------------------------------------------------------------------
# JSON form

_BYTES_TYPES: Final = (bytes, bytearray, memoryview)


def _enc_hook(obj: Any) -> Any:
    if obj is MISSING:
        return MISSING_TEXT
    # A report must always serialise: whatever msgspec cannot encode is kept as its repr.
    return _safe_repr(obj)


def _json_key(key: Any) -> str:
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return _safe_repr(key)


def _jsonable(value: Any) -> Any:
    """``value`` as JSON builtins: bytes as ``{"base64": ...}``, MISSING as ``"<missing>"``."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (str, int, float)):
        return value
    if value is MISSING:
        return MISSING_TEXT
    if isinstance(value, _BYTES_TYPES):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {_json_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    try:
        # msgspec knows Structs (tags, renames), dataclasses, datetimes, UUIDs, decimals.
        built = msgspec.to_builtins(
            value, enc_hook=_enc_hook, builtin_types=_BYTES_TYPES, str_keys=True
        )
    except Exception:
        if isinstance(value, msgspec.Struct):
            # e.g. a key msgspec cannot stringify: walk the fields so only that value degrades.
            return {name: _jsonable(v) for name, v in _struct_fields(value).items()}
        return _safe_repr(value)
    return _jsonable(built)


def _restore_missing(value: Any) -> Any:
    return MISSING if value == MISSING_TEXT else value


def compute_ok(mismatches: Sequence[Mismatch], consumed: int) -> bool:
    """Whether a replay passed: no mismatch, and at least one recorded call was served.

    A replay that served nothing proves nothing (a wrong cassette, a test that never reached
    the boundary), so it is not a pass.
    """
    return not mismatches and consumed > 0


class ReplayReport(msgspec.Struct, kw_only=True):
    """The outcome of replaying one cassette, as data; :meth:`render` gives the text form.

    ``loaded`` counts the call entries available to replay, ``consumed`` those served,
    ``unconsumed`` those never requested, ``extra`` the calls made that had no entry.
    ``crashed`` says the tape is of a session that crashed. ``context`` holds one-line
    summaries of the entries just before the first divergence.
    """

    cassette: str
    run_id: str
    ok: bool
    strict: bool
    loaded: int
    consumed: int
    unconsumed: int
    extra: int
    mismatches: list[Mismatch] = []
    recorded_duration_ns: int = 0
    replay_duration_ns: int = 0
    crashed: bool = False
    context: list[str] = []
    workers: list[str] = []

    compute_ok = staticmethod(compute_ok)

    # -- data ----------------------------------------------------------------------------

    def ordered_mismatches(self) -> list[Mismatch]:
        """The mismatches earliest first.

        The replay engine stores them in timeline order (where in each worker's recorded
        sequence the divergence happened), so this is the stored order.
        """
        return list(self.mismatches)

    @property
    def first(self) -> Mismatch | None:
        """The earliest divergence, or ``None`` when there is none."""
        return self.mismatches[0] if self.mismatches else None

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready builtins (bytes as ``{"base64": ...}``, MISSING as text)."""
        result: dict[str, Any] = _jsonable(self)
        return result

    def to_json(self) -> bytes:
        """The report as JSON: the receipt a CI job can keep and :meth:`from_json` reads back."""
        return msgspec.json.encode(self.to_dict(), enc_hook=_enc_hook)

    @classmethod
    def from_json(cls, data: bytes | str) -> ReplayReport:
        """Read a report written by :meth:`to_json`.

        ``"<missing>"`` on either side of a field diff comes back as :data:`MISSING`; bytes
        stay in their ``{"base64": ...}`` form and tuples become lists.
        """
        report = msgspec.json.decode(data, type=cls)
        report.mismatches = [
            msgspec.structs.replace(
                m,
                diffs=[
                    msgspec.structs.replace(
                        d,
                        expected=_restore_missing(d.expected),
                        actual=_restore_missing(d.actual),
                    )
                    for d in m.diffs
                ],
            )
            for m in report.mismatches
        ]
        return report

    # -- text ----------------------------------------------------------------------------

    def _headline(self, style: _Style, first: Mismatch | None) -> str:
        where = f"replay of {self.cassette}"
        if first is not None:
            at = f"at seq {first.seq}" if first.seq is not None else "at an unrecorded call"
            return style.bad(
                f"{where} diverged {at} ({first.worker}, {first.boundary}): {first.kind.value}"
            )
        if self.ok:
            return style.good(f"{where} matched: {_plural(self.consumed, 'call')} served")
        if self.consumed == 0:
            if self.loaded == 0:
                return style.bad(f"{where} served nothing: the cassette holds no calls to replay")
            return style.bad(
                f"{where} served nothing: none of the {_plural(self.loaded, 'recorded call')} "
                "was requested"
            )
        return style.bad(f"{where} failed: {_plural(self.consumed, 'call')} served")

    def _counts(self) -> str:
        parts = [
            f"calls: {self.loaded} loaded, {self.consumed} consumed, "
            f"{self.unconsumed} unconsumed, {self.extra} extra",
            _plural(len(self.mismatches), "mismatch", "mismatches"),
            "strict" if self.strict else "lenient",
        ]
        if self.recorded_duration_ns or self.replay_duration_ns:
            parts.append(
                f"recorded {_format_duration(self.recorded_duration_ns)}, "
                f"replayed {_format_duration(self.replay_duration_ns)}"
            )
        if self.crashed:
            parts.append("tape of a crashed session")
        return "; ".join(parts)

    def _render_mismatch(
        self, m: Mismatch, index: int, total: int, style: _Style, max_diffs: int
    ) -> list[str]:
        at = f"seq {m.seq}" if m.seq is not None else "an unrecorded call"
        label = f"mismatch {index} of {total}" if total > 1 else "mismatch"
        lines = [style.bad(f"{label}: {m.kind.value} at {at} ({m.worker}, {m.boundary})")]
        lines.append(f"  {m.message}")
        for d in m.diffs[:max_diffs]:
            lines.append(
                f"  {d.path or '<value>'}: expected "
                f"{style.expected(summarize_value(d.expected, 60))} got "
                f"{style.actual(summarize_value(d.actual, 60))}"
            )
            if d.detail:
                lines.append(f"    {d.detail}")
        hidden = len(m.diffs[max_diffs:]) + m.omitted_diffs
        if hidden:
            lines.append(f"  ... and {_plural(hidden, 'more differing field')}")
        if not m.diffs:
            # Kinds about results show both sides even when one is None: None is the news.
            both = m.kind in (
                MismatchKind.STORE_MISMATCH,
                MismatchKind.OUTCOME_MISMATCH,
                MismatchKind.ERROR_MISMATCH,
            ) or (m.expected is not None and m.actual is not None)
            if both or m.expected is not None:
                lines.append(f"  expected: {style.expected(summarize_value(m.expected))}")
            if both or m.actual is not None:
                lines.append(f"  actual:   {style.actual(summarize_value(m.actual))}")
        if m.nearest is not None:
            n = m.nearest
            how = "same request" if n.distance == 0 else _plural(n.distance, "differing field")
            lines.append(f"  nearest recorded call: seq {n.seq} ({n.worker}), {how}: {n.summary}")
        next_step = m.next_step or suggest_next_step(m.kind, m.boundary, m.worker, m.diffs)
        lines.append(f"  {style.hint('next:')} {next_step}")
        return lines

    def render(self, *, color: bool = False, max_mismatches: int = 20, max_diffs: int = 10) -> str:
        """The report as text, first divergence first, in the spirit of pytest's assertions.

        A headline, a counts line, the context before the first divergence, then one block
        per mismatch (field diffs, nearest recorded call, next step), at most
        ``max_mismatches`` blocks of at most ``max_diffs`` field diffs each.
        """
        style = _Style(color)
        ordered = self.ordered_mismatches()
        first = ordered[0] if ordered else None
        lines = [self._headline(style, first), self._counts()]
        if self.workers:
            lines.append(f"workers: {', '.join(self.workers)}")
        if first is not None and self.context:
            lines.append("context before the divergence:")
            lines.extend(style.dim(f"  {line}") for line in self.context)
        shown = ordered[: max(max_mismatches, 0)]
        for i, m in enumerate(shown, 1):
            lines.append("")
            lines.extend(self._render_mismatch(m, i, len(ordered), style, max_diffs))
        rest = len(ordered) - len(shown)
        if rest:
            lines.append("")
            more = _plural(rest, "more mismatch", "more mismatches")
            lines.append(f"and {more} (see the JSON report)")
        return "\n".join(lines)
