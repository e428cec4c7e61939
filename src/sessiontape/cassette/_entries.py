"""The cassette's entry types: one tagged union of frozen msgspec Structs.

Every line of a cassette is exactly one of these, discriminated by its ``kind`` field. The
common fields (``seq``, ``ts_ns``, ``mono_ns``, ``worker``, ``thread``, ``parent``) answer the
five W's of an event from the line alone.

Format rules: new fields always get defaults, so an old reader skips nothing it needs and a
new reader loads old tapes; a change that cannot follow that rule bumps ``FORMAT_VERSION``
and comes with a reader for the previous version.
"""

from __future__ import annotations

import base64
import enum
from typing import Annotated, Any, Final, Literal, get_args

import msgspec

__all__ = [
    "BOUNDARY_AGENT",
    "BOUNDARY_PROCESS",
    "BOUNDARY_STORE",
    "ENV_DELTA_SINCE",
    "FORMAT_VERSION",
    "KIND_OF_TYPE",
    "MAX_NS",
    "MAX_SEQ",
    "PRESET_BOUNDARIES",
    "AgentTurn",
    "Blob",
    "BoundaryKind",
    "Call",
    "CallEntry",
    "Chunk",
    "Entry",
    "Error",
    "ErrorInfo",
    "ErrorOrigin",
    "ExactBytes",
    "ForkedFrom",
    "Patched",
    "Payload",
    "ProcessCall",
    "Rerecorded",
    "SavedSchedule",
    "SessionEnd",
    "SessionResume",
    "SessionStart",
    "ShrunkFrom",
    "StoreMutation",
    "StoreSnapshot",
    "Usage",
    "boundary_of",
    "exact_request",
    "request_of",
]

#: 2: a process call's ``env`` is the child's delta from the parent's environment
#: (``None`` marks a removed variable); in version 1 it was the child's whole environment.
FORMAT_VERSION: Final = 2
#: The first format version whose ``ProcessCall.env`` is a delta.
ENV_DELTA_SINCE: Final = 2

#: The largest seq a cassette may hold: the largest integer a JSON reader (the viewer's
#: JavaScript) holds exactly. At a million calls a second a session reaches it in 285 years;
#: a larger seq is an edited or damaged line, refused by the loader with its line number.
MAX_SEQ: Final = 2**53 - 1
#: The largest timestamp or duration in ns: a signed 64-bit integer (the year 2262 as a
#: wall time). Together with the lower bound of 0 it keeps every recorded time inside
#: what a ``datetime`` and the replay clock can hold, so an absurd line is refused when
#: the tape is loaded, never later inside the application's own call.
MAX_NS: Final = 2**63 - 1

#: A recording level as written in a header (see ``Level``), checked by the decoder.
LevelName = Literal["minimal", "standard", "full"]
#: A seq: 0 to :data:`MAX_SEQ`, checked by the decoder.
Seq = Annotated[int, msgspec.Meta(ge=0, le=MAX_SEQ)]
#: A timestamp or duration in ns: 0 to :data:`MAX_NS`, checked by the decoder.
Nanos = Annotated[int, msgspec.Meta(ge=0, le=MAX_NS)]

BOUNDARY_PROCESS: Final = "process"
BOUNDARY_AGENT: Final = "agent"
BOUNDARY_STORE: Final = "store"


class BoundaryKind(str, enum.Enum):
    """How a boundary behaves on replay (the ``mode`` of a :class:`Call`).

    ``substitute``: the outside world (processes, agents, HTTP) is answered from the tape.
    ``verify``: our own state (stores, locks) runs for real and is compared with the tape.
    """

    SUBSTITUTE = "substitute"
    VERIFY = "verify"


class Blob(msgspec.Struct, frozen=True, omit_defaults=True):
    """A payload that is not stored as plain text.

    Either the exact bytes, base64-encoded in ``b64`` (output that is not valid UTF-8);
    or bytes kept in the cassette's sidecar (``sidecar`` set: the payload was over
    ``max_inline_bytes`` at level ``full``; the file ``NAME.jsonl.blobs/sha256-<hex>``
    holds them, gzip-compressed when ``gzip`` is set); or only a digest with ``truncated``
    set (the level keeps digests only, or a sidecar could not be written). ``sha256`` is
    written ``"sha256:<hex>"`` and is the digest of the bytes stored.
    """

    size: int
    sha256: str
    b64: str | None = None
    truncated: bool = False
    sidecar: bool = False
    gzip: bool = False


