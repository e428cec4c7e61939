"""Where ``--replay`` finds its cassettes: local paths, store URLs, and this CI job's shard.

``--replay s3://bucket/tapes`` lists the store, and the tapes this run replays are read
through the local cache (``--sessiontape-cache DIR``), each downloaded once. With
``--sessiontape-shard i/N`` the run replays only its share of every ``--replay`` source,
balanced by the replay durations of earlier receipts (``--sessiontape-durations``): a CI
job downloads the tapes of its own shard and no others.

Resolved in ``pytest_configure`` of every process: the xdist controller fills the cache
before its workers start, and each worker (or each host of ``--tx socket=...``) finds the
same tapes the same way, from its own cache.

A store that cannot be read is replayed from the cache as it was last listed (the
listing is kept in the cache each time the store is read), with one warning that names
the store's error and the listing's age; ``--sessiontape-offline`` does so without
touching the network, and without a warning. A tape the cache lacks is then an error
naming it; so is a store the cache has never listed.

The chosen tapes are collected through their folders (the cache's folder of a store, the
folder given to ``--replay``), and ``pytest_ignore_collect`` leaves out every other file
there (other tapes, test modules): pytest collects the folder of each path argument once
per argument, so thousands of tapes as arguments would cost time quadratic in the corpus.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

import pytest

from .._errors import SessiontapeError
from ._options import read_header, recorded_by_fixture

if TYPE_CHECKING:
    from ..fleet import LocalCache, RemoteTape, TapeStore
    from ._settings import Settings

__all__ = [
    "CACHE_GITIGNORE",
    "RESOLVED",
    "Resolved",
    "configure_sources",
    "is_chosen",
    "resolve_replay",
    "store_nodeid",
]

#: Written into a cache folder sessiontape makes, so that it is never committed.
CACHE_GITIGNORE: Final = "# Made by sessiontape: local copies of tapes from a store.\n*\n"


class _Candidate(NamedTuple):
    key: str
    run_id: str | None
    local: Path | None = None
    #: The folder (absolute) a local tape is collected through: the ``--replay`` value,
    #: when that is a folder.
    root: str | None = None
    store: TapeStore | None = None
    tape: RemoteTape | None = None
    #: The store's URL, for a tape of a store (``store`` is ``None`` when it is not read).
    url: str | None = None


class Resolved(NamedTuple):
    """What ``--replay`` resolved to: the paths to collect and lines for the header."""

    paths: tuple[str, ...]
    header: tuple[str, ...]
    #: The local copy of each store tape -> the tape's URL: its test id, the same on
    #: every machine and in every cache (``s3://bucket/tapes/x.jsonl``).
    urls: dict[str, str]
    #: The tapes chosen (absolute paths) under ``folders``, where every other file is
    #: left out. Empty when the paths are collected as they are.
    chosen: frozenset[str] = frozenset()
    #: The folders (absolute, ending in a separator) collected for the chosen tapes.
    folders: tuple[str, ...] = ()
    #: What the run should warn of (a store replayed from the cache): one line each.
    warnings: tuple[str, ...] = ()


#: What ``--replay`` resolved to in this run.
RESOLVED: Final[pytest.StashKey[Resolved]] = pytest.StashKey()


def store_nodeid(config: pytest.Config, path: Path) -> str | None:
    """The test id of a cassette collected from a store's local copy, else None."""
    resolved = config.stash.get(RESOLVED, None)
    return resolved.urls.get(str(path)) if resolved is not None else None


def is_chosen(config: pytest.Config, path: Path) -> bool:
    """Whether ``path`` is a tape this run's shard or store chose (collected as a cassette
    named on the command line would be)."""
    resolved = config.stash.get(RESOLVED, None)
    return resolved is not None and str(path) in resolved.chosen


def configure_sources(config: pytest.Config, resolved: Resolved) -> None:
    """When the chosen tapes are collected through their folders, leave out every other
    file there (registered only then: no other run pays for the look at each path)."""
    if resolved.folders:
        config.pluginmanager.register(_OnlyChosen(resolved), _OnlyChosen.NAME)


class _OnlyChosen:
    """Leaves out every file but the chosen tapes in the folders collected for them."""

    NAME: Final = "sessiontape-only-chosen"

    def __init__(self, resolved: Resolved) -> None:
        self._resolved = resolved

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        resolved = self._resolved
        path = str(collection_path)
        if path in resolved.chosen or not path.startswith(resolved.folders):
            return None
        return None if collection_path.is_dir() else True


def resolve_replay(settings: Settings) -> Resolved:
    """The local paths to collect for ``settings.replay``, fetching and sharding as asked.

    Without URLs and without a shard, the paths are the ones given, unchanged (and the
    fleet layer is not even imported).
    """
    urls = [v for v in settings.replay if "://" in v]
    if urls and (settings.update or settings.live or settings.fork):
        # The run reads a store's tapes through the local cache: rewriting the cached copy
        # would change no tape anyone keeps, and leave the cache stale.
        flag = (
            "--sessiontape-update"
            if settings.update
            else "--sessiontape-live"
            if settings.live
            else "--sessiontape-fork"
        )
        raise pytest.UsageError(
            f"sessiontape: {flag} rewrites tapes in place, and {urls[0]} is a store whose "
            "tapes this run only reads through its cache. Pull them into a folder, replay "
            f"that with {flag} and push it back: sessiontape pull {urls[0]} tapes/ && "
            f"pytest --replay tapes/ {flag} && sessiontape push tapes/ {urls[0]}"
        )
    if settings.shard is None and not urls:
        return Resolved(settings.replay, (), {})
    try:
        return _resolve(settings)
    except SessiontapeError as exc:
        raise pytest.UsageError(f"sessiontape: {exc}") from None


