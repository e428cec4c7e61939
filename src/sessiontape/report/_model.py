"""The report's data model: mismatch kinds, field diffs, candidates and mismatches.

Everything is a frozen msgspec Struct, so a report is data first: it round-trips through
JSON (the receipt a CI job keeps) and renders to text second.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import msgspec

__all__ = [
    "Candidate",
    "Correlation",
    "FieldDiff",
    "Mismatch",
    "MismatchKind",
    "compute_ok",
    "mask_path",
]


class MismatchKind(str, enum.Enum):
    """How a replayed call departed from the recording."""

    #: The request differs from the recorded one at the head of its queue.
    ARGUMENT_MISMATCH = "argument_mismatch"
    #: A call on a boundary/worker queue that never had any recorded entry.
    UNEXPECTED_CALL = "unexpected_call"
    #: The queue ran out: the code made more calls than were recorded.
    EXHAUSTED = "exhausted"
    #: A recorded entry was never requested.
    UNCONSUMED = "unconsumed"
    #: A verify boundary's real result differs from the recorded one.
    STORE_MISMATCH = "store_mismatch"
    #: The session ended with a different outcome than recorded.
    OUTCOME_MISMATCH = "outcome_mismatch"
    #: The recorded crash was not reproduced, or a different exception was raised.
    ERROR_MISMATCH = "error_mismatch"
    #: A verify-boundary call came in a different global order than recorded.
    ORDER_MISMATCH = "order_mismatch"
    #: An exception ended a worker thread of the application during replay.
    APPLICATION_ERROR = "application_error"
    #: A process was started outside the interception (``os.system``, ``os.fork``,
    #: ``os.posix_spawn``, a pty, ``subprocess`` unpatched): the tape has no answer for
    #: it, so it ran for real. A warning in lenient mode, a mismatch in strict mode.
    UNSEEN_PROCESS = "unseen_process"
    #: A declared invariant (``tape.invariant``, ``sessiontape_invariant``) was violated.
    INVARIANT_VIOLATED = "invariant_violated"


class FieldDiff(msgspec.Struct, frozen=True):
    """One differing field: where it is, and its recorded (``expected``) and actual values.

    ``path`` uses the noise-mask syntax without the boundary prefix (``argv[3]``,
    ``env.HOME``, ``result.items[0]["a key"]``); see :func:`mask_path`. A side that has no
    such key or index holds :data:`MISSING`. ``detail`` is a short hint for strings that are
    too long to compare by eye: where they first differ.
    """

    path: str
    expected: Any
    actual: Any
    detail: str | None = None


class Candidate(msgspec.Struct, frozen=True):
    """The recorded call closest to a request that matched nothing, as a hint for the reader."""

    seq: int
    worker: str
    summary: str
    #: Number of differing fields between the request and this recorded call.
    distance: int


class Mismatch(msgspec.Struct, frozen=True):
    """One divergence between the replayed run and the recording.

    ``seq`` is the recorded entry's sequence number, ``None`` when there is no recorded entry
    (an unexpected call, a call past the end of its queue). ``message`` is one full sentence;
    ``next_step`` is one line telling the reader what to do (see :func:`suggest_next_step`).
    ``omitted_diffs`` counts the field diffs cut from ``diffs`` by the diff limit.
    """

    kind: MismatchKind
    seq: int | None
    worker: str
    boundary: str
    message: str
    expected: Any = None
    actual: Any = None
    diffs: list[FieldDiff] = []
    nearest: Candidate | None = None
    next_step: str = ""
    omitted_diffs: int = 0

    @property
    def mask_paths(self) -> list[str]:
        """The paths of ``diffs`` prefixed with the boundary, ready to paste into a noise mask."""
        return [mask_path(self.boundary, d.path) for d in self.diffs]


class Correlation(msgspec.Struct, frozen=True):
    """A value today's run made up in place of the recorded one, carried into the answers
    that echo it; or a time it read between two calls, matched within the recorded gap.

    ``seq`` is the call whose request it was found in, ``path`` where in that request (as
    a noise mask writes it, without the boundary), ``how`` is ``detected`` (a made-up
    token the recorded answers echo), ``pattern`` (a noise pattern named it) or ``clock``
    (a time read between calls, not carried into answers). ``served`` lists each answer
    today's value was put into (``"seq 3 chunks[1]"``).
    """

    seq: int
    worker: str
    boundary: str
    path: str
    recorded: str | float
    today: str | float
    how: str
    served: list[str] = []

    def render(self) -> str:
        """One line: what was put where."""
        where = f"seq {self.seq} ({self.worker}, {mask_path(self.boundary, self.path)})"
        if self.how == "clock":
            return (
                f"{where}: {self.today!r} read between the same calls as the recorded "
                f"{self.recorded!r}: matched"
            )
        into = "in " + ", ".join(self.served) if self.served else "in no answer so far"
        return f"{where}: {self.recorded!r} -> {self.today!r} ({self.how}), served {into}"


def mask_path(boundary: str, path: str) -> str:
    """Join a boundary name and a field path into a noise-mask path (``process.argv[3]``)."""
    if not path:
        return boundary
    if path.startswith("["):
        return f"{boundary}{path}"
    return f"{boundary}.{path}"


def compute_ok(mismatches: Sequence[Mismatch], consumed: int) -> bool:
    """Whether a replay passed: no mismatch, and at least one recorded call was served.

    A replay that served nothing proves nothing (a wrong cassette, a test that never reached
    the boundary), so it is not a pass.
    """
    return not mismatches and consumed > 0
