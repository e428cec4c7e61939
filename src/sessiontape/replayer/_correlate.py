"""Values the program makes up, carried from today's requests into the answers that echo them.

A program invents values that cross a boundary: a request id the child must echo back
(the Claude Agent SDK's ``req_1_`` + four random bytes), a nonce, a temporary name.
Replay cannot make it invent the recorded ones; it follows the program instead. When
today's request carries its own value where the recorded one had another, the pair
(recorded, today) is a *correlation* (as load-testing tools call it): the recorded
answers of the same boundary and worker served from then on carry today's value in
place of the recorded one, and so do the recorded requests they are compared with.

What is correlated (:func:`detect`), looked for only where today's request differs from
the recorded one:

- a text a noise pattern matches on both sides (the n-th match with the n-th), whatever
  it is: the user named it;
- a token the program made up: at the same place in a differing text field of both
  requests (the two texts cut into tokens, the differing runs paired in order), both
  parts that differ at least :data:`MIN_LENGTH` characters long, of the same length, of
  letters, digits, ``-`` and ``_`` only, with a digit on at least one side, differing in
  at least a quarter of their characters (and two), **and** the recorded one found in the
  recorded answers that follow (the rest of the call's own answers, and those of the next
  :data:`ECHO_CALLS` calls of the boundary and worker) **but not** in the answers the
  worker had before (the call's own so far, and those of its :data:`EARLIER_CALLS` calls
  before it, of any boundary), **nor today's one** there: a value that came to the
  program in an answer was not made up by it (a tape edited to answer another commit
  sha gets the mismatch the edit causes, not a correlation). A word that changed
  (``blue`` for ``red``, ``function`` for ``variable``), a number that moved by one, a
  value nobody echoes and a value an answer gave the program are never correlated: those
  stay mismatches.

A time read between two calls is not correlated but matched (``_timegaps``); it is listed
beside the correlations. Every correlation is in the report, with where it was found and
each answer it was put into: never silent.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import msgspec

from ..report import Correlation
from ._match import Noise, Path, path_text
from ._timegaps import TimeGaps

__all__ = ["ECHO_CALLS", "MIN_LENGTH", "Correlations", "Detection", "Found", "detect"]

#: The shortest made-up value detected (eight hex digits: four random bytes).
MIN_LENGTH: Final = 8
#: How many calls after the one a value was found in are searched for its echo.
ECHO_CALLS: Final = 16
#: How many calls of the worker before it are searched for the value (found there, it
#: came to the program in an answer: the program did not make it up).
EARLIER_CALLS: Final = 64
#: Texts whose differing part cuts into more tokens than this are not searched.
MAX_TOKENS: Final = 4000

HOW_DETECTED: Final = "detected"
HOW_PATTERN: Final = "pattern"
HOW_CLOCK: Final = "clock"

#: An ISO-8601 time, a word (letters and digits, joined by ``-_.:``), or one other character.
_TOKENS: Final = (
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|[A-Za-z0-9]+(?:[-_.:][A-Za-z0-9]+)*"
    r"|[^A-Za-z0-9]"
)
_ALNUM: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_WORD_CHARS: Final = _ALNUM | frozenset("_.:+-")
_MADE_UP_CHARS: Final = _ALNUM | frozenset("_-")
_DIGITS: Final = frozenset("0123456789")
_JOINERS: Final = "-_.:"


class Found(msgspec.Struct, frozen=True):
    """A value today's request carries in place of the recorded one."""

    #: Where it was found, as the report writes paths (``chunks[0].data``).
    path: str
    recorded: str | float
    today: str | float
    #: ``detected``, ``pattern`` or ``clock`` (a time matched within its gap).
    how: str


class Detection(msgspec.Struct, frozen=True):
    """What :func:`detect` found, and the substitutions that make the recorded request
    read as today's."""

    found: list[Found]
    texts: dict[str, str]
    numbers: dict[float, float]


#: Texts of the recorded answers that follow the request (searched for an echo).
Answers = Callable[[], Iterable[str]]