def _resolve(settings: Settings) -> Resolved:
    from ..fleet import Durations, is_url, split

    candidates: list[_Candidate] = []
    direct: list[str] = []
    header: list[str] = []
    warned: list[str] = []
    cache = _cache(settings.cache_dir) if any(is_url(v) for v in settings.replay) else None
    for value in settings.replay:
        if is_url(value) and cache is not None:
            url, store, tapes, line = _listed(value, settings, cache, warned)
            header.append(line)
            candidates += [
                _Candidate(f"{url}/{t.name}", t.run_id, store=store, tape=t, url=url) for t in tapes
            ]
        elif settings.shard is not None:
            # A folder is collected whole (less what is not chosen); a file as it is.
            root = os.path.abspath(value) if Path(value).is_dir() else None
            candidates += [
                _Candidate(str(file), _run_id(file), local=file, root=root)
                for file in _local(Path(value))
            ]
        else:
            direct.append(value)
    chosen = candidates
    if settings.shard is not None:
        durations = Durations.from_receipts(settings.durations)
        sharded = split([(c.key, c.run_id) for c in candidates], settings.shard, durations)
        keep = set(sharded.names)
        chosen = [c for c in candidates if c.key in keep]
        loads = ", ".join(f"{seconds:.1f}" for seconds in sharded.loads)
        header.append(
            f"shard {settings.shard}: {len(chosen)} of {len(candidates)} tapes "
            f"(expected seconds per shard: {loads})"
        )
    paths = list(direct)
    urls: dict[str, str] = {}
    files: list[tuple[str, str]] = []  # (the folder it is collected through, the tape)
    for candidate in chosen:
        if candidate.url is not None and candidate.tape is not None and cache is not None:
            if candidate.store is not None:
                local = os.path.abspath(cache.fetch(candidate.store, candidate.tape))
            else:  # the store cannot be read: its copy in the cache, or an error naming it
                local = os.path.abspath(cache.cached(candidate.url, candidate.tape))
            files.append((os.path.abspath(cache.folder(candidate.url)), local))
            urls[local] = candidate.key
        elif candidate.local is not None and candidate.root is not None:
            files.append((candidate.root, os.path.abspath(candidate.local)))
        elif candidate.local is not None:
            paths.append(str(candidate.local))
    if cache is not None and any(c.url for c in chosen):
        stats = cache.stats
        header.append(
            f"cache {settings.cache_dir}: {stats.downloaded} downloaded "
            f"({stats.downloaded_bytes:,} bytes), {stats.reused} reused"
        )
    roots = sorted({root for root, _ in files})
    return Resolved(
        tuple(paths + roots),
        tuple(header),
        urls,
        frozenset(file for _, file in files),
        tuple(os.path.join(root, "") for root in roots),
        tuple(warned),
    )


def _listed(
    value: str, settings: Settings, cache: LocalCache, warned: list[str]
) -> tuple[str, TapeStore | None, list[RemoteTape], str]:
    """The tapes of the store at ``value``: its URL, the store (``None`` when it is not
    read: offline, or it cannot be), its tapes, and the header line saying which."""
    from ..fleet import StoreError, TapeStore

    url = value.rstrip("/")
    if not settings.offline:
        store = TapeStore(value)
        try:
            tapes = store.tapes()
        except StoreError as exc:
            failure = str(exc)
        else:
            cache.keep_listing(store, tapes)
            return store.url, store, tapes, f"replay: {store.url} ({len(tapes)} tapes in the store)"
        url = store.url
    listing = cache.listing(url)
    if listing is None:
        why = "--sessiontape-offline was given" if settings.offline else failure
        raise StoreError(
            f"{url}: the cache {cache.directory} holds no listing of this store to replay "
            f"from, and the store is not read ({why}). Replay it once with the store "
            "reachable and the same --sessiontape-cache to fill the cache."
        )
    age = listing.age()
    if not settings.offline:
        warned.append(
            f"sessiontape: {failure} Replaying its tapes from the cache {cache.directory}, "
            f"as the store listed them {age}; pass --sessiontape-offline to do so without "
            "trying the store."
        )
    how = "offline" if settings.offline else "the store cannot be read"
    line = f"replay: {url} ({len(listing.tapes)} tapes, {how}: the cache's listing of {age})"
    return url, None, listing.tapes, line


def _local(path: Path) -> list[Path]:
    from ..cassette import is_cassette

    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*.jsonl") if is_cassette(p) and not recorded_by_fixture(p))


def _run_id(path: Path) -> str | None:
    header = read_header(path)
    return header.run_id if header is not None else None


def _cache(directory: Path) -> LocalCache:
    from ..fleet import LocalCache

    if not directory.exists():
        directory.mkdir(parents=True)
        (directory / ".gitignore").write_text(CACHE_GITIGNORE, encoding="utf-8")
    return LocalCache(directory)
