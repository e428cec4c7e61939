"""sessiontape: deterministic record/replay for long-running agent orchestrators.

Record a run at its boundaries (processes, agent turns, store mutations) into a JSONL
cassette; replay it against today's code in seconds and see exactly where it diverges.

Every public name is imported on first use (``_lazy.py``): ``import sessiontape`` loads
only the module that captures real time, so an application that imports sessiontape to
wire its boundaries, with recording off, pays next to nothing at start-up.
"""

from __future__ import annotations

# First, before anything else of sessiontape: real time, captured while it is real.
from . import _time  # noqa: F401
from ._lazy import exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ._api import (
        ENV_VAR,
        add_record_argument,
        record,
        record_path,
        replay,
    )
    from ._clock import Clock
    from ._context import (
        current_worker,
        worker,
    )
    from ._errors import (
        CassetteError,
        RecordingWarning,
        ReplayedError,
        SessiontapeError,
        StoreWarning,
        TruncatedPayloadError,
        UnrecordedCallError,
        UsageError,
    )
    from ._hooks import (
        get_plugin_manager,
        hookimpl,
    )
    from ._time import RealClock
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
        Patched,
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
    from .replayer import (
        FakeClock,
        Noise,
        Schedule,
        explain,
        register_type,
        unregister_type,
    )
    from .report import (
        Change,
        ChangeCategory,
        ChaosResult,
        Explanation,
        FieldDiff,
        Mismatch,
        MismatchKind,
        ReplayMismatch,
        ReplayReport,
        Rewrite,
    )
    from .scrub import (
        PathRoots,
        Scrubber,
    )
    from .tape import (
        Mode,
        ReplayTape,
        Tape,
        patched,
    )

#: Each public name and the module that defines it, imported on first access. One line
#: per name: add a name here, in ``__all__`` and in the ``TYPE_CHECKING`` block above.
_EXPORTS: dict[str, str] = {
    "ENV_VAR": "._api",
    "FORMAT_VERSION": ".cassette",
    "AgentTurn": ".cassette",
    "AsyncProcessRunner": ".boundaries",
    "AsyncSubprocessRunner": ".boundaries",
    "Blob": ".cassette",
    "BoundaryKind": ".cassette",
    "Call": ".cassette",
    "CassetteError": "._errors",
    "Change": ".report",
    "ChangeCategory": ".report",
    "ChaosResult": ".report",
    "Chunk": ".cassette",
    "Clock": "._clock",
    "Entry": ".cassette",
    "Error": ".cassette",
    "ErrorInfo": ".cassette",
    "Explanation": ".report",
    "FakeClock": ".replayer",
    "FieldDiff": ".report",
    "Level": ".cassette",
    "Mismatch": ".report",
    "MismatchKind": ".report",
    "Mode": ".tape",
    "Noise": ".replayer",
    "Patched": ".cassette",
    "PathRoots": ".scrub",
    "ProcessCall": ".cassette",
    "ProcessResult": ".boundaries",
    "ProcessRunner": ".boundaries",
    "ProcessStream": ".boundaries",
    "RealClock": "._time",
    "Recording": ".cassette",
    "RecordingWarning": "._errors",
    "ReplayMismatch": ".report",
    "ReplayReport": ".report",
    "ReplayTape": ".tape",
    "ReplayedError": "._errors",
    "Rewrite": ".report",
    "Schedule": ".replayer",
    "explain": ".replayer",
    "Scrubber": ".scrub",
    "SessionEnd": ".cassette",
    "SessionStart": ".cassette",
    "SessiontapeError": "._errors",
    "StoreWarning": "._errors",
    "StoreMutation": ".cassette",
    "StoreSnapshot": ".cassette",
    "SubprocessRunner": ".boundaries",
    "Tape": ".tape",
    "TruncatedPayloadError": "._errors",
    "UnrecordedCallError": "._errors",
    "Usage": ".cassette",
    "UsageError": "._errors",
    "__version__": "._version",
    "add_record_argument": "._api",
    "current_worker": "._context",
    "get_plugin_manager": "._hooks",
    "hookimpl": "._hooks",
    "is_cassette": ".cassette",
    "load": ".cassette",
    "loads": ".cassette",
    "patched": ".tape",
    "record": "._api",
    "record_path": "._api",
    "register_type": ".replayer",
    "replay": "._api",
    "unregister_type": ".replayer",
    "worker": "._context",
}

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
    "Change",
    "ChangeCategory",
    "ChaosResult",
    "Chunk",
    "Clock",
    "Entry",
    "Error",
    "ErrorInfo",
    "Explanation",
    "FakeClock",
    "FieldDiff",
    "Level",
    "Mismatch",
    "MismatchKind",
    "Mode",
    "Noise",
    "Patched",
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
    "Rewrite",
    "Schedule",
    "Scrubber",
    "SessionEnd",
    "SessionStart",
    "SessiontapeError",
    "StoreMutation",
    "StoreSnapshot",
    "StoreWarning",
    "SubprocessRunner",
    "Tape",
    "TruncatedPayloadError",
    "UnrecordedCallError",
    "Usage",
    "UsageError",
    "__version__",
    "add_record_argument",
    "current_worker",
    "explain",
    "get_plugin_manager",
    "hookimpl",
    "is_cassette",
    "load",
    "loads",
    "patched",
    "record",
    "record_path",
    "register_type",
    "replay",
    "unregister_type",
    "worker",
]

if not TYPE_CHECKING:  # mypy sees the imports above, and no catch-all __getattr__
    __getattr__, __dir__ = exports(__name__, _EXPORTS)
