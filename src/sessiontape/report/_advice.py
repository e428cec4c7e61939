"""Next steps: the one line a mismatch ends with, telling the reader what to do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ._model import FieldDiff, MismatchKind, mask_path

__all__ = ["suggest_next_step"]


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
