"""The fleet layer: tapes in object storage (through fsspec), a local cache, CI shards.

sessiontape adds no server, queue or scheduler of its own: fsspec reaches the stores,
pytest-xdist reaches the hosts, and shards are a deterministic split every CI job computes
for itself.
"""

from __future__ import annotations

from ._cache import CACHE_VAR, CachedListing, CacheStats, LocalCache, user_cache_dir
from ._shard import Durations, Shard, Sharded, parse_shard, split
from ._store import (
    MANIFEST,
    Manifest,
    RemoteTape,
    StoreError,
    TapeStore,
    file_digest,
    header_run_id,
    is_url,
)

__all__ = [
    "CACHE_VAR",
    "MANIFEST",
    "CacheStats",
    "CachedListing",
    "Durations",
    "LocalCache",
    "Manifest",
    "RemoteTape",
    "Shard",
    "Sharded",
    "StoreError",
    "TapeStore",
    "file_digest",
    "header_run_id",
    "is_url",
    "parse_shard",
    "split",
    "user_cache_dir",
]
