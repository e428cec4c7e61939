"""What made a chaos schedule inadmissible, and the noise mask that would admit it.

A schedule is inadmissible when a substituted call asks what no recorded call asked. The
reason names the worker, the call, and the recorded call of that boundary nearest to it
(compared as chaos compares: another worker's call with the asking worker's name read as
that worker's), with the fields where they differ and the noise masks that would let them
match. A mask is only right when the field is noise (a request id, a time read between
calls); a field that differs because the schedule reached another state (another task,
another commit) is the tape's limit, not noise, and the reason says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple

from ..cassette import BOUNDARY_PROCESS, CallEntry, boundary_of, request_of
from ..report import diff_values, mask_path, nearest_candidate, summarize_value
from ._renamed import renamed

__all__ = ["Inadmissible", "inadmissible", "what_was_asked"]

#: At most this many fields are named (and masks offered) in a reason.
_MAX_FIELDS: Final = 3


class Inadmissible(NamedTuple):
    """Why a schedule stopped: the sentence, and the kind of call it stopped at
    (``agent call execute``, ``process call git rev-parse``) that the summary groups by."""

    why: str
    call: str


def what_was_asked(request: Mapping[str, Any], boundary: str, width: int = 72) -> str:
    """A call in short: ``git merge --no-ff ...`` or ``claim_next('worker-1')``, in at
    most ``width`` characters."""
    if boundary == BOUNDARY_PROCESS:
        # Joined plainly (shlex's quoting costs more than the rest of a schedule's report).
        text = " ".join(str(a) for a in request.get("argv") or ())
    else:
        each = max(30, width - 40)
        args = [summarize_value(a, each) for a in request.get("args") or ()]
        args += [
            f"{k}={summarize_value(v, each)}" for k, v in (request.get("kwargs") or {}).items()
        ]
        text = f"{request.get('method')}({', '.join(args)})"
    return text if len(text) <= width else text[: width - 1] + "…"


def _kind(request: Mapping[str, Any], boundary: str) -> str:
    if boundary == BOUNDARY_PROCESS:
        program = " ".join(str(a) for a in (request.get("argv") or ())[:2])
        return f"{boundary} call {program}"
    return f"{boundary} call {request.get('method')}"


def inadmissible(
    boundary: str,
    request: Mapping[str, Any],
    worker: str,
    recorded: Iterable[CallEntry],
) -> Inadmissible:
    """The reason a schedule stopped at ``worker``'s call ``request`` (normalised) on
    ``boundary``, which none of the ``recorded`` calls answers."""
    article = "an" if boundary[:1] in "aeiou" else "a"
    why = (
        f"worker {worker!r} made {article} {boundary} call that no recorded call answers: "
        f"{what_was_asked(request, boundary, 140)}"
    )
    kind = _kind(request, boundary)
    method = request.get("argv", [None])[:1] if boundary == BOUNDARY_PROCESS else None
    # The nearest recorded call of the same boundary (and method or program), each read
    # with its worker's name written as the asking worker's. Another worker's call wins a
    # tie: under another interleaving, a worker most often asks what another one did.
    candidates = [
        (e.seq, e.worker, renamed(request_of(e), e.worker, worker), "")
        for e in recorded
        if boundary_of(e) == boundary and _same_kind(e, request, boundary, method)
    ]
    theirs = nearest_candidate(dict(request), (c for c in candidates if c[1] != worker))
    mine = nearest_candidate(dict(request), (c for c in candidates if c[1] == worker))
    nearest = theirs if mine is None or (theirs and theirs.distance <= mine.distance) else mine
    if nearest is None:
        return Inadmissible(f"{why} (no recorded {boundary} call is like it)", kind)
    expected = next(c[2] for c in candidates if c[0] == nearest.seq)
    paths = list(dict.fromkeys(d.path for d in diff_values(expected, dict(request))))
    if not paths:  # a custom matcher told them apart
        return Inadmissible(f"{why}; the nearest recorded call is seq {nearest.seq}", kind)
    shown = paths[:_MAX_FIELDS]
    masks = [mask_path(boundary, p) for p in shown]
    fields = ", ".join(shown)
    if paths[_MAX_FIELDS:]:
        fields += f" and {len(paths) - len(shown)} more"
    if len(masks) == 1:
        mask = (
            f"if that is noise, add the mask {masks[0]!r} "
            f"(pytest -o 'sessiontape_noise={masks[0]}')"
        )
    else:
        listed = ", ".join(repr(m) for m in masks)
        mask = (
            f"if those are noise, add the masks {listed} (the sessiontape_noise ini key, "
            "one per line)"
        )
    return Inadmissible(
        f"{why}; the nearest recorded call, seq {nearest.seq} ({nearest.worker}), differs at "
        f"{fields}: {mask}; otherwise this schedule reached a state production never did",
        kind,
    )


def _same_kind(
    entry: CallEntry, request: Mapping[str, Any], boundary: str, program: list[Any] | None
) -> bool:
    recorded = request_of(entry)
    if boundary == BOUNDARY_PROCESS:
        return bool(recorded.get("argv", [None])[:1] == program)
    return bool(recorded.get("method") == request.get("method"))