class ExactBytes(msgspec.Struct, frozen=True, omit_defaults=True):
    """The exact bytes of a process call's values that are not UTF-8, base64-encoded.

    POSIX allows any bytes in argv and the environment; Python gives them to the program
    as strs with surrogate escapes, which JSON cannot hold. ``ProcessCall.argv`` and
    ``env`` hold such a value readable (each byte that is not UTF-8 written ``\\xNN``);
    here are its bytes: ``argv`` by the argument's index, ``env`` by the variable's name
    as ``ProcessCall.env`` writes it, and ``env_names`` the bytes of names that are not
    UTF-8 themselves.
    """

    argv: dict[int, str] | None = None
    env: dict[str, str] | None = None
    env_names: dict[str, str] | None = None


#: A recorded payload: exact text, a :class:`Blob`, or ``None`` when nothing was captured.
Payload = str | Blob | None


class Chunk(msgspec.Struct, frozen=True, omit_defaults=True):
    """One piece of a conversation with a process: bytes the program wrote to its stdin,
    or read from its stdout or stderr, in the order they crossed the pipes."""

    stream: str
    data: Payload = None


class ErrorInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """An exception as recorded: its qualified type name, message and (optional) traceback."""

    type: str
    message: str
    traceback: str | None = None


class Usage(msgspec.Struct, frozen=True, omit_defaults=True):
    """Token usage and cost of one agent turn, when the result carries them."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None


class _Entry(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    """Fields every entry carries."""

    seq: Seq
    ts_ns: Nanos
    mono_ns: Nanos
    worker: str = "main"
    thread: str = "MainThread"
    parent: Seq | None = None


class ShrunkFrom(msgspec.Struct, frozen=True, omit_defaults=True):
    """What ``sessiontape shrink`` made a tape from: the original's run id and entry count,
    the failure it kept, and the reductions that were accepted, in order."""

    run_id: str
    entries: int
    failure: str = ""
    how: list[str] = msgspec.field(default_factory=list)


class Rerecorded(msgspec.Struct, frozen=True, kw_only=True):
    """One live re-record of a segment of the tape (``--sessiontape-live``): which calls
    were run for real again (``segments``, the selectors), when, by which app version,
    and how many calls it added and dropped."""

    segments: list[str]
    at: str
    app_version: str | None = None
    sessiontape_version: str = ""
    added: int = 0
    dropped: int = 0


class SavedSchedule(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a tape written by ``--sessiontape-chaos-save`` (``tape.save_chaos``) is: the
    chaos schedule of another tape that failed, up to its failure.

    ``tape`` and ``run_id`` name the tape it ran on; ``seed``, ``strategy`` and ``depth``
    the schedule; ``kind``, ``message`` and ``worker`` the failure it found (a
    ``FailureKind`` value, its message, the worker it happened in; ``kind`` empty: the
    schedule passed). A plain replay of
    the tape serves each worker what the schedule served it and stops a worker where the
    schedule stopped it (at its next call once its calls are used up), so that the failure
    is found again, first and alone.
    """

    tape: str
    run_id: str
    seed: int
    strategy: str
    depth: int
    kind: str = ""
    message: str = ""
    worker: str | None = None


class ForkedFrom(msgspec.Struct, frozen=True, kw_only=True):
    """What a tape written by a fork (``--sessiontape-fork``) branched from: the tape
    (``tape``, its file name, and ``sha256``, of its bytes), the seq of the call where it
    parted, and the answer that call was given (``None``: it ran live). Every line before
    ``seq`` is the original's, byte for byte."""

    tape: str
    sha256: str
    seq: int
    answer: Any | None = None


class SessionStart(_Entry, frozen=True, kw_only=True, tag="session_start"):
    """The first line of every cassette: who recorded what, where, and with which settings.

    ``shrunk_from`` is set on a tape written by ``sessiontape shrink`` (``None`` on a
    recorded one, and on every tape written before it existed).
    """

    format_version: int = FORMAT_VERSION
    run_id: str
    recorded_at: str
    sessiontape_version: str = ""
    app_version: str | None = None
    entrypoint: str | None = None
    config: Any = None
    level: LevelName = "full"
    host: str = ""
    platform: str = ""
    python: str = ""
    roots: dict[str, str] = msgspec.field(default_factory=dict)
    shrunk_from: ShrunkFrom | None = None
    #: The live re-records of segments of this tape, oldest first (``None``: none).
    rerecorded: list[Rerecorded] | None = None
    #: The failing chaos schedule this tape was saved from (``None``: not one).
    schedule: SavedSchedule | None = None
    #: The tape and call this tape was forked from (``None``: not a fork).
    forked_from: ForkedFrom | None = None


class StoreSnapshot(_Entry, frozen=True, kw_only=True, tag="store_snapshot"):
    """The state of a store when it was wrapped: what a replay seeds the real store from."""

    store: str
    data: Any = None
    error: ErrorInfo | None = None


