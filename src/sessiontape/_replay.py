"""Replay: today's code against a tape, and the report of where it diverges.

The recording is loaded once and indexed into one FIFO queue per (boundary, worker).
*Substitute* boundaries (processes, agents, user boundaries of that kind) answer from the
head of the caller's queue; *verify* boundaries (stores) run for real, in the recorded
global order, and their results are compared. Calls recorded inside a substituted call
(the ``claude`` process an agent turn spawned) are not expected.
"""

from __future__ import annotations

import builtins
import importlib
import io
import os
import re
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from types import TracebackType
from typing import Any, Final, Literal

import msgspec

from . import _hooks
from ._cassette import Recording, load
from ._clock import Clock, FakeClock
from ._context import _worker
from ._describe import describe
from ._entries import (
    BOUNDARY_AGENT,
    BOUNDARY_PROCESS,
    BOUNDARY_STORE,
    AgentTurn,
    Call,
    CallEntry,
    ErrorInfo,
    ProcessCall,
    StoreMutation,
    boundary_of,
)
from ._errors import ReplayMismatch, SessiontapeError, TruncatedPayloadError, UsageError
from ._match import Matcher, Noise, compare
from ._policy import Level, PayloadCodec, Unencodable, qualname, to_data
from ._record import _patched_popen, _popen_argv, _popen_text
from ._report import (
    Candidate,
    FieldDiff,
    Mismatch,
    MismatchKind,
    ReplayReport,
    compute_ok,
    diff_values_counted,
    nearest_candidate,
    suggest_next_step,
)
from ._runner import ProcessResult, ProcessRunner, ProcessStream
from ._scrub import PathRoots, Scrubber, expand_data
from ._tape import BoundaryKind, Mode, Tape

__all__ = ["ReplayTape", "UnrecordedCallError", "replay"]

_UNSET: Final[Any] = object()
_mono_ns: Final = time.monotonic_ns
_perf_ns: Final = time.perf_counter_ns

#: How many entries ahead of the queue head a request may match before it counts as a
#: mismatch (the recorded calls in between are reported as unconsumed).
DEFAULT_LOOKAHEAD: Final = 8
#: Real seconds a verify-boundary call waits for its recorded turn before giving up.
DEFAULT_ORDER_TIMEOUT: Final = 2.0


class UnrecordedCallError(SessiontapeError):
    """A call had no recorded answer (lenient replay goes on; the report says where)."""

    def __init__(self, message: str, *, boundary: str, worker: str) -> None:
        super().__init__(message)
        self.boundary = boundary
        self.worker = worker


