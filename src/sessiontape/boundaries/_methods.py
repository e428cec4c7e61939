"""The method-call mechanism behind the agent, store and user-defined boundaries.

Such a boundary wraps an object and a list of its method names. Recording, each call of a
named method becomes one entry (made from the boundary's :data:`EntryTemplate`); other
attributes pass through. On replay a *substitute* boundary answers each call from the tape
without calling anything, and a *verify* boundary runs the real method, in the recorded
order, and compares its result with the tape.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import msgspec

from .._context import LateSeq, parent_var
from .._errors import UsageError
from .._time import REAL
from ..cassette import (
    BOUNDARY_STORE,
    AgentTurn,
    Call,
    CallEntry,
    ErrorInfo,
    StoreMutation,
    request_of,
    stored_result,
)
from ..recorder import Opened
from ..replayer import Normalize, rebuild_error
from ..report import MismatchKind, diff_values_counted
from ..scrub import encodes_as, error_info, qualname
from ._popen import running_loop
from ._protocols import RecordSide, ReplaySide
from ._today import RESULTS, same_args, same_today

__all__ = [
    "EntryCompletion",
    "EntryTemplate",
    "ResultType",
    "method_names",
    "recording_proxy",
    "substitute_proxy",
    "verify_proxy",
]

#: The entry a boundary writes for each call of a method, given the method's name: the
#: boundary's and the method's names set, the call's own fields (seq, times, arguments,
#: result...) still to be filled in.
EntryTemplate = Callable[[str], CallEntry]
#: What a boundary adds to a call's entry from its outcome: given the entry, the result as
#: JSON data and the result as the method returned it (the agent's result type and usage).
EntryCompletion = Callable[[CallEntry, Any, Any], CallEntry]
#: The type a recorded call's result is decoded into for the application (None: plain data).
ResultType = Callable[[CallEntry], Any]


def method_names(value: str | Sequence[str]) -> tuple[str, ...]:
    """The method names a boundary wraps: one name or several, at least one."""
    names = (value,) if isinstance(value, str) else tuple(value)
    if not names:
        raise UsageError("name at least one method to record.")
    return names


def _bound_methods(target: Any, methods: tuple[str, ...], verb: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for method in methods:
        bound = getattr(target, method, None)
        if not callable(bound):
            raise UsageError(
                f"{type(target).__name__} has no method {method!r} to {verb}; the methods "
                f"named must exist on the object (got {list(methods)!r})."
            )
        found[method] = bound
    return found


class _Proxy:
    """Stands in for a wrapped object: named methods are wrapped, the rest pass through."""

    def __init__(self, target: Any, methods: Mapping[str, Callable[..., Any]]) -> None:
        object.__setattr__(self, "_sessiontape_target", target)
        for name, method in methods.items():
            object.__setattr__(self, name, method)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_sessiontape_target"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_sessiontape_target"), name, value)

    def __repr__(self) -> str:
        return f"<sessiontape proxy of {object.__getattribute__(self, '_sessiontape_target')!r}>"


class _StandIn:
    """The replay stand-in of a substitute boundary: only the named methods exist."""

    def __init__(self, boundary: str, methods: Mapping[str, Callable[..., Any]]) -> None:
        self._sessiontape_boundary = boundary
        for name, method in methods.items():
            setattr(self, name, method)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"the replay stand-in of the {self._sessiontape_boundary!r} boundary has no "
            f"attribute {name!r}: on replay only the methods named when wiring it exist "
            "(the object itself is not called). Name the method too, or read it elsewhere."
        )

    def __repr__(self) -> str:
        return f"<sessiontape replay of the {self._sessiontape_boundary!r} boundary>"


def _named(call: Callable[..., Any], method: str, doc: str | None = None) -> Callable[..., Any]:
    call.__name__ = method
    call.__doc__ = doc
    return call


# -- record side ----------------------------------------------------------------------


def recording_proxy(
    rec: RecordSide,
    target: Any,
    name: str,
    methods: tuple[str, ...],
    template: EntryTemplate,
    complete: EntryCompletion | None = None,
) -> Any:
    """``target`` with each of ``methods`` recorded as an entry made from ``template``
    (and ``complete``, when the boundary adds fields from the outcome)."""
    wrapped = {
        method: _recorded_method(rec, f"{name}.{method}", method, template(method), bound, complete)
        for method, bound in _bound_methods(target, methods, "record").items()
    }
    return _Proxy(target, wrapped)


_replace: Final = msgspec.structs.replace


def _recorded_method(
    rec: RecordSide,
    label: str,
    method: str,
    template: CallEntry,
    bound: Callable[..., Any],
    complete: EntryCompletion | None,
) -> Callable[..., Any]:
    def done(
        opened: Opened, args: Any, kwargs: Any, result: Any, exc: BaseException | None
    ) -> None:
        # The call's own fields go into a copy of the template: replace() takes them as
        # fast as a constructor call does, where a constructor given a dict of them
        # (**fields) takes three times as long.
        duration_ns = rec.elapsed(opened)
        err = error_info(exc, with_traceback=False) if exc is not None else None
        data_args, data_kwargs, data = rec.convert_call(label, args, kwargs, result)
        seq, ts_ns, mono_ns, worker, thread, parent = opened
        entry = _replace(
            template,
            seq=seq,
            ts_ns=ts_ns,
            mono_ns=mono_ns,
            worker=worker,
            thread=thread,
            parent=parent,
            args=data_args,
            kwargs=data_kwargs,
            result=data,
            error=err,
            duration_ns=duration_ns,
        )
        rec.write(entry if complete is None else complete(entry, data, result))

    # A verify call (a store mutation) is numbered when it ends: in the order the store's
    # calls took effect, which replay keeps (see LateSeq).
    verify = isinstance(template, StoreMutation) or (
        isinstance(template, Call) and template.mode == "verify"
    )

    def start() -> tuple[Opened, LateSeq | None]:
        late = rec.open_late() if verify else None
        return (rec.open(), None) if late is None else late

    def numbered(opened: Opened, late: LateSeq | None) -> Opened:
        return opened if late is None else (late.seq(), *opened[1:])

    if inspect.iscoroutinefunction(bound):

        async def acall(*args: Any, **kwargs: Any) -> Any:
            if not rec.active:
                return await bound(*args, **kwargs)
            opened, late = start()
            token = parent_var.set(opened[0] if late is None else late)
            try:
                result = await bound(*args, **kwargs)
            except BaseException as exc:
                opened = numbered(opened, late)
                parent_var.reset(token)
                done(opened, args, kwargs, None, exc)
                raise
            opened = numbered(opened, late)
            parent_var.reset(token)
            done(opened, args, kwargs, result, None)
            return result

        return _named(acall, method, getattr(bound, "__doc__", None))

    def call(*args: Any, **kwargs: Any) -> Any:
        if not rec.active:
            return bound(*args, **kwargs)
        opened, late = start()
        token = parent_var.set(opened[0] if late is None else late)
        try:
            result = bound(*args, **kwargs)
        except BaseException as exc:
            opened = numbered(opened, late)
            parent_var.reset(token)
            done(opened, args, kwargs, None, exc)
            raise
        opened = numbered(opened, late)
        parent_var.reset(token)
        done(opened, args, kwargs, result, None)
        return result

    return _named(call, method, getattr(bound, "__doc__", None))


# -- replay side ----------------------------------------------------------------------


def _made_as_recorded(
    head: AgentTurn | StoreMutation | Call,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    expand: Callable[[str], str],
) -> bool:
    """Whether a call made with ``args`` and ``kwargs`` is ``head``'s recorded call, as
    the application passed them: exactly, or with today's paths where the tape has
    placeholders (the method name is the caller's to check)."""
    recorded_kwargs = head.kwargs
    return same_args(head.args, args, expand) and (
        recorded_kwargs == kwargs or same_today(recorded_kwargs, kwargs, expand)
    )


def _take(
    engine: ReplaySide,
    boundary: str,
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    normalize: Normalize,
    head: CallEntry | None,
    queue: deque[CallEntry] | None,
    *,
    tried: bool = False,
) -> CallEntry | None:
    """The entry answering a method call: the head of the worker's queue when the call is
    the recorded one exactly (the common case, compared field by field with nothing
    built) or with today's paths in place of the placeholders (walking only the parts
    that differ), else whatever alignment finds for today's request, in the shape of
    ``request_of`` a recorded call. ``queue`` is the calling worker's queue, ``head`` its
    first entry; ``tried`` says the caller already compared the call with the head as
    made (see ``substitute_proxy`` and ``verify_proxy``)."""
    listed = list(args)
    expand = engine.roots.expand
    same = (
        head is not None
        and (head.operation if isinstance(head, StoreMutation) else head.method) == method  # type: ignore[union-attr]
    )
    if same:
        recorded_args, recorded_kwargs = head.args, head.kwargs  # type: ignore[union-attr]
        # As the application passed them (plain data, usually), then as JSON data.
        if not tried and _made_as_recorded(head, args, kwargs, expand):  # type: ignore[arg-type]
            assert queue is not None
            queue.popleft()
            engine.took(head)  # type: ignore[arg-type]
            return head
    raw_args = engine.raw(listed)
    raw_kwargs = engine.raw(kwargs)
    if (
        same
        and same_today(recorded_args, raw_args, expand)
        and same_today(recorded_kwargs, raw_kwargs, expand)
    ):
        return engine.take_head(boundary)
    request = {"method": method, "args": raw_args, "kwargs": raw_kwargs}
    return engine.take(boundary, request, normalize)


def _normalizer(engine: ReplaySide) -> Normalize:
    """Scrub a raw request the way requests were at record time (reusing the parts equal
    to ``expected``, the head's recorded request, when there is one)."""

    def normalize(raw: Mapping[str, Any], expected: Any) -> Mapping[str, Any]:
        scrubber = engine.scrubber  # read per call: set_roots() replaces it
        if expected is None:
            data = scrubber.data
            return {"method": raw["method"], "args": data(raw["args"]),
                    "kwargs": data(raw["kwargs"])}  # fmt: skip
        like = scrubber.data_like
        return {
            "method": raw["method"],
            "args": like(raw["args"], expected["args"]),
            "kwargs": like(raw["kwargs"], expected["kwargs"]),
        }

    return normalize


def substitute_proxy(
    engine: ReplaySide,
    boundary: str,
    methods: tuple[str, ...],
    result_type: ResultType,
    *,
    asynchronous: bool = False,
) -> Any:
    """A stand-in answering each of ``methods`` from the tape; nothing real is called.

    ``result_type(entry)`` names the type each answer is decoded into (None: plain data).
    With ``asynchronous``, each method is a coroutine function, as the object's were.
    """
    normalize = _normalizer(engine)

    def answer(method: str) -> Callable[..., Any]:
        if asynchronous:
            sync = answer_sync(method)

            async def acall(*args: Any, **kwargs: Any) -> Any:
                return sync(*args, **kwargs)

            return _named(acall, method)
        return answer_sync(method)

    def answer_sync(method: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            queue = engine.queue(boundary)
            head: Any = queue[0] if queue else None
            # The common case, inline: the recorded call, with today's paths or none.
            if (
                head is not None
                and head.method == method
                and _made_as_recorded(head, args, kwargs, engine.roots.expand)
            ):
                assert queue is not None
                engine.serve_head(queue, head)
                entry: Any = head
            else:
                entry = _take(
                    engine, boundary, method, args, kwargs, normalize, head, queue, tried=True
                )
                if entry is None:
                    raise engine.unanswered(boundary, f"{boundary}.{method}()")
                engine.served(entry)
            if entry.error is not None:
                raise rebuild_error(entry.error)
            return RESULTS.decode(engine, entry, result_type(entry))

        return _named(call, method)

    return _StandIn(boundary, {method: answer(method) for method in methods})


def verify_proxy(
    engine: ReplaySide, boundary: str, name: str, target: Any, methods: tuple[str, ...]
) -> Any:
    """``target`` with each of ``methods`` run for real, in recorded order, and compared."""
    normalize = _normalizer(engine)
    engine.verifies(boundary)

    def verified(method: str, bound: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            queue = engine.queue(boundary)
            head = queue[0] if queue else None
            if head is not None:
                engine.wait_turn(name, boundary, head.seq)
            elif running_loop() is None:
                # None of the worker's calls left: a call the tape lacks comes after the
                # recorded ones (an event loop's task cannot wait: it would block the
                # loop the others run on).
                engine.wait_order_end(name)
            entry: CallEntry | None = None
            if head is not None:
                # Every store call's path, inline: the recorded method (a tape loaded for
                # replay holds LazyStoreMutation, a subclass), then the call as recorded
                # (``_take``'s first step), else a mutation renamed since.
                recorded = head.operation if isinstance(head, StoreMutation) else _method_of(head)
                if recorded == method:
                    if _made_as_recorded(head, args, kwargs, engine.roots.expand):  # type: ignore[arg-type]
                        assert queue is not None
                        queue.popleft()
                        engine.took(head)
                        entry = head
                elif _renamed(head, name, methods, method, queue):
                    entry = _take_renamed(engine, boundary, method, args, kwargs, normalize, head)
            if entry is None:
                entry = _take(
                    engine, boundary, method, args, kwargs, normalize, head, queue, tried=True
                )
            if entry is None:
                if engine.updating:
                    return _run_added(engine, boundary, name, method, bound, args, kwargs)
                return bound(*args, **kwargs)
            engine.clock_at(entry)  # our code runs now: it reads the call's start time
            try:
                try:
                    result = bound(*args, **kwargs)
                except Exception as exc:
                    engine.served(entry)
                    _check_result(engine, boundary, entry, None, exc)
                    raise
                engine.served(entry)
                _check_result(engine, boundary, entry, result, None)
                return result
            finally:
                engine.turn_done(name, entry.seq)

        return _named(call, method, getattr(bound, "__doc__", None))

    wrapped = {
        method: verified(method, bound)
        for method, bound in _bound_methods(target, methods, "verify").items()
    }
    return _Proxy(target, wrapped)


def _method_of(entry: CallEntry) -> str:
    return str(getattr(entry, "operation", None) or getattr(entry, "method", ""))


def _renamed(head: CallEntry, name: str, methods: tuple[str, ...], method: str, queue: Any) -> bool:
    """Whether a call of ``method`` may stand for ``head``, a recorded call of a method
    today's wiring of verify boundary ``name`` no longer has (renamed): today's code can
    never make that call again, and this one is not one the worker's queue holds further
    on. (It does when it passes the same arguments: see ``_take_renamed``.)"""
    recorded = _method_of(head)
    if recorded == method or recorded in methods:
        return False
    if (getattr(head, "store", None) or getattr(head, "boundary", None)) != name:
        return False
    return not any(_method_of(e) == method for e in queue)


def _take_renamed(
    engine: ReplaySide,
    boundary: str,
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    normalize: Normalize,
    head: CallEntry,
) -> CallEntry | None:
    """Take ``head``, the first call of the worker's queue, for a call that stands for it
    under another method name with the same arguments (``None``: another call): an
    argument mismatch, which update mode answers by renaming the recorded call in place."""
    expected = request_of(head)
    actual = dict(
        normalize(
            {"method": method, "args": engine.raw(list(args)), "kwargs": engine.raw(kwargs)},
            expected,
        )
    )
    if actual["args"] != expected["args"] or actual["kwargs"] != expected["kwargs"]:
        return None
    engine.take_head(boundary)
    diffs, total = diff_values_counted(expected, actual)
    engine.mismatch(
        MismatchKind.ARGUMENT_MISMATCH,
        seq=head.seq,
        worker=head.worker,
        boundary=boundary,
        message=f"the {boundary} call at seq {head.seq} ({_method_of(head)}) is made as "
        f"{method} today; the tape's {_method_of(head)} is not among the methods wired now.",
        expected=expected,
        actual=actual,
        diffs=diffs,
        total=total,
    )
    return head


def _run_added(
    engine: ReplaySide,
    boundary: str,
    name: str,
    method: str,
    bound: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Update mode: run a verify call the tape does not have for real, and add it to the
    tape with today's arguments and result (scrubbed as at record time)."""
    result: Any = None
    err: ErrorInfo | None = None
    started = REAL.monotonic_ns()
    try:
        result = bound(*args, **kwargs)
        return result
    except Exception as exc:
        err = ErrorInfo(type=qualname(type(exc)), message=engine.scrubber.secrets(str(exc)))
        raise
    finally:
        fields: dict[str, Any] = {
            "seq": 0,
            "ts_ns": 0,
            "mono_ns": 0,
            "duration_ns": REAL.monotonic_ns() - started,
            "args": engine.data(list(args)),
            "kwargs": engine.data(kwargs),
            "result": engine.data(result) if err is None else None,
            "error": err,
        }
        entry: CallEntry = (
            StoreMutation(store=name, operation=method, **fields)
            if boundary == BOUNDARY_STORE
            else Call(boundary=boundary, method=method, mode="verify", **fields)
        )
        engine.add_call(entry)


def _check_result(
    engine: ReplaySide, boundary: str, entry: CallEntry, result: Any, exc: BaseException | None
) -> None:
    """Compare a verify-boundary call's real result (or error) with the recorded one."""
    assert isinstance(entry, (StoreMutation, Call))
    stored = entry.result
    if exc is not None:
        # Recorded error messages are redacted (paths kept): today's is compared the same way.
        message = engine.scrubber.secrets(str(exc))
        actual: Any = {"error": {"type": qualname(type(exc)), "message": message}}
        recorded = stored_result(stored)
    else:
        # Equal before scrubbing, so equal after it (scrubbing is idempotent). A result
        # kept as its JSON is compared as JSON: today's encoded, nothing decoded.
        if entry.error is None and type(stored) is msgspec.Raw and encodes_as(result, stored):
            return
        raw = engine.raw(result)
        recorded = stored_result(stored)
        if entry.error is None and raw == recorded:
            return
        if engine.correlations.pairs:  # a value made up today, echoed in the result
            recorded = engine.correlations.request(boundary, entry.worker, recorded)
        actual = {"result": engine.scrubber.data_like(raw, recorded)}
    if entry.error is not None:
        expected: Any = {"error": {"type": entry.error.type, "message": entry.error.message}}
    else:
        expected = {"result": recorded}
    if expected == actual:
        return
    diffs, total = diff_values_counted(expected, actual)
    label = (
        f"{entry.store}.{entry.operation}"
        if isinstance(entry, StoreMutation)
        else f"{entry.boundary}.{entry.method}"
    )
    engine.mismatch(
        MismatchKind.STORE_MISMATCH,
        seq=entry.seq,
        worker=entry.worker,
        boundary=boundary,
        message=f"{label} at seq {entry.seq} ran for real and gave another result than recorded.",
        expected=expected,
        actual=actual,
        diffs=diffs,
        total=total,
    )
