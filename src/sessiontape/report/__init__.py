"""The report layer: what a replay found, as data and as text.

The mismatch model and :class:`ReplayReport`, the field diff whose paths are noise masks,
next steps, and one-line descriptions of entries. It reads cassette entries and knows
nothing of how a replay runs; the replay engine, the pytest plugin and the CLI build on it.
"""

from __future__ import annotations

from ._advice import LIVE_KINDS, live_advice, live_next_step, live_selector, suggest_next_step
from ._calls import agent_step, call_shape, flag_names
from ._chaos import (
    SHOWN_PER_WORKER,
    ChaosCall,
    ChaosDecision,
    ChaosFailure,
    ChaosResult,
    ChaosVerdict,
    DescribedCalls,
    FailureKind,
)
from ._classify import ERROR_CLASSES, Classifier, classify_error, failed
from ._describe import command_name, describe, format_ms, payload_size, subcommand
from ._diff import NEAREST_SCAN_LIMIT, diff_values, diff_values_counted, nearest_candidate
from ._explain import Estimate, Explanation
from ._fork import ForkResult
from ._model import (
    Candidate,
    Correlation,
    FieldDiff,
    Mismatch,
    MismatchKind,
    compute_ok,
    mask_path,
)
from ._report import ReplayMismatch, ReplayReport, render_field_change
from ._rewrites import Change, ChangeCategory, Rewrite, pending_line, render_rewrites
from ._values import MISSING, MISSING_TEXT, jsonable, safe_repr, summarize_value

__all__ = [
    "ERROR_CLASSES",
    "LIVE_KINDS",
    "MISSING",
    "MISSING_TEXT",
    "NEAREST_SCAN_LIMIT",
    "SHOWN_PER_WORKER",
    "Candidate",
    "Change",
    "ChangeCategory",
    "ChaosCall",
    "ChaosDecision",
    "ChaosFailure",
    "ChaosResult",
    "ChaosVerdict",
    "Classifier",
    "Correlation",
    "DescribedCalls",
    "Estimate",
    "Explanation",
    "FailureKind",
    "FieldDiff",
    "ForkResult",
    "Mismatch",
    "MismatchKind",
    "ReplayMismatch",
    "ReplayReport",
    "Rewrite",
    "agent_step",
    "call_shape",
    "classify_error",
    "command_name",
    "compute_ok",
    "describe",
    "diff_values",
    "diff_values_counted",
    "failed",
    "flag_names",
    "format_ms",
    "jsonable",
    "live_advice",
    "live_next_step",
    "live_selector",
    "mask_path",
    "nearest_candidate",
    "payload_size",
    "pending_line",
    "render_field_change",
    "render_rewrites",
    "safe_repr",
    "subcommand",
    "suggest_next_step",
    "summarize_value",
]