class ReplayedError(SessiontapeError):
    """Stands in for a recorded exception whose type cannot be imported or rebuilt."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


_ERRNO_MESSAGE = re.compile(r"^\[Errno (\d+)\] (.*?)(?:: '(.*)')?$", re.S)


def _import_qualname(name: str) -> Any:
    """The object a recorded ``module.QualName`` names (nested classes too), or ``None``.

    A bare name is a builtin. The module part is found by walking back from the longest
    prefix that imports, since ``pkg.mod.Outer.Inner`` does not say where the module ends.
    """
    if "." not in name:
        return getattr(builtins, name, None)
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:
            continue
        try:
            for piece in parts[cut:]:
                obj = getattr(obj, piece)
        except AttributeError:
            return None
        return obj
    return None


def _resolve_type(name: str) -> type[BaseException] | None:
    found = _import_qualname(name)
    if isinstance(found, type) and issubclass(found, BaseException):
        return found
    return None


def rebuild_error(info: ErrorInfo) -> BaseException:
    """The recorded exception, rebuilt as well as its type allows."""
    cls = _resolve_type(info.type)
    if cls is None:
        return ReplayedError(info.type, info.message)
    if issubclass(cls, OSError):
        m = _ERRNO_MESSAGE.match(info.message)
        if m is not None:
            errno_, text, filename = m.groups()
            if filename is not None:
                return cls(int(errno_), text, filename)
            return cls(int(errno_), text)
    try:
        if issubclass(cls, KeyError) and info.message.startswith("'"):
            return cls(info.message[1:-1])
        return cls(info.message)
    except Exception:
        return ReplayedError(info.type, info.message)


def _is_substitute(entry: CallEntry) -> bool:
    if isinstance(entry, Call):
        return entry.mode == BoundaryKind.SUBSTITUTE.value
    return not isinstance(entry, StoreMutation)


class _Sequencer:
    """Makes verify-boundary calls (store mutations) run in their recorded global order.

    Concurrent workers race for shared state; replaying a store faithfully means letting
    them through in the order production saw. A call waits (real time, bounded) until
    every earlier recorded call of the same store has run.
    """

    def __init__(self, seqs: Sequence[int], timeout: float) -> None:
        self._index = {seq: i for i, seq in enumerate(seqs)}
        self._done = bytearray(len(seqs))
        self._cursor = 0
        self._cond = threading.Condition()
        self._timeout = timeout
        self.broken = False

    def wait_turn(self, seq: int) -> int | None:
        """Wait until ``seq`` is next; return the seq it waited on in vain, or None."""
        index = self._index.get(seq)
        if index is None or self.broken:
            return None
        if self._cursor >= index:  # its turn already (the cursor only moves forward)
            return None
        with self._cond:
            ok = self._cond.wait_for(lambda: self._cursor >= index, timeout=self._timeout)
            if not ok:
                self.broken = True
                self._cond.notify_all()
                return next(s for s, i in self._index.items() if i == self._cursor)
        return None

    def done(self, seq: int) -> None:
        index = self._index.get(seq)
        if index is None:
            return
        with self._cond:
            self._done[index] = 1
            while self._cursor < len(self._done) and self._done[self._cursor]:
                self._cursor += 1
            self._cond.notify_all()


class ReplayTape(Tape):
    """A tape serving a recording. Create it with :func:`replay`."""

    mode = Mode.REPLAY

    def __init__(
        self,
        source: str | os.PathLike[str] | Recording,
        *,
        strict: bool = False,
        noise: Noise | Sequence[str] | Mapping[str, Any] | None = None,
        roots: Mapping[str, str] | PathRoots | None = None,
        patch_time: bool = True,
        lookahead: int = DEFAULT_LOOKAHEAD,
        order_timeout: float = DEFAULT_ORDER_TIMEOUT,
    ) -> None:
        self.recording = source if isinstance(source, Recording) else load(source)
        rec = self.recording
        self.strict = strict
        self.noise = Noise.coerce(noise) | _hook_noise()
        self.roots = roots if isinstance(roots, PathRoots) else PathRoots.default(roots)
        self.scrubber = Scrubber(self.roots, extra=_hooks.scrub_functions())
        level = Level.parse(rec.header.level)
        self.codec = PayloadCodec(level, scrub=self.scrubber.text, expand=self.roots.expand)
        self._matcher: Matcher | None = _hooks.custom_matcher()
        self.lookahead = lookahead
        self._order_timeout = order_timeout
        self._patch_time = patch_time
        self._clock = FakeClock(rec.header.ts_ns, rec.header.mono_ns)
        self._lock = threading.Lock()
        self._mismatches: list[tuple[float, int, Mismatch]] = []
        #: seq of the last entry served to each worker: where a divergence happens.
        self._position: dict[str, int] = {}
        #: The seqs served, in order (list.append is atomic: no lock on the hot path).
        self._served_seqs: list[int] = []
        self._extra = 0
        self._started_perf = _perf_ns()
        self._stack = ExitStack()
        self.report: ReplayReport | None = None
        self._crash_checked = False
        if level is not Level.FULL:
            raise UsageError(
                f"{rec.path}: the cassette was recorded at level {level.value!r}, which keeps "
                "no payloads; only level 'full' tapes replay. Re-record with level='full'."
            )

        # Index: one deque per (boundary, worker), skipping calls nested in substitutes.
        queues: dict[tuple[str, str], deque[CallEntry]] = {}
        substituted: set[int] = set()
        hidden: set[int] = set()
        verify_order: dict[str, list[int]] = {}
        for entry in rec.calls:
            parent = entry.parent
            if parent is not None and (parent in substituted or parent in hidden):
                hidden.add(entry.seq)
                continue
            kind = type(entry)
            # The presets by exact type first: this loop runs over every call of the tape.
            if kind is ProcessCall or kind is AgentTurn:
                boundary = BOUNDARY_PROCESS if kind is ProcessCall else BOUNDARY_AGENT
                substituted.add(entry.seq)
            elif kind is StoreMutation:
                boundary = BOUNDARY_STORE
                verify_order.setdefault(entry.store, []).append(entry.seq)  # type: ignore[union-attr]
            else:
                boundary = boundary_of(entry)  # type: ignore[assignment]
                assert boundary is not None
                if _is_substitute(entry):
                    substituted.add(entry.seq)
                else:
                    key = entry.store if isinstance(entry, StoreMutation) else boundary
                    verify_order.setdefault(key, []).append(entry.seq)
            key2 = (boundary, entry.worker)
            queue = queues.get(key2)
            if queue is None:
                queue = queues[key2] = deque()
            queue.append(entry)
        self._queues = queues
        self._hidden = hidden
        self.loaded = sum(len(q) for q in queues.values())
        self._sequencers = {
            name: _Sequencer(seqs, order_timeout) for name, seqs in verify_order.items()
        }
        self._last_seq = {key: q[-1].seq for key, q in queues.items()}
        self._wired: set[str] = set()
        self._cwd_forms: tuple[Scrubber, dict[str, str]] = (self.scrubber, {})

    # -- plumbing -------------------------------------------------------------------

    def set_roots(self, roots: Mapping[str, str] | PathRoots) -> None:
        """Name today's directories for the recorded path placeholders.

        For code that learns its directories after the tape exists, such as a
        ``sessiontape_replay`` hook making a fresh work dir: call it before the first call
        is served. A mapping adds to (or replaces by name) the default roots.
        """
        if self._served_seqs or self._mismatches:
            raise UsageError(
                "set_roots() must come before the first replayed call: requests already "
                "matched were normalised with the old roots."
            )
        self.roots = roots if isinstance(roots, PathRoots) else PathRoots.default(roots)
        self.scrubber = Scrubber(self.roots, extra=_hooks.scrub_functions())
        self.codec = PayloadCodec(
            self.codec.level, scrub=self.scrubber.text, expand=self.roots.expand
        )

    @property
    def clock(self) -> Clock:
        return self._clock

    def __enter__(self) -> ReplayTape:
        if self._patch_time:
            self._stack.enter_context(self._clock.install())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        return self.close(exc_type, exc, tb)

    def _record_mismatch(self, mismatch: Mismatch, position: float) -> None:
        with self._lock:
            self._mismatches.append((position, len(self._mismatches), mismatch))
        if self.strict:
            raise ReplayMismatch(self._build_report())

    def _mismatch(
        self,
        kind: MismatchKind,
        *,
        seq: int | None,
        worker: str,
        boundary: str,
        message: str,
        expected: Any = None,
        actual: Any = None,
        diffs: list[FieldDiff] | None = None,
        total: int = 0,
        nearest: Candidate | None = None,
        position: float | None = None,
    ) -> None:
        """Record a mismatch (and raise in strict mode).

        ``position`` orders the report: by default just after the last entry served to
        the worker, which is where its run left the tape.
        """
        diffs = diffs or []
        if position is None:
            position = self._position.get(worker, -1) + 0.5
        self._record_mismatch(
            Mismatch(
                kind=kind,
                seq=seq,
                worker=worker,
                boundary=boundary,
                message=message,
                expected=expected,
                actual=actual,
                diffs=diffs,
                nearest=nearest,
                next_step=suggest_next_step(kind, boundary, worker, diffs),
                omitted_diffs=max(0, total - len(diffs)),
            ),
            position,
        )

    def _data(self, value: Any) -> Any:
        """``value`` as JSON data scrubbed as at record time."""
        return self.scrubber.data(self._raw(value))

    @staticmethod
    def _raw(value: Any) -> Any:
        """``value`` as JSON data, not yet scrubbed (an unencodable value as its repr)."""
        if not value and (type(value) is dict or type(value) is list):
            return type(value)()
        try:
            return to_data(value)
        except Unencodable:
            return {"$repr": repr(value)}

    def _raw_request(
        self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> dict[str, Any]:
        return {"method": method, "args": self._raw(list(args)), "kwargs": self._raw(kwargs)}

    def _scrubbed(self, raw: Mapping[str, Any], expected: Any) -> dict[str, Any]:
        """A raw request scrubbed the way requests were at record time (reusing the parts
        equal to ``expected``, the head's recorded request, when there is one)."""
        if expected is None:
            data = self.scrubber.data
            return {"method": raw["method"], "args": data(raw["args"]),
                    "kwargs": data(raw["kwargs"])}  # fmt: skip
        like = self.scrubber.data_like
        return {
            "method": raw["method"],
            "args": like(raw["args"], expected["args"]),
            "kwargs": like(raw["kwargs"], expected["kwargs"]),
        }

    def _request_of(self, entry: CallEntry) -> dict[str, Any]:
        if isinstance(entry, ProcessCall):
            return {"argv": entry.argv, "cwd": entry.cwd, "env": entry.env, "input": entry.input}
        method = entry.operation if isinstance(entry, StoreMutation) else entry.method
        return {"method": method, "args": entry.args, "kwargs": entry.kwargs}

    def _nearest(self, boundary: str, actual: Mapping[str, Any]) -> Candidate | None:
        candidates = (
            (e.seq, e.worker, self._request_of(e), describe(e))
            for e in self.recording.calls
            if boundary_of(e) == boundary and e.seq not in self._hidden
        )
        return nearest_candidate(dict(actual), candidates)

    def _same_call(self, boundary: str, entry: CallEntry, actual: Mapping[str, Any]) -> bool:
        """Whether a request is the recorded call with other arguments (rather than an
        extra call): same program and subcommand, or same method."""
        expected = self._request_of(entry)
        if boundary == BOUNDARY_PROCESS:
            return bool(expected["argv"][:2] == list(actual["argv"][:2]))
        return bool(expected["method"] == actual["method"])

    def _take(
        self,
        boundary: str,
        actual: Mapping[str, Any],
        queue_boundary: str | None = None,
        normalize: Callable[[Mapping[str, Any], Any], Mapping[str, Any]] | None = None,
    ) -> CallEntry | None:
        """Align a request with the caller's queue; return the entry that answers it.

        Head matches: served. A later entry within the lookahead matches exactly: the
        entries skipped are reported unconsumed. The head is the same call with other
        arguments: an argument mismatch, answered with the head's result. Otherwise an
        unexpected call; the head stays for the next request.

        With ``normalize``, ``actual`` is today's raw request: it is compared with the head
        as it is first, and scrubbed only when that fails, reusing the parts equal to the
        head's. That gives the same verdict as scrubbing first, because scrubbing is
        idempotent: a raw part equal to the recorded (scrubbed) one scrubs to itself.
        """
        worker = _worker.get()
        key = (queue_boundary or boundary, worker)
        queue = self._queues.get(key)
        if normalize is not None:
            expected = self._request_of(queue[0]) if queue else None
            if expected == actual and queue:
                head = queue.popleft()
                self._position[worker] = head.seq
                return head
            actual = normalize(actual, expected)
        if not queue:
            nearest = self._nearest(boundary, actual)
            if queue is None:
                self._mismatch(
                    MismatchKind.UNEXPECTED_CALL,
                    seq=None,
                    worker=worker,
                    boundary=boundary,
                    message=f"worker {worker!r} made a {boundary} call, but the tape has no "
                    f"{boundary} calls for that worker.",
                    actual=dict(actual),
                    nearest=nearest,
                )
            else:
                self._mismatch(
                    MismatchKind.EXHAUSTED,
                    seq=self._last_seq[key],
                    worker=worker,
                    boundary=boundary,
                    message=f"worker {worker!r} made more {boundary} calls than were "
                    f"recorded; the last one was seq {self._last_seq[key]}.",
                    actual=dict(actual),
                    nearest=nearest,
                )
            with self._lock:
                self._extra += 1
            return None
        head = queue[0]
        diffs, total = compare(
            boundary, self._request_of(head), actual, noise=self.noise, matcher=self._matcher
        )
        if not diffs:
            queue.popleft()
            self._position[worker] = head.seq
            return head
        # Does a later entry match? Then the code skipped the ones before it.
        for offset in range(1, min(self.lookahead, len(queue) - 1) + 1):
            later = queue[offset]
            later_diffs, _ = compare(
                boundary, self._request_of(later), actual, noise=self.noise,
                matcher=self._matcher,
            )  # fmt: skip
            if not later_diffs:
                for _ in range(offset):
                    skipped = queue.popleft()
                    self._mismatch(
                        MismatchKind.UNCONSUMED,
                        seq=skipped.seq,
                        worker=worker,
                        boundary=boundary,
                        message=f"the recorded call {describe(skipped)} was skipped: the "
                        f"next request matched seq {later.seq}.",
                        expected=self._request_of(skipped),
                        position=skipped.seq,
                    )
                self._position[worker] = later.seq
                return queue.popleft()
        if self._same_call(boundary, head, actual):
            queue.popleft()
            self._mismatch(
                MismatchKind.ARGUMENT_MISMATCH,
                seq=head.seq,
                worker=worker,
                boundary=boundary,
                message=f"the {boundary} call at seq {head.seq} was made with other "
                f"arguments than recorded ({describe(head)}).",
                expected=self._request_of(head),
                actual=dict(actual),
                diffs=diffs,
                total=total,
            )
            self._position[worker] = head.seq
            return head
        self._mismatch(
            MismatchKind.UNEXPECTED_CALL,
            seq=head.seq,
            worker=worker,
            boundary=boundary,
            message=f"worker {worker!r} made a {boundary} call that is not on the tape here; "
            f"the next recorded call is seq {head.seq} ({describe(head)}).",
            expected=self._request_of(head),
            actual=dict(actual),
            diffs=diffs,
            total=total,
            nearest=self._nearest(boundary, actual),
        )
        with self._lock:
            self._extra += 1
        return None

    def _served(self, entry: CallEntry) -> None:
        """Count ``entry`` as served and move virtual time to the end of its call.

        A substituted call runs no code of ours, so nothing can read the time between its
        start and its end: one move, to the end, serves both.
        """
        self._served_seqs.append(entry.seq)
        duration = entry.duration_ns
        self._clock.advance_to(entry.ts_ns + duration, entry.mono_ns + duration)

    def clock_at(self, entry: CallEntry) -> None:
        """Move virtual time to the start of a recorded call."""
        self._clock.advance_to(entry.ts_ns, entry.mono_ns)

    def _payload(self, entry: ProcessCall, field: str, text: bool) -> Any:
        stored = getattr(entry, field)
        try:
            return self.codec.decode(stored, text=text)
        except LookupError as exc:
            raise TruncatedPayloadError(seq=entry.seq, field=field, digest=str(exc)) from None

    # -- process boundary -------------------------------------------------------------

    def process_runner(self, inner: ProcessRunner | None = None) -> ProcessRunner:
        self._wired.add(BOUNDARY_PROCESS)
        return _ReplayRunner(self)

    def _process_request(
        self,
        argv: Sequence[str],
        cwd: str | os.PathLike[str] | None,
        env: Mapping[str, str] | None,
        input: str | bytes | None,
        head: ProcessCall | None,
    ) -> dict[str, Any]:
        scrub = self.scrubber
        stored_input = head.input if head is not None else None
        return {
            "argv": scrub.argv([os.fspath(a) for a in argv]),
            "cwd": scrub.path(os.fspath(cwd)) if cwd is not None else None,
            "env": scrub.env(env) if env is not None else None,
            "input": self.codec.comparable(input, stored_input),
        }

    def serve_process(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None,
        env: Mapping[str, str] | None,
        input: str | bytes | None,
    ) -> ProcessCall:
        """Align one process request with the tape and return its entry.

        Raises :class:`UnrecordedCallError` when the tape has no answer for it (the
        report already holds the mismatch).
        """
        queue = self._queues.get((BOUNDARY_PROCESS, _worker.get()))
        if queue:
            head = queue[0]
            assert isinstance(head, ProcessCall)
            # Fast path: identical request, nothing to normalise but the working
            # directory (today's path under a root), whose placeholder form is cached.
            if (
                env is None
                and input is None
                and head.env is None
                and head.input is None
                and head.argv == argv
                and (head.cwd == cwd or (type(cwd) is str and head.cwd == self._cwd_form(cwd)))
            ):
                queue.popleft()
                self._position[head.worker] = head.seq
                return head
        else:
            head = None
        request = self._process_request(argv, cwd, env, input, head)
        entry = self._take(BOUNDARY_PROCESS, request)
        if entry is None:
            raise self.unanswered(BOUNDARY_PROCESS, f"the process call {list(argv)!r}")
        return entry  # type: ignore[return-value]

    def _cwd_form(self, cwd: str) -> str:
        """``cwd`` as the recorder writes it (roots as placeholders), cached: an
        application runs many calls in few directories."""
        scrubber, cache = self._cwd_forms
        if scrubber is not self.scrubber:  # set_roots() gave a new one
            scrubber, cache = self._cwd_forms = (self.scrubber, {})
        form = cache.get(cwd)
        if form is None:
            if len(cache) >= 4096:
                cache.clear()
            form = cache[cwd] = scrubber.path(cwd)
        return form

    def answer_process(self, entry: ProcessCall, argv: Sequence[str], text: bool) -> ProcessResult:
        """The recorded outcome of a process call: its result, or the recorded error."""
        self._served(entry)
        if entry.spawn_error is not None:
            raise rebuild_error(entry.spawn_error)
        if entry.timed_out:
            raise subprocess.TimeoutExpired(
                list(argv),
                entry.timeout or 0.0,
                output=self._payload(entry, "stdout", text),
                stderr=self._payload(entry, "stderr", text),
            )
        empty: str | bytes = "" if text else b""
        stdout = self._payload(entry, "stdout", text)
        stderr = self._payload(entry, "stderr", text)
        return ProcessResult(
            argv,
            entry.returncode if entry.returncode is not None else 0,
            stdout if stdout is not None else empty,
            stderr if stderr is not None else empty,
            entry.duration_ns,
        )

    def unanswered(self, boundary: str, what: str) -> UnrecordedCallError:
        """The error raised when a call has no recorded answer."""
        worker = _worker.get()
        return UnrecordedCallError(
            f"sessiontape: worker {worker!r}: {what} has no recorded answer on "
            f"{self.recording.path}; see the replay report.",
            boundary=boundary,
            worker=worker,
        )

    # -- agents and user boundaries -----------------------------------------------------

    def agent(
        self,
        adapter: Any = None,
        *,
        method: str | Sequence[str] = "execute",
        result_type: Any = None,
        name: str = "agent",
    ) -> Any:
        self._wired.add(BOUNDARY_AGENT)
        methods = (method,) if isinstance(method, str) else tuple(method)
        return _SubstituteProxy(self, BOUNDARY_AGENT, methods, result_type)

    def boundary(
        self,
        name: str,
        obj: Any = None,
        *,
        methods: Sequence[str],
        kind: BoundaryKind | Literal["substitute", "verify"] = BoundaryKind.SUBSTITUTE,
        result_type: Any = None,
    ) -> Any:
        mode = BoundaryKind(kind)
        self._wired.add(name)
        names = (methods,) if isinstance(methods, str) else tuple(methods)
        if mode is BoundaryKind.SUBSTITUTE:
            return _SubstituteProxy(self, name, names, result_type)
        if obj is None:
            raise UsageError(
                f"tape.boundary({name!r}, kind='verify') needs the real object on replay: "
                "verify boundaries run for real and are compared with the tape."
            )
        return _VerifyProxy(self, name, name, obj, names)

    def answer_call(
        self,
        boundary: str,
        method: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result_type: Any,
    ) -> Any:
        """Serve one call of a substitute boundary (agent or user-defined)."""
        entry = self._take(
            boundary, self._raw_request(method, args, kwargs), normalize=self._scrubbed
        )
        if entry is None:
            raise self.unanswered(boundary, f"{boundary}.{method}()")
        assert isinstance(entry, (AgentTurn, Call))
        self._served(entry)
        if entry.error is not None:
            raise rebuild_error(entry.error)
        data = expand_data(entry.result, self.roots)
        target = result_type
        if target is None and isinstance(entry, AgentTurn) and entry.result_type:
            target = _resolve_result_type(entry.result_type)
        if target is None:
            return data
        try:
            return msgspec.convert(data, target, strict=False)
        except msgspec.ValidationError as exc:
            raise UsageError(
                f"{self.recording.path}: seq {entry.seq}: the recorded result does not fit "
                f"{getattr(target, '__qualname__', target)!r} ({exc}). Pass the result_type "
                "the application uses today, or re-record."
            ) from None

    # -- stores -----------------------------------------------------------------------

    def store(
        self,
        store: Any = None,
        *,
        mutations: Sequence[str],
        snapshot: Callable[..., Any] | None = None,
        factory: Callable[[Any], Any] | None = None,
        name: str = "store",
    ) -> Any:
        self._wired.add(BOUNDARY_STORE)
        if factory is not None:
            recorded = self.recording.snapshots.get(name)
            if recorded is None:
                raise UsageError(
                    f"{self.recording.path}: the tape has no snapshot of store {name!r} to "
                    "seed it from (was it wrapped with snapshot=... when recording?). Pass "
                    "the seeded store itself instead of a factory."
                )
            real = factory(expand_data(recorded.data, self.roots))
        elif store is not None:
            real = store
        else:
            raise UsageError(
                "tape.store() on replay needs factory=callable(snapshot) to build the real "
                "store from the recorded snapshot, or an already seeded store."
            )
        names = (mutations,) if isinstance(mutations, str) else tuple(mutations)
        return _VerifyProxy(self, BOUNDARY_STORE, name, real, names)

    def verify_call(
        self,
        boundary: str,
        name: str,
        bound: Callable[..., Any],
        method: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """Run one verify-boundary call for real, in recorded order, and compare it."""
        worker = _worker.get()
        queue = self._queues.get((boundary, worker))
        sequencer = self._sequencers.get(name)
        if queue and sequencer is not None and not sequencer.broken:
            waited_on = sequencer.wait_turn(queue[0].seq)
            if waited_on is not None:
                self._mismatch(
                    MismatchKind.ORDER_MISMATCH,
                    seq=waited_on,
                    worker=worker,
                    boundary=boundary,
                    message=f"{name}: the recorded call at seq {waited_on} never came, so "
                    f"the calls of {name} can no longer run in the recorded order; the rest "
                    "of this replay runs them as they come.",
                )
        entry = self._take(
            boundary, self._raw_request(method, args, kwargs), normalize=self._scrubbed
        )
        try:
            if entry is not None:
                self.clock_at(entry)  # our code runs now: it reads the call's start time
            try:
                result = bound(*args, **kwargs)
            except Exception as exc:
                if entry is not None:
                    self._served(entry)
                    self._check_result(boundary, entry, None, exc)
                raise
            if entry is not None:
                self._served(entry)
                self._check_result(boundary, entry, result, None)
            return result
        finally:
            if entry is not None and sequencer is not None:
                sequencer.done(entry.seq)

    def _check_result(
        self, boundary: str, entry: CallEntry, result: Any, exc: BaseException | None
    ) -> None:
        assert isinstance(entry, (StoreMutation, Call))
        if exc is not None:
            actual: Any = {"error": {"type": qualname(type(exc)), "message": str(exc)}}
        else:
            raw = self._raw(result)
            if entry.error is None and raw == entry.result:
                return  # equal before scrubbing, so equal after it (scrubbing is idempotent)
            actual = {"result": self.scrubber.data_like(raw, entry.result)}
        if entry.error is not None:
            expected: Any = {"error": {"type": entry.error.type, "message": entry.error.message}}
        else:
            expected = {"result": entry.result}
        if expected == actual:
            return
        diffs, total = diff_values_counted(expected, actual)
        label = (
            f"{entry.store}.{entry.operation}"
            if isinstance(entry, StoreMutation)
            else (f"{entry.boundary}.{entry.method}")
        )
        self._mismatch(
            MismatchKind.STORE_MISMATCH,
            seq=entry.seq,
            worker=entry.worker,
            boundary=boundary,
            message=f"{label} at seq {entry.seq} ran for real and gave another result than "
            "recorded.",
            expected=expected,
            actual=actual,
            diffs=diffs,
            total=total,
        )

    # -- zero-refactor mode -------------------------------------------------------------

    def patch_subprocess(self) -> AbstractContextManager[None]:
        self._wired.add(BOUNDARY_PROCESS)
        return _patched_popen(_replay_popen_class(self))

    # -- ending ---------------------------------------------------------------------------

    def finish(self, outcome: Any = _UNSET) -> ReplayReport:
        """Compare ``outcome`` with the recorded one and return the report.

        In strict mode a report that is not ok raises :class:`ReplayMismatch`.
        """
        if self.report is not None:
            return self.report
        rec = self.recording
        if outcome is not _UNSET and rec.end is not None:
            actual = self._data(outcome)
            if actual != rec.end.outcome:
                diffs, total = diff_values_counted(rec.end.outcome, actual)
                self._collect(
                    MismatchKind.OUTCOME_MISMATCH,
                    seq=rec.end.seq,
                    worker=rec.end.worker,
                    boundary="session",
                    message="the session ended with another outcome than recorded.",
                    expected=rec.end.outcome,
                    actual=actual,
                    diffs=diffs,
                    total=total,
                    position=rec.end.seq,
                )
        if not self._crash_checked and rec.error is not None:
            self._crash_checked = True
            self._collect(
                MismatchKind.ERROR_MISMATCH,
                seq=rec.error.seq,
                worker=rec.error.worker,
                boundary="session",
                message=f"the recorded session crashed with {rec.error.type}: "
                f"{rec.error.message}, but the replay did not crash.",
                expected={"type": rec.error.type, "message": rec.error.message},
                actual=None,
                position=rec.error.seq,
            )
        for (boundary, worker), queue in self._queues.items():
            while queue:
                entry = queue.popleft()
                self._collect(
                    MismatchKind.UNCONSUMED,
                    seq=entry.seq,
                    worker=worker,
                    boundary=boundary,
                    message=f"the recorded call {describe(entry)} was never made.",
                    expected=self._request_of(entry),
                    position=entry.seq,
                )
        self.report = self._build_report()
        if self.strict and not self.report.ok:
            raise ReplayMismatch(self.report)
        return self.report

    def _collect(self, kind: MismatchKind, **fields: Any) -> None:
        """Like ``_mismatch`` but never raises: used while building the final report."""
        strict, self.strict = self.strict, False
        try:
            self._mismatch(kind, **fields)
        finally:
            self.strict = strict

    def _check_crash(self, exc: BaseException | None) -> bool:
        """Compare an exception that escaped the replay with the recorded crash.

        Returns whether it is the recorded crash reproduced (then it is swallowed).
        """
        self._crash_checked = True
        recorded = self.recording.error
        if exc is None or isinstance(exc, ReplayMismatch):
            return False
        actual = {"type": qualname(type(exc)), "message": self.scrubber.text(str(exc))}
        if isinstance(exc, UnrecordedCallError):
            # The missing answer is already a mismatch of its own; say what it means
            # for a recorded crash, and add nothing otherwise.
            if recorded is not None:
                self._collect(
                    MismatchKind.ERROR_MISMATCH,
                    seq=recorded.seq,
                    worker=recorded.worker,
                    boundary="session",
                    message=f"the recorded session crashed with {recorded.type}: "
                    f"{recorded.message}, but the replay ran past that point (and then "
                    "made a call the tape has no answer for).",
                    expected={"type": recorded.type, "message": recorded.message},
                    actual=actual,
                    position=recorded.seq,
                )
            return False
        if recorded is not None:
            expected = {"type": recorded.type, "message": recorded.message}
            if expected == actual:
                return True
            diffs, total = diff_values_counted(expected, actual)
            self._collect(
                MismatchKind.ERROR_MISMATCH,
                seq=recorded.seq,
                worker=recorded.worker,
                boundary="session",
                message=f"the replay crashed with {actual['type']}: {actual['message']}, "
                f"not with the recorded {recorded.type}: {recorded.message}.",
                expected=expected,
                actual=actual,
                diffs=diffs,
                total=total,
                position=recorded.seq,
            )
        else:
            self._collect(
                MismatchKind.ERROR_MISMATCH,
                seq=None,
                worker=_worker.get(),
                boundary="session",
                message=f"the replay crashed with {actual['type']}: {actual['message']}, but "
                "the recorded session did not crash.",
                expected=None,
                actual=actual,
            )
        return False

    def close(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> bool:
        """Finish the replay; swallow an exception that reproduces the recorded crash."""
        try:
            reproduced = False
            if exc is not None:
                reproduced = self._check_crash(exc)
            if self.report is None and not isinstance(exc, ReplayMismatch):
                strict, self.strict = self.strict, False
                try:
                    self.finish()
                finally:
                    self.strict = strict
            return reproduced
        finally:
            self._stack.close()

    def _context_for(self, first: Mismatch | None) -> list[str]:
        if first is None or first.seq is None:
            return []
        before = [
            e
            for e in self.recording.calls
            if e.seq < first.seq and e.worker == first.worker and e.seq not in self._hidden
        ]
        return [describe(e) for e in before[-3:]]

    def _build_report(self) -> ReplayReport:
        with self._lock:
            mismatches = [m for _, _, m in sorted(self._mismatches, key=lambda t: t[:2])]
            consumed = len(self._served_seqs)
            extra = self._extra
        unconsumed = sum(1 for m in mismatches if m.kind is MismatchKind.UNCONSUMED)
        rec = self.recording
        report = ReplayReport(
            cassette=rec.path,
            run_id=rec.header.run_id,
            ok=compute_ok(mismatches, consumed),
            strict=self.strict,
            loaded=self.loaded,
            consumed=consumed,
            unconsumed=unconsumed,
            extra=extra,
            mismatches=mismatches,
            recorded_duration_ns=_recorded_duration(rec),
            replay_duration_ns=_perf_ns() - self._started_perf,
            crashed=rec.crashed,
            workers=rec.worker_ids(),
        )
        report.context = self._context_for(report.first)
        return report


def _recorded_duration(rec: Recording) -> int:
    if rec.end is not None:
        return rec.end.duration_ns
    last = rec.entries[-1]
    duration = getattr(last, "duration_ns", 0)
    return int(last.mono_ns + duration - rec.header.mono_ns)


def _hook_noise() -> Noise:
    out = Noise()
    for value in _hooks.get_plugin_manager().hook.sessiontape_noise():
        if value is not None:
            out = out | Noise.coerce(value)
    return out


def _resolve_result_type(name: str) -> Any:
    """The class a recorded ``result_type`` names, when importable (builtins excluded)."""
    if "." not in name:
        return None
    found = _import_qualname(name)
    return found if isinstance(found, type) else None


class _ReplayRunner:
    """The FIFO fake runner: answers each process call from the caller's queue."""

    def __init__(self, tape: ReplayTape) -> None:
        self._tape = tape

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        tape = self._tape
        entry = tape.serve_process(argv, cwd=cwd, env=env, input=input)
        return tape.answer_process(entry, argv, text)

    def stream(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = True,
    ) -> ProcessStream:
        tape = self._tape
        entry = tape.serve_process(argv, cwd=cwd, env=env, input=input)
        if entry.spawn_error is not None:
            tape._served(entry)
            raise rebuild_error(entry.spawn_error)
        # The application runs while it reads the lines: it sees the call's start time.
        tape.clock_at(entry)
        return _ReplayStream(tape, entry, argv, text)


class _ReplayStream(ProcessStream):
    """Serves the recorded stdout of a streamed call line by line."""

    def __init__(self, tape: ReplayTape, entry: ProcessCall, argv: Sequence[str], text: bool):
        super().__init__(argv, text=text)
        self._tape = tape
        self._entry = entry
        stdout = tape._payload(entry, "stdout", text)
        empty: str | bytes = "" if text else b""
        self._stdout = stdout if stdout is not None else empty

    def _lines(self) -> Iterator[Any]:
        out: Any = self._stdout
        stream: Any = io.StringIO(out) if self.text else io.BytesIO(out)
        yield from stream

    def _finish(self) -> None:
        entry = self._entry
        self._tape._served(entry)
        if entry.timed_out:
            raise subprocess.TimeoutExpired(self.argv, entry.timeout or 0.0)
        self.returncode = entry.returncode
        stderr = self._tape._payload(entry, "stderr", self.text)
        self.stderr = stderr if stderr is not None else ("" if self.text else b"")


class _SubstituteProxy:
    """The replay stand-in of an agent adapter or substitute boundary."""

    def __init__(
        self, tape: ReplayTape, boundary: str, methods: tuple[str, ...], result_type: Any
    ) -> None:
        for method in methods:
            setattr(self, method, self._make(tape, boundary, method, result_type))
        self._boundary = boundary

    @staticmethod
    def _make(tape: ReplayTape, boundary: str, method: str, result_type: Any) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return tape.answer_call(boundary, method, args, kwargs, result_type)

        call.__name__ = method
        return call

    def __repr__(self) -> str:
        return f"<sessiontape replay of the {self._boundary!r} boundary>"


class _VerifyProxy:
    """The replay wrapper of a verify boundary: the real object, each call compared."""

    def __init__(
        self, tape: ReplayTape, boundary: str, name: str, target: Any, methods: tuple[str, ...]
    ) -> None:
        object.__setattr__(self, "_sessiontape_target", target)
        for method in methods:
            bound = getattr(target, method, None)
            if not callable(bound):
                raise UsageError(
                    f"{type(target).__name__} has no method {method!r} to verify; the "
                    f"methods named must exist on the object (got {list(methods)!r})."
                )
            object.__setattr__(self, method, self._make(tape, boundary, name, bound, method))

    @staticmethod
    def _make(
        tape: ReplayTape, boundary: str, name: str, bound: Callable[..., Any], method: str
    ) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return tape.verify_call(boundary, name, bound, method, args, kwargs)

        call.__name__ = method
        return call

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_sessiontape_target"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_sessiontape_target"), name, value)


def _replay_popen_class(tape: ReplayTape) -> type[Any]:
    class ReplayPopen:
        """A ``subprocess.Popen`` stand-in answering from the tape; nothing is spawned."""

        def __init__(self, args: Any, *pargs: Any, **kwargs: Any) -> None:
            self.args = args
            self.pid = 0
            self._text = _popen_text(kwargs)
            self._argv = _popen_argv(args, kwargs)
            self._pipes = {
                "stdout": kwargs.get("stdout") == subprocess.PIPE,
                "stderr": kwargs.get("stderr") == subprocess.PIPE,
            }
            self.returncode: int | None = None
            self.stdin = None
            self.stdout: Any = None
            self.stderr: Any = None
            entry = tape.serve_process(
                self._argv, cwd=kwargs.get("cwd"), env=kwargs.get("env"), input=None
            )
            self._entry = entry
            if entry.spawn_error is not None:
                tape._served(entry)
                raise rebuild_error(entry.spawn_error)
            self._out = tape._payload(entry, "stdout", self._text)
            self._err = tape._payload(entry, "stderr", self._text)
            if self._pipes["stdout"]:
                self.stdout = self._stream(self._out)
            if self._pipes["stderr"]:
                self.stderr = self._stream(self._err)
            self._answered = False

        def _stream(self, value: Any) -> Any:
            if self._text:
                return io.StringIO(value or "")
            return io.BytesIO(value or b"")

        def _answer(self) -> None:
            if not self._answered:
                self._answered = True
                tape._served(self._entry)
                if self._entry.timed_out:
                    raise subprocess.TimeoutExpired(
                        self._argv, self._entry.timeout or 0.0, self._out, self._err
                    )
                self.returncode = self._entry.returncode

        def communicate(self, input: Any = None, timeout: float | None = None) -> Any:
            self._answer()
            out = self._out if self._pipes["stdout"] else None
            err = self._err if self._pipes["stderr"] else None
            return out, err

        def wait(self, timeout: float | None = None) -> int:
            if self._entry.timed_out and self._answered:
                self.returncode = -9
            self._answer()
            return self.returncode if self.returncode is not None else 0

        def poll(self) -> int | None:
            return self.returncode

        def kill(self) -> None:
            if self.returncode is None:
                self.returncode = -9

        terminate = kill

        def send_signal(self, sig: int) -> None:
            self.kill()

        def __enter__(self) -> ReplayPopen:
            return self

        def __exit__(self, *exc: object) -> None:
            for pipe in (self.stdout, self.stderr):
                if pipe is not None:
                    pipe.close()

    return ReplayPopen


def replay(
    source: str | os.PathLike[str] | Recording,
    *,
    strict: bool = False,
    noise: Noise | Sequence[str] | Mapping[str, Any] | None = None,
    roots: Mapping[str, str] | PathRoots | None = None,
    patch_time: bool = True,
    lookahead: int = DEFAULT_LOOKAHEAD,
    order_timeout: float = DEFAULT_ORDER_TIMEOUT,
) -> ReplayTape:
    """Replay a cassette (a path or a loaded :class:`Recording`).

    Wire the application through the returned tape exactly as when recording. ``strict``
    raises :class:`ReplayMismatch` at the first divergence; otherwise everything is
    collected and :meth:`ReplayTape.finish` returns the report. ``noise`` masks fields
    that legitimately differ (``["process.env.HOME", "agent.args[0].prompt"]``, or a
    :class:`Noise` with regex substitutions). ``roots`` names today's directories for the
    recorded path placeholders. With ``patch_time`` (the default), entering the tape
    makes ``time.sleep`` instant and wall-clock reads virtual.
    """
    return ReplayTape(
        source,
        strict=strict,
        noise=noise,
        roots=roots,
        patch_time=patch_time,
        lookahead=lookahead,
        order_timeout=order_timeout,
    )
