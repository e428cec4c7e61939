"""The store boundary: a snapshot, then every mutation, verified against the real store.

Recording, wrapping the store writes a :class:`~sessiontape.StoreSnapshot` of its state,
and every call of a mutation method becomes a :class:`~sessiontape.StoreMutation`. On
replay the real store is built from the recorded snapshot, runs for real, in the recorded
global order, and each mutation's result is compared with the tape (a verify boundary).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .._errors import UsageError
from ..cassette import BOUNDARY_STORE, CallEntry, ErrorInfo, StoreMutation, StoreSnapshot
from ..recorder import common_fields
from ..scrub import error_info, expand_data
from ._methods import method_names, recording_proxy, verify_proxy
from ._protocols import RecordSide, ReplaySide

__all__ = ["recording_store", "replaying_store"]


def recording_store(
    rec: RecordSide,
    store: Any,
    *,
    name: str,
    mutations: str | Sequence[str],
    snapshot: Callable[..., Any] | None,
) -> Any:
    """``store`` with its ``mutations`` recorded, after a snapshot of its state."""
    if snapshot is not None and rec.active:
        opened = rec.open()
        data: Any = None
        err: ErrorInfo | None = None
        try:
            data = rec.data(_call_snapshot(snapshot, store), f"snapshot of {name!r}")
        except Exception as exc:  # a failing snapshot must not break the app
            err = error_info(exc)
        fields = common_fields(opened)
        rec.write(StoreSnapshot(**fields, store=name, data=data, error=err))

    def template(method: str) -> CallEntry:
        return StoreMutation(seq=0, ts_ns=0, mono_ns=0, store=name, operation=method)

    return recording_proxy(rec, store, name, method_names(mutations), template)


def replaying_store(
    engine: ReplaySide,
    store: Any,
    *,
    name: str,
    mutations: str | Sequence[str],
    factory: Callable[[Any], Any] | None,
) -> Any:
    """The real store, seeded from the recorded snapshot by ``factory`` (or ``store``
    itself, already seeded), with each mutation verified against the tape."""
    if factory is not None:
        recorded = engine.recording.snapshots.get(name)
        if recorded is None:
            raise UsageError(
                f"{engine.recording.path}: the tape has no snapshot of store {name!r} to "
                "seed it from (was it wrapped with snapshot=... when recording?). Pass "
                "the seeded store itself instead of a factory."
            )
        real = factory(expand_data(recorded.data, engine.roots))
    elif store is not None:
        real = store
    else:
        raise UsageError(
            "tape.store() on replay needs factory=callable(snapshot) to build the real "
            "store from the recorded snapshot, or an already seeded store."
        )
    return verify_proxy(engine, BOUNDARY_STORE, name, real, method_names(mutations))


def _call_snapshot(snapshot: Callable[..., Any], store: Any) -> Any:
    """Call a snapshot function bound (``store.list_tasks``) or unbound (``Store.dump``)."""
    try:
        params = inspect.signature(snapshot).parameters.values()
    except (TypeError, ValueError):
        return snapshot()
    required = [
        p
        for p in params
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return snapshot(store) if required else snapshot()
