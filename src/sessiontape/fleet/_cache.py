"""The local cache a replay reads a store's tapes through.

A CI machine downloads each tape of its own shard once; later runs, and every pytest-xdist
worker of the same run, read the local copy. The layout keeps a tape and its sidecar
folder side by side, as the loader expects them:

    DIR/<store>/<name>.jsonl             the tape
    DIR/<store>/<name>.jsonl.blobs/...   its sidecar's payloads (content-addressed)
    DIR/<store>/.versions/<name>.jsonl   what the copy was downloaded as (digest or version)

Every file arrives under a temporary name and is renamed into place, and the version note
is written after its tape, so processes sharing a cache (xdist workers, parallel CI jobs on
one host) never read half a file: at worst two of them download the same tape once each.
A copy is used again only when its note says it is the content the store holds now.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ._store import BLOBS_SUFFIX, RemoteTape, StoreError, TapeStore, file_digest

__all__ = ["CACHE_VAR", "CacheStats", "LocalCache", "user_cache_dir"]

_VERSIONS: Final = ".versions"
#: Where the command line keeps its cache, when set (default ``~/.cache/sessiontape``).
CACHE_VAR: Final = "SESSIONTAPE_CACHE"
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class CacheStats:
    """What one round of fetching did."""

    downloaded: int = 0
    downloaded_bytes: int = 0
    reused: int = 0
    names: list[str] = field(default_factory=list)


class LocalCache:
    """A folder of local copies of store tapes (``--sessiontape-cache DIR``)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.stats = CacheStats()

    def folder(self, store: TapeStore) -> Path:
        """Where the copies of ``store``'s tapes live: one folder per store URL."""
        readable = _UNSAFE.sub("_", store.url.split("://", 1)[-1]).strip("_")[:60]
        digest = hashlib.sha256(store.url.encode()).hexdigest()[:10]
        return self.directory / f"{readable}-{digest}"

    def local_path(self, store: TapeStore, tape: RemoteTape) -> Path:
        return self.folder(store) / _safe_name(tape.name)

    def fetch(self, store: TapeStore, tape: RemoteTape) -> Path:
        """The local copy of ``tape``, downloaded unless the cache holds this very content."""
        target = self.local_path(store, tape)
        note = self.folder(store) / _VERSIONS / _safe_name(tape.name)
        if target.is_file() and _read(note) == tape.key:
            self.stats.reused += 1
        else:
            store.download(tape.name, target)
            if tape.sha256 is not None and file_digest(target) != tape.sha256:
                target.unlink(missing_ok=True)
                raise StoreError(
                    f"{store.url_of(tape.name)}: the downloaded copy does not match the "
                    "store's manifest (the tape changed while it was read, or the manifest "
                    "is stale). Run again; if it persists, push the tape again."
                )
            _write(note, tape.key)
            self.stats.downloaded += 1
            self.stats.downloaded_bytes += tape.size
            self.stats.names.append(tape.name)
        sidecar = target.with_name(target.name + BLOBS_SUFFIX)
        for blob in tape.blobs:
            local = sidecar / _safe_name(blob)
            if not local.is_file():  # named by its content: present means right
                store.download(f"{tape.name}{BLOBS_SUFFIX}/{blob}", local)
        return target


def _safe_name(name: str) -> Path:
    """``name`` as a path under a cache folder; never one that leaves it."""
    parts = [p for p in name.split("/") if p not in ("", ".", "..")]
    if not parts:
        raise StoreError(f"{name!r} is not a tape name a cache can hold.")
    return Path(*parts)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.part")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def user_cache_dir() -> Path:
    """The command line's cache: ``$SESSIONTAPE_CACHE``, else ``$XDG_CACHE_HOME/sessiontape``,
    else ``~/.cache/sessiontape``."""
    explicit = os.environ.get(CACHE_VAR)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sessiontape"
