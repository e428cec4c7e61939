"""What makes a tape structurally wrong: the rules ``sessiontape validate`` checks, and the
rules every tape sessiontape writes must pass.

Errors: seqs missing from a session that ended (lines were lost), a parent link to a seq
that is absent, not a boundary call or not lower than its child's, a payload kept in a
sidecar file that is missing. Warnings: a session that crashed, a torn last line,
wall-clock time going back on a thread, payloads kept only as digests, a level other than
``full``. ``sessiontape validate`` adds the secrets check (``cli/_validate.py``), which
needs the scrubber above this layer; :func:`check_written` is what every writer runs on a
new tape before it renames it into place (``_rewrite.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable
from pathlib import Path
from typing import Final

import msgspec

from ._entries import Blob, CallEntry, Entry, ProcessCall, boundary_of
from ._lazy import process_payloads
from ._recording import Recording, SeqGaps
from ._sidecar import Sidecar

__all__ = ["ERROR", "WARNING", "Finding", "errors_of", "seq_ranges", "structure_findings"]

ERROR: Final = "error"
WARNING: Final = "warning"

#: A payload held as text, or no payload (a lazily loaded one is still JSON: neither).
_TEXT: Final = (str, type(None))

# Truncated payloads named in the warning; the rest are counted.
_SHOWN_PAYLOADS: Final = 5


class Finding(msgspec.Struct, frozen=True):
    """One problem found in a cassette, at an entry (``seq``) or in the whole tape."""

    severity: str
    message: str
    seq: int | None = None


def seq_ranges(seqs: Iterable[int]) -> str:
    """Sorted seqs as compact ranges: ``3-5, 9``.

    A :class:`SeqGaps` (a tape's missing seqs) is read by its runs, never seq by seq: the
    gaps of a damaged tape may be far larger than the tape.
    """
    if isinstance(seqs, SeqGaps):
        return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in seqs.ranges())
    parts: list[str] = []
    run: list[int] = []
    for seq in sorted(seqs):
        if run and seq == run[-1] + 1:
            run.append(seq)
            continue
        if run:
            parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [seq]
    if run:
        parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(parts)


def _seqs_are(seqs: SeqGaps) -> str:
    return f"seq {seqs[0]} is" if len(seqs) == 1 else f"seqs {seq_ranges(seqs)} are"


def _kind(entry: Entry) -> str:
    return str(type(entry).__struct_config__.tag)


def _tape_findings(recording: Recording) -> list[Finding]:
    found: list[Finding] = []
    header = recording.header
    if header.level != "full":
        found.append(
            Finding(
                WARNING,
                f"recorded at level {header.level!r}, which keeps no payloads: the tape can "
                "be read but not replayed. Record with level='full' to replay it.",
            )
        )
    if recording.torn:
        found.append(
            Finding(
                WARNING,
                "the last line is torn (the recorder stopped mid-write); it was skipped.",
            )
        )
    missing = recording.missing_seqs
    if recording.resumes:
        # Seqs missing before a run was resumed are the calls open when an earlier run
        # stopped: a crash that was resumed from, not lost lines.
        resumed_at = recording.resumes[-1].seq
        earlier = SeqGaps((a, min(b, resumed_at)) for a, b in missing.ranges() if a < resumed_at)
        missing = SeqGaps((max(a, resumed_at), b) for a, b in missing.ranges() if b > resumed_at)
        if earlier:
            found.append(
                Finding(
                    WARNING,
                    f"{_seqs_are(earlier)} missing before seq {resumed_at}, where a later "
                    "run resumed the tape: calls still open when the earlier run stopped.",
                )
            )
    if recording.crashed:
        found.append(
            Finding(
                WARNING,
                "no session_end: the session crashed, or the tape was cut by 'sessiontape "
                "slice'; it replays up to where it stops.",
            )
        )
        if missing:
            found.append(
                Finding(
                    WARNING,
                    f"{_seqs_are(missing)} missing: calls still open when the "
                    "session stopped, or entries cut out of a slice.",
                )
            )
    elif missing:
        found.append(
            Finding(
                ERROR,
                f"{_seqs_are(missing)} missing from a session that ended: lines "
                "were lost or deleted. Re-record the session, or restore the file.",
            )
        )
    return found


def _parent_finding(entry: Entry, recording: Recording, missing: Container[int]) -> Finding | None:
    parent = entry.parent
    if parent is None:
        return None
    if parent >= entry.seq:
        return Finding(
            ERROR,
            f"parent {parent} is not lower than the entry's own seq; a call's parent opens "
            "before it, so the file was edited or merged. Re-record the session.",
            entry.seq,
        )
    target = recording.by_seq(parent)
    if target is None:
        if recording.crashed and parent in missing:
            return None  # the parent call was still open at the crash: already reported
        return Finding(
            ERROR,
            f"parent {parent} is not in the cassette; replay cannot tell that this call "
            "was made inside it. Re-record the session, or restore the lost line.",
            entry.seq,
        )
    if boundary_of(target) is None:
        return Finding(
            ERROR,
            f"parent {parent} is a {_kind(target)} entry, not a boundary call; the file "
            "was edited. Re-record the session.",
            entry.seq,
        )
    return None


def _missing_blob(seq: int, field: str, blob: Path) -> Finding:
    return Finding(
        ERROR,
        f"the {field} payload is kept in the sidecar file {blob}, which is missing: "
        "replaying this call fails. Copy the cassette together with its .blobs directory.",
        seq,
    )


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.1f}ms"


def structure_findings(
    recording: Recording,
    *,
    entries: Iterable[Entry] | None = None,
    more: Callable[[Entry], list[Finding]] | None = None,
    sidecar_of: str | os.PathLike[str] | None = None,
    duration: Callable[[int], str] = _ms,
) -> list[Finding]:
    """Every structural finding for a loaded cassette: the tape's own first, then entry
    by entry (with ``more(entry)``'s findings after each entry's own).

    ``entries`` is the recording's entries (a progress counter may wrap them);
    ``sidecar_of`` the cassette whose sidecar holds the payloads (the recording's own
    path by default: a new tape written beside its final name names the final one);
    ``duration`` formats a clock step.
    """
    found = _tape_findings(recording)
    missing = recording.missing_seqs  # looked up by bisection: never a set of all gaps
    last_ts: dict[str, tuple[int, int]] = {}
    clock_warned: set[str] = set()
    truncated: list[str] = []
    full = recording.header.level == "full"
    sidecar = Sidecar(recording.path if sidecar_of is None else sidecar_of)
    # This runs over every entry of every tape written: the common case (no parent, the
    # clock going forward, payloads held as text) costs no call.
    for entry in recording.entries if entries is None else entries:
        if entry.parent is not None:
            parent = _parent_finding(entry, recording, missing)
            if parent is not None:
                found.append(parent)
        thread, ts_ns = entry.thread, entry.ts_ns
        previous = last_ts.get(thread)
        if previous is not None and ts_ns < previous[1] and thread not in clock_warned:
            clock_warned.add(thread)  # once per thread: one clock step is one finding
            found.append(
                Finding(
                    WARNING,
                    f"wall-clock time goes back {duration(previous[1] - ts_ns)} from "
                    f"seq {previous[0]} on thread {thread!r}: the system clock was "
                    "set back, or the file was edited.",
                    entry.seq,
                )
            )
        last_ts[thread] = (entry.seq, ts_ns)
        if full and isinstance(entry, ProcessCall) and not _plain_payloads(entry):
            found += _payload_findings(entry, sidecar, truncated)
        if more is not None:
            found += more(entry)
    if truncated:
        shown = ", ".join(truncated[:_SHOWN_PAYLOADS])
        if len(truncated) > _SHOWN_PAYLOADS:
            shown += f" and {len(truncated) - _SHOWN_PAYLOADS} more"
        found.append(
            Finding(
                WARNING,
                f"{len(truncated)} payload(s) are kept only as digests ({shown}): replaying "
                "those calls fails. Re-record with a larger max_inline_bytes to keep them.",
            )
        )
    return found


def _plain_payloads(entry: ProcessCall) -> bool:
    """Whether every payload of ``entry`` is held as text (or absent): nothing to find."""
    return (
        not entry.chunks
        and type(entry.input) in _TEXT
        and type(entry.stdout) in _TEXT
        and type(entry.stderr) in _TEXT
    )


def _payload_findings(entry: CallEntry, sidecar: Sidecar, truncated: list[str]) -> list[Finding]:
    found: list[Finding] = []
    for field, payload in process_payloads(entry):  # type: ignore[arg-type]
        if isinstance(payload, Blob) and payload.truncated:
            truncated.append(f"seq {entry.seq} {field}")
        elif isinstance(payload, Blob) and payload.sidecar:
            blob = sidecar.file_for(payload.sha256, gz=payload.gzip)
            if not blob.is_file():
                found.append(_missing_blob(entry.seq, field, blob))
    return found


def errors_of(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that make a tape invalid."""
    return [f for f in findings if f.severity == ERROR]
