"""Next steps: the one line a mismatch ends with, telling the reader what to do."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import msgspec

from .._context import DEFAULT_WORKER
from ..cassette import BOUNDARY_STORE, Recording, boundary_of
from ._model import FieldDiff, Mismatch, MismatchKind, mask_path

__all__ = ["LIVE_KINDS", "live_advice", "live_next_step", "live_selector", "suggest_next_step"]

#: Mismatches that say a worker's own state left the tape's.
_STATE_KINDS: Final = frozenset({MismatchKind.STORE_MISMATCH, MismatchKind.INVARIANT_VIOLATED})
#: How a call with no recorded answer is named when it ends a worker.
_UNRECORDED: Final = "sessiontape.UnrecordedCallError"

#: Mismatches only a live re-record answers (on a substitute boundary): a call the tape
#: has no answer for.
LIVE_KINDS: Final = frozenset({MismatchKind.UNEXPECTED_CALL, MismatchKind.EXHAUSTED})


def _quote_list(items: Sequence[str]) -> str:
    quoted = [f"'{item}'" for item in items]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + f" and {quoted[-1]}"


def _plain_list(items: Sequence[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"


# More paths than this make the one-line hint unreadable; the diff lines list them all.
_MAX_SUGGESTED_MASKS: Final = 3


def suggest_next_step(
    kind: MismatchKind, boundary: str, worker: str, diffs: Sequence[FieldDiff]
) -> str:
    """A one-line next step for a mismatch of ``kind`` on ``boundary`` in ``worker``.

    Each step names a command that exists: the noise mask, ``--sessiontape-update``
    (today's requests and results into the tape), or ``--sessiontape-live=BOUNDARY@WORKER``
    (the calls the tape cannot answer, re-recorded for real).
    """
    update = "accept today's request with --sessiontape-update"
    live = f"--sessiontape-live={boundary}@{worker}"
    rerecord = f"re-record it with {live} (add --sessiontape-update to replace the tape)"
    if boundary == "store":  # a verify boundary runs for real: the update takes its calls
        rerecord = "take today's calls into the tape with --sessiontape-update"
    if kind is MismatchKind.ARGUMENT_MISMATCH:
        paths = list(dict.fromkeys(d.path for d in diffs))
        if not paths:
            return (
                f"Compare the request with the recorded one; if the change is intended, {update}."
            )
        shown = paths[:_MAX_SUGGESTED_MASKS]
        masks = _quote_list([mask_path(boundary, p) for p in shown])
        if len(paths) == 1:
            return f"If {paths[0]} is noise, add the mask {masks}; otherwise {update}."
        if len(paths) <= _MAX_SUGGESTED_MASKS:
            return f"If {_plain_list(paths)} are noise, add the masks {masks}; otherwise {update}."
        return (
            f"If these {len(paths)} fields are noise, add masks such as {masks}; "
            f"otherwise {update}."
        )
    if kind is MismatchKind.UNEXPECTED_CALL:
        return (
            f"The code now calls '{boundary}' in worker '{worker}', which the recording never did; "
            f"if the new call is intended, {rerecord}."
        )
    if kind is MismatchKind.EXHAUSTED:
        return (
            f"The code makes more '{boundary}' calls in worker '{worker}' than were recorded; "
            f"check for a loop that runs longer than before, or {rerecord} if that is intended."
        )
    if kind is MismatchKind.UNCONSUMED:
        return (
            f"The code stopped calling '{boundary}' in worker '{worker}' before the recording did; "
            "check for an early exit or a skipped step, or drop the call with "
            "--sessiontape-update if that is intended."
        )
    if kind is MismatchKind.STORE_MISMATCH:
        return (
            f"The real '{boundary}' returned something other than the recording; look for a logic "
            "change in the store code or a different seeded snapshot, or take today's results "
            "with --sessiontape-update if intended."
        )
    if kind is MismatchKind.OUTCOME_MISMATCH:
        return (
            "The session ended with a different outcome; find the first divergence that led "
            "there, or accept today's outcome with --sessiontape-update if it is correct."
        )
    if kind is MismatchKind.ERROR_MISMATCH:
        return (
            "The recorded crash was not reproduced the same way; if the bug is fixed, "
            "re-record to update the regression tape, otherwise compare the exceptions."
        )
    if kind is MismatchKind.UNSEEN_PROCESS:
        return (
            "Start this process through subprocess under tape.patch_subprocess() (or a runner "
            "from tape.process_runner()) so that it is recorded and replayed; os.system, "
            "os.fork/exec, os.posix_spawn and ptys are not intercepted."
        )
    if kind is MismatchKind.APPLICATION_ERROR:
        return (
            f"Worker '{worker}' died of this exception during replay; fix it first: the calls "
            "it never made are reported after it as unconsumed."
        )
    if kind is MismatchKind.INVARIANT_VIOLATED:
        return (
            "An invariant the project declares does not hold after this call; find the "
            "interleaving of store calls that broke it (a lock taken too late, an update "
            "lost between a read and a write) and fix the code."
        )
    return (
        f"The '{boundary}' calls came in a different order than recorded; check for a change in "
        f"locking or scheduling between workers, or re-record if the new order is correct."
    )


def live_selector(
    diverged: Iterable[tuple[str, str]],
    spans: Mapping[str, Mapping[str, tuple[int, int]]],
    already: Sequence[str] = (),
) -> str | None:
    """The ``--sessiontape-live`` selector that records every call in ``diverged``
    (``(boundary, worker)`` pairs of calls the tape has no answer for), built from the
    workers that made them.

    ``spans`` holds, per boundary and worker, the first and last seq of its recorded
    calls. The session's own thread (the default worker, ``main``), when its calls of a
    boundary all came before the diverged workers' first, set up their world (the
    repository it creates before its workers start): it is re-recorded with them, since a
    call run for real finds nothing that a call served from the tape made. A boundary
    alone is named when every worker that uses it is in; else one ``BOUNDARY@WORKER`` per
    worker. ``already`` is the selectors of the live re-record that ran, if any: kept, and
    counted as covering what they pick.
    """
    wanted: dict[str, set[str]] = {}
    for boundary, worker in diverged:
        if worker in already or boundary in already or f"{boundary}@{worker}" in already:
            continue
        wanted.setdefault(boundary, set()).add(worker)
    if not wanted:
        return None
    parts = list(already)
    for boundary, workers in wanted.items():
        users = spans.get(boundary, {})
        first = min((users[w][0] for w in workers if w in users), default=None)
        setup = users.get(DEFAULT_WORKER)
        if first is not None and setup is not None and setup[1] < first:
            workers.add(DEFAULT_WORKER)
        covered = workers | {s.split("@", 1)[1] for s in already if s.startswith(f"{boundary}@")}
        if covered >= set(users):
            parts = [s for s in parts if not s.startswith(f"{boundary}@")] + [boundary]
        else:
            parts += [f"{boundary}@{worker}" for worker in sorted(workers)]
    return ",".join(parts)


def live_next_step(m: Mismatch, selector: str) -> str:
    """The next step of a call the tape has no answer for, naming the selector that
    records every such call of the replay (not only this worker's)."""
    return (
        f"The code now makes this '{m.boundary}' call in worker '{m.worker}', which the tape "
        f"cannot answer; if it is intended, record it for real with "
        f"--sessiontape-live={selector} --sessiontape-update (the calls that selector "
        "picks run for real, the rest come from the tape)."
    )


def live_advice(
    mismatches: list[Mismatch],
    recording: Recording,
    verify: Iterable[str],
    already: Sequence[str],
    detected: Sequence[Mismatch] | None = None,
) -> tuple[list[Mismatch], str | None]:
    """``mismatches`` with the next steps that name the selector recording every call
    the tape has no answer for (on a substitute boundary: a verify boundary, named in
    ``verify``, takes today's calls in an update), and that selector (``None``: no such
    call). ``already``: the selectors of the live re-record that ran, if any;
    ``detected``: every mismatch of the replay in the order they were found (each worker's
    in the order it met them), by default ``mismatches``."""
    verifying = {*verify, BOUNDARY_STORE}

    def needs_live(m: Mismatch) -> bool:
        return m.kind in LIVE_KINDS and m.boundary not in verifying

    # A worker whose own state left the tape's (a verify call gave another result, or made
    # a verify call the tape lacks: once a worker that stopped let the store's order go,
    # another claims what it would have) makes calls the tape has no answer for as a
    # consequence: another task, another loop. The selector names the workers that
    # diverged first; the others follow once they do not.
    strayed: set[str] = set()
    causes: list[tuple[str, str]] = []
    consequences: list[tuple[str, str]] = []
    for m in mismatches if detected is None else detected:
        if m.kind in _STATE_KINDS or (m.kind in LIVE_KINDS and m.boundary in verifying):
            strayed.add(m.worker)
        elif needs_live(m):
            (consequences if m.worker in strayed else causes).append((m.boundary, m.worker))
    diverged = causes or consequences
    if not diverged:
        return mismatches, None
    spans: dict[str, dict[str, tuple[int, int]]] = {}
    for entry in recording.calls:  # in seq order
        mine = spans.setdefault(boundary_of(entry) or "", {})
        mine[entry.worker] = (mine.get(entry.worker, (entry.seq, 0))[0], entry.seq)
    selector = live_selector(diverged, spans, already)
    if selector is None:
        return mismatches, None
    out: list[Mismatch] = []
    for m in mismatches:
        if needs_live(m):
            m = msgspec.structs.replace(m, next_step=live_next_step(m, selector))
        elif (
            m.kind is MismatchKind.APPLICATION_ERROR
            and isinstance(m.actual, dict)
            and m.actual.get("type") == _UNRECORDED
        ):
            m = msgspec.structs.replace(
                m,
                next_step=f"Worker '{m.worker}' died of a call the tape has no answer for "
                f"(listed before); record it with --sessiontape-live={selector} "
                "--sessiontape-update. The calls it never made are reported after it.",
            )
        out.append(m)
    return out, selector
