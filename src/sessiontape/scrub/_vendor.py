"""Vendor tokens as shapes of the scrubber's one regex: a prefix, then a body.

:data:`~._ruleset.VENDOR_TOKENS` (generated from gitleaks' rules and the formats platforms
publish) lists each format as data; here each becomes one alternative of the combined
regex in ``_shapes``. As there, every alternative starts with a rare literal, its anchor:
the prefix's first capital when it starts with one (``NRAK-``, ``ATATT3``), else its first
separator after the first character (``dckr_pat_`` at its first ``_``, ``ya29.`` at its
``.``). What follows the anchor in the prefix is matched as a literal first, which the
regex engine rejects at its first character; what comes before is checked by a
lookbehind afterwards. Each anchor's alternatives share a guard: one character class for
the character before the anchor and one for the character after it, so that most ``_``
of ``snake_case`` are turned away by two class tests.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from ._ruleset import VENDOR_TOKENS

__all__ = ["VendorShape", "vendor_shapes"]

_SEPARATORS: Final = "_-.~"
# Capitals the hand-written shapes are found by (AKIA, AIza, Bearer, SG., eyJ).
_SHARED: Final = "ABGJ"
# Other capitals, the rarest in text first.
_CAPITALS: Final = "QXZKVYUWJOHFMDRLNCPIETS"
# The most characters the guard requires after an anchor.
_GATE: Final = 16


class VendorShape(NamedTuple):
    """One alternative of the secrets regex (see ``_shapes._Shape``)."""

    name: str
    anchor: str
    pattern: str
    kind: str
    back: int
    guard: str
    entropy: float  # at or below it, a token is a placeholder and kept
    allow: tuple[int, ...]  # its rule's allowlists (``_gitleaks.ALLOWLISTS``)


def _anchor_index(prefix: str) -> int | None:
    """Where in ``prefix`` the scrubber finds it, or None when nothing in it is rare.

    Best is a character the hand-written shapes are already found by (a text's every
    such character is tried anyway), then a separator, then another capital.
    """
    for rank in (_SHARED, _SEPARATORS):
        for i, c in enumerate(prefix):
            if c in rank and (i >= 2 or c not in _SEPARATORS):
                return i
    capitals = [i for i, c in enumerate(prefix) if c in _CAPITALS]
    return min(capitals, key=lambda i: _CAPITALS.index(prefix[i]), default=None)


def _pairs(ends: set[str]) -> str:
    """One fixed-width lookbehind body for the last two characters before an anchor,
    grouped by the first: the engine rejects most texts' pairs at their first character."""
    groups: dict[str, set[str]] = {}
    for end in ends:
        groups.setdefault(end[0], set()).add(end[1])
    return "(?:" + "|".join(f"{re.escape(k)}{_class(v)}" for k, v in sorted(groups.items())) + ")"


def _class(chars: set[str]) -> str:
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


def vendor_shapes() -> tuple[VendorShape, ...]:
    """Every format of :data:`VENDOR_TOKENS` as an alternative, grouped under its anchor."""
    planned: list[tuple[int, str, str, str, int, str]] = []
    for n, (_source, _kind, prefix, body, least, *_rule) in enumerate(VENDOR_TOKENS):
        i = _anchor_index(prefix)
        if i is None:
            continue
        before, anchor, after = prefix[:i], prefix[i], prefix[i + 1 :]
        boundary = f"(?<![A-Za-z0-9]{re.escape(prefix)})" if prefix[0].isalnum() else ""
        pattern = (
            re.escape(after)
            + (f"(?<={re.escape(prefix)})" if before else "")
            + boundary
            + f"[{body}]{{{least},}}"
        )
        planned.append((n, anchor, before, after, len(before), pattern))
    # The guard of each anchor: the characters that must follow it (at least as many as
    # its shortest token has after it, up to 16: a ``_`` of ``snake_case`` is followed by a
    # short word and turned away after a few characters) and, when every prefix found
    # there has something before the anchor, the character that may come before it.
    follows: dict[str, set[str]] = {}
    shortest: dict[str, int] = {}
    lasts: dict[str, set[str]] = {}
    all_before: dict[str, bool] = {}
    for n, anchor, before, after, _back, _pattern in planned:
        least = VENDOR_TOKENS[n][4]
        follows.setdefault(anchor, set()).update(after, _expand(VENDOR_TOKENS[n][3]))
        shortest[anchor] = min(shortest.get(anchor, _GATE), len(after) + least)
        lasts.setdefault(anchor, set()).add(before[-2:])
        all_before[anchor] = all_before.get(anchor, True) and len(before) >= 2
    shapes: list[VendorShape] = []
    for n, anchor, _before, _after, back, pattern in planned:
        guard = f"(?={_class(follows[anchor])}{{{shortest[anchor]}}})"
        if all_before[anchor]:
            guard = f"(?<={_pairs(lasts[anchor])}{re.escape(anchor)})" + guard
        _source, kind, _prefix, _body, _least, entropy, allow = VENDOR_TOKENS[n]
        shapes.append(
            VendorShape(f"vendor_{n}", anchor, pattern, kind, back, guard, entropy, allow)
        )
    return tuple(shapes)


def _expand(body: str) -> str:
    """The characters a regex class's inside (``A-Za-z0-9_-``) stands for."""
    out: list[str] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            out.extend(chr(c) for c in range(ord(body[i]), ord(body[i + 2]) + 1))
            i += 3
        else:
            out.append(body[i])
            i += 1
    return "".join(out)
