"""The boundaries: one module per boundary, each with its record side and its replay side.

A boundary is a named interface where the application meets the outside world; each call
through it becomes one cassette entry. The presets are the process runner (``_process``,
and ``_popen`` for code that takes no runner), the agent (``_agent``) and the store
(``_store``); ``_user`` is the boundary users define. Every module talks to the engines
only through the two protocols of ``_protocols``; ``_methods`` is the mechanism the
object-wrapping boundaries share. The tape front (``sessiontape.tape``) wires them.
"""

from __future__ import annotations

from ._agent import extract_usage, recording_agent, replaying_agent
from ._async_runner import (
    AsyncProcessRunner,
    AsyncRecordingRunner,
    AsyncReplayRunner,
    AsyncSubprocessRunner,
)
from ._crashes import CrashSink, CrashWatch, application_frame, replaying_crashes
from ._methods import method_names
from ._popen import TAPE_PID_BASE, live_popen, recording_popen, replaying_popen
from ._process import (
    IN_PROCESS_CALL,
    ProcessReplay,
    RecordingRunner,
    env_delta,
    record_process,
)
from ._protocols import RecordSide, ReplaySide
from ._runner import ProcessResult, ProcessRunner, ProcessStream, SubprocessRunner
from ._store import recording_store, replaying_store
from ._unseen import recording_notice, watching_processes
from ._user import recording_boundary, replaying_boundary

__all__ = [
    "IN_PROCESS_CALL",
    "TAPE_PID_BASE",
    "AsyncProcessRunner",
    "AsyncRecordingRunner",
    "AsyncReplayRunner",
    "AsyncSubprocessRunner",
    "CrashSink",
    "CrashWatch",
    "ProcessReplay",
    "ProcessResult",
    "ProcessRunner",
    "ProcessStream",
    "RecordSide",
    "RecordingRunner",
    "ReplaySide",
    "SubprocessRunner",
    "application_frame",
    "env_delta",
    "extract_usage",
    "live_popen",
    "method_names",
    "record_process",
    "recording_agent",
    "recording_boundary",
    "recording_notice",
    "recording_popen",
    "recording_store",
    "replaying_agent",
    "replaying_boundary",
    "replaying_crashes",
    "replaying_popen",
    "replaying_store",
    "watching_processes",
]
