"""gitleaks' rules that no prefix finds: the scrubber's second pass over a text.

``_shapes`` finds tokens by their prefix in one regex; what is left of gitleaks' default
rules (``_gitleaks``, generated from them) is found here, in two ways:

* **By keyword**: ``DATADOG_KEY = <40 alphanumerics>``, ``<telegramToken> <token>``. The
  rule names an identifier that stands before an assignment operator, then the secret. In
  a text, the second pass stops at each operator followed by a value long enough to be a
  secret, reads the name before it, and only when one of the rules' keywords is in that
  name tries those rules. Structured data gives the name itself: an environment
  variable's, a JSON key, the argv word before a value (:func:`keyword_secret`).
* **By body**: a secret whose own shape tells it (``<14>.atlasv1.<60>``,
  ``<digits>:A<34>``, ``A3-...``). Each is found at its rarest character, checked by a
  guard (what stands before and after it), then by the rule's own regex.

A match is a secret when it carries more entropy than the rule asks and no allowlist of
the rule's or gitleaks' own lets it go, as in gitleaks. The rules compile when first
needed: a recording that never meets a keyword compiles none of them.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections import Counter
from typing import Final, NamedTuple

from ._context import looks_random
from ._gitleaks import ALLOWLISTS, BODY_RULES, GLOBAL_ALLOWLIST, HAND_RULES, KEYWORD_RULES
from ._names import redaction_mark
from ._shape import Judge

__all__ = [
    "HAND_RULES_BY_KIND",
    "keyword_secret",
    "names_a_keyword",
    "redact_rules",
    "token_judge",
]

# How a value starts after its operator and how it ends (gitleaks' GenerateSemiGenericRegex).
_OPERATOR: Final = r"(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)"
_VALUE_HEAD: Final = r"[\x60'\"\s=]{0,5}"
_VALUE_TAIL: Final = r"(?:[\x60'\"\s;]|\\[nr]|$)"
# What may stand between an identifier and its operator.
_NAME_TAIL: Final = r"[ \t\w.-]{0,20}[\s'\"]{0,3}"
# The name before an operator, read backwards from it (the text reversed, so that the
# match starts at once rather than at each of 80 places): up to 80 characters of a name
# and what may follow it.
_NAME_BACKWARDS: Final = re.compile(r"[\w.\- \t\r\n'\"]{1,80}")
# Secrets are at least this long (gitleaks' shortest keyword rule secret).
_SHORTEST: Final = 10
# How far past its anchor a body rule's match is looked for (a curl command's header
# may sit five lines on).
_WINDOW: Final = 2048


def _entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character, as gitleaks computes it."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


class _Allow(NamedTuple):
    target: str
    every: bool
    regexes: tuple[re.Pattern[str], ...]
    stopwords: re.Pattern[str] | None  # any of the words, in a lowered secret

    def allows(self, secret: str, match: str, line: str) -> bool:
        text = secret if self.target == "secret" else match if self.target == "match" else line
        checks = []
        if self.regexes:
            checks.append(any(r.search(text) for r in self.regexes))
        if self.stopwords is not None:
            checks.append(self.stopwords.search(secret.lower()) is not None)
        return all(checks) if self.every else any(checks)


def _allow(raw: tuple[str, bool, tuple[str, ...], tuple[str, ...]]) -> _Allow:
    target, every, regexes, stopwords = raw
    # One regex for the words (generic-api-key has a thousand and more): a few
    # microseconds where testing each word would take a hundred.
    words = re.compile("|".join(map(re.escape, sorted(stopwords)))) if stopwords else None
    return _Allow(target, every, tuple(re.compile(r, re.ASCII) for r in regexes), words)


_ALLOW_CACHE: dict[int, _Allow] = {}
_GLOBAL: list[_Allow] = []


def _allowed(indices: tuple[int, ...], secret: str, match: str, line: str) -> bool:
    """Whether gitleaks' global allowlist or one of the rule's lets the finding go."""
    if not _GLOBAL:
        _GLOBAL.append(_allow(GLOBAL_ALLOWLIST))
    if _GLOBAL[0].allows(secret, match, line):
        return True
    for i in indices:
        allow = _ALLOW_CACHE.get(i)
        if allow is None:
            allow = _ALLOW_CACHE[i] = _allow(ALLOWLISTS[i])
        if allow.allows(secret, match, line):
            return True
    return False


def rule_allows(
    indices: tuple[int, ...], secret: str, match: str, text: str, start: int, end: int
) -> bool:
    """Whether an allowlist of a rule (``indices``) or gitleaks' global one lets a secret
    found at ``text[start:end]`` go."""
    return _allowed(indices, secret, match, _line(text, start, end))


def _line(text: str, start: int, end: int) -> str:
    head = text.rfind("\n", 0, start) + 1
    tail = text.find("\n", end)
    return text[head : tail if tail >= 0 else len(text)]


# gitleaks' entropy thresholds and allowlists of the rules the hand-written shapes follow,
# by the shape's kind: a token carrying no more bits a character is a placeholder
# (``ghp_xxxx...``, ``AKIAXXXX...``), and a token an allowlist names is a published
# example (Google's sample API keys); both are kept, as gitleaks keeps them.
def _hand_rules() -> dict[str, tuple[float, tuple[int, ...]]]:
    rules: dict[str, tuple[float, tuple[int, ...]]] = {}
    for _rule, kind, entropy, allow in HAND_RULES:
        seen = rules.get(kind)
        if seen is not None:
            entropy, allow = min(seen[0], entropy), tuple(sorted({*seen[1], *allow}))
        rules[kind] = (entropy, allow)
    return rules


#: By the kind of a hand-written shape: its rules' lowest entropy threshold and their
#: allowlists.
HAND_RULES_BY_KIND: Final = _hand_rules()


def token_judge(kind: str, back: int, rule: tuple[float, tuple[int, ...]]) -> Judge | str:
    """A token found by its format becomes ``[REDACTED:<kind>]``, unless it carries no
    more than its rule's entropy a character (a placeholder) or an allowlist of its rule
    names it. A rule with neither: the mark itself, with no judge to call."""
    mark = redaction_mark(kind)
    entropy, allow = rule
    if not entropy and not allow:
        return mark

    def judge(match: re.Match[str]) -> str | None:
        text = match.string
        start = max(0, match.start() - back)
        token = text[start : match.end()]
        if entropy and _entropy(token) <= entropy:
            return None
        if allow and rule_allows(allow, token, token, text, start, match.end()):
            return None
        return mark

    return judge


# -- keyword rules ------------------------------------------------------------------------


class _Keyword:
    """One keyword rule, compiled on first use."""

    __slots__ = ("allow", "entropy", "identifiers", "kind", "mark", "name_rx", "secret", "value_rx")

    def __init__(
        self, raw: tuple[str, str, str, str, bool, float, tuple[str, ...], tuple[int, ...]]
    ):
        _rule, self.kind, self.identifiers, secret, nocase, self.entropy, _kw, self.allow = raw
        self.secret = f"(?i:{secret})" if nocase else secret
        self.mark = redaction_mark(self.kind)
        self.name_rx: re.Pattern[str] | None = None
        self.value_rx: re.Pattern[str] | None = None

    def compile(self) -> tuple[re.Pattern[str], re.Pattern[str]]:
        if self.name_rx is None or self.value_rx is None:
            self.name_rx = re.compile(f"(?i:{self.identifiers}){_NAME_TAIL}\\Z", re.ASCII)
            self.value_rx = re.compile(
                f"{_OPERATOR}{_VALUE_HEAD}({self.secret}){_VALUE_TAIL}", re.ASCII
            )
        return self.name_rx, self.value_rx

    def secret_at(self, text: str, at: int, name: str) -> tuple[int, int] | None:
        """The span of this rule's secret after the operator at ``text[at]``, where
        ``name`` (``text[at - len(name):at]``) is what precedes it; None when the rule
        does not find one there."""
        name_rx, value_rx = self.compile()
        if name_rx.search(name) is None:
            return None
        found = value_rx.match(text, at)
        if found is None:
            return None
        start, end = found.span(1)
        secret = text[start:end]
        if self.entropy and _entropy(secret) <= self.entropy:
            return None
        # gitleaks' match holds the name too (its allowlists read ``accessor``, ``api_id``).
        if _allowed(self.allow, secret, text[at - len(name) : end], _line(text, start, end)):
            return None
        return start, end


_KEYWORDS: list[_Keyword] = []
# Keyword -> the keyword rules it names; and one regex that finds any of the keywords.
_BY_KEYWORD: dict[str, tuple[int, ...]] = {}
_KEYWORD_RX: list[re.Pattern[str]] = []


_BUILDING: Final = threading.Lock()


def _keyword_index() -> re.Pattern[str]:
    if not _KEYWORD_RX:
        # Built once, by one thread: two threads appending to the rules at once would
        # put each rule at another index than the keywords name.
        with _BUILDING:
            if not _KEYWORD_RX:
                by: dict[str, list[int]] = {}
                for i, raw in enumerate(KEYWORD_RULES):
                    _KEYWORDS.append(_Keyword(raw))
                    for word in raw[6]:
                        by.setdefault(word, []).append(i)
                _BY_KEYWORD.update({w: tuple(ids) for w, ids in by.items()})
                _KEYWORD_RX.append(re.compile(_trie(sorted(by))))
    return _KEYWORD_RX[0]


def _trie(words: list[str]) -> str:
    """An alternation of ``words`` factored by their first characters (``a(?:pi|uth)``): the
    regex engine tries one branch per position instead of every word."""
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word[1:])
    out = []
    for first, rests in groups.items():
        longer = [r for r in rests if r]
        if len(rests) == 1:
            out.append(re.escape(first + rests[0]))  # one word: its letters as they are
        elif longer:
            out.append(re.escape(first) + f"(?:{_trie(longer)})" + ("?" if "" in rests else ""))
        else:
            out.append(re.escape(first))
    return "|".join(out)


def _rules_named(name: str) -> list[int]:
    """The keyword rules one of whose keywords is in ``name`` (lowered), in rule order."""
    lowered = name.lower()
    found: set[int] = set()
    rx = _keyword_index()
    pos = 0
    while (m := rx.search(lowered, pos)) is not None:
        found.update(_BY_KEYWORD[m.group()])
        pos = m.start() + 1
    return sorted(found)


def _keyword_at(text: str, at: int) -> tuple[int, int, str] | None:
    """A keyword rule's secret after the operator at ``text[at]``."""
    name_match = _NAME_BACKWARDS.match(text[max(0, at - 80) : at][::-1])
    if name_match is None:
        return None
    name = name_match.group()[::-1]
    for i in _rules_named(name):
        rule = _KEYWORDS[i]
        span = rule.secret_at(text, at, name)
        if span is not None:
            return span[0], span[1], rule.mark
    return None


