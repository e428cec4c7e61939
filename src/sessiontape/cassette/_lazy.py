"""Entries loaded for replay: outputs and results kept as their JSON until served.

A replay reads every field of a call that it matches (``argv``, ``cwd``, ``env``,
``input``, ``args``, ``kwargs``) but only *serves* a call's output: a process call's
``stdout`` and ``stderr``, a method call's ``result``. Those are most of a tape's bytes,
so the replay loader decodes them as :class:`msgspec.Raw`, the JSON text as it stands in
the file, and they are decoded when a call is served (a result straight into the type the
application expects). That halves the load of a long tape, and, with the file mapped
rather than read (see ``_loader.load_for_replay``), keeps its bytes out of memory.

The lazy kinds subclass the public ones: ``isinstance(entry, ProcessCall)`` holds for
both, and every other field has its type. Code that reads one of the lazy fields goes
through :func:`stored` (or :func:`result_json`), which accepts either form.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import msgspec

from ._entries import (
    AgentTurn,
    Call,
    Error,
    Patched,
    Payload,
    ProcessCall,
    SessionEnd,
    SessionResume,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
)

__all__ = [
    "LAZY_KINDS",
    "VIEW_KINDS",
    "LazyAgentTurn",
    "LazyCall",
    "LazyEntry",
    "LazyProcessCall",
    "LazyStoreMutation",
    "ViewAgentTurn",
    "ViewCall",
    "ViewEntry",
    "ViewProcessCall",
    "ViewStoreMutation",
    "eager",
    "process_payloads",
    "result_json",
    "stored",
    "stored_result",
]

#: What an absent lazy field holds: the JSON ``null`` (one shared, immutable object).
_NULL: Final = msgspec.Raw(b"null")

_JSON: Final = msgspec.json.Encoder()
_ANY: Final = msgspec.json.Decoder()
_PAYLOAD: Final = msgspec.json.Decoder(Payload)


# ``gc=False``: an entry is a tree of plain data that never refers back to itself, so the
# cycle collector need not track (and walk) hundreds of thousands of them.


class LazyProcessCall(ProcessCall, frozen=True, kw_only=True, gc=False, tag="process"):
    """A :class:`ProcessCall` whose ``stdout`` and ``stderr`` are their stored JSON."""

    stdout: msgspec.Raw = _NULL  # type: ignore[assignment]
    stderr: msgspec.Raw = _NULL  # type: ignore[assignment]


class LazyAgentTurn(AgentTurn, frozen=True, kw_only=True, gc=False, tag="agent_turn"):
    """An :class:`AgentTurn` whose ``result`` is its stored JSON."""

    result: msgspec.Raw = _NULL


class LazyStoreMutation(StoreMutation, frozen=True, kw_only=True, gc=False, tag="store_mutation"):
    """A :class:`StoreMutation` whose ``result`` is its stored JSON."""

    result: msgspec.Raw = _NULL


class LazyCall(Call, frozen=True, kw_only=True, gc=False, tag="call"):
    """A :class:`Call` whose ``result`` is its stored JSON."""

    result: msgspec.Raw = _NULL


#: Every entry kind as the replay loader decodes it.
LazyEntry = (
    SessionStart
    | SessionResume
    | StoreSnapshot
    | LazyProcessCall
    | LazyAgentTurn
    | LazyStoreMutation
    | LazyCall
    | Error
    | Patched
    | SessionEnd
)

#: Each lazy kind and the public kind it stands for.
LAZY_KINDS: Final[dict[type[Any], type[Any]]] = {
    LazyProcessCall: ProcessCall,
    LazyAgentTurn: AgentTurn,
    LazyStoreMutation: StoreMutation,
    LazyCall: Call,
}


# Entries loaded to be shown (``load_for_view``): a tool that shows a tape, rather than
# replaying it, matches nothing, so the arguments, the environment and stdin stay their
# stored JSON as well. The report of a long tape embeds them as they are (or clipped),
# never decoding them into lists and dicts only to encode them again.

_EMPTY_LIST: Final = msgspec.Raw(b"[]")
_EMPTY_DICT: Final = msgspec.Raw(b"{}")


class ViewProcessCall(LazyProcessCall, frozen=True, kw_only=True, gc=False, tag="process"):
    """A :class:`LazyProcessCall` whose ``env`` and ``input`` are their stored JSON too."""

    env: msgspec.Raw = _NULL  # type: ignore[assignment]
    input: msgspec.Raw = _NULL  # type: ignore[assignment]


class ViewAgentTurn(LazyAgentTurn, frozen=True, kw_only=True, gc=False, tag="agent_turn"):
    """A :class:`LazyAgentTurn` whose ``args`` and ``kwargs`` are their stored JSON too."""

    args: msgspec.Raw = _EMPTY_LIST  # type: ignore[assignment]
    kwargs: msgspec.Raw = _EMPTY_DICT  # type: ignore[assignment]


class ViewStoreMutation(
    LazyStoreMutation, frozen=True, kw_only=True, gc=False, tag="store_mutation"
):
    """A :class:`LazyStoreMutation` whose ``args`` and ``kwargs`` are their stored JSON too."""

    args: msgspec.Raw = _EMPTY_LIST  # type: ignore[assignment]
    kwargs: msgspec.Raw = _EMPTY_DICT  # type: ignore[assignment]


class ViewCall(LazyCall, frozen=True, kw_only=True, gc=False, tag="call"):
    """A :class:`LazyCall` whose ``args`` and ``kwargs`` are their stored JSON too."""

    args: msgspec.Raw = _EMPTY_LIST  # type: ignore[assignment]
    kwargs: msgspec.Raw = _EMPTY_DICT  # type: ignore[assignment]


#: Every entry kind as the loader for tools that show a tape decodes it.
ViewEntry = (
    SessionStart
    | SessionResume
    | StoreSnapshot
    | ViewProcessCall
    | ViewAgentTurn
    | ViewStoreMutation
    | ViewCall
    | Error
    | Patched
    | SessionEnd
)

#: Each kind of :data:`ViewEntry` kept as JSON, and the public kind it stands for.
VIEW_KINDS: Final[dict[type[Any], type[Any]]] = {
    ViewProcessCall: ProcessCall,
    ViewAgentTurn: AgentTurn,
    ViewStoreMutation: StoreMutation,
    ViewCall: Call,
}


def stored(value: Any) -> Any:
    """A process call's ``stdout`` or ``stderr`` as the public kind holds it: the
    :data:`Payload`, for either form of the entry (any other payload as it is)."""
    if type(value) is msgspec.Raw:
        return _PAYLOAD.decode(value) if value is not _NULL else None
    return value


def stored_result(value: Any) -> Any:
    """A recorded result as JSON data, from either form of a method call."""
    if type(value) is msgspec.Raw:
        return _ANY.decode(value) if value is not _NULL else None
    return value


def result_json(value: Any) -> msgspec.Raw | bytes:
    """A recorded result as JSON text (the stored text itself for a lazy entry)."""
    if type(value) is msgspec.Raw:
        return value
    return _JSON.encode(value)


def eager(entry: Any) -> Any:
    """``entry`` as its public kind, every lazy field decoded (other entries as they are)."""
    public = LAZY_KINDS.get(type(entry))
    if public is None:
        return entry
    fields = msgspec.structs.asdict(entry)
    if public is ProcessCall:
        fields["stdout"] = stored(fields["stdout"])
        fields["stderr"] = stored(fields["stderr"])
    else:
        fields["result"] = stored_result(fields["result"])
    return public(**fields)


def process_payloads(entry: ProcessCall) -> Iterator[tuple[str, Payload]]:
    """Every payload of a process call with its field path (``stdout``, ``chunks[3]``...)."""
    yield "input", entry.input
    yield "stdout", stored(entry.stdout)
    yield "stderr", stored(entry.stderr)
    for index, chunk in enumerate(entry.chunks or ()):
        yield f"chunks[{index}]", chunk.data
