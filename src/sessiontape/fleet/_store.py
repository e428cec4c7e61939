"""A folder of tapes at an fsspec URL: listing, the manifest, reading and writing files.

Any URL fsspec understands works (``s3://bucket/tapes``, ``gs://``, ``az://``,
``file:///srv/tapes``, ``memory://corpus``). The backend comes from fsspec's own optional
packages (s3fs, gcsfs, adlfs), and its credentials and endpoint from the backend's usual
configuration (``AWS_*`` variables, ``~/.aws``, ``FSSPEC_S3_ENDPOINT_URL``...): sessiontape
never asks for them, stores them or prints them.

Next to the tapes, the store keeps one small file, ``.sessiontape/manifest.json``: for
each tape its content digest, size and run id. It is what makes a second ``push`` upload
nothing, what lets ``pull`` and the replay cache check a copy without reading the store
twice, and what lets shards be balanced before anything is downloaded. A folder filled by
other means (``aws s3 sync``) works too: its tapes are found by listing, and their
digests are simply unknown.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .._errors import SessiontapeError, UsageError
from ..cassette import decode_header

__all__ = [
    "BLOBS_SUFFIX",
    "MANIFEST",
    "Manifest",
    "RemoteTape",
    "StoreError",
    "TapeStore",
    "file_digest",
    "header_run_id",
    "is_url",
]

#: Where the store keeps its manifest, under the store's root.
MANIFEST: Final = ".sessiontape/manifest.json"
#: A tape's sidecar folder is the tape's name with this suffix (see ``cassette.sidecar_dir``).
BLOBS_SUFFIX: Final = ".blobs"
_MANIFEST_FORMAT: Final = 1
#: A scheme, then ``://``: ``s3://b/x``, ``file:///x``. A Windows drive (``C:\x``) is not one.
_URL: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
#: The optional package each common scheme needs, for the error that names it.
_BACKENDS: Final = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
}
_CHUNK: Final = 1 << 20


class StoreError(SessiontapeError):
    """The store cannot be reached or read: names the URL and what to do."""


def is_url(value: str) -> bool:
    """Whether ``value`` names a store (``scheme://...``) rather than a local path."""
    return bool(_URL.match(value))


def file_digest(path: str | os.PathLike[str]) -> str:
    """The sha256 of a local file, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def header_run_id(first_line: bytes) -> str | None:
    """The run id of a tape whose first line is ``first_line``, or None if it is not one."""
    header = decode_header(first_line)
    return header.run_id if header is not None else None


@dataclass(frozen=True)
class RemoteTape:
    """One tape of a store: its path under the root, and what the manifest says of it."""

    name: str
    size: int
    sha256: str | None = None
    run_id: str | None = None
    #: A version of the object as the store tells it (its ETag or modification time):
    #: what the cache compares when the manifest has no digest.
    version: str = ""
    #: The files of its sidecar folder in the store (``sha256-<hex>[.gz]``).
    blobs: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """What identifies this content: its digest when known, else the store's version."""
        return f"sha256:{self.sha256}" if self.sha256 else f"store:{self.version}:{self.size}"


class Manifest:
    """``.sessiontape/manifest.json``: per tape its digest, size and run id."""

    def __init__(self, tapes: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.tapes: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (tapes or {}).items()}

    @classmethod
    def parse(cls, data: bytes, where: str) -> Manifest:
        try:
            decoded = json.loads(data)
            tapes = decoded["tapes"]
            if not isinstance(tapes, dict):
                raise TypeError("tapes is not an object")
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(
                f"{where}: the store's manifest cannot be read ({exc}). It is rebuilt by the "
                "next 'sessiontape push'; move it away to push everything again."
            ) from None
        return cls(tapes)

    def to_bytes(self) -> bytes:
        body = {"format": _MANIFEST_FORMAT, "tapes": dict(sorted(self.tapes.items()))}
        return (json.dumps(body, indent=1, sort_keys=True) + "\n").encode()


class TapeStore:
    """The tapes under one fsspec URL."""

    def __init__(self, url: str, **storage_options: Any) -> None:
        if not is_url(url):
            raise UsageError(f"{url!r} is not a URL (scheme://...); name a store URL.")
        self.url = url.rstrip("/")
        scheme = url.split("://", 1)[0].lower()
        try:
            import fsspec
        except ImportError:
            raise UsageError(
                f"{url}: reading tapes from a URL needs fsspec; install "
                f"'sessiontape[{_BACKENDS.get(scheme, 'fsspec')}]'."
            ) from None
        try:
            fs, root = fsspec.core.url_to_fs(self.url, **storage_options)
        except ImportError as exc:
            extra = _BACKENDS.get(scheme, "fsspec")
            raise UsageError(
                f"{url}: the {scheme}:// backend is not installed ({exc}); install "
                f"'sessiontape[{extra}]'."
            ) from None
        except ValueError as exc:
            raise UsageError(f"{url}: {exc}; check the URL's scheme.") from None
        self.fs = fs
        self.root = str(root).rstrip("/")

    def __repr__(self) -> str:
        return f"TapeStore({self.url!r})"

    def path(self, name: str) -> str:
        """The backend path of ``name`` (a path under the store's root)."""
        return posixpath.join(self.root, name) if self.root else name

    def url_of(self, name: str) -> str:
        return f"{self.url}/{name}"

    def _fail(self, action: str, exc: Exception) -> StoreError:
        return StoreError(
            f"{self.url}: cannot {action}: {type(exc).__name__}: {exc}. Check the URL, the "
            "network and the backend's credentials."
        )

    # -- reading -------------------------------------------------------------------------

    def manifest(self) -> Manifest:
        """The store's manifest (empty for a store sessiontape never pushed to)."""
        where = self.url_of(MANIFEST)
        try:
            data = self.fs.cat_file(self.path(MANIFEST))
        except FileNotFoundError:
            return Manifest()
        except Exception as exc:
            raise self._fail(f"read {MANIFEST}", exc) from exc
        return Manifest.parse(data, where)

    def _listing(self) -> dict[str, dict[str, Any]]:
        try:
            found: dict[str, dict[str, Any]] = self.fs.find(self.root, detail=True)
        except FileNotFoundError:
            return {}
        except Exception as exc:
            raise self._fail("list the tapes", exc) from exc
        return found

    def tapes(self, manifest: Manifest | None = None) -> list[RemoteTape]:
        """Every ``*.jsonl`` file under the root (sidecars and the manifest's folder aside),
        sorted by name, with its sidecar's files and what the manifest knows of it."""
        manifest = self.manifest() if manifest is None else manifest
        files: dict[str, dict[str, Any]] = {}
        blobs: dict[str, list[str]] = {}
        for path, info in self._listing().items():
            name = self._name_of(path)
            if name is None or info.get("type") == "directory":
                continue
            folder, _, base = name.rpartition("/")
            if folder.endswith(BLOBS_SUFFIX):
                blobs.setdefault(folder[: -len(BLOBS_SUFFIX)], []).append(base)
            elif name.endswith(".jsonl") and not name.startswith(".sessiontape/"):
                files[name] = info
        tapes = []
        for name, info in sorted(files.items()):
            if any(part.endswith(BLOBS_SUFFIX) for part in name.split("/")[:-1]):
                continue
            meta = manifest.tapes.get(name, {})
            size = int(info.get("size") or 0)
            digest = meta.get("sha256") if meta.get("size") == size else None
            tapes.append(
                RemoteTape(
                    name=name,
                    size=size,
                    sha256=digest,
                    run_id=meta.get("run_id") if digest else None,
                    version=_version_of(info),
                    blobs=tuple(sorted(blobs.get(name, ()))),
                )
            )
        return tapes

    def _name_of(self, path: str) -> str | None:
        path = path.rstrip("/")
        root = self.root.lstrip("/")
        stripped = path.lstrip("/")
        if not root:
            return stripped
        if stripped.startswith(root + "/"):
            return stripped[len(root) + 1 :]
        return None

    def first_line(self, name: str, limit: int = 1 << 20) -> bytes:
        """The first line of ``name`` (at most ``limit`` bytes), without reading the rest."""
        try:
            data: bytes = self.fs.cat_file(self.path(name), start=0, end=limit)
        except FileNotFoundError:
            return b""
        except Exception as exc:
            raise self._fail(f"read {name}", exc) from exc
        return data.split(b"\n", 1)[0]

    def exists(self, name: str) -> bool:
        try:
            return bool(self.fs.exists(self.path(name)))
        except Exception as exc:
            raise self._fail(f"look for {name}", exc) from exc

    def download(self, name: str, target: Path) -> None:
        """Copy ``name`` to ``target`` whole: a temporary file beside it, then a rename, so
        that two processes filling one cache never see half a file."""
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.part")
        try:
            self.fs.get_file(self.path(name), str(temporary))
            os.chmod(temporary, 0o600)
            os.replace(temporary, target)
        except FileNotFoundError as exc:
            temporary.unlink(missing_ok=True)
            raise StoreError(
                f"{self.url_of(name)}: not in the store any more; list it again."
            ) from exc
        except BaseException as exc:
            temporary.unlink(missing_ok=True)
            if isinstance(exc, Exception) and not isinstance(exc, OSError):
                raise self._fail(f"download {name}", exc) from exc
            raise

    # -- writing -------------------------------------------------------------------------

    def upload(self, source: Path, name: str) -> None:
        try:
            parent = posixpath.dirname(self.path(name))
            if parent:
                self.fs.makedirs(parent, exist_ok=True)
            self.fs.put_file(str(source), self.path(name))
        except Exception as exc:
            raise self._fail(f"upload {name}", exc) from exc

    def write_manifest(self, manifest: Manifest) -> None:
        """Merge ``manifest`` into the store's current one and write it: another push to
        the same store meanwhile keeps its tapes."""
        current = self.manifest()
        current.tapes.update(manifest.tapes)
        manifest.tapes = current.tapes
        try:
            self.fs.makedirs(posixpath.dirname(self.path(MANIFEST)), exist_ok=True)
            self.fs.pipe_file(self.path(MANIFEST), current.to_bytes())
        except Exception as exc:
            raise self._fail(f"write {MANIFEST}", exc) from exc


def _version_of(info: Mapping[str, Any]) -> str:
    """What a backend says identifies one version of an object."""
    for key in ("ETag", "etag", "md5Hash", "generation", "mtime", "LastModified", "created"):
        value = info.get(key)
        if value is not None:
            return str(value).strip('"')
    return ""
