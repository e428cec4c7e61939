"""sessiontape: deterministic record/replay for long-running agent orchestrators.

Record a run at its boundaries (processes, agent turns, store mutations) into a JSONL
cassette; replay it against today's code in seconds and see exactly where it diverges.
"""

from __future__ import annotations

from ._api import ENV_VAR, add_record_argument, record, record_path, replay
from ._context import current_worker, worker
from ._errors import (
    CassetteError,
    RecordingWarning,
    ReplayedError,
    SessiontapeError,
    TruncatedPayloadError,
    UnrecordedCallError,
    UsageError,
)
from ._hooks import get_plugin_manager, hookimpl
from ._time import Clock, RealClock
from ._version import __version__
from .boundaries import (
    AsyncProcessRunner,
    AsyncSubprocessRunner,
    ProcessResult,
    ProcessRunner,
    ProcessStream,
    SubprocessRunner,
)
from .cassette import (
    FORMAT_VERSION,
    AgentTurn,
    Blob,
    BoundaryKind,
    Call,
    Chunk,
    Entry,
    Error,
    ErrorInfo,
    Level,
    ProcessCall,
    Recording,
    SessionEnd,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
    Usage,
    is_cassette,
    load,
    loads,
)
from .replayer import FakeClock, Noise, register_type, unregister_type
from .replayer import Schedule as Schedule
from .report import ChaosResult as ChaosResult
from .report import FieldDiff, Mismatch, MismatchKind, ReplayMismatch, ReplayReport
from .scrub import PathRoots, Scrubber
from .tape import Mode, ReplayTape, Tape

__all__ = [
    "ENV_VAR",
    "FORMAT_VERSION",
    "AgentTurn",
    "AsyncProcessRunner",
    "AsyncSubprocessRunner",
    "Blob",
    "BoundaryKind",
    "Call",
    "CassetteError",
    "ChaosResult",
    "Chunk",
    "Clock",
    "Entry",
    "Error",
    "ErrorInfo",
    "FakeClock",
    "FieldDiff",
    "Level",
    "Mismatch",
    "MismatchKind",
    "Mode",
    "Noise",
    "PathRoots",
    "ProcessCall",
    "ProcessResult",
    "ProcessRunner",
    "ProcessStream",
    "RealClock",
    "Recording",
    "RecordingWarning",
    "ReplayMismatch",
    "ReplayReport",
    "ReplayTape",
    "ReplayedError",
    "Schedule",
    "Scrubber",
    "SessionEnd",
    "SessionStart",
    "SessiontapeError",
    "StoreMutation",
    "StoreSnapshot",
    "SubprocessRunner",
    "Tape",
    "TruncatedPayloadError",
    "UnrecordedCallError",
    "Usage",
    "UsageError",
    "__version__",
    "add_record_argument",
    "current_worker",
    "get_plugin_manager",
    "hookimpl",
    "is_cassette",
    "load",
    "loads",
    "record",
    "record_path",
    "register_type",
    "replay",
    "unregister_type",
    "worker",
]
