"""User-defined boundaries: ``tape.boundary(name, obj, methods=[...], kind=...)``.

Every call of a named method becomes a :class:`~sessiontape.Call` entry carrying the
boundary's name. A ``substitute`` boundary (the outside world: HTTP, a queue, a cloud
API) is answered from the tape on replay; a ``verify`` boundary (your own state: a lock
service, a cache) runs for real and is compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from .._errors import UsageError
from ..cassette import (
    BOUNDARY_AGENT,
    BOUNDARY_PROCESS,
    BOUNDARY_STORE,
    BoundaryKind,
    Call,
    CallEntry,
)
from ._methods import (
    method_names,
    recording_proxy,
    substitute_proxy,
    verify_proxy,
)
from ._protocols import RecordSide, ReplaySide

__all__ = ["check_name", "recording_boundary", "replaying_boundary"]

_PRESETS: Final = {
    BOUNDARY_PROCESS: "process_runner",
    BOUNDARY_AGENT: "agent",
    BOUNDARY_STORE: "store",
}


def check_name(name: str) -> None:
    """Refuse the names of the presets: their entries have types of their own."""
    if name in _PRESETS:
        raise UsageError(
            f"boundary name {name!r} is reserved for the preset; use "
            f"tape.{_PRESETS[name]}() or another name."
        )


def recording_boundary(
    rec: RecordSide, name: str, obj: Any, *, methods: str | Sequence[str], kind: BoundaryKind
) -> Any:
    """``obj`` with each of ``methods`` recorded as a :class:`Call` of boundary ``name``."""
    if obj is None:
        raise UsageError(f"tape.boundary({name!r}) needs the object to record.")
    check_name(name)

    def template(method: str) -> CallEntry:
        return Call(seq=0, ts_ns=0, mono_ns=0, boundary=name, method=method, mode=kind.value)

    return recording_proxy(rec, obj, name, method_names(methods), template)


def replaying_boundary(
    engine: ReplaySide,
    name: str,
    obj: Any,
    *,
    methods: str | Sequence[str],
    kind: BoundaryKind,
    result_type: Any,
) -> Any:
    """A stand-in answering from the tape (substitute), or ``obj`` verified (verify)."""
    check_name(name)
    names = method_names(methods)
    if kind is BoundaryKind.SUBSTITUTE:
        return substitute_proxy(engine, name, names, lambda entry: result_type)
    if obj is None:
        raise UsageError(
            f"tape.boundary({name!r}, kind='verify') needs the real object on replay: "
            "verify boundaries run for real and are compared with the tape."
        )
    return verify_proxy(engine, name, name, obj, names)
