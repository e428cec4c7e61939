"""Print a cassette's timeline, one line per entry: the five W's of every event.

Each line gives the time since the session started, the seq, the worker, the thread and
what happened. A call made inside another one (the process an agent turn spawned) is
indented under it and names its parent's seq: ``↳12``. A tape that crashed says so at
the end. With --receipt, the entries where a replay diverged end with ``✗`` and the kind
of mismatch, and the mismatches are listed after the timeline.

--json prints the same as one JSON object: the cassette, how it ended, and the selected
entries with their seq, kind, boundary, worker, thread, parent, nesting depth, start and
duration (ns since the session started), what happened, and the kinds of mismatch the
receipt names for it.

A call that failed ends with ``!`` and its error class (``auth``, ``rate_limit``,
``timeout``, ``validation``, ``server``, ``spawn``, ``exit``, ``other``; see
``report/_classify.py``); --json gives it as ``error_class``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Final

from ..cassette import Blob, Entry, ProcessCall, Recording, boundary_of, process_payloads
from ..report import Mismatch
from ._common import (
    KINDS,
    CallTree,
    Progress,
    call_duration,
    format_relative,
    kind_of,
    non_negative_int,
    plural,
    positive_int,
    print_json,
    read_recording,
    relative_ns,
    seq_ranges,
    what,
)
from ._failures import classifier
from ._receipt import add_receipt_argument, marks, read_receipt

__all__ = ["SUMMARY", "add_arguments", "crash_note", "run"]

SUMMARY: Final = "print the timeline of a cassette, one line per entry"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``show`` options."""
    parser.add_argument("path", metavar="PATH", help="the cassette to show")
    parser.add_argument(
        "--worker", action="append", metavar="W", help="only this worker's entries (repeatable)"
    )
    parser.add_argument(
        "--boundary",
        action="append",
        metavar="B",
        help="only calls through this boundary: process, agent, store or a custom one (repeatable)",
    )
    parser.add_argument(
        "--kind", action="append", choices=KINDS, help="only entries of this kind (repeatable)"
    )
    parser.add_argument("--from-seq", type=non_negative_int, metavar="N", help="start at seq N")
    parser.add_argument("--to-seq", type=non_negative_int, metavar="N", help="stop after seq N")
    parser.add_argument("--limit", type=positive_int, metavar="N", help="print at most N entries")
    parser.add_argument("--json", action="store_true", help="print the timeline as JSON")
    add_receipt_argument(parser)


def _selected(entry: Entry, args: argparse.Namespace) -> bool:
    if args.from_seq is not None and entry.seq < args.from_seq:
        return False
    if args.to_seq is not None and entry.seq > args.to_seq:
        return False
    if args.worker and entry.worker not in args.worker:
        return False
    if args.kind and kind_of(entry) not in args.kind:
        return False
    return not args.boundary or boundary_of(entry) in args.boundary


def crash_note(recording: Recording) -> list[str]:
    """Lines saying how a tape ended abnormally (nothing for a session that ended)."""
    notes: list[str] = []
    if recording.torn:
        notes.append("the last line was torn (the recorder stopped mid-write) and was skipped.")
    if recording.crashed:
        note = "no session_end: the session crashed, or the tape was cut by 'sessiontape slice'"
        if recording.missing_seqs:
            count = len(recording.missing_seqs)
            note += f"; {count} seq(s) missing: {seq_ranges(recording.missing_seqs)}"
        notes.append(note + ".")
    return notes


def _process_note(entry: Entry) -> str:
    """What ``show`` adds to a process line: a conversation, sidecar payloads, an end."""
    if not isinstance(entry, ProcessCall):
        return ""
    notes: list[str] = []
    if entry.chunks:
        notes.append(f"conversation of {len(entry.chunks)} chunks")
    kept = [
        f"{field} {payload.size} B"
        for field, payload in process_payloads(entry)
        if isinstance(payload, Blob) and payload.sidecar
    ]
    if kept:
        notes.append(f"in the sidecar: {', '.join(kept[:3])}" + (" ..." if len(kept) > 3 else ""))
    if entry.unfinished:
        notes.append("still running when interception ended")
    return f" [{'; '.join(notes)}]" if notes else ""