def detect(
    expected: Any,
    actual: Any,
    *,
    path: Path,
    noise: Noise,
    worker: str,
    gaps: TimeGaps,
    answers: Answers,
    earlier: Answers,
) -> Detection:
    """The correlations and clock readings between a recorded request (or part of one,
    at ``path``) and today's (see the module's documentation)."""
    found: list[Found] = []
    texts: dict[str, str] = {}
    numbers: dict[float, float] = {}
    echo, came = _Echo(answers), _Echo(earlier)
    for where, then, now in _leaves(expected, actual, path):
        shown = path_text(where)
        if isinstance(then, str):
            assert isinstance(now, str)
            for a, b in noise.findings(then, now):
                found.append(Found(shown, a, b, HOW_PATTERN))
                texts[a] = b
            for a, b in _token_pairs(then, now):
                if gaps.same(worker, a, b):
                    found.append(Found(shown, a, b, HOW_CLOCK))
                    texts[a] = b
                    continue
                core = _core(a, b)
                if (
                    core is not None
                    and echo.has(core[0])
                    and not came.has(core[0])
                    and not came.has(core[1])
                ):
                    found.append(Found(shown, core[0], core[1], HOW_DETECTED))
                    texts[core[0]] = core[1]
        elif gaps.same(worker, then, now):
            found.append(Found(shown, then, now, HOW_CLOCK))
            numbers[then] = now
    named = [f for f in found if f.how == HOW_PATTERN]
    if named:  # a token inside a text a pattern named is that text's correlation
        found = [f for f in found if f.how == HOW_PATTERN or not _inside(f, named)]
    return Detection(found, texts, numbers)


def _inside(item: Found, named: list[Found]) -> bool:
    return any(
        str(item.recorded) in str(n.recorded) and str(item.today) in str(n.today)
        for n in named
        if n.path == item.path
    )


class _Echo:
    """Whether a text is in the recorded answers (read once, when first asked)."""

    def __init__(self, answers: Answers) -> None:
        self._answers = answers
        self._texts: list[str] | None = None

    def has(self, value: str) -> bool:
        if self._texts is None:
            self._texts = list(self._answers())
        return any(value in text for text in self._texts)


def _leaves(expected: Any, actual: Any, path: Path) -> Iterator[tuple[Path, Any, Any]]:
    """The texts and numbers that differ between two JSON values, where they sit."""
    if expected == actual:
        return
    texts = isinstance(expected, str) and isinstance(actual, str)
    if texts or (_number(expected) and _number(actual)):
        yield path, expected, actual
    elif isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for key, value in expected.items():
            if key in actual:
                yield from _leaves(value, actual[key], (*path, key))
    elif isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        for index, (a, b) in enumerate(zip(expected, actual, strict=False)):
            yield from _leaves(a, b, (*path, index))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _token_pairs(recorded: str, today: str) -> list[tuple[str, str]]:
    """The tokens that differ at the same place in two texts, paired in order."""
    # Only the part between the common prefix and suffix differs; widen it to whole tokens.
    size = min(len(recorded), len(today))
    start = 0
    while start < size and recorded[start] == today[start]:
        start += 1
    end = 0
    while end < size - start and recorded[-1 - end] == today[-1 - end]:
        end += 1
    while start > 0 and recorded[start - 1] in _WORD_CHARS:
        start -= 1
    while end > 0 and recorded[len(recorded) - end] in _WORD_CHARS:
        end -= 1
    tokens = _tokens()
    then = tokens.findall(recorded, start, len(recorded) - end)
    now = tokens.findall(today, start, len(today) - end)
    if len(then) == len(now):
        pairs = list(zip(then, now, strict=True))
    elif max(len(then), len(now)) > MAX_TOKENS:
        return []
    else:
        import difflib  # only here, where a request differs: not on every replay's imports

        matcher = difflib.SequenceMatcher(None, then, now, autojunk=False)
        pairs = []
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "replace" and i2 - i1 == j2 - j1:
                pairs.extend(zip(then[i1:i2], now[j1:j2], strict=True))
    return [(a, b) for a, b in pairs if a != b and a[0].isalnum() and b[0].isalnum()]


