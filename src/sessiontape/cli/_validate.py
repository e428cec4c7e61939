"""Check cassettes for what makes them wrong, unsafe or not fully replayable.

Errors (exit code 1): seqs missing from a session that ended (lines were lost), a parent
link to a seq that is absent, not a boundary call or not lower than its child's, a value
that still holds a secret. Warnings: a session that crashed (its missing seqs are the calls
still open then), a torn last line, wall-clock time going back on a thread, payloads kept
only as digests, a recording level other than ``full`` (only ``full`` tapes replay).
A file that cannot be read at all gives exit code 2. The header's format version is
checked when the file is read.

--json prints a list with one object per cassette: whether it could be read and is valid,
its counts of entries, errors and warnings, and its findings (severity, message, seq).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Container, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from .._errors import SessiontapeError
from ..cassette import Blob, Entry, ProcessCall, Recording, SeqGaps, Sidecar, process_payloads
from ..report import format_ms
from ..scrub import Scrubber
from ._common import Progress, is_call, kind_of, plural, print_json, read_recording, seq_ranges
from ._scrub import scrub_entry, secret_kinds

__all__ = ["SUMMARY", "Finding", "add_arguments", "check", "run"]

SUMMARY: Final = "check cassettes: seqs, parent links, clocks, secrets, replayability"

ERROR: Final = "error"
WARNING: Final = "warning"

# Truncated payloads named in the warning; the rest are counted.
_SHOWN_PAYLOADS: Final = 5
# Secret values named per entry; the rest are counted.
_SHOWN_SECRETS: Final = 10


class Finding(msgspec.Struct, frozen=True):
    """One problem found in a cassette, at an entry (``seq``) or in the whole tape."""

    severity: str
    message: str
    seq: int | None = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``validate`` options."""
    parser.add_argument("paths", nargs="+", metavar="PATH", help="the cassettes to check")
    parser.add_argument(
        "--no-secrets-check",
        action="store_true",
        help="skip looking for unredacted secrets (the slowest check)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list with one verdict per cassette, its counts and findings",
    )


def _seqs_are(seqs: Sequence[int]) -> str:
    return f"seq {seqs[0]} is" if len(seqs) == 1 else f"seqs {seq_ranges(seqs)} are"


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
    if not is_call(target):
        return Finding(
            ERROR,
            f"parent {parent} is a {kind_of(target)} entry, not a boundary call; the file "
            "was edited. Re-record the session.",
            entry.seq,
        )
    return None


def _secret_findings(entry: Entry, scrubber: Scrubber) -> list[Finding]:
    scrubbed = scrub_entry(entry, scrubber, limit=_SHOWN_SECRETS)
    found: list[Finding] = []
    for change in scrubbed.changes:
        kinds = secret_kinds(change)
        what = f" ({', '.join(kinds)})" if kinds else ""
        found.append(
            Finding(
                ERROR,
                f"{change.path} holds a secret{what}. Run 'sessiontape scrub' on the "
                "cassette and rotate the secret.",
                entry.seq,
            )
        )
    if scrubbed.changed > len(scrubbed.changes):
        more = scrubbed.changed - len(scrubbed.changes)
        found.append(Finding(ERROR, f"... and {more} more value(s) hold secrets.", entry.seq))
    return found


def _missing_blob(seq: int, field: str, blob: Path) -> Finding:
    return Finding(
        ERROR,
        f"the {field} payload is kept in the sidecar file {blob}, which is missing: "
        "replaying this call fails. Copy the cassette together with its .blobs directory.",
        seq,
    )


def check(recording: Recording, *, secrets: bool = True) -> list[Finding]:
    """Every finding for a loaded cassette: the tape's own first, then entry by entry."""
    found = _tape_findings(recording)
    missing = recording.missing_seqs  # looked up by bisection: never a set of all gaps
    scrubber = Scrubber(None)
    last_ts: dict[str, tuple[int, int]] = {}
    clock_warned: set[str] = set()
    truncated: list[str] = []
    full = recording.header.level == "full"
    sidecar = Sidecar(recording.path)
    for entry in Progress("validate", len(recording.entries)).iter(recording.entries):
        parent = _parent_finding(entry, recording, missing)
        if parent is not None:
            found.append(parent)
        previous = last_ts.get(entry.thread)
        if previous is not None and entry.ts_ns < previous[1] and entry.thread not in clock_warned:
            clock_warned.add(entry.thread)  # once per thread: one clock step is one finding
            found.append(
                Finding(
                    WARNING,
                    f"wall-clock time goes back {format_ms(previous[1] - entry.ts_ns)} from "
                    f"seq {previous[0]} on thread {entry.thread!r}: the system clock was "
                    "set back, or the file was edited.",
                    entry.seq,
                )
            )
        last_ts[entry.thread] = (entry.seq, entry.ts_ns)
        if full and isinstance(entry, ProcessCall):
            for field, payload in process_payloads(entry):
                if isinstance(payload, Blob) and payload.truncated:
                    truncated.append(f"seq {entry.seq} {field}")
                elif isinstance(payload, Blob) and payload.sidecar:
                    blob = sidecar.file_for(payload.sha256, gz=payload.gzip)
                    if not blob.is_file():
                        found.append(_missing_blob(entry.seq, field, blob))
        if secrets:
            found += _secret_findings(entry, scrubber)
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


def _result(path: str, recording: Recording, findings: list[Finding]) -> dict[str, Any]:
    """One cassette's verdict as JSON-ready data (what ``--json`` prints per path)."""
    errors = sum(1 for f in findings if f.severity == ERROR)
    return {
        "cassette": path,
        "readable": True,
        "valid": not errors,
        "entries": len(recording),
        "errors": errors,
        "warnings": len(findings) - errors,
        "findings": [msgspec.to_builtins(f) for f in findings],
    }


def _print_result(result: dict[str, Any], findings: list[Finding]) -> None:
    path = result["cassette"]
    for finding in findings:
        where = f"seq {finding.seq}: " if finding.seq is not None else ""
        print(f"{path}: {where}{finding.severity}: {finding.message}")
    counts = [
        plural(result[key], word)
        for key, word in (("errors", "error"), ("warnings", "warning"))
        if result[key]
    ]
    verdict = "valid" if result["valid"] else "invalid"
    details = ", ".join([*counts, plural(result["entries"], "entry", "entries")])
    print(f"{path}: {verdict} ({details})")


def run(args: argparse.Namespace) -> int:
    """``sessiontape validate``."""
    status = 0
    results: list[dict[str, Any]] = []
    for path in args.paths:
        try:
            recording = read_recording(path)
        except SessiontapeError as exc:
            message = " ".join(str(exc).split())
            print(f"sessiontape: error: {message}", file=sys.stderr)
            results.append({"cassette": path, "readable": False, "valid": False, "error": message})
            status = 2
            continue
        findings = check(recording, secrets=not args.no_secrets_check)
        result = _result(path, recording, findings)
        results.append(result)
        if not args.json:
            _print_result(result, findings)
        if not result["valid"]:
            status = max(status, 1)
    if args.json:
        print_json(results)
    return status
