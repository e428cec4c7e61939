"""Clipping recorded values for the viewer: the first part of a big value, and how much more.

A text keeps its first ``limit`` characters and says how many more the cassette holds;
any other value is replaced by the first ``limit`` bytes of its JSON, as
``{CLIPPED: text, MORE: bytes left}``, which the viewer shows as clipped JSON. A value an
entry still holds as its stored JSON (``msgspec.Raw``: the report loads a tape so) is
clipped as JSON whatever it is, without decoding it: the viewer shows the first bytes of
a JSON string as the text they begin (``viewer.js``, ``value``).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = ["CLIPPED", "MORE", "clip_json", "clip_raw", "clip_text"]

#: Marks a value whose JSON was clipped: ``{CLIPPED: "<its first characters>", MORE: n}``.
CLIPPED: Final = "$clipped_json"
MORE: Final = "$more_bytes"


def clip_text(value: str, limit: int) -> str:
    """``value`` clipped to its first ``limit`` characters (it is longer), saying how many
    more the cassette holds."""
    return f"{value[:limit]}… ({len(value) - limit:,} more characters in the cassette)"


def clip_raw(raw: bytes, limit: int) -> Any:
    """Encoded JSON as it is, or its first ``limit`` bytes when it is longer."""
    if len(raw) <= limit:
        return msgspec.Raw(raw)
    return _clipped(memoryview(raw), limit)


def clip_json(raw: msgspec.Raw, limit: int) -> Any:
    """Stored JSON as it is, or its first ``limit`` bytes when it is longer."""
    if len(raw) <= limit:
        return raw
    return _clipped(memoryview(raw), limit)


def _clipped(view: memoryview, limit: int) -> dict[str, Any]:
    """The first ``limit`` bytes of the JSON in ``view`` (fewer, to end at a character)."""
    while view[limit] & 0xC0 == 0x80:  # not in the middle of a character's UTF-8 bytes
        limit -= 1
    # "replace": stored JSON is shown as the tape holds it, even bytes that are not UTF-8.
    return {CLIPPED: bytes(view[:limit]).decode("utf-8", "replace"), MORE: len(view) - limit}
