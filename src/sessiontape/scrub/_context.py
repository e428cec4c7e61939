"""The second line of defence: secrets of no known shape, found by their context.

A token of a format no list names (the next vendor's, a random password) is still found
when it reads as random and sits where a credential goes: after a credential word
(``api key zqx_live_...``, ``bearer 4f9c...``, ``password is ...``), after a short option
that takes a password (``mysql -pSECRET``, ``redis-cli -a SECRET``), or as the user part
of a URL (``https://TOKEN@host``). This is what detect-secrets does with its keyword and
entropy plugins: a value is judged random by its Shannon entropy over its length (hex by
the lower threshold its smaller alphabet allows), and words, identifiers, paths,
numbers, versions and UUIDs are never taken for secrets whatever surrounds them.

Nothing here scans a text: the words and what follows them are alternatives of the one
regex of ``_shapes`` (each word found at its rarest letter, so the scan stops at few
more places), and :func:`looks_random` judges the value of each match, which only a
credential word followed by a separator and ten characters or more reaches.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Final, NamedTuple

from ._names import redaction_mark

__all__ = [
    "CONTEXT_MARK",
    "RANDOM_VALUE",
    "ContextWord",
    "context_tail",
    "context_words",
    "is_placeholder",
    "looks_random",
    "starts_a_word",
]

#: What a value found by its context becomes.
CONTEXT_MARK: Final = redaction_mark("high-entropy")

# Words a credential word may be glued behind (``apikey``, ``secretKey``, ``AUTHTOKEN``).
# *auth* and *session* on their own are found by name (``AUTH=x``, ``sessionid=x``, see
# ``_shapes``): their letters are too common to be worth a stop of the scan.
_GLUED: Final = ("api", "access", "secret", "private", "auth", "session", "client", "app")
# By anchor letter (lowered): (word, index of the anchor in it). No plurals: ``tokens``
# and ``keys`` are counts and lists (``input_tokens``), and end the search at once.
_WORDS: Final = (
    ("key", 0),
    ("token", 2),
    ("cookie", 3),
    ("password", 4),
    ("passwd", 4),
    ("pwd", 1),
    ("bearer", 0),
    ("secret", 2),
    ("credential", 0),
)
# The letters the words are found at: their rarest lowercase letters, B (Bearer, BEARER),
# at which the scan stops anyway, and the rare capitals K and W (apiKey, TOKEN, PASSWORD).
# C is not one (it starts too many words: Changes, Command): SECRET and CREDENTIAL in
# capitals are found by name (SECRET=x, "CREDENTIAL": x).
_ANCHORS: Final = frozenset("kwcbBKW")
# What may follow the word as more of the same name (``api_key_id``, ``tokenValue``),
# what separates name and value (spaces, a colon or an equals sign, quotes, ``is``).
_NAME_TAIL: Final = r"(?:[_.-][A-Za-z0-9]+|[A-Z][a-z0-9]+){0,2}"
# One run of spaces, quotes, colons, equals signs (``: "``, `` = '``, ``=>``, ``\\"``),
# then perhaps ``is``: one class, so that a value that is not one is given up at once.
_SEPARATOR: Final = r"[ \t\"'`:=>\\]{1,6}(?:[iI][sS][ \t]+)?"
#: A value judged by its entropy: up to a space, a quote or what delimits a value in code.
RANDOM_VALUE: Final = (
    # Not a JSON Web Token either: its shape names it, and keeps its header readable.
    r"(?![-\[:=]|eyJ)[^\s\"'`,;<>()\[\]{}\\]{10,}"
    # All of it (no shorter value of it) and not what redaction left (``eyJ...[REDACTED``).
    r"(?![^\s\"'`,;<>()\[\]{}\\])(?!\[REDACTED)"
)


class ContextWord(NamedTuple):
    """One spelling of a credential word as an alternative of the secrets regex."""

    anchor: str  # the letter it is found at
    pattern: str  # what follows the anchor: the rest of the word, a plural's s
    word: str  # the word as spelled (``key``, ``Key``, ``KEY``)
    before: int  # how many of its letters come before the anchor


def _spellings(word: str, anchor: int) -> list[ContextWord]:
    """The lower, Capitalized and UPPER spellings of a word, found at its anchor letter.

    No letter of the same case may follow the word (``keyboard``, ``KEYS``); whether it
    starts a word is checked by :func:`starts_a_word` once a value follows. Spellings
    found by the same letter and the same rest (``token``, ``Token``) are one.
    """
    out: list[ContextWord] = []
    for spelled in dict.fromkeys((word, word.capitalize(), word.upper())):
        if spelled[anchor] not in _ANCHORS:
            continue  # a capital the scan does not stop at (KEY, TOKEN): see _ANCHORS
        follow = "(?![A-Z])" if spelled.isupper() else "(?![a-z])"
        pattern = re.escape(spelled[anchor + 1 :]) + f"(?<={re.escape(spelled)})" + follow
        if all((w.anchor, w.pattern) != (spelled[anchor], pattern) for w in out):
            out.append(ContextWord(spelled[anchor], pattern, spelled, anchor))
    return out


def context_words() -> list[ContextWord]:
    """The credential words, each in each of its spellings, found at its rarest letter.

    ``k`` of key, token, cookie; ``w`` of password, passwd, pwd; ``b`` of bearer; ``c``
    of secret, credential: the one scan of a text stops at few more places. What follows
    the word in the regex is :func:`context_tail`; the caller judges the value with
    :func:`looks_random`.
    """
    return [w for word, anchor in _WORDS for w in _spellings(word, anchor)]


def starts_a_word(text: str, start: int, word: str) -> bool:
    """Whether ``word``, found at ``text[start:]``, starts a word of ``text``.

    It does after anything but a letter or digit (``api_key``, ``"token"``), at a camelCase
    hump (``apiKey``), or glued behind a word of _GLUED (``apikey``, ``APITOKEN``);
    ``monkey`` and ``broken`` hold no credential word.
    """
    if start == 0:
        return True
    before = text[start - 1]
    if not before.isalnum():
        return True
    if text[start].isupper() and before.islower():
        return True  # a camelCase hump
    head = text[max(0, start - 8) : start].lower()
    return head.endswith(_GLUED)


def context_tail(value_group: str) -> str:
    """What follows a credential word: the rest of its name, the separator (the group
    ``keep``) and the value (the group ``value_group``)."""
    return _NAME_TAIL + f"(?P<keep>{_SEPARATOR})(?P<{value_group}>{RANDOM_VALUE})"


# What a value never is, whatever its entropy: a UUID, a path, a variable or a template.
_UUID: Final = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\Z")
_NOT_A_VALUE: Final = ("./", "../", "~", "$", "%", "{", "<", "[", "-", "*", "http")
# Values are split into parts at separators; a value all of whose parts read as words,
# numbers or versions is a name, a path or a sentence, not a random token. Its randomness
# is judged on its longest other chunk (``zqx_live_<random>``: the random part), split
# without ``/`` and ``+``, which are base64's.
_PARTS: Final = re.compile(r"[-_./:@+~,=!#]+")
_CHUNKS: Final = re.compile(r"[-_.:@~,=!#]+")
_WORDY: Final = re.compile(
    r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*\d{0,4}|[A-Z]{1,8}s?\d{0,4}|\d+[a-z]{0,3}|v?\d+(?:\.\d+)*"
)
_SPACE: Final = re.compile(r"\s")
_HUMP: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_VOWEL: Final = re.compile(r"[aeiouyAEIOUY]")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_BASE64_ONLY: Final = frozenset("+=")
# Trailing punctuation that ends a sentence rather than a token.
_TRAILING: Final = ".,;:!?)"


def _entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


# What stands in for a value rather than being one (gitleaks' global allowlist): one
# character repeated six times or more (``xxxxxxxx``, ``******``; a shorter value under a
# secret name is taken as the secret it may be), a template (``{{ secrets.TOKEN }}``,
# ``${TOKEN}``, ``%TOKEN%``, ``@TOKEN@``), a placeholder in angle brackets
# (``<YOUR_TOKEN>``), or true, false and null.
_PLACEHOLDER: Final = re.compile(
    r"[\"'`]?(?:(.)\1{5,}|\{\{[^{}]*\}\}|\$\{\{[^{}]*\}\}|\$\{?\w+\}?|%\w+%|@\w+@|<[^<>\n]+>"
    r"|(?i:true|false|null|none))[\"'`]?\Z"
)


# A value of 8 characters or more carrying less than this many bits a character is one
# character repeated after a short prefix (``pplx-xxxx...``, ``AIzaaaaa...``): no secret.
_PLACEHOLDER_BITS: Final = 1.5


def is_placeholder(value: str) -> bool:
    """Whether ``value`` stands in for a secret rather than being one (see above), or is
    mostly one character repeated: found by its name or its shape, it is kept."""
    if _PLACEHOLDER.match(value) is not None:
        return True
    n = len(value)
    if n < 8:
        return False
    bits = -sum(c / n * math.log2(c / n) for c in Counter(value).values())
    return bits < _PLACEHOLDER_BITS


def looks_random(value: str) -> bool:
    """Whether ``value``, found where a credential goes, reads as a random secret.

    Its longest chunk that is not a word (or, from 16 characters, the whole value) must
    have 10 characters or more and carry enough Shannon entropy: hex needs
    ``0.65 * log2(n)`` bits per character up to 3.0 (detect-secrets' hex limit), any
    other alphabet ``0.75 * log2(n)`` up to 4.5 (its base64 limit), ``log2(n)`` being the
    most ``n`` characters can carry. A random token of 10 characters or more passes; a
    word, an identifier in ``snake_case`` or ``CamelCase``, a path, a number, a version
    or a UUID does not.
    """
    value = value.rstrip(_TRAILING)
    if len(value) < 10 or value.startswith(_NOT_A_VALUE) or "[REDACTED" in value:
        return False
    if value.isdigit() or _UUID.match(value) is not None or _SPACE.search(value):
        return False  # a number, a UUID, words (an argv word: claude -p "work on t1")
    if _all_wordy(value):
        return False
    if value.startswith("/") and value.count("/") > 1 and not _BASE64_ONLY.intersection(value):
        # An absolute path has mostly words between its slashes (base64 may hold slashes).
        segments = [seg for seg in value.split("/") if seg]
        if 2 * sum(_all_wordy(seg) for seg in segments) > len(segments):
            return False
    chunks = [c for c in _CHUNKS.split(value) if c and not _wordy(c)]
    chunk = max(chunks, key=len, default="")
    # base64url has ``-`` and ``_`` of its own: a value of 16 or more is judged whole too.
    return _random(chunk, 10) or (len(value) >= 16 and _random(value, 16))


def _wordy(part: str) -> bool:
    """Whether ``part`` reads as a word, a number or a version: it has the form of one,
    and each of its humps of five letters or more has a vowel (``egqyZlKczddt``, the
    form of a camelCase name, is random letters; ``src`` and ``tmp`` are words)."""
    if _WORDY.fullmatch(part) is None:
        return False
    humps = _HUMP.findall(part)
    return all(len(h) < 5 or _VOWEL.search(h) is not None for h in humps)


def _all_wordy(value: str) -> bool:
    return all(_wordy(part) for part in _PARTS.split(value) if part)


def _random(text: str, least: int) -> bool:
    """Whether ``text`` (of ``least`` characters or more) carries a random token's entropy."""
    n = len(text)
    if n < least or text.isdigit():
        return False
    entropy = _entropy(text)
    if _HEX.issuperset(text):
        return n >= 16 and entropy >= min(3.0, 0.65 * math.log2(n))
    return entropy >= min(4.5, 0.75 * math.log2(n))
