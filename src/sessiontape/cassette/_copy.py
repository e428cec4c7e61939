"""A tape cut from another (a slice, a shrunk tape) takes the sidecar payloads it keeps."""

from __future__ import annotations

import os
from collections.abc import Iterable

from .._errors import CassetteError
from ._entries import Blob, Entry, ProcessCall
from ._lazy import process_payloads
from ._sidecar import Sidecar

__all__ = ["copy_payloads"]


def copy_payloads(
    source: str | os.PathLike[str], entries: Iterable[Entry], output: str | os.PathLike[str]
) -> None:
    """Copy into ``output``'s sidecar the payloads that ``entries`` (taken from the tape at
    ``source``) keep in ``source``'s sidecar; a :class:`CassetteError` names a missing one."""
    origin, target = Sidecar(source), Sidecar(output)
    for entry in entries:
        if not isinstance(entry, ProcessCall):
            continue
        for field, payload in process_payloads(entry):
            if isinstance(payload, Blob) and payload.sidecar:
                try:
                    origin.copy_to(target, payload.sha256, gz=payload.gzip)
                except FileNotFoundError:
                    missing = origin.file_for(payload.sha256, gz=payload.gzip)
                    raise CassetteError(
                        f"seq {entry.seq}: the {field} payload's sidecar file {missing} is "
                        f"missing, so {os.fspath(output)} could not keep it. Restore the "
                        ".blobs directory.",
                        path=os.fspath(source),
                    ) from None
