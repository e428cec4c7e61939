"""The sidecar: payloads too large to keep inline, stored beside the cassette by digest.

At level ``full`` a payload over ``max_inline_bytes`` is written once to
``NAME.jsonl.blobs/sha256-<hex>`` (``.gz`` appended when compressed) and the cassette's
:class:`~sessiontape.Blob` says so; replay reads it back only when the program reads the
payload. The directory is 0700 and every file 0600, whatever the umask: payloads hold
production data.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
from pathlib import Path
from typing import Final

__all__ = ["SIDECAR_SUFFIX", "Sidecar", "sidecar_dir"]

#: What a cassette's sidecar directory adds to the cassette's file name.
SIDECAR_SUFFIX: Final = ".blobs"


def sidecar_dir(cassette: str | os.PathLike[str]) -> Path:
    """The sidecar directory of the cassette at ``cassette``."""
    path = Path(cassette)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _write_private(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` as a 0600 file, whole or not at all (temp + rename)."""
    temp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # the mode given to open() is filtered by the umask
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    try:
        os.replace(temp, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


class Sidecar:
    """The blob store of one cassette.

    ``put`` writes a payload (once: a digest already stored is not written again) and
    ``get`` reads one back, checking its digest. ``compress`` gzips what ``put`` writes.
    """

    __slots__ = ("_cassette", "_directory", "compress")

    def __init__(self, cassette: str | os.PathLike[str], *, compress: bool = False) -> None:
        self._cassette = cassette
        self._directory: Path | None = None
        self.compress = compress

    @property
    def directory(self) -> Path:
        """The directory beside the cassette that holds its payloads (worked out when
        first needed: most replays never read a sidecar)."""
        if self._directory is None:
            self._directory = sidecar_dir(self._cassette)
        return self._directory

    def file_for(self, sha256: str, *, gz: bool = False) -> Path:
        """The file holding the payload whose digest is ``sha256`` (``"sha256:<hex>"``)."""
        name = sha256.replace(":", "-", 1)
        return self.directory / (name + ".gz" if gz else name)

    def put(self, raw: bytes) -> tuple[str, bool]:
        """Store ``raw``; return its digest and whether the file is compressed.

        Raises ``OSError`` when the directory or the file cannot be written.
        """
        sha256 = "sha256:" + hashlib.sha256(raw).hexdigest()
        target = self.file_for(sha256, gz=self.compress)
        if target.exists():
            return sha256, self.compress
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)  # mkdir's mode is filtered by the umask
        _write_private(target, gzip.compress(raw, mtime=0) if self.compress else raw)
        return sha256, self.compress

    def copy_to(self, other: Sidecar, sha256: str, *, gz: bool = False) -> None:
        """Copy the stored file of ``sha256`` into ``other`` as it is (0600, 0700 directory).

        Raises ``FileNotFoundError`` when this sidecar does not hold it.
        """
        source, target = self.file_for(sha256, gz=gz), other.file_for(sha256, gz=gz)
        if target.exists() or source == target:
            return
        data = source.read_bytes()
        other.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(other.directory, 0o700)
        _write_private(target, data)

    def get(self, sha256: str, *, gz: bool = False) -> bytes:
        """The payload stored under ``sha256``.

        Raises ``FileNotFoundError`` when its file is missing and ``ValueError`` when the
        file's content does not have the digest it is stored under.
        """
        data = self.file_for(sha256, gz=gz).read_bytes()
        raw = gzip.decompress(data) if gz else data
        found = "sha256:" + hashlib.sha256(raw).hexdigest()
        if found != sha256:
            raise ValueError(
                f"{self.file_for(sha256, gz=gz)} holds bytes whose digest is {found}, not "
                f"{sha256}: the file was changed after recording."
            )
        return raw
