"""Recorded JSON with today's paths: results served, requests compared.

A tape holds paths as placeholders (``{repo}/src``); the application runs with today's
(``/tmp/x/repo/src``). Walking recorded data to expand its placeholders costs a Python
call per value; doing it on the JSON text costs one regex search, and a substitution only
when a placeholder occurs. So a recorded result is expanded in its JSON and decoded
straight into the type the application expects. A request made with today's paths is
recognised as the recorded one by :func:`same_today`, which walks only the parts of the
two that differ and expands the recorded texts among them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

import msgspec

from .._errors import UsageError
from ..cassette import CallEntry, boundary_of, damaged_line, result_json
from ..scrub import PathRoots
from ._protocols import ReplaySide

__all__ = ["RESULTS", "same_args", "same_today"]

#: A regex finding today's root placeholders in JSON bytes, and each one's replacement.
_Expander = tuple[re.Pattern[bytes], dict[bytes, bytes]]

_JSON: Final = msgspec.json.Encoder()
#: Not yet in a cache.
_UNKNOWN: Final[Any] = object()


class _RecordedJson:
    """Recorded results and requests, with today's paths (see the module docstring)."""

    def __init__(self) -> None:
        self._decoders: dict[Any, msgspec.json.Decoder[Any] | None] = {}
        # The roots last asked for and their expander: a replay keeps one set of roots.
        self._last: tuple[PathRoots | None, _Expander | None] = (None, None)

    def _decoder(self, target: Any) -> msgspec.json.Decoder[Any] | None:
        """A decoder into ``target``, made and kept on the first result of that type."""
        try:
            decoder: msgspec.json.Decoder[Any] | None = msgspec.json.Decoder(
                target if target is not None else Any, strict=False
            )
        except TypeError:
            decoder = None  # a type msgspec decodes only by conversion
        self._decoders[target] = decoder
        return decoder

    def _expander(self, roots: PathRoots) -> _Expander | None:
        """The expander of ``roots``, kept as the last one asked for."""
        named = roots.as_dict()
        expander: _Expander | None = None
        if named:
            table = {
                b"{" + name.encode() + b"}": _JSON.encode(path)[1:-1]
                for name, path in named.items()
            }
            pattern = re.compile(b"|".join(re.escape(key) for key in table))
            expander = (pattern, table)
        self._last = (roots, expander)
        return expander

    def decode(self, engine: ReplaySide, entry: CallEntry, target: Any) -> Any:
        """``entry``'s result, placeholders expanded, as ``target`` (a type or None)."""
        stored = entry.result  # type: ignore[union-attr]
        if type(stored) is msgspec.Raw:  # the stored JSON itself (see cassette/_lazy.py)
            raw: Any = stored
            mapped = engine.recording.mapped
            if mapped is not None:
                mapped.served(len(stored))
        else:
            raw = result_json(stored)
        roots = engine.roots
        last_roots, expander = self._last
        if roots is not last_roots:
            expander = self._expander(roots)
        if expander is not None:
            pattern, table = expander
            if pattern.search(raw) is not None:
                raw = pattern.sub(lambda m: table[m.group(0)], raw)
        correlations = engine.correlations
        if correlations.pairs:  # values the program made up today, echoed in the result
            raw = correlations.json(
                boundary_of(entry) or "", entry.worker, entry.seq, "result", raw
            )
        decoder = self._decoders.get(target, _UNKNOWN)
        if decoder is _UNKNOWN:
            decoder = self._decoder(target)
        try:
            if decoder is not None:
                return decoder.decode(raw)
            return msgspec.convert(msgspec.json.decode(raw), target, strict=False)
        except msgspec.ValidationError as exc:
            raise UsageError(
                f"{engine.recording.path}: seq {entry.seq}: the recorded result does not fit "
                f"{getattr(target, '__qualname__', target)!r} ({exc}). Pass the result_type "
                "the application uses today, or re-record."
            ) from None
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
            # Bytes the loader kept as JSON without decoding them (see cassette/_lazy.py).
            raise damaged_line(
                engine.recording.path,
                entry.seq,
                f"seq {entry.seq}: the recorded result is not valid JSON text: {exc}. "
                "Fix or delete the line, or re-record the cassette.",
            ) from None


_ABSENT: Final = object()


def same_today(recorded: Any, today: Any, expand: Callable[[str], str]) -> bool:
    """Whether ``today`` (raw data) is ``recorded`` (scrubbed data), or is it with today's
    paths in place of the placeholders (``expand`` puts them there).

    The two are walked together, only where they differ: one C-level comparison settles
    each other part. Where they differ, the recorded text must be today's once its
    placeholders are expanded. Then scrubbing ``today`` gives ``recorded`` back, and
    alignment would take the call as the recorded one. False means nothing (a secret,
    another value): the caller goes the long way.
    """
    return bool(recorded == today) or _walk(recorded, today, expand)


def same_args(recorded: Any, args: tuple[Any, ...], expand: Callable[[str], str]) -> bool:
    """:func:`same_today` for a call's positional arguments: ``recorded`` the list the tape
    holds, ``args`` the tuple the call was made with (no list of it is built)."""
    if type(recorded) is not list or len(recorded) != len(args):
        return False
    for value, other in zip(recorded, args):  # noqa: B905 - the lengths are equal
        if value != other and not _walk(value, other, expand):
            return False
    return True


def _walk(recorded: Any, today: Any, expand: Callable[[str], str]) -> bool:
    """:func:`same_today` for two values already known to differ."""
    kind = type(recorded)
    if kind is not type(today):
        return False
    if kind is str:
        return "{" in recorded and bool(expand(recorded) == today)
    if kind is dict:
        if len(recorded) != len(today):
            return False
        get = today.get
        for key, value in recorded.items():
            other = get(key, _ABSENT)
            if value == other:
                continue
            # A text, the usual difference (a path), is settled here: one call fewer.
            if type(value) is str:
                if type(other) is not str or "{" not in value or expand(value) != other:
                    return False
            elif not _walk(value, other, expand):
                return False
        return True
    if kind is list:
        if len(recorded) != len(today):
            return False
        for value, other in zip(recorded, today):  # noqa: B905 - the lengths are equal
            if value != other and not _walk(value, other, expand):
                return False
        return True
    return False


#: The one instance: its caches follow the roots of the replay in progress.
RESULTS: Final = _RecordedJson()
