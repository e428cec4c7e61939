"""Download the cassettes of an object-storage URL (any fsspec URL) into a folder.

Each tape lands at the same path under DIR as under URL, with its sidecar payloads. A
local file is never overwritten by another tape: a file that is already the store's tape
is left as it is, and one that differs (an edited or rescrubbed copy, or another tape of
the same name) is kept and reported, and the exit code is 1. Files arrive under a
temporary name and are renamed into place, so an interrupted pull leaves no half tape;
run it again to finish.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from ..fleet import RemoteTape, TapeStore, file_digest
from ._common import CommandError, Progress, plural, print_json

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "download the cassettes of an object-storage URL into a folder"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", metavar="URL", help="where from: s3://bucket/tapes, file:///x ...")
    parser.add_argument("target", metavar="DIR", help="the folder to fill (made if missing)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def run(args: argparse.Namespace) -> int:
    """``sessiontape pull``."""
    store = TapeStore(args.url)
    target = Path(args.target)
    if target.exists() and not target.is_dir():
        raise CommandError(f"{args.target}: not a folder; name a folder to pull into.")
    started = time.perf_counter()
    tapes = store.tapes()
    fetched = same = 0
    fetched_bytes = 0
    kept: list[str] = []
    for tape in Progress("pull", len(tapes), threshold=20, unit="tapes").iter(tapes):
        local = target.joinpath(*[p for p in tape.name.split("/") if p not in ("", ".", "..")])
        if local.exists() or local.is_symlink():
            if _is_same(store, tape, local):
                same += 1
            else:
                kept.append(str(local))
                continue
        else:
            store.download(tape.name, local)
            fetched += 1
            fetched_bytes += tape.size
        sidecar = local.with_name(local.name + ".blobs")
        for blob in tape.blobs:
            if not (sidecar / blob).is_file():  # named by its content
                store.download(f"{tape.name}.blobs/{blob}", sidecar / blob)
    seconds = time.perf_counter() - started
    for path in kept:
        print(
            f"sessiontape: {path}: differs from the store's tape of that name; left as it "
            "is. Move it away (or pull into another folder) to get the store's copy.",
            file=sys.stderr,
        )
    figures: dict[str, Any] = {
        "url": store.url,
        "tapes": len(tapes),
        "downloaded": fetched,
        "unchanged": same,
        "kept_local": kept,
        "bytes_downloaded": fetched_bytes,
        "seconds": round(seconds, 3),
    }
    if args.json:
        print_json(figures)
    else:
        print(
            f"pulled {plural(fetched, 'tape')} ({fetched_bytes:,} bytes) from {store.url} "
            f"into {args.target}; {same} already there"
            + (f"; {len(kept)} kept as they were (they differ)" if kept else "")
            + f"; {seconds:.2f} s."
        )
    return 1 if kept else 0


def _is_same(store: TapeStore, tape: RemoteTape, local: Path) -> bool:
    """Whether the local file holds exactly the store's tape."""
    if local.is_symlink() or not local.is_file():
        return False
    if tape.sha256 is not None:
        return local.stat().st_size == tape.size and file_digest(local) == tape.sha256
    if local.stat().st_size != tape.size:
        return False
    # No digest in the manifest: compare with a fresh copy.
    with tempfile.TemporaryDirectory(prefix="sessiontape-pull-") as scratch:
        copy = Path(scratch) / "tape.jsonl"
        store.download(tape.name, copy)
        return file_digest(copy) == file_digest(local)
