"""List the cassettes of a folder, one row per cassette, sorted by name.

A row gives the cassette's name (its path under the folder), its workers, its entries, the
recorded duration, how the session ended (ended, or crashed with the error that ended
it), and the cassette format version. Folders are searched recursively
for .jsonl files; files that are not cassettes are skipped. A cassette that cannot be read
is named on stderr, the others are still listed, and the exit code is 2.

--json prints a list of objects, one per cassette, with the same fields and more (run id,
recording time, entrypoint, level, size, the outcome as recorded, the change markers the
recorded code knew: ``patches``).

--missing-patch ID lists only the cassettes recorded by code that did not know the change
marker ID (``sessiontape.patched(ID)``): the tapes that still take the old path. When it
lists none, the old branch of the code can be deleted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final

from .._errors import SessiontapeError
from ..cassette import Recording, is_cassette
from ..fleet import LocalCache, TapeStore, is_url, user_cache_dir
from ..report import format_ms, summarize_value
from ._common import CommandError, Progress, print_json, read_recording, recorded_duration

__all__ = ["SUMMARY", "add_arguments", "cassettes_in", "row", "run"]

SUMMARY: Final = "list the cassettes of a folder: workers, entries, duration, outcome, format"

#: More cassettes than this show a progress line on a terminal's stderr.
_PROGRESS_FILES: Final = 20
_HEADINGS: Final = ("NAME", "WORKERS", "ENTRIES", "DURATION", "OUTCOME", "FORMAT")
_OUTCOME_WIDTH: Final = 32


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``list`` options."""
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a folder of cassettes (searched recursively), a cassette file, or a store URL "
        "(s3://bucket/tapes, file:///x: read through the local cache)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list of objects")
    parser.add_argument(
        "--missing-patch",
        metavar="ID",
        default=None,
        help="list only the cassettes recorded by code that did not know the change marker "
        "ID (sessiontape.patched(ID)): the tapes that still need the old path",
    )


def cassettes_in(path: str) -> list[tuple[str, Path]]:
    """The cassettes under ``path`` as ``(name, file)``, sorted by name.

    A folder gives its cassettes named by their path under it (other files are skipped);
    a file is listed under the name it was given. A store URL (``s3://bucket/tapes``)
    gives its tapes named by their path under it, read through the local cache
    (``$SESSIONTAPE_CACHE``, default ``~/.cache/sessiontape``).
    """
    if is_url(path):
        store = TapeStore(path)
        cache = LocalCache(user_cache_dir())
        return [(tape.name, cache.fetch(store, tape)) for tape in store.tapes()]
    target = Path(path)
    if target.is_dir():
        found = [
            (file.relative_to(target).as_posix(), file)
            for file in target.rglob("*.jsonl")
            if file.is_file() and is_cassette(file)
        ]
        return sorted(found)
    if not target.exists():
        raise CommandError(f"{path}: no such file or folder; check the path.")
    return [(path, target)]  # read as a cassette, or said why not, with the others


def row(name: str, recording: Recording, *, size: int | None = None) -> dict[str, Any]:
    """One cassette's row, as JSON-ready data (``size`` of the file in bytes)."""
    header = recording.header
    end = recording.end
    error = recording.error
    return {
        "name": name,
        "path": recording.path,
        "run_id": header.run_id,
        "recorded_at": header.recorded_at,
        "entrypoint": header.entrypoint,
        "format_version": header.format_version,
        "level": header.level,
        "size_bytes": size,
        "workers": recording.worker_ids(),
        "entries": len(recording.entries),
        "calls": len(recording.calls),
        "duration_ns": recorded_duration(recording),
        "crashed": recording.crashed,
        "outcome": end.outcome if end is not None else None,
        "error": None if error is None else {"type": error.type, "message": error.message},
        "patches": list(recording.patches),
    }


def _outcome_cell(data: dict[str, Any]) -> str:
    """``ended`` (with the outcome when it is one plain value), or ``crashed: Error``."""
    if data["crashed"]:
        error = data["error"]
        return f"crashed: {error['type'].rsplit('.', 1)[-1]}" if error is not None else "crashed"
    outcome = data["outcome"]
    if isinstance(outcome, (str, int, float)) and not isinstance(outcome, bool):
        return "ended: " + summarize_value(outcome, _OUTCOME_WIDTH)
    return "ended"


def _table(rows: list[dict[str, Any]]) -> list[str]:
    cells = [_HEADINGS] + [
        (
            r["name"],
            str(len(r["workers"])),
            str(r["entries"]),
            format_ms(r["duration_ns"]),
            _outcome_cell(r),
            str(r["format_version"]),
        )
        for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(_HEADINGS))]
    # The name and the outcome are text (left-aligned); the rest are numbers.
    left = {0, 4}
    return [
        "  ".join(
            cell.ljust(width) if i in left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(c, widths, strict=True))
        ).rstrip()
        for c in cells
    ]


def run(args: argparse.Namespace) -> int:
    """``sessiontape list``."""
    found: list[tuple[str, Path]] = []
    for path in args.paths:
        found += cassettes_in(path)
    rows: list[dict[str, Any]] = []
    status = 0
    progress = Progress("list", len(found), threshold=_PROGRESS_FILES, unit="cassettes")
    for name, file in progress.iter(found):
        try:
            recording = read_recording(str(file))
            if args.missing_patch is not None and args.missing_patch in recording.patches:
                continue
            rows.append(row(name, recording, size=file.stat().st_size))
        except SessiontapeError as exc:  # one bad cassette does not hide the others
            print(f"sessiontape: error: {' '.join(str(exc).split())}", file=sys.stderr)
            status = 2
    if args.json:
        print_json(rows)
    elif rows:
        print("\n".join(_table(rows)))
    elif not found:
        print(f"no cassettes in {', '.join(args.paths)}.", file=sys.stderr)
    elif args.missing_patch is not None and status == 0:
        print(f"every cassette was recorded by code that knew {args.missing_patch!r}.")
    return status
