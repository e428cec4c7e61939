"""Cut a worker, a task or a time window out of a tape into a small replayable fixture.

The calls kept are those matching every option given: ``--worker`` (repeatable), ``--task``,
``--from-seq``/``--to-seq`` (inclusive) and ``--since``/``--until`` (seconds since the
session started; a call is in the window when it starts in it). What is cut out is always
a whole top-level call: a selected call brings in the outermost call around it and every
call nested in that one, so every parent link resolves and an outer call that replay
substitutes (an agent turn) keeps the calls it made.

Always kept: the header (seq 0) and the store snapshots replay seeds stores from. The
session's error entry (a crash) is kept when it matches the selection too. Seqs keep their
values; the loader allows the gaps.

The session_end is kept only when no call was cut. A partial slice has none: the recorded
outcome summed up the whole session, which a replay of a part cannot reproduce, and a tape
without a session_end compares no outcome, so the slice replays clean for what it holds.
It loads as an unfinished tape (``crashed``); ``validate`` warns about that and about the
gaps, and passes it.

``--task ID`` keeps, for each worker, its calls from the first to the last one whose argv,
arguments or result mention ID (the claim that returned the task, the completion that named
it): what the worker did while it held the task. ID is matched as a whole word, so ``t1``
is not found in ``t10``.
"""

from __future__ import annotations

import argparse
from typing import Final

from ..cassette import (
    Entry,
    Patched,
    Recording,
    SessionEnd,
    SessionStart,
    StoreSnapshot,
    copy_payloads,
)
from ..reduce import task_windows
from ._common import (
    CallTree,
    CommandError,
    non_negative_int,
    plural,
    read_recording,
    relative_ns,
    seconds,
    write_entries,
)

__all__ = ["SUMMARY", "add_arguments", "run", "select"]

SUMMARY: Final = "cut a worker, task or time window out of a tape into a fixture"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``slice`` options."""
    parser.add_argument("path", metavar="PATH", help="the cassette to cut from")
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="where to write the slice"
    )
    parser.add_argument(
        "--worker", action="append", metavar="W", help="keep this worker's calls (repeatable)"
    )
    parser.add_argument("--task", metavar="ID", help="keep what the workers did for task ID")
    parser.add_argument("--from-seq", type=non_negative_int, metavar="N", help="from seq N on")
    parser.add_argument("--to-seq", type=non_negative_int, metavar="N", help="up to seq N")
    parser.add_argument(
        "--since", type=seconds, metavar="SECONDS", help="calls starting SECONDS after the start"
    )
    parser.add_argument(
        "--until", type=seconds, metavar="SECONDS", help="calls starting before SECONDS"
    )


def select(recording: Recording, args: argparse.Namespace) -> set[int]:
    """The seqs of the calls (and error) to keep, whole top-level calls included."""
    windows = task_windows(recording, args.task) if args.task is not None else None
    if windows is not None and not windows:
        raise CommandError(
            f"no call in {recording.path} mentions task {args.task!r} in its argv, arguments "
            "or result; check the id (it is matched as a whole word)."
        )
    since = None if args.since is None else args.since * 1e9
    until = None if args.until is None else args.until * 1e9

    def wanted(entry: Entry) -> bool:
        if args.worker and entry.worker not in args.worker:
            return False
        if args.from_seq is not None and entry.seq < args.from_seq:
            return False
        if args.to_seq is not None and entry.seq > args.to_seq:
            return False
        start = relative_ns(entry, recording)
        if (since is not None and start < since) or (until is not None and start >= until):
            return False
        if windows is not None:
            window = windows.get(entry.worker)
            return window is not None and window[0] <= entry.seq <= window[1]
        return True

    tree = CallTree(recording.entries)
    roots = {tree.root_of[call.seq] for call in recording.calls if wanted(call)}
    if not roots:
        workers = ", ".join(recording.worker_ids()) or "none"
        raise CommandError(
            f"the selection holds no call of {recording.path} (workers with calls: "
            f"{workers}); widen the worker, task, seq or time options."
        )
    # The crashes of the workers kept (a thread's, a future's...) and the session's.
    for error in [*recording.worker_errors, *filter(None, [recording.error])]:
        if wanted(error):
            roots.add(tree.root_of[error.seq])
    # A snapshot taken inside a call (rare) keeps that call, so its parent link resolves.
    roots.update(
        tree.root_of[entry.seq]
        for entry in recording.entries
        if isinstance(entry, StoreSnapshot) and entry.parent is not None
    )
    keep: set[int] = set()
    for root in roots:
        keep.update(tree.subtree(root))
    return keep


def run(args: argparse.Namespace) -> int:
    """``sessiontape slice``."""
    if not any(
        value is not None and value != []
        for value in (args.worker, args.task, args.from_seq, args.to_seq, args.since, args.until)
    ):
        raise CommandError(
            "say what to cut out: --worker, --task, --from-seq/--to-seq or --since/--until."
        )
    recording = read_recording(args.path)
    keep = select(recording, args)
    partial = any(call.seq not in keep for call in recording.calls)
    kept: list[Entry] = []
    for entry in recording.entries:
        if (
            # A change marker is about the code that recorded, not one call: every
            # slice keeps them, so it takes the same path as the whole tape.
            isinstance(entry, (SessionStart, StoreSnapshot, Patched))
            or entry.seq in keep
            or (isinstance(entry, SessionEnd) and not partial)
        ):
            kept.append(entry)
    # The payloads first: the tape is checked against its sidecar before it is written.
    copy_payloads(recording.path, kept, args.output)
    write_entries(args.output, kept)
    calls = [e for e in recording.calls if e.seq in keep]
    workers = ", ".join(dict.fromkeys(c.worker for c in calls))
    note = "; the session_end was left out (a partial slice)" if partial else ""
    print(
        f"{args.path}: kept {len(kept)} of {plural(len(recording), 'entry', 'entries')} "
        f"({plural(len(calls), 'call')} of {workers}, seqs {calls[0].seq}-{calls[-1].seq})"
        f"{note}; wrote {args.output}."
    )
    return 0
