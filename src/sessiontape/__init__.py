"""sessiontape: deterministic record/replay for long-running agent orchestrators.

Record a run at its boundaries (processes, agent turns, store mutations) into a JSONL
cassette; replay it against today's code in seconds and see exactly where it diverges.
"""

from __future__ import annotations

from ._cassette import Recording, is_cassette, load, loads
from ._clock import Clock, FakeClock, RealClock
from ._context import current_worker, worker
from ._entries import (
    FORMAT_VERSION,
    AgentTurn,
    Blob,
    Call,
    Entry,
    Error,
    ErrorInfo,
    ProcessCall,
    SessionEnd,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
    Usage,
)
from ._errors import (
    CassetteError,
    RecordingWarning,
    ReplayMismatch,
    SessiontapeError,
    TruncatedPayloadError,
    UsageError,
)
from ._hooks import get_plugin_manager, hookimpl
from ._match import Noise
from ._policy import Level
from ._record import ENV_VAR, add_record_argument, record, record_path
from ._replay import ReplayedError, ReplayTape, UnrecordedCallError, replay
from ._report import FieldDiff, Mismatch, MismatchKind, ReplayReport
from ._runner import ProcessResult, ProcessRunner, ProcessStream, SubprocessRunner
from ._scrub import PathRoots, Scrubber
from ._tape import BoundaryKind, Mode, Tape
from ._version import __version__

__all__ = [
    "ENV_VAR",
    "FORMAT_VERSION",
    "AgentTurn",
    "Blob",
    "BoundaryKind",
    "Call",
    "CassetteError",
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
    "replay",
    "worker",
]