@functools.lru_cache(maxsize=4096)
def names_a_keyword(name: str) -> bool:
    """Whether one of the keyword rules' keywords is in ``name`` (cached: environments and
    documents repeat their names)."""
    return bool(_rules_named(name))


def keyword_secret(name: str, value: str) -> str | None:
    """The redaction mark for ``value`` stored under ``name`` (an environment variable,
    a JSON key, the argv word before it) when a keyword rule takes it for a secret."""
    if len(value) < _SHORTEST or not name or not names_a_keyword(name):
        return None
    text = f"{name}={value}"
    found = _keyword_at(text, len(name))
    # The whole value, not a part of it: a value holding a secret is redacted whole.
    return found[2] if found is not None else None


# -- body rules ---------------------------------------------------------------------------


class _Body:
    """One body rule, compiled on first use."""

    __slots__ = (
        "allow",
        "before",
        "compiled",
        "entropy",
        "group",
        "guard",
        "kind",
        "mark",
        "random",
        "regex",
    )

    def __init__(
        self, raw: tuple[str, str, str, int, str, str, str, int, float, bool, tuple[int, ...]]
    ) -> None:
        _rule, self.kind, regex, self.group, at, behind, ahead, self.before = raw[:8]
        self.entropy, self.random, self.allow = raw[8], raw[9], raw[10]
        self.mark = redaction_mark(self.kind)
        self.regex = regex
        # Checked at the anchor's position: what stands before it and after it.
        self.guard = f"(?<={behind}{at})(?={ahead})" if behind else f"(?={ahead})"
        #: The regex and the guard, compiled on first use. The sources stay as they are
        #: and the pair is set in one assignment, so a thread never sees half of it; two
        #: threads that both find it unset both compile it, to the same patterns.
        self.compiled: tuple[re.Pattern[str], re.Pattern[str]] | None = None

    def secret_at(self, text: str, at: int) -> tuple[int, int] | None:
        """The span of this rule's secret in a match around ``text[at]``."""
        compiled = self.compiled
        if compiled is None:
            compiled = (re.compile(self.regex, re.ASCII), re.compile(self.guard, re.ASCII))
            self.compiled = compiled
        regex, guard = compiled
        if guard.match(text, at + 1) is None:
            return None
        # The leftmost match starting at most ``before`` characters back and holding the
        # anchor (searched in a window, so that a text with none is not read to its end).
        pos = max(0, at - self.before)
        end = min(len(text), at + _WINDOW)
        while (found := regex.search(text, pos, end)) is not None and found.start() <= at:
            if found.end() > at:
                return self._judge(text, found)
            pos = found.start() + 1
        return None

    def _judge(self, text: str, found: re.Match[str]) -> tuple[int, int] | None:
        if self.group and found.re.groups >= self.group:
            start, end = found.span(self.group)
        else:
            spans = [found.span(g) for g in range(1, found.re.groups + 1)]
            start, end = next((s for s in spans if s[1] > s[0]), found.span())
        if start < 0:
            return None
        secret = text[start:end]
        if self.entropy and _entropy(secret) <= self.entropy:
            return None
        if self.random and not looks_random(secret):
            return None
        if _allowed(self.allow, secret, found.group(), _line(text, start, end)):
            return None
        return start, end


