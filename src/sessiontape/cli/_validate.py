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
from typing import Any, Final

import msgspec

from .._errors import SessiontapeError
from ..cassette import ERROR, WARNING, Entry, Finding, Recording, structure_findings
from ..report import format_ms
from ..scrub import Scrubber
from ._common import Progress, plural, print_json, read_recording
from ._scrub import scrub_entry, secret_kinds

__all__ = ["ERROR", "SUMMARY", "WARNING", "Finding", "add_arguments", "check", "run"]

SUMMARY: Final = "check cassettes: seqs, parent links, clocks, secrets, replayability"

# Secret values named per entry; the rest are counted.
_SHOWN_SECRETS: Final = 10


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


def check(recording: Recording, *, secrets: bool = True) -> list[Finding]:
    """Every finding for a loaded cassette: the tape's own first, then entry by entry
    (the structural rules every written tape passes, then, with ``secrets``, values that
    still hold a secret)."""
    scrubber = Scrubber(None)
    return structure_findings(
        recording,
        entries=Progress("validate", len(recording.entries)).iter(recording.entries),
        more=(lambda entry: _secret_findings(entry, scrubber)) if secrets else None,
        duration=format_ms,
    )


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