@functools.cache
def _tokens() -> re.Pattern[str]:
    """:data:`_TOKENS`, compiled when first needed (not on every replay's imports)."""
    return re.compile(_TOKENS, re.S)


def _core(recorded: str, today: str) -> tuple[str, str] | None:
    """The made-up part of two differing tokens (their common ends cut at a joiner such
    as ``_`` or ``-``), if it looks made up: see the module's documentation."""
    size = min(len(recorded), len(today))
    head = 0
    while head < size and recorded[head] == today[head]:
        head += 1
    head = max((recorded.rfind(j, 0, head) + 1 for j in _JOINERS), default=0)
    tail = 0
    while tail < size - head and recorded[-1 - tail] == today[-1 - tail]:
        tail += 1
    cut = len(recorded) - tail
    ends = [i for i in (recorded.find(j, cut) for j in _JOINERS) if i >= 0]
    stop = min(ends) if tail and ends else len(recorded)
    a = recorded[head:stop]
    b = today[head : len(today) - (len(recorded) - stop)]
    if len(a) != len(b) or len(a) < MIN_LENGTH:
        return None
    if not (_MADE_UP_CHARS.issuperset(a) and _MADE_UP_CHARS.issuperset(b)):
        return None
    if _DIGITS.isdisjoint(a) and _DIGITS.isdisjoint(b):
        return None
    differing = sum(1 for x, y in zip(a, b, strict=True) if x != y)
    if differing < max(2, len(a) // 4):
        return None
    return a, b


def substitute(value: Any, texts: Mapping[str, str], numbers: Mapping[float, float]) -> Any:
    """``value`` with every text's recorded values replaced by today's (longest first),
    and every number that is a recorded reading replaced by today's."""
    regex = _alternation(texts) if texts else None
    return _replace(value, regex, texts, numbers)


def _alternation(texts: Iterable[str]) -> re.Pattern[str]:
    """One regex finding any of ``texts``, the longest first."""
    return re.compile("|".join(re.escape(t) for t in sorted(texts, key=len, reverse=True)))


def _replace(
    value: Any,
    regex: re.Pattern[str] | None,
    texts: Mapping[str, str],
    numbers: Mapping[float, float],
) -> Any:
    if isinstance(value, str):
        if regex is None:
            return value
        return regex.sub(lambda m: texts[m.group(0)], value)
    if _number(value):
        return numbers.get(value, value)
    if isinstance(value, Mapping):
        return {k: _replace(v, regex, texts, numbers) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_replace(v, regex, texts, numbers) for v in value]
    return value


class _Note:
    """One correlation or clock reading, as the report will list it."""

    __slots__ = ("boundary", "found", "seq", "served", "worker")

    def __init__(self, seq: int, worker: str, boundary: str, found: Found) -> None:
        self.seq = seq
        self.worker = worker
        self.boundary = boundary
        self.found = found
        self.served: list[str] = []


class _Table:
    """The correlations of one boundary and worker, compiled for texts, bytes and JSON."""

    def __init__(self, pairs: dict[str, str]) -> None:
        self.pairs = pairs
        ordered = sorted(pairs, key=len, reverse=True)
        self.text = _alternation(ordered)
        self._raw = re.compile(b"|".join(re.escape(_bytes(k)) for k in ordered))
        self._raw_pairs = {_bytes(k): (_bytes(v), k) for k, v in pairs.items()}
        self._json = re.compile(b"|".join(re.escape(_json_text(k)) for k in ordered))
        self._json_pairs = {_json_text(k): (_json_text(v), k) for k, v in pairs.items()}

    def sub(self, value: Any) -> tuple[Any, set[str]]:
        """``value`` (a text or bytes) with today's values; the recorded values it held."""
        hits: set[str] = set()
        if isinstance(value, str):

            def text(m: re.Match[str]) -> str:
                hits.add(m.group(0))
                return self.pairs[m.group(0)]

            return self.text.sub(text, value), hits
        return self._sub_bytes(self._raw, self._raw_pairs, value, hits), hits

    def sub_json(self, raw: Any) -> tuple[Any, set[str]]:
        """JSON text with today's values (written as JSON writes them)."""
        hits: set[str] = set()
        if self._json.search(raw) is None:
            return raw, hits
        return self._sub_bytes(self._json, self._json_pairs, bytes(raw), hits), hits

    @staticmethod
    def _sub_bytes(
        regex: re.Pattern[bytes],
        pairs: dict[bytes, tuple[bytes, str]],
        value: bytes,
        hits: set[str],
    ) -> bytes:
        def raw(m: re.Match[bytes]) -> bytes:
            new, recorded = pairs[m.group(0)]
            hits.add(recorded)
            return new

        return regex.sub(raw, value)


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _json_text(text: str) -> bytes:
    """``text`` as it reads inside a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8", "surrogateescape")


class Correlations:
    """The correlations of one replay, per (boundary, worker), and the report's notes.

    ``pairs`` is empty until a value is correlated: every answer served checks it, and
    that check is all correlation costs a replay in which no value is made up.
    """

    def __init__(self) -> None:
        #: (boundary, worker) -> the compiled table of its correlations.
        self.pairs: dict[tuple[str, str], _Table] = {}
        self._notes: list[_Note] = []
        self._by_pair: dict[tuple[str, str, str, str], _Note] = {}
        self._lock = threading.Lock()

    def add(self, boundary: str, worker: str, seq: int, found: Iterable[Found]) -> None:
        """Note what was found in the request of call ``seq``; correlate its values."""
        with self._lock:
            table = self.pairs.get((boundary, worker))
            pairs = dict(table.pairs) if table is not None else {}
            grew = False
            for item in found:
                key = (boundary, worker, str(item.recorded), str(item.today))
                if key in self._by_pair:
                    continue
                note = self._by_pair[key] = _Note(seq, worker, boundary, item)
                self._notes.append(note)
                if item.how != HOW_CLOCK and isinstance(item.recorded, str):
                    pairs[item.recorded] = str(item.today)
                    grew = True
            if grew:
                self.pairs[(boundary, worker)] = _Table(pairs)

    def request(self, boundary: str, worker: str, value: Any) -> Any:
        """A recorded request (or part) with the correlated values of today."""
        table = self.pairs.get((boundary, worker))
        if table is None:
            return value
        return _replace(value, table.text, table.pairs, {})

    def answer(self, boundary: str, worker: str, seq: int, field: str, value: Any) -> Any:
        """A recorded answer (``str`` or ``bytes``) with today's values in it."""
        table = self.pairs.get((boundary, worker))
        if table is None or not isinstance(value, (str, bytes, bytearray)):
            return value
        new, hits = table.sub(value)
        if hits:
            self._served(boundary, worker, f"seq {seq} {field}", hits)
        return new

    def json(self, boundary: str, worker: str, seq: int, field: str, raw: Any) -> Any:
        """A recorded result's JSON text with today's values in it."""
        table = self.pairs.get((boundary, worker))
        if table is None:
            return raw
        new, hits = table.sub_json(raw)
        if hits:
            self._served(boundary, worker, f"seq {seq} {field}", hits)
        return new

    def _served(self, boundary: str, worker: str, where: str, hits: set[str]) -> None:
        with self._lock:
            for note in self._notes:
                found = note.found
                if (
                    found.recorded in hits
                    and found.how != HOW_CLOCK
                    and note.boundary == boundary
                    and note.worker == worker
                    and where not in note.served
                ):
                    note.served.append(where)

    def report(self) -> list[Correlation]:
        """Every correlation and clock reading, as the report lists them."""
        with self._lock:
            notes = list(self._notes)
        return [
            Correlation(
                seq=n.seq,
                worker=n.worker,
                boundary=n.boundary,
                path=n.found.path,
                recorded=n.found.recorded,
                today=n.found.today,
                how=n.found.how,
                served=list(n.served),
            )
            for n in notes
        ]
