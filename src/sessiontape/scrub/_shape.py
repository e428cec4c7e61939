"""One shape of the scrubber's regex, and how shapes become one regex.

A :class:`Shape` is one alternative of the combined regex ``_shapes`` searches every
recorded text with: the literal it starts with (its anchor), a cheap guard shared with
the shapes of that anchor, what follows, and how a match is replaced (a mark, or a
judge that decides). :func:`combine` puts them in one regex, one alternative per anchor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["Judge", "Shape", "combine", "spellings"]


def spellings(words: Sequence[str]) -> str:
    """An alternation of the lower, UPPER and Capitalized spellings of ``words``.

    Made for lookbehinds, which the engine tries alternative by alternative: literals
    (rather than ``(?i:...)`` or classes) are rejected at their first character, and
    factoring by first character (``a(?:swd|uth)``) spares most of those rejections. This
    makes the checks tried at every ``:`` and ``=`` about three times cheaper.
    """
    groups: dict[str, list[str]] = {}
    for word in words:
        for spelling in dict.fromkeys((word, word.upper(), word.capitalize())):
            groups.setdefault(spelling[0], []).append(re.escape(spelling[1:]))
    return "|".join(
        re.escape(first) + (rests[0] if len(rests) == 1 else f"(?:{'|'.join(rests)})")
        for first, rests in groups.items()
    )


#: Decides from a match whether it is a secret: the mark to put in its place, or None.
Judge = Callable[[re.Match[str]], str | None]


class Shape(NamedTuple):
    """One alternative of the secrets regex and how its match is replaced."""

    name: str  # the group name the match is known by
    anchor: str  # the literal the match starts with
    pattern: str  # what follows the anchor; ``(?P<keep>...)`` is kept before the mark
    kind: str | None  # the ``[REDACTED:<kind>]`` label; None: ``[REDACTED]``
    back: int = 0  # characters before the anchor (checked by a lookbehind) that go too
    judge: Judge | None = None  # for shapes found by a name that must be checked
    guard: str = ""  # a cheap check right after the anchor, shared with neighbours
    # When the judge says no: go on after ``keep`` (an option's name is done with) or at
    # the next character (a credential word's separator may be an assignment's).
    resume_after_keep: bool = True
    # A token of a vendor's format: its rule's entropy threshold and allowlists (None:
    # not a token of a format; the hand-written ones look theirs up by kind).
    rule: tuple[float, tuple[int, ...]] | None = None
    token: bool = False

    @property
    def keep(self) -> str | None:
        """The group holding the readable prefix, if there is one."""
        return f"{self.name}__keep" if "(?P<keep>" in self.pattern else None

    def compiled(self) -> str:
        """The alternative as it goes into the combined regex, without anchor and guard.

        The named group that tells which shape matched is an empty one at the end: as the
        last group to close it is ``match.lastgroup``, and the alternative still starts
        with what the engine can reject at once.
        """
        body = self.pattern.replace("(?P<keep>", f"(?P<{self.name}__keep>")
        return f"{body}(?P<{self.name}>)"


def combine(shapes: Sequence[Shape]) -> re.Pattern[str]:
    """One regex for all shapes: one alternative per anchor, then per guard, in order."""
    tree: dict[str, dict[str, list[str]]] = {}
    for shape in shapes:
        tree.setdefault(shape.anchor, {}).setdefault(shape.guard, []).append(shape.compiled())
    return re.compile(
        "|".join(
            re.escape(anchor)
            + "(?:"
            + "|".join(f"{guard}(?:{'|'.join(alts)})" for guard, alts in guards.items())
            + ")"
            for anchor, guards in tree.items()
        )
    )
