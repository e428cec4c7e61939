"""Values in a report: the MISSING marker, bounded reprs, and the JSON form of anything.

The report holds user data (requests, results) of any type; these helpers show it within a
width, classify it for the field diff, and turn it into JSON that always serialises.
"""

from __future__ import annotations

import base64
import enum
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec

__all__ = [
    "MISSING",
    "MISSING_TEXT",
    "ValueKind",
    "bounded_repr",
    "json_enc_hook",
    "jsonable",
    "restore_missing",
    "safe_repr",
    "struct_fields",
    "summarize_value",
    "value_kind",
]


class _Missing:
    """The type of :data:`MISSING`; a singleton that survives copy and pickle."""

    __slots__ = ()
    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return MISSING_TEXT

    def __reduce__(self) -> str:
        return "MISSING"


#: How :data:`MISSING` is written in JSON and in the text report.
MISSING_TEXT: Final = "<missing>"

#: Stands for the side of a :class:`FieldDiff` where a key or list index does not exist.
MISSING: Final = _Missing()


class ValueKind(enum.IntEnum):
    MAP = 0
    SEQ = 1
    STR = 2
    BYTES = 3
    NUM = 4
    BOOL = 5
    NONE = 6
    STRUCT = 7
    OTHER = 8


# Exact-type lookup first: it is the common case and keeps bool apart from int.
KIND_OF_TYPE: Final[dict[type, ValueKind]] = {
    dict: ValueKind.MAP,
    list: ValueKind.SEQ,
    tuple: ValueKind.SEQ,
    str: ValueKind.STR,
    bytes: ValueKind.BYTES,
    bytearray: ValueKind.BYTES,
    int: ValueKind.NUM,
    float: ValueKind.NUM,
    bool: ValueKind.BOOL,
    type(None): ValueKind.NONE,
}


def value_kind(value: Any) -> ValueKind:
    kind = KIND_OF_TYPE.get(type(value))
    if kind is not None:
        return kind
    if isinstance(value, bool):
        return ValueKind.BOOL
    if isinstance(value, msgspec.Struct):
        return ValueKind.STRUCT
    if isinstance(value, Mapping):
        return ValueKind.MAP
    if isinstance(value, (list, tuple)):
        return ValueKind.SEQ
    if isinstance(value, str):
        return ValueKind.STR
    if isinstance(value, (bytes, bytearray)):
        return ValueKind.BYTES
    if isinstance(value, (int, float)):
        return ValueKind.NUM
    return ValueKind.OTHER


def struct_fields(value: msgspec.Struct) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__struct_fields__}


def safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:
        return f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"


# Nesting deeper than this is shown as '...': the text report is a hint, the JSON is exact.
_MAX_REPR_DEPTH: Final = 8


def bounded_repr(value: Any, budget: int, depth: int = 0) -> str:
    """A repr that stops building once it is about ``budget`` characters long.

    Keeps insertion order (``reprlib`` sorts dict keys) and never reprs a huge value whole.
    """
    if isinstance(value, bytearray):
        value = bytes(value)
    if isinstance(value, (str, bytes)):
        if len(value) <= budget:
            return repr(value)
        half = max(1, budget // 2)
        head, tail = repr(value[:half]), repr(value[-half:])
        if head[-1] == tail[-1]:
            # Same quote character: show one literal with the middle elided.
            opener = 2 if isinstance(value, bytes) else 1
            return f"{head[:-1]}...{tail[opener:]}"
        return f"{head}...{tail}"
    kind = value_kind(value)
    if kind not in (ValueKind.MAP, ValueKind.SEQ, ValueKind.STRUCT):
        return safe_repr(value)
    if depth >= _MAX_REPR_DEPTH:
        return "..."
    parts: list[str] = []
    used = 0
    if kind is ValueKind.SEQ:
        items: Iterable[str] = (bounded_repr(v, budget - used, depth + 1) for v in value)
    elif kind is ValueKind.MAP:
        items = (
            f"{bounded_repr(k, budget, depth + 1)}: {bounded_repr(v, budget - used, depth + 1)}"
            for k, v in value.items()
        )
    else:
        items = (
            f"{name}={bounded_repr(v, budget - used, depth + 1)}"
            for name, v in struct_fields(value).items()
        )
    for item in items:
        if used >= budget:
            parts.append("...")
            break
        parts.append(item)
        used += len(item) + 2
    body = ", ".join(parts)
    if kind is ValueKind.STRUCT:
        return f"{type(value).__name__}({body})"
    if kind is ValueKind.MAP:
        return f"{{{body}}}" if type(value) is dict else f"{type(value).__name__}({{{body}}})"
    if isinstance(value, tuple):
        return f"({body},)" if len(parts) == 1 and len(value) == 1 else f"({body})"
    return f"[{body}]"


def summarize_value(v: Any, width: int = 80) -> str:
    """A repr of ``v`` no longer than ``width`` characters, cut in the middle with ``...``.

    Cutting in the middle keeps both ends, which is where paths, ids and closing brackets are.
    """
    text = bounded_repr(v, max(width, 8))
    if len(text) <= width:
        return text
    keep = max(width - 3, 2)
    head = (keep + 1) // 2
    return f"{text[:head]}...{text[len(text) - (keep - head) :]}"


_BYTES_TYPES: Final = (bytes, bytearray, memoryview)


def json_enc_hook(obj: Any) -> Any:
    if obj is MISSING:
        return MISSING_TEXT
    # A report must always serialise: whatever msgspec cannot encode is kept as its repr.
    return safe_repr(obj)


def json_key(key: Any) -> str:
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return safe_repr(key)


def jsonable(value: Any) -> Any:
    """``value`` as JSON builtins: bytes as ``{"base64": ...}``, MISSING as ``"<missing>"``."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (str, int, float)):
        return value
    if value is MISSING:
        return MISSING_TEXT
    if isinstance(value, _BYTES_TYPES):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {json_key(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    try:
        # msgspec knows Structs (tags, renames), dataclasses, datetimes, UUIDs, decimals.
        built = msgspec.to_builtins(
            value, enc_hook=json_enc_hook, builtin_types=_BYTES_TYPES, str_keys=True
        )
    except Exception:
        if isinstance(value, msgspec.Struct):
            # e.g. a key msgspec cannot stringify: walk the fields so only that value degrades.
            return {name: jsonable(v) for name, v in struct_fields(value).items()}
        return safe_repr(value)
    return jsonable(built)


def restore_missing(value: Any) -> Any:
    return MISSING if value == MISSING_TEXT else value
