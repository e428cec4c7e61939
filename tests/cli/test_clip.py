"""Clipping a stored output from its first bytes gives what clipping the decoded text gives."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontape.cli import _clip
from sessiontape.cli._clip import clip_stored_text, clip_text

#: Characters JSON escapes (quote, backslash, controls), multi-byte ones, and plain ones.
_TRICKY = st.characters(
    blacklist_categories=("Cs",),  # lone surrogates: no tape holds them
    whitelist_characters='"\\\n\t\x01\x1fé€😀',
)


def _eager(text: str, limit: int) -> str:
    return text if len(text) <= limit else clip_text(text, limit)


@settings(max_examples=400, deadline=None)
@given(text=st.text(_TRICKY, max_size=300), limit=st.integers(1, 40))
def test_the_stored_text_clips_as_the_decoded_text_does(text: str, limit: int) -> None:
    raw = msgspec.Raw(msgspec.json.encode(text))
    assert clip_stored_text(raw, limit) == _eager(text, limit)


@pytest.mark.parametrize(
    "text",
    [
        "\\" * 500,  # every character an escape of two bytes
        "\x01" * 500,  # every character an escape of six bytes
        "a\\" * 300,
        "😀" * 500,  # four UTF-8 bytes each
        "x" * 10_000 + "\n",
    ],
)
@pytest.mark.parametrize("limit", [1, 5, 6, 7, 100])
def test_escapes_and_characters_are_never_cut_in_two(
    text: str, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = msgspec.Raw(msgspec.json.encode(text))

    def whole(value: object) -> object:
        raise AssertionError("a long text was decoded whole: its first bytes were cut badly")

    # Each of these texts is long enough to be clipped from its first bytes alone.
    monkeypatch.setattr(_clip, "stored", whole)
    clipped = clip_stored_text(raw, limit)
    assert clipped == _eager(text, limit)
    assert clipped.startswith(text[:limit])


def test_the_rest_is_counted_in_bytes_of_json() -> None:
    text = "é" * 10 + "\n" * 5
    # The rest: five "é" (two bytes each) and five newlines (two bytes each as \n).
    assert clip_text(text, 5) == "é" * 5 + "… (20 more bytes of JSON in the cassette)"