class ProcessCall(_Entry, frozen=True, kw_only=True, tag="process"):
    """One subprocess call and its outcome.

    ``timed_out`` and ``spawn_error`` record the two ways a call can end without a return
    code; replay raises them again as :class:`subprocess.TimeoutExpired` and the recorded
    ``OSError`` subclass (``FileNotFoundError`` for a missing program).

    ``env`` is the child's environment as its delta from the parent's ``os.environ`` at
    the call (added and changed variables; ``None`` for a removed one); ``None`` when the
    child inherited the parent's environment. (Format 1 tapes hold the whole environment.)

    A process driven through ``patch_subprocess()`` also records how the program saw it
    end: ``polls`` is how many times ``poll()`` or ``wait(timeout)`` found it still
    running, ``wait_timeouts`` how many of those were ``wait(timeout)`` calls (``None`` in
    tapes from before it was recorded), ``timeouts`` how many
    ``communicate(timeout=...)`` calls timed out (``read_at_timeouts``: how many bytes of
    stdout and of stderr each of them had read when it did, ``[[stdout, stderr], ...]``;
    ``None`` in tapes from before it was recorded), ``signals`` the signals the program sent
    it while it ran (``signals_after_eof``: how many of them came once all its piped
    output had ended, at end-of-file or closed by the program, so that they did not end
    its output), and ``unfinished`` that it was still running when interception ended. A
    *conversation* (stdin written after output was read) keeps its bytes as ``chunks`` in
    the order they crossed the pipes, and then leaves ``input``, ``stdout`` and ``stderr``
    empty.
    """

    argv: list[str]
    cwd: str | None = None
    env: dict[str, str | None] | None = None
    input: Payload = None
    text: bool = False
    timeout: float | None = None
    streamed: bool = False
    returncode: int | None = None
    stdout: Payload = None
    stderr: Payload = None
    timed_out: bool = False
    spawn_error: ErrorInfo | None = None
    duration_ns: Nanos = 0
    chunks: list[Chunk] | None = None
    polls: int = 0
    timeouts: int = 0
    signals: list[int] | None = None
    unfinished: bool = False
    wait_timeouts: int | None = None
    #: The exact bytes of the arguments and environment values that are not UTF-8
    #: (``argv`` and ``env`` hold them readable); see :meth:`exact_argv`, :meth:`exact_env`.
    exact: ExactBytes | None = None
    signals_after_eof: int = 0
    read_at_timeouts: list[list[int]] | None = None

    def exact_argv(self) -> list[str]:
        """``argv`` exactly as the program passed it: an argument that was not UTF-8 is a
        str with surrogate escapes again (``os.fsencode`` gives back its bytes)."""
        exact = self.exact.argv if self.exact is not None else None
        if not exact:
            return list(self.argv)
        return [_exact(exact[i]) if i in exact else arg for i, arg in enumerate(self.argv)]

    def exact_env(self) -> dict[str, str | None] | None:
        """``env`` exactly as recorded: names and values that were not UTF-8 are strs with
        surrogate escapes again."""
        exact = self.exact
        if self.env is None or exact is None or not (exact.env or exact.env_names):
            return None if self.env is None else dict(self.env)
        values, names = exact.env or {}, exact.env_names or {}
        return {
            (_exact(names[k]) if k in names else k): (_exact(values[k]) if k in values else v)
            for k, v in self.env.items()
        }


class AgentTurn(_Entry, frozen=True, kw_only=True, tag="agent_turn"):
    """One call to an agent adapter and the full result it returned to the state machine."""

    agent: str = "agent"
    method: str = "execute"
    args: list[Any] = msgspec.field(default_factory=list)
    kwargs: dict[str, Any] = msgspec.field(default_factory=dict)
    result: Any = None
    result_type: str | None = None
    usage: Usage | None = None
    error: ErrorInfo | None = None
    duration_ns: Nanos = 0


class StoreMutation(_Entry, frozen=True, kw_only=True, tag="store_mutation"):
    """One mutating call on a store: the operation, its arguments and its result or error."""

    store: str = "store"
    operation: str
    args: list[Any] = msgspec.field(default_factory=list)
    kwargs: dict[str, Any] = msgspec.field(default_factory=dict)
    result: Any = None
    error: ErrorInfo | None = None
    duration_ns: Nanos = 0


class Call(_Entry, frozen=True, kw_only=True, tag="call"):
    """A call through a user-defined boundary (``tape.boundary(name, ...)``)."""

    boundary: str
    method: str
    mode: str = "substitute"
    args: list[Any] = msgspec.field(default_factory=list)
    kwargs: dict[str, Any] = msgspec.field(default_factory=dict)
    result: Any = None
    error: ErrorInfo | None = None
    duration_ns: Nanos = 0


