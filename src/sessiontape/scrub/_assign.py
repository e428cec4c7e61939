"""Values found by the name they are assigned to: ``password=...``, ``"api_key": "..."``,
``Authorization: Bearer ...``, ``--token ...`` inside a command line.

The shapes here are found at the ``:`` or ``=`` after a key, checked by lookbehinds that
the key ends like a secret name (its last letters), then judged on the whole key
(:func:`~._names.is_secret_name`). The value goes; the key, the quotes and a scheme stay
readable, so a JSON document stays valid JSON.
"""

from __future__ import annotations

import re
from typing import Final

from ._context import is_placeholder
from ._names import REDACTED_MARK, is_secret_name, redaction_mark
from ._shape import Shape, spellings

__all__ = [
    "VALUE",
    "assignment_shapes",
    "key_before",
    "key_ends_secret",
    "key_guard",
]


# How an assigned value ends, by how it starts (shared by ``key=value`` and ``--option``).
# Quoted values keep their quotes, so a JSON document stays valid JSON. Bare values that
# are variable references, comparisons, calls or nested JSON are code or structure, not
# secrets.
VALUE: Final = (
    # A PEM key given as a value (``tls.key=-----BEGIN ...``) is left to the private-key
    # shape, which takes its whole body: the value rule would stop at its first space.
    r"(?!\[REDACTED|-----BEGIN)(?:"
    r'(?<=\\")(?:[^"\\\r\n]|\\[^"\r\n])+'  # JSON inside a JSON string: up to the next \"
    r'|(?<=")(?:[^"\\\r\n]|\\.)+'  # a JSON string: escapes (\n in a PEM key) included
    r"|(?<=')[^'\r\n]+"
    # Not ``:=`` either (``TOKEN ::= "x"``): the value is what follows the operator.
    r"|(?<![\"'])(?![$={\[(:])(?![A-Za-z_][\w.]*[(\[])[^\s\"'\\,;&]+"
    r")"
)

# The endings a key must have for ``key=value`` / ``key: value`` to be examined at all
# (the whole key is then checked with is_secret_name). Lookbehinds need a fixed width,
# hence one group per length.
_KEY_ENDINGS: Final = (
    (
        "word",  # password
        "aswd",  # passwd
        "rase",  # passphrase
        "pass",
        "cret",  # secret
        "rets",  # secrets
        "oken",  # token
        "auth",
        "tial",  # credential
        "ials",  # credentials
        "okie",  # cookie
        "ture",  # signature
        "keys",
        "onid",  # sessionid
        "ssid",  # PHPSESSID
    ),
    ("key", "dsn", "pwd"),
)
_HEADERS: Final = ("authorization", "cookie")
# What may stand between a key and its separator: nothing, a closing quote or a space
# (``"token": ``, ``password = ``), an escaped quote (``\\"token\\":`` in JSON inside a
# JSON string).
_KEY_TAILS: Final = ("", "[\"' ]", r'\\"')


def key_guard(sep: str, tail: str) -> str:
    """Lookbehinds true when the key before ``tail`` and ``sep`` ends like an ending or header.

    Only the last two letters are compared: that turns most keys (``modified:``,
    ``"type":``) away for a fraction of the cost of the full endings. A one-class test of
    the last letter comes first, being cheaper still.
    """
    words = [w for group in (*_KEY_ENDINGS, _HEADERS) for w in group]
    last = "".join(sorted({c for w in words for c in (w[-1], w[-1].upper())}))
    pairs = spellings(sorted({w[-2:] for w in words}))
    return f"(?<=[{last}]{tail}{re.escape(sep)})(?<=(?:{pairs}){tail}{re.escape(sep)})"


def key_ends_secret(sep: str, tail: str) -> str:
    """Lookbehinds true when the key before ``tail`` and ``sep`` ends like a secret name."""
    return (
        "(?:"
        + "|".join(f"(?<=(?:{spellings(words)}){tail}{re.escape(sep)})" for words in _KEY_ENDINGS)
        + ")"
    )


