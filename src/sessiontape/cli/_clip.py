"""Clipping recorded values for the viewer: the first part of a big value, and how much more.

A text keeps its first ``limit`` characters and says how many bytes of JSON the rest
takes in the cassette; any other value is replaced by the first ``limit`` bytes of its
JSON, as ``{CLIPPED: text, MORE: bytes left}``. The report clips every big value of a
tape, and a tape's outputs run to tens of megabytes: an output still held as its stored
JSON (a replay's lazy load) is clipped from its first bytes, without decoding the rest.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..cassette import stored

__all__ = ["CLIPPED", "MORE", "clip_raw", "clip_stored_text", "clip_text"]

#: Marks a value whose JSON was clipped: ``{CLIPPED: "<its first characters>", MORE: n}``.
CLIPPED: Final = "$clipped_json"
MORE: Final = "$more_bytes"

_encode = msgspec.json.encode
_TEXT: Final = msgspec.json.Decoder(str)
_BACKSLASH: Final = ord("\\")
_U: Final = ord("u")


def _more(rest_json: int) -> str:
    return f"… ({rest_json:,} more bytes of JSON in the cassette)"


def clip_text(value: str, limit: int) -> str:
    """``value`` clipped to its first ``limit`` characters (it is longer), saying how many
    bytes of JSON the rest takes."""
    try:
        rest = len(_encode(value[limit:])) - 2  # without its quotes
    except (msgspec.EncodeError, UnicodeEncodeError):  # a lone surrogate: count its UTF-8
        rest = len(value[limit:].encode("utf-8", "surrogatepass"))
    return value[:limit] + _more(rest)


def clip_raw(raw: bytes, limit: int) -> Any:
    """Encoded JSON as it is, or its first ``limit`` bytes when it is longer."""
    if len(raw) <= limit:
        return msgspec.Raw(raw)
    while raw[limit] & 0xC0 == 0x80:  # not in the middle of a character's UTF-8 bytes
        limit -= 1
    return {CLIPPED: raw[:limit].decode("utf-8"), MORE: len(raw) - limit}


def clip_stored_text(raw: msgspec.Raw, limit: int) -> str:
    """A stored JSON string (``raw`` starts with ``"``) as :func:`clip_text` shows it: the
    text itself when it holds ``limit`` characters or fewer, else clipped.

    Only as many of its first bytes are decoded as hold ``limit`` characters; the bytes of
    JSON left are counted from the stored text, which for a tape sessiontape wrote is
    what :func:`clip_text` counts for the decoded text. A text this cannot cut (a damaged
    one) is decoded whole, as :func:`~sessiontape.cassette.stored` decodes it.
    """
    view = memoryview(raw)
    size = len(view)
    cut = 2 * limit + 8  # most texts: a few escapes in ``limit`` characters
    while cut < size - 1:
        head = _head(view, cut)
        try:
            text = _TEXT.decode(head)
        except msgspec.DecodeError:
            break
        if len(text) > limit:
            kept = text[:limit]
            return kept + _more(size - len(_encode(kept)))
        cut *= 4
    whole: str = stored(raw)
    return whole if len(whole) <= limit else clip_text(whole, limit)


def _head(view: memoryview, cut: int) -> bytes:
    """The JSON string of the stored text's bytes before ``cut``, moved back so that no
    character's UTF-8 bytes and no escape sequence is cut in two."""
    while cut > 1 and view[cut] & 0xC0 == 0x80:
        cut -= 1
    # An escape is two bytes (``\\n``) or six (``\\u00e9``): only one starting in the last
    # five bytes can run past the cut. A backslash starts one when the run of backslashes
    # it ends is odd (``\\\\`` is one escape, of a backslash).
    for start in range(cut - 1, max(0, cut - 6), -1):
        if view[start] != _BACKSLASH:
            continue
        run = 0
        while view[start - run] == _BACKSLASH:
            run += 1
        if run % 2 == 0:
            continue
        length = 6 if view[start + 1] == _U else 2
        if start + length > cut:
            cut = start
        break
    return bytes(view[:cut]) + b'"'