#: What the exception of an :class:`Error` entry ended: the whole session (it escaped the
#: tape's block), one worker's thread, a ``concurrent.futures`` future whose exception
#: nobody read, or an asyncio task (or future) whose exception nobody retrieved.
ErrorOrigin = Literal["session", "thread", "future", "task"]


class Error(_Entry, frozen=True, kw_only=True, tag="error"):
    """An exception that ended the recorded session, or one of its workers.

    ``origin`` says which (see :data:`ErrorOrigin`); the entry's ``worker`` is the worker
    it ended. A session that crashed ends with its ``session`` error and no
    ``session_end``; a worker's crash is an entry among the others, and the session goes
    on (and may end normally).
    """

    type: str
    message: str
    traceback: str | None = None
    origin: ErrorOrigin = "session"


class SessionResume(_Entry, frozen=True, kw_only=True, tag="session_resume"):
    """Where a later run continued the cassette (``if_exists="append"``).

    It follows the lines of the earlier run, its ``session_end`` included when that run
    finished: the tape's session is the one after its last ``session_resume``, so it
    ended when a ``session_end`` follows that marker and crashed otherwise.
    """

    recorded_at: str = ""
    sessiontape_version: str = ""
    app_version: str | None = None
    entrypoint: str | None = None
    config: Any = None
    level: LevelName = "full"
    host: str = ""


class Patched(_Entry, frozen=True, kw_only=True, tag="patched"):
    """A change marker the recorded code knew: ``sessiontape.patched(id)`` was asked.

    Written once per id, the first time the recording code asks for it, wherever that
    happens in the session. On replay ``patched(id)`` is true only when the tape holds a
    ``patched`` entry with that id, so an old tape keeps taking the old path.
    """

    id: str


class SessionEnd(_Entry, frozen=True, kw_only=True, tag="session_end"):
    """The last line of a session that finished: its outcome, entry counts and duration."""

    outcome: Any = None
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    duration_ns: Nanos = 0


#: Every entry kind, as one tagged union.
Entry = (
    SessionStart
    | SessionResume
    | StoreSnapshot
    | ProcessCall
    | AgentTurn
    | StoreMutation
    | Call
    | Error
    | Patched
    | SessionEnd
)

#: Each entry type's ``kind``, as written in a cassette line.
KIND_OF_TYPE: Final[dict[type, str]] = {
    cls: str(cls.__struct_config__.tag) for cls in get_args(Entry)
}

#: The entries that are calls through a boundary, the ones replay serves or verifies.
CallEntry = ProcessCall | AgentTurn | StoreMutation | Call


#: The presets' boundary names, by entry kind (a generic :class:`Call` carries its own).
PRESET_BOUNDARIES: Final[dict[type, str]] = {
    ProcessCall: BOUNDARY_PROCESS,
    AgentTurn: BOUNDARY_AGENT,
    StoreMutation: BOUNDARY_STORE,
}


def exact_request(exact: ExactBytes) -> dict[str, Any]:
    """The request form of a process call's exact bytes (only the parts it has)."""
    found: dict[str, Any] = {}
    if exact.argv:
        found["argv"] = {str(k): v for k, v in sorted(exact.argv.items())}
    if exact.env:
        found["env"] = exact.env
    if exact.env_names:
        found["env_names"] = exact.env_names
    return found


def boundary_of(entry: Entry) -> str | None:
    """The boundary name an entry belongs to, or ``None`` for session metadata.

    The three presets have fixed names (:data:`PRESET_BOUNDARIES`); a generic
    :class:`Call` carries its own.
    """
    for kind, name in PRESET_BOUNDARIES.items():
        if isinstance(entry, kind):
            return name
    if isinstance(entry, Call):
        return entry.boundary
    return None


def _exact(b64: str) -> str:
    """A value stored as base64 bytes, as the str ``os.fsdecode`` gives for them."""
    return base64.b64decode(b64).decode("utf-8", "surrogateescape")


def request_of(entry: CallEntry) -> dict[str, Any]:
    """The request part of a recorded call: what replay matches today's call against.

    A process call's request is its ``argv``, ``cwd``, ``env`` and ``input`` (and the
    exact bytes of the arguments and environment that are not UTF-8, when it has any);
    every other call's is its ``method``, ``args`` and ``kwargs`` (a store's operation is
    its method). Noise masks and report diff paths are written against these keys.
    """
    if isinstance(entry, ProcessCall):
        request = {"argv": entry.argv, "cwd": entry.cwd, "env": entry.env, "input": entry.input}
        if entry.exact is not None:
            request["exact"] = exact_request(entry.exact)
        return request
    method = entry.operation if isinstance(entry, StoreMutation) else entry.method
    return {"method": method, "args": entry.args, "kwargs": entry.kwargs}
