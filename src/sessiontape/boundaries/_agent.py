"""The agent boundary: each agent turn's full result, recorded and served again.

Recording, every call of the adapter's ``execute`` (or the methods named) becomes an
:class:`~sessiontape.AgentTurn` holding the request, the result as data, the result's type
and its token usage. On replay a stand-in answers with the recorded results, decoded into
the application's result type; the agent is never called. This module is the smallest
complete boundary: copy it to add one of your own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

# The package, never msgspec.structs first: a thread importing a submodule while another
# imports its package deadlocks in the import system (msgspec imports structs itself).
import msgspec

from ..cassette import BOUNDARY_AGENT, AgentTurn, CallEntry, Usage
from ..replayer import resolve_result_type
from ..scrub import qualname
from ._methods import (
    method_names,
    recording_proxy,
    substitute_proxy,
)
from ._protocols import RecordSide, ReplaySide

__all__ = ["extract_usage", "recording_agent", "replaying_agent"]


def recording_agent(
    rec: RecordSide, adapter: Any, *, name: str, method: str | Sequence[str]
) -> Any:
    """``adapter`` with each call of ``method`` recorded as an :class:`AgentTurn`."""

    def template(method: str) -> CallEntry:
        return AgentTurn(seq=0, ts_ns=0, mono_ns=0, agent=name, method=method)

    def complete(entry: CallEntry, data: Any, result: Any) -> CallEntry:
        if cast(AgentTurn, entry).error is not None:
            return entry
        return msgspec.structs.replace(
            entry, result_type=_result_type(type(result)), usage=extract_usage(data)
        )

    return recording_proxy(rec, adapter, name, method_names(method), template, complete)


# An agent returns results of a type or two, named on every turn.
_RESULT_TYPES: Final[dict[type, str]] = {}


def _result_type(result_type: type) -> str:
    """The recorded name of a result's type."""
    name = _RESULT_TYPES.get(result_type)
    if name is None:
        if len(_RESULT_TYPES) >= 256:
            _RESULT_TYPES.clear()
        name = _RESULT_TYPES[result_type] = qualname(result_type)
    return name


def replaying_agent(
    engine: ReplaySide,
    *,
    method: str | Sequence[str],
    result_type: Any,
    asynchronous: bool = False,
) -> Any:
    """A stand-in for the adapter answering each call with the recorded result.

    The result is decoded into ``result_type``, or into the type named by the tape when
    none is given; without either it is returned as plain data. With ``asynchronous``
    the stand-in's methods are coroutine functions (for an adapter whose ``execute`` is
    ``async def``).
    """

    def target(entry: CallEntry) -> Any:
        if result_type is None and isinstance(entry, AgentTurn) and entry.result_type:
            return resolve_result_type(entry.result_type)
        return result_type

    return substitute_proxy(
        engine, BOUNDARY_AGENT, method_names(method), target, asynchronous=asynchronous
    )


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