# -- the second pass -------------------------------------------------------------------------


class _Pass(NamedTuple):
    sites: re.Pattern[str]
    bodies: dict[str, tuple[_Body, ...]]  # by the character they are found at


_PASS: list[_Pass] = []


def _second_pass() -> _Pass:
    """The regex of every place the second pass stops at, and the body rules by character.

    Every alternative starts with its character, so that the regex engine skips through
    a text testing one character class per position; the guards follow it.
    """
    if not _PASS:
        bodies = [_Body(raw) for raw in BODY_RULES]
        by_char: dict[str, list[_Body]] = {}
        guards: dict[str, list[str]] = {}
        for raw, body in zip(BODY_RULES, bodies, strict=True):
            at, behind, ahead = raw[4], raw[5], raw[6]
            for char in _chars(at):
                lit = re.escape(char)
                guards.setdefault(char, []).append(
                    f"{f'(?<={behind}{lit})' if behind else ''}(?={ahead})"
                )
                by_char.setdefault(char, []).append(body)
        # An operator after a name, followed by a value long enough to be a secret.
        value = rf"(?=[=>:|?,]{{0,3}}{_VALUE_HEAD}[^\s\x60'\";]{{{_SHORTEST}}})"
        for char in sorted(_OPERATORS):
            lit = re.escape(char)
            guards.setdefault(char, []).append(f"(?<=[\\w.\\-\\s'\"]{lit}){value}")
        # One alternative per character, starting with it, its guards after it: the regex
        # engine then skips through a text testing one set of first characters per
        # position, and at a stop tries one alternative.
        sites = re.compile(
            "|".join(f"{re.escape(c)}(?:{'|'.join(g)})" for c, g in guards.items()), re.ASCII
        )
        _PASS.append(_Pass(sites, {c: tuple(b) for c, b in by_char.items()}))
    return _PASS[0]


def _chars(at: str) -> str:
    """The characters a one-character regex (a literal or a small class) stands for."""
    if at.startswith("[") and at.endswith("]"):
        return re.sub(r"\\(.)", r"\1", at[1:-1])
    return at[-1]


_OPERATORS: Final = frozenset("=>:|?,")


def redact_rules(text: str) -> str:
    """``text`` with every secret a carried gitleaks rule finds replaced by its mark."""
    second = _second_pass()
    found = second.sites.search(text)
    if found is None:
        return text
    out: list[str] = []
    done = 0
    bodies = second.bodies
    while found is not None:
        at = found.start()
        char = text[at]
        hit: tuple[int, int, str] | None = None
        for body in bodies.get(char, ()):
            span = body.secret_at(text, at)
            if span is not None:
                hit = (span[0], span[1], body.mark)
                break
        if hit is None and char in _OPERATORS:
            hit = _keyword_at(text, at)
        if hit is None or hit[1] <= done:
            found = second.sites.search(text, at + 1)
            continue
        start = max(hit[0], done)
        out.append(text[done:start])
        out.append(hit[2])
        done = hit[1]
        found = second.sites.search(text, max(done, at + 1))
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)
