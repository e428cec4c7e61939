"""What gets recorded and how: levels, payload encoding, and user data made JSON-ready."""

from __future__ import annotations

import base64
import enum
import hashlib
import traceback as _traceback
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Final

import msgspec

from ._entries import Blob, ErrorInfo, Payload, Usage
from ._errors import UsageError

__all__ = [
    "DEFAULT_MAX_INLINE_BYTES",
    "Level",
    "PayloadCodec",
    "error_info",
    "extract_usage",
    "qualname",
    "to_data",
]

DEFAULT_MAX_INLINE_BYTES: Final = 64 * 1024


class Level(str, enum.Enum):
    """How much a recording keeps.

    ``minimal`` keeps metadata and timing only, ``standard`` adds sha256 digests of every
    payload, ``full`` keeps payloads themselves: only ``full`` tapes replay.
    """

    MINIMAL = "minimal"
    STANDARD = "standard"
    FULL = "full"

    @classmethod
    def parse(cls, value: str | Level) -> Level:
        """``Level`` from its name, with an error listing the valid ones."""
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(repr(m.value) for m in cls)
            raise UsageError(f"unknown recording level {value!r}; use one of {valid}.") from None


def _digest(raw: bytes) -> str:
    return "sha256:" + hashlib.sha256(raw).hexdigest()


class PayloadCodec:
    """Turns stdin/stdout/stderr into :data:`Payload` values and back.

    ``scrub`` is applied to text before it is stored (redaction, path placeholders);
    ``expand`` to stored text when it is served again (placeholders to today's roots).
    """

    __slots__ = ("expand", "level", "max_inline_bytes", "scrub")

    def __init__(
        self,
        level: Level,
        max_inline_bytes: int = DEFAULT_MAX_INLINE_BYTES,
        scrub: Callable[[str], str] | None = None,
        expand: Callable[[str], str] | None = None,
    ) -> None:
        if max_inline_bytes < 0:
            raise UsageError(f"max_inline_bytes must be >= 0, got {max_inline_bytes!r}.")
        self.level = level
        self.max_inline_bytes = max_inline_bytes
        self.scrub = scrub
        self.expand = expand

    def encode(self, value: str | bytes | None) -> Payload:
        """The payload to store for ``value``."""
        if value is None or self.level is Level.MINIMAL:
            return None
        if isinstance(value, str):
            if self.level is Level.FULL and len(value) <= self.max_inline_bytes // 4:
                # Fast path: even at 4 bytes a character this fits inline.
                return self.scrub(value) if self.scrub is not None else value
            raw = value.encode("utf-8", "surrogateescape")
            text: str | None = value
        else:
            raw = bytes(value)
            text = None
        if self.level is Level.STANDARD or len(raw) > self.max_inline_bytes:
            return Blob(size=len(raw), sha256=_digest(raw), truncated=True)
        if text is None:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return Blob(size=len(raw), sha256=_digest(raw), b64=base64.b64encode(raw).decode())
        return self.scrub(text) if self.scrub is not None else text

    def decode(self, payload: Payload, *, text: bool) -> str | bytes | None:
        """The value to serve for a stored payload (``None`` if it was not captured).

        Raises ``LookupError`` for a truncated payload; callers turn that into a
        :class:`~sessiontape.TruncatedPayloadError` naming the seq.
        """
        if payload is None:
            return None
        if isinstance(payload, str):
            served = self.expand(payload) if self.expand is not None else payload
            return served if text else served.encode("utf-8", "surrogateescape")
        if payload.truncated or payload.b64 is None:
            raise LookupError(payload.sha256)
        raw = base64.b64decode(payload.b64)
        return raw.decode("utf-8", "replace") if text else raw

    def comparable(self, value: str | bytes | None, stored: Payload) -> Payload:
        """``value`` in the stored form of ``stored``, so the two can be compared."""
        if value is None:
            return None
        if isinstance(stored, Blob) and stored.truncated:
            raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
            return Blob(size=len(raw), sha256=_digest(raw), truncated=True)
        return self.encode(value)


def qualname(obj_type: type) -> str:
    """``module.QualName`` of a type, the form recorded in ``result_type`` and errors."""
    module = obj_type.__module__
    if module == "builtins":
        return obj_type.__qualname__
    return f"{module}.{obj_type.__qualname__}"


def error_info(exc: BaseException, *, with_traceback: bool = True) -> ErrorInfo:
    """An :class:`ErrorInfo` for an exception."""
    tb: str | None = None
    if with_traceback and exc.__traceback__ is not None:
        tb = "".join(_traceback.format_exception(type(exc), exc, exc.__traceback__))
    return ErrorInfo(type=qualname(type(exc)), message=str(exc), traceback=tb)


def format_traceback(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> str:
    """The formatted traceback of an exception."""
    return "".join(_traceback.format_exception(exc_type, exc, tb))


class Unencodable(Exception):
    """A value has no JSON form; ``to_data`` records its repr instead."""


def _enc_hook(obj: Any) -> Any:
    # datetime subclasses (freezegun's FakeDatetime) and other oddities.
    import datetime as _dt

    if isinstance(obj, _dt.datetime):
        return _dt.datetime.fromisoformat(obj.isoformat())
    if isinstance(obj, _dt.date):
        return _dt.date.fromisoformat(obj.isoformat())
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    raise Unencodable(type(obj).__name__)


def to_data(obj: Any) -> Any:
    """``obj`` as JSON-ready builtins (dataclasses, attrs, Structs, enums, datetimes...).

    Raises :class:`Unencodable` naming the first type that has no JSON form.
    """
    try:
        return msgspec.to_builtins(obj, enc_hook=_enc_hook, str_keys=True)
    except Unencodable:
        raise
    except (TypeError, ValueError) as exc:
        raise Unencodable(str(exc)) from None


_USAGE_KEYS: Final = {
    "input_tokens": "input_tokens",
    "prompt_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "completion_tokens": "output_tokens",
    "cache_read_tokens": "cache_read_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_write_tokens": "cache_write_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
    "cost_usd": "cost_usd",
    "total_cost_usd": "cost_usd",
}


def extract_usage(result: Any) -> Usage | None:
    """Token usage from an agent result's data: a ``usage``/``token_usage`` mapping, or
    the usage keys at the top level. ``None`` when the result carries none."""
    if not isinstance(result, Mapping):
        return None
    source: Mapping[str, Any] = result
    for key in ("usage", "token_usage"):
        nested = result.get(key)
        if isinstance(nested, Mapping):
            source = nested
            break
    found: dict[str, Any] = {}
    for key, field in _USAGE_KEYS.items():
        value = source.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            found.setdefault(field, float(value) if field == "cost_usd" else int(value))
    return Usage(**found) if found else None
