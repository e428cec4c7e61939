"""The local cache a replay reads a store's tapes through.

A CI machine downloads each tape of its own shard once; later runs, and every pytest-xdist
worker of the same run, read the local copy. The layout keeps a tape and its sidecar
folder side by side, as the loader expects them:

    DIR/<store>/<name>.jsonl             the tape
    DIR/<store>/<name>.jsonl.blobs/...   its sidecar's payloads (content-addressed)
    DIR/<store>/.versions/<name>.jsonl   what the copy was downloaded as (digest or version)
    DIR/<store>/.listing.json            the store's tapes as last listed, and when

Every file arrives under a temporary name and is renamed into place, and the version note
is written after its tape, so processes sharing a cache (xdist workers, parallel CI jobs on
one host) never read half a file: at worst two of them download the same tape once each.
A copy is used again only when its note says it is the content the store holds now.

A store that cannot be reached (a bad minute of the object store, a laptop on a train) is
replayed from the cache: the listing kept from the last time the store was read says
which tapes it held, and :meth:`LocalCache.cached` gives the copy of each, checked against
that listing without touching the network; a tape the cache lacks is an error naming it.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .._time import REAL
from ._store import BLOBS_SUFFIX, RemoteTape, StoreError, TapeStore, file_digest

__all__ = ["CACHE_VAR", "CacheStats", "CachedListing", "LocalCache", "user_cache_dir"]

_VERSIONS: Final = ".versions"
_LISTING: Final = ".listing.json"
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


@dataclass(frozen=True)
class CachedListing:
    """A store's tapes as the cache last saw them listed, and when (epoch seconds)."""

    tapes: list[RemoteTape]
    listed_at: float

    def age(self) -> str:
        """How long ago the store was listed, in words: ``3 h 12 min ago (2026-...)``."""
        seconds = max(0, int(REAL.time() - self.listed_at))
        when = _dt.datetime.fromtimestamp(self.listed_at, _dt.timezone.utc)
        return f"{_duration(seconds)} ago ({when:%Y-%m-%d %H:%M} UTC)"


def _duration(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min"
    return f"{hours // 24} days"


class LocalCache:
    """A folder of local copies of store tapes (``--sessiontape-cache DIR``)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.stats = CacheStats()

    def folder(self, store: TapeStore | str) -> Path:
        """Where the copies of a store's tapes live (the store, or its URL as
        :class:`TapeStore` keeps it): one folder per store URL."""
        url = store.url if isinstance(store, TapeStore) else store
        readable = _UNSAFE.sub("_", url.split("://", 1)[-1]).strip("_")[:60]
        digest = hashlib.sha256(url.encode()).hexdigest()[:10]
        return self.directory / f"{readable}-{digest}"

    def local_path(self, store: TapeStore | str, tape: RemoteTape) -> Path:
        return self.folder(store) / _safe_name(tape.name)

    # -- the listing, for when the store cannot be reached ----------------------------------

    def keep_listing(self, store: TapeStore, tapes: list[RemoteTape]) -> None:
        """Keep ``tapes``, the store's listing just read, for a replay that cannot reach it."""
        body = {
            "url": store.url,
            "listed_at": REAL.time(),
            "tapes": [dataclasses.asdict(tape) for tape in tapes],
        }
        _write(self.folder(store) / _LISTING, json.dumps(body, indent=1, sort_keys=True) + "\n")

    def listing(self, url: str) -> CachedListing | None:
        """The store's listing kept by the last run that read it, or ``None``."""
        text = _read(self.folder(url) / _LISTING)
        if text is None:
            return None
        try:
            body: dict[str, Any] = json.loads(text)
            tapes = [_remote_tape(t) for t in body["tapes"]]
            return CachedListing(tapes, float(body["listed_at"]))
        except (ValueError, KeyError, TypeError):
            return None  # unreadable: as if there were none

    def cached(self, url: str, tape: RemoteTape) -> Path:
        """The local copy of ``tape`` (as the cached listing describes it), and its sidecar
        files, without touching the store; a :class:`StoreError` naming what is missing."""
        target = self.local_path(url, tape)
        note = self.folder(url) / _VERSIONS / _safe_name(tape.name)
        missing = not target.is_file() or _read(note) != tape.key
        sidecar = target.with_name(target.name + BLOBS_SUFFIX)
        blobs = [blob for blob in tape.blobs if not (sidecar / _safe_name(blob)).is_file()]
        if missing or blobs:
            what = "its copy" if missing else f"its sidecar file {blobs[0]}"
            raise StoreError(
                f"{url}/{tape.name}: {what} is not in the cache {self.folder(url)}, and the "
                "store is not read (offline, or it cannot be reached). Replay it once with "
                "the store reachable to fill the cache, or leave it out of this run."
            )
        self.stats.reused += 1
        return target

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


def _remote_tape(data: dict[str, Any]) -> RemoteTape:
    fields = {f.name for f in dataclasses.fields(RemoteTape)}
    known = {key: value for key, value in data.items() if key in fields}
    return RemoteTape(**{**known, "blobs": tuple(known.get("blobs", ()))})


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
