"""What a replay of a candidate or a corpus tape found: its verdict and failure signature.

A :class:`Verdict` says whether a replay passed and, if not, the :class:`Signature` of its
first failure: what ``shrink`` keeps the same while it cuts. An :class:`Oracle` turns
cassette paths into verdicts: the replay workers (``_pool.py``), or the user's command
(``--until``, ``_until.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..report import agent_step, command_name

__all__ = ["Oracle", "Signature", "Verdict", "signature_of_mismatch"]


@dataclass(frozen=True)
class Signature:
    """How a replay failed: what ``shrink`` keeps the same while it cuts.

    ``kind`` is the first mismatch's kind (``argument_mismatch``, ...) or ``exception`` for
    an error that escaped the hook; ``boundary`` the boundary (or the exception's type);
    ``call`` the identity of the call (``git commit``, a store operation, an agent step) or
    where the exception was raised (``file:function``); ``fields`` which of the call's
    fields differ. Numbers, paths and ids in messages are not part of it.
    """

    kind: str
    boundary: str
    call: str
    #: The fields that differ (``argv[3]``), without their values.
    fields: tuple[str, ...] = ()

    def __str__(self) -> str:
        fields = f" ({', '.join(self.fields)} differ)" if self.fields else ""
        return f"{self.kind} on {self.boundary}: {self.call}{fields}"


@dataclass(frozen=True)
class Verdict:
    """One replay's result, as a worker reports it."""

    passed: bool
    signature: Signature | None = None
    #: The first failure as pytest showed it (one line), for messages.
    summary: str = ""
    #: The recorded seq of the first mismatch, when it has one.
    seq: int | None = None
    #: Seqs the replay left unconsumed (a lenient replay lists them).
    unconsumed: tuple[int, ...] = ()
    #: Executed application lines (``file:line``), when coverage was asked for.
    lines: frozenset[str] = field(default_factory=frozenset)
    #: The worker died or the replay ran past the time limit.
    lost: bool = False
    seconds: float = 0.0


def _request_identity(boundary: str, request: Any) -> str:
    """The identity of a recorded or actual request (a mismatch's ``expected``/``actual``)."""
    if not isinstance(request, dict):
        return boundary
    argv = request.get("argv")
    if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
        return command_name(argv)
    operation = request.get("operation")
    if isinstance(operation, str):
        return operation
    method = str(request.get("method", ""))
    args = request.get("args")
    step = agent_step(args[0] if isinstance(args, list) and args else None)
    if step is not None:
        return f"{method} {step}".strip()
    return method or boundary


def signature_of_mismatch(mismatch: dict[str, Any]) -> Signature:
    """The signature of a report's first mismatch (its JSON form)."""
    kind = str(mismatch.get("kind", "?"))
    boundary = str(mismatch.get("boundary", "?"))
    expected, actual = mismatch.get("expected"), mismatch.get("actual")
    call = _request_identity(boundary, expected if isinstance(expected, dict) else actual)
    if kind == "application_error":
        # The message names the exception's type first: "worker-2 raised KeyError: ...".
        found = re.search(
            r"([A-Za-z_][\w.]*(?:Error|Exception|Crash|Exit|Interrupt))",
            str(mismatch.get("message", "")),
        )
        call = found.group(1) if found else call
    diffs = mismatch.get("diffs")
    fields = sorted(
        {str(d["path"]) for d in diffs if isinstance(d, dict) and "path" in d}
        if isinstance(diffs, list)
        else set()
    )
    return Signature(kind, boundary, call, tuple(fields))


class Oracle(Protocol):
    """Replays cassettes side by side and says how each fared."""

    #: How many replays run side by side (a batch this large keeps every one busy).
    size: int
    #: Replays run so far.
    replays: int
    #: Real seconds a replay may take before it counts as lost (``None``: no limit).
    timeout: float | None

    def run(self, paths: Sequence[str]) -> list[Verdict]:
        """The verdict of each of ``paths``, in their order."""
        ...

    def close(self) -> None:
        """Stop the replays' workers."""
        ...