def _selection(
    recording: Recording, args: argparse.Namespace
) -> tuple[list[tuple[Entry, int]], int]:
    """The entries to show with their nesting depth, and how many matched the filters."""
    tree = CallTree(recording.entries)
    shown: list[tuple[Entry, int]] = []
    matched = 0
    for entry in Progress("show", len(recording.entries)).iter(recording.entries):
        if not _selected(entry, args):
            continue
        matched += 1
        if args.limit is None or len(shown) < args.limit:
            shown.append((entry, tree.depth[entry.seq]))
    return shown, matched


def _error_mark(error_class: str | None) -> str:
    return "" if error_class is None else f"  ! {error_class}"


def _mismatch_line(m: Mismatch) -> str:
    at = f"seq {m.seq}" if m.seq is not None else "an unrecorded call"
    return f"{m.kind.value} at {at} ({m.worker}, {m.boundary}): {m.message}"


def _mark_kinds(marked: dict[int, list[Mismatch]], seq: int) -> list[str]:
    return list(dict.fromkeys(m.kind.value for m in marked.get(seq, ())))


def _as_json(
    recording: Recording,
    shown: list[tuple[Entry, int]],
    matched: int,
    marked: dict[int, list[Mismatch]],
    classify: Callable[[Entry], str | None],
) -> dict[str, Any]:
    return {
        "cassette": recording.path,
        "run_id": recording.header.run_id,
        "crashed": recording.crashed,
        "torn": recording.torn,
        # As [first, last] runs: a sliced tape can miss far more seqs than it holds lines.
        "missing_seqs": [list(run) for run in recording.missing_seqs.ranges()],
        "matched": matched,
        "shown": len(shown),
        "notes": crash_note(recording),
        "entries": [
            {
                "seq": entry.seq,
                "kind": kind_of(entry),
                "boundary": boundary_of(entry),
                "worker": entry.worker,
                "thread": entry.thread,
                "parent": entry.parent,
                "depth": depth,
                "start_ns": relative_ns(entry, recording),
                "duration_ns": call_duration(entry),
                "what": what(entry) + _process_note(entry),
                "error_class": classify(entry),
                "mismatches": _mark_kinds(marked, entry.seq),
            }
            for entry, depth in shown
        ],
    }


def run(args: argparse.Namespace) -> int:
    """``sessiontape show``."""
    recording = read_recording(args.path)
    reports = None
    if args.receipt:
        reports = read_receipt(args.receipt).require(recording.header.run_id, recording.path)
    marked = marks(reports or ())
    shown, matched = _selection(recording, args)
    classify = classifier()
    if args.json:
        print_json(_as_json(recording, shown, matched, marked, classify))
        return 0
    rows = [
        (
            format_relative(relative_ns(entry, recording)),
            str(entry.seq),
            entry.worker,
            entry.thread,
            "  " * depth
            + (f"↳{entry.parent} " if entry.parent is not None else "")
            + what(entry)
            + _process_note(entry)
            + _error_mark(classify(entry))
            + (f"  ✗ {', '.join(_mark_kinds(marked, entry.seq))}" if entry.seq in marked else ""),
        )
        for entry, depth in shown
    ]
    if rows:
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for when, seq, worker, thread, text in rows:
            print(
                f"{when:>{widths[0]}}  {seq:>{widths[1]}}  {worker:<{widths[2]}}  "
                f"{thread:<{widths[3]}}  {text}"
            )
    else:
        workers = ", ".join(recording.worker_ids()) or "none"
        print(f"no entry matches the filters (workers with calls in this tape: {workers}).")
    if matched > len(rows):
        print(f"... {matched - len(rows)} more entries; raise --limit to see them.")
    for note in crash_note(recording):
        print(f"-- {note}")
    if reports is not None:
        mismatches = [m for item in reports for m in item.report.mismatches]
        found = plural(len(mismatches), "mismatch", "mismatches") if mismatches else "no mismatch"
        print(f"-- replay ({args.receipt}): {found}.")
        for mismatch in mismatches:
            print(f"--   {_mismatch_line(mismatch)}")
    return 0
