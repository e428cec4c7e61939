"""Upload a folder of cassettes to object storage (any fsspec URL: s3://, gs://, az://,
file://, memory://), content-addressed.

Each tape goes to the same path under URL as under DIR, its sidecar payloads beside it,
and the store's manifest (.sessiontape/manifest.json) notes each tape's sha256. A tape
whose digest the manifest already holds is not uploaded again, nor is a sidecar payload
the store already has (their names are their digests): pushing twice uploads nothing,
and a push that was interrupted resumes where its manifest was last written (every 100
tapes and at the end).

Nothing with a secret leaves the machine: before anything is uploaded, every tape to send
is checked as 'sessiontape scrub --check' checks it, and a tape holding a secret stops the
push (exit 1) with the file, line and field of each. Credentials and endpoints come from
the backend's usual configuration (AWS_* variables and ~/.aws for s3://,
FSSPEC_S3_ENDPOINT_URL for another S3 endpoint); sessiontape never prints them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Final

from .. import _hooks
from ..fleet import Manifest, RemoteTape, TapeStore, file_digest, header_run_id
from ..scrub import Scrubber
from ._common import CommandError, Progress, plural, print_json, read_recording
from ._list import cassettes_in
from ._scrub import count_secrets

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "upload a folder of cassettes to object storage (content-addressed)"
#: Tapes between two writes of the store's manifest: what an interrupted push redoes.
_CHECKPOINT: Final = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="DIR", help="a folder of cassettes (recursively)")
    parser.add_argument("url", metavar="URL", help="where to: s3://bucket/tapes, file:///x ...")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def run(args: argparse.Namespace) -> int:
    """``sessiontape push``."""
    if not Path(args.source).is_dir():
        raise CommandError(f"{args.source}: not a folder; name the folder of cassettes to push.")
    store = TapeStore(args.url)
    started = time.perf_counter()
    manifest = store.manifest()
    remote = {tape.name: tape for tape in store.tapes(manifest)}
    local = cassettes_in(args.source)
    todo: list[tuple[str, Path, str]] = []
    unchanged = 0
    for name, file in local:
        digest = file_digest(file)
        known = remote.get(name)
        if known is not None and known.sha256 == digest:
            unchanged += 1
        else:
            todo.append((name, file, digest))
    if _holding_secrets(todo):
        return 1
    new = Manifest()
    sent_bytes = blobs = 0
    try:
        for done, (name, file, digest) in enumerate(
            Progress("push", len(todo), threshold=20, unit="tapes").iter(todo), start=1
        ):
            blobs += _push_sidecar(store, name, file, remote.get(name))
            store.upload(file, name)
            size = file.stat().st_size
            sent_bytes += size
            with file.open("rb") as fh:
                run_id = header_run_id(fh.readline(1 << 20))
            new.tapes[name] = {"sha256": digest, "size": size, "run_id": run_id}
            if done % _CHECKPOINT == 0:
                store.write_manifest(new)
    finally:
        if new.tapes:
            store.write_manifest(new)
    seconds = time.perf_counter() - started
    figures: dict[str, Any] = {
        "url": store.url,
        "tapes": len(local),
        "uploaded": len(todo),
        "unchanged": unchanged,
        "blobs_uploaded": blobs,
        "bytes_uploaded": sent_bytes,
        "seconds": round(seconds, 3),
        "tapes_per_second": round(len(local) / seconds, 1) if seconds > 0 else None,
    }
    if args.json:
        print_json(figures)
    else:
        rate = f"{figures['tapes_per_second']} tapes/s" if seconds > 0 else "instant"
        print(
            f"pushed {plural(len(todo), 'tape')} ({sent_bytes:,} bytes, "
            f"{plural(blobs, 'sidecar payload')}) to {store.url}; "
            f"{unchanged} unchanged; {len(local)} in {seconds:.2f} s ({rate})."
        )
    return 0


def _holding_secrets(todo: list[tuple[str, Path, str]]) -> bool:
    """Whether a tape to send holds a secret (each is named on stderr): the push then stops
    before its first upload."""
    scrubber = Scrubber(None, extra=_hooks.scrub_functions())
    leaking = []
    for _name, file, _digest in Progress("check", len(todo), threshold=20, unit="tapes").iter(todo):
        found = count_secrets(read_recording(str(file)), scrubber)
        if found:
            leaking.append(f"{file} ({plural(found, 'secret')})")
    for line in leaking:
        print(f"sessiontape: {line}", file=sys.stderr)
    if leaking:
        print(
            f"sessiontape: {plural(len(leaking), 'tape')} to push still "
            f"{'holds' if len(leaking) == 1 else 'hold'} secrets, so nothing was uploaded. "
            "See where with 'sessiontape scrub --check PATH', redact them with 'sessiontape "
            "scrub --in-place PATH', rotate the secrets, and push again.",
            file=sys.stderr,
        )
    return bool(leaking)


def _push_sidecar(store: TapeStore, name: str, file: Path, known: RemoteTape | None) -> int:
    """Upload the payloads of the tape's sidecar that the store lacks; how many."""
    folder = file.with_name(file.name + ".blobs")
    if not folder.is_dir():
        return 0
    present = set(known.blobs) if known is not None else set()
    sent = 0
    for blob in sorted(folder.iterdir()):
        if blob.is_file() and blob.name not in present:
            store.upload(blob, f"{name}.blobs/{blob.name}")
            sent += 1
    return sent