def judge_assignment(match: re.Match[str]) -> str | None:
    key = key_before(match.string, match.start())
    if not is_secret_name(key):
        return None
    value = match.string[match.end(f"{match.lastgroup}__keep") : match.end()]
    # A placeholder (``xxxx``, ``<TOKEN>``), or the name itself (``token=TOKEN``).
    if is_placeholder(value) or value.strip("\"'").lower() == key.lower():
        return None
    return redaction_mark("aws") if _AWS_SECRET_KEY.search(key) else REDACTED_MARK


# Reads a key backwards from just before its separator: optional space, closing quote
# (possibly escaped), then the key itself.
_KEY_REVERSED: Final = re.compile(r"[ \t]?(?:\"\\|[\"'])?([\w.-]+)")
_AWS_SECRET_KEY: Final = re.compile(r"secret[_-]?access[_-]?key", re.IGNORECASE)


def key_before(text: str, end: int) -> str:
    """The key that ends just before ``text[end]`` (skipping a closing quote and a space)."""
    found = _KEY_REVERSED.match(text[max(0, end - 256) : end][::-1])
    return found.group(1)[::-1] if found else ""


# Authorization schemes whose credentials are one token: the scheme stays readable and the
# token goes. Any other header value (Digest parameters, cookies) goes to the end of the
# line or quote.
_SCHEMES: Final = spellings(("bearer", "basic", "token", "bot", "negotiate"))


def colon_shapes(tail: str, n: int) -> tuple[Shape, ...]:
    """The shapes found at a ``:`` after a key followed by ``tail``."""
    headers = tuple(
        Shape(
            f"{header}_{n}",
            ":",
            rf"(?<=(?:{spellings([header])}){tail}:)"
            rf"(?P<keep>[ \t]*[\"']?(?:(?P<{header}_{n}_scheme>{_SCHEMES})[ \t]+)?)"
            rf"(?!\[REDACTED)(?({header}_{n}_scheme)[^\s\"',;]+"
            # Without a scheme, not "Bearer [REDACTED...]" either: redacting stays idempotent.
            rf"|(?!(?:{_SCHEMES})[ \t])[^\s\"'](?:[^\r\n\"']*[^\s\"'])?)",
            header,
            guard=key_guard(":", tail),
        )
        for header in _HEADERS
        if not tail.startswith("\\")
    )
    # After a colon a bare JSON literal is data, not a secret, and must stay valid JSON.
    json_literal = r"(?!(?:true|false|null|-?\d+(?:\.\d+)?)(?![^\s,}\]]))"
    assignment = Shape(
        f"assign_colon_{n}",
        ":",
        key_ends_secret(":", tail) + r"(?P<keep>[ \t]*(?:\\?[\"'])?)" + json_literal + VALUE,
        None,
        judge=judge_assignment,
        guard=key_guard(":", tail),
    )
    return (*headers, assignment)


def assignment_shapes() -> tuple[Shape, ...]:
    """The header and assignment shapes, for each way a key may end before its separator.

    HTTP headers (Authorization, Cookie): the whole value goes, an auth scheme stays
    readable. Then ``password=...``, ``TOKEN="..."``, ``"api_key": "..."``,
    ``aws_secret_access_key = ...``.
    """
    return tuple(
        shape
        for n, tail in enumerate(_KEY_TAILS)
        for shape in (
            *colon_shapes(tail, n),
            Shape(
                f"assign_equals_{n}",
                "=",
                key_ends_secret("=", tail)
                + r"(?P<keep>[ \t]*(?:\\?[\"'])?)(?!(?:true|false|null)(?![^\s,;&]))"
                + VALUE,
                None,
                judge=judge_assignment,
                guard=key_guard("=", tail),
            ),
        )
    )
