"""Pending changes: a tape's proposed changes, kept beside it until a reviewer decides.

``--sessiontape-update=pending`` (``update="pending"``) leaves the tape untouched and
writes ``NAME.pending`` beside it: one JSON document, data only (validated field by field
when read, never imported or executed), that holds

- a header: ``format`` (``"sessiontape-pending"``), ``version``, the tape's file name and
  the SHA-256 of the tape as sessiontape last wrote or read it (``tape_sha256``; a tape
  that differs was changed since, and the file is refused);
- the tape the update ran on (``base``, its text, and ``base_sha256``): every accept
  applies the accepted changes to it, so any subset makes a tape and a partial accept can
  be followed by more;
- the parts of the new tape (entries changed, dropped and inserted, the calls placed anew
  on the time axis) and the changes a reviewer decides, each a :class:`PendingChange`
  naming the parts it takes, with its decision (``None`` until decided).

The file is written like every file sessiontape writes beside a tape: a private file
beside it, flushed, renamed over. A path that exists and is not a pending file is never
replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from .._errors import CassetteError
from ._entries import CallEntry, Entry, SessionStart
from ._rewrite import sync_directory, write_whole_file

__all__ = [
    "PENDING_FORMAT",
    "PENDING_SUFFIX",
    "PENDING_VERSION",
    "Decision",
    "FieldChange",
    "Inserted",
    "PendingChange",
    "PendingFile",
    "Placed",
    "check_pending_target",
    "encode_pending",
    "is_pending_file",
    "load_pending",
    "pending_path",
    "remove_pending",
    "sha256_of",
    "tape_of_pending",
    "write_pending",
]

PENDING_FORMAT: Final = "sessiontape-pending"
PENDING_VERSION: Final = 1
PENDING_SUFFIX: Final = ".pending"

#: What a reviewer decided about one change.
Decision = Literal["accept", "reject"]


class FieldChange(msgspec.Struct, frozen=True, omit_defaults=True):
    """One field of a change: its path (as in a field diff), the old and the new value."""

    field: str = ""
    old: Any = None
    new: Any = None


class PendingChange(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One change a reviewer decides: ``category`` fix, trim, create or update (see
    :class:`~sessiontape.report.ChangeCategory`), ``change`` what happened to the call
    (:class:`~sessiontape.report.Change`), the call's worker, boundary and seq in the tape
    as it was (``None`` for a call created), and the fields that change.

    ``changed``, ``dropped`` and ``inserted`` name the parts of the new tape it takes
    (recorded seqs; provisional seqs for inserted calls): a change whose calls depend on
    each other (a dropped call and the calls made inside it) is one change.
    """

    id: str
    category: str
    change: str
    worker: str
    boundary: str
    seq: int | None = None
    fields: list[FieldChange] = []
    changed: list[int] = []
    dropped: list[int] = []
    inserted: list[int] = []
    decision: Decision | None = None


class Placed(msgspec.Struct, frozen=True, array_like=True):
    """An entry of the new tape with the seq and parent it has in the plan: a call made
    today carries a provisional seq (negative, renumbered when the tape is written), and
    so may a parent link to one. The entry itself is stored with ``seq`` 0 and no parent
    in that case, so it passes the entry's own checks when read back."""

    seq: int
    parent: int | None
    entry: Entry

    @classmethod
    def of(cls, entry: Entry) -> Placed:
        """``entry`` as stored."""
        parent = entry.parent
        stored = msgspec.structs.replace(
            entry,
            seq=max(entry.seq, 0),
            parent=parent if parent is None or parent >= 0 else None,
        )
        return cls(entry.seq, parent, stored)

    def unpack(self) -> Entry:
        """The entry with its seq and parent in the plan."""
        if self.entry.seq == self.seq and self.entry.parent == self.parent:
            return self.entry
        return msgspec.structs.replace(self.entry, seq=self.seq, parent=self.parent)


class Inserted(msgspec.Struct, frozen=True, array_like=True):
    """A call the new tape inserts after the recorded seq ``after`` (``None``: first)."""

    after: int | None
    call: Placed

    @property
    def entry(self) -> CallEntry:
        """The call, with its provisional seq."""
        return self.call.unpack()  # type: ignore[return-value]


class PendingFile(msgspec.Struct, frozen=True, kw_only=True):
    """The whole pending file (see the module's docstring)."""

    format: str
    version: int
    tape: str
    tape_sha256: str
    base_sha256: str
    changes: list[PendingChange]
    #: The tape as the update read it, as text (cassettes are UTF-8 JSON lines).
    base: str
    changed: dict[int, Placed] = {}
    dropped: list[int] = []
    inserted: list[Inserted] = []
    timed: list[int] = []
    real_start: dict[int, int] = {}
    #: The new header (a live re-record's note), written with the first accepted change.
    header: SessionStart | None = None
    #: The SHA-256 of the tape before the last accept: a tape killed mid-accept still
    #: holds it, and the next accept writes it again.
    prior_sha256: str | None = None


def _enc_hook(obj: Any) -> Any:
    return {"$repr": repr(obj)}  # as the cassette writer does: recorded values are data


_ENCODER: Final = msgspec.json.Encoder(enc_hook=_enc_hook)
_DECODER: Final = msgspec.json.Decoder(PendingFile)
_PROBE: Final = msgspec.json.Decoder(dict[str, Any])
#: A pending file's header fields are read from at most this much of it to recognise one.
_PROBE_BYTES: Final = 1 << 12


def sha256_of(data: bytes) -> str:
    """The hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def pending_path(tape: str | os.PathLike[str]) -> Path:
    """Where the pending changes of ``tape`` are kept: ``NAME.pending`` beside it."""
    path = Path(tape)
    return path.with_name(path.name + PENDING_SUFFIX)


def tape_of_pending(path: str | os.PathLike[str]) -> Path:
    """The tape a pending file belongs to (its name without ``.pending``)."""
    found = Path(path)
    if not found.name.endswith(PENDING_SUFFIX):
        raise CassetteError(
            f"is not a pending file (its name does not end in {PENDING_SUFFIX!r})",
            path=str(found),
        )
    return found.with_name(found.name[: -len(PENDING_SUFFIX)])


def is_pending_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a regular file that starts as a pending file does."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            return False
        with open(path, "rb") as file:
            head = file.read(_PROBE_BYTES)
    except OSError:
        return False
    # The header fields come first: the format's name is in the first bytes.
    return head.startswith(b'{"format":"' + PENDING_FORMAT.encode() + b'"')


def load_pending(path: str | os.PathLike[str]) -> PendingFile:
    """The pending file at ``path``, checked field by field; a :class:`CassetteError`
    naming the file and what is wrong otherwise."""
    name = os.fspath(path)
    if not is_pending_file(name):
        raise CassetteError(
            "is not a sessiontape pending file (it does not start with its format's "
            "header). Run the update again to propose changes: pytest ... "
            "--sessiontape-update=pending",
            path=name,
        )
    with open(name, "rb") as file:
        data = file.read()
    try:
        pending = _DECODER.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise CassetteError(
            f"is a damaged pending file ({exc}); nothing was written. Run the update again "
            "to propose the changes anew: pytest ... --sessiontape-update=pending",
            path=name,
        ) from None
    if pending.format != PENDING_FORMAT or pending.version != PENDING_VERSION:
        raise CassetteError(
            f"is a pending file of version {pending.version}, and this sessiontape reads "
            f"version {PENDING_VERSION}; run the update again with this sessiontape.",
            path=name,
        )
    return pending


def encode_pending(pending: PendingFile) -> bytes:
    """The bytes of ``pending``, header fields first."""
    return _ENCODER.encode(pending) + b"\n"


def check_pending_target(path: str | os.PathLike[str]) -> Path:
    """``path`` if pending changes may be written there (nothing there, or a pending
    file); a :class:`CassetteError` naming it otherwise. Nothing is touched."""
    target = Path(path)
    if os.path.lexists(target) and not is_pending_file(target):
        raise CassetteError(
            "exists and is not a sessiontape pending file, so no pending changes are "
            "written there (sessiontape never replaces a file it did not write). Move it "
            "away and run the update again.",
            path=str(target),
        )
    return target


def write_pending(path: str | os.PathLike[str], pending: PendingFile) -> Path:
    """Write ``pending`` at ``path`` (a new file beside, flushed, renamed over). A path
    that exists and is not a pending file (or is a symlink) is refused untouched."""
    target = check_pending_target(path)
    temp = target.with_name(f".{target.name}.write.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)  # a leftover of a killed write of this very process id
    write_whole_file(temp, encode_pending(pending))
    try:
        check_pending_target(target)  # again: something may have been put there meanwhile
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    sync_directory(target.parent)
    return target


def remove_pending(path: str | os.PathLike[str]) -> None:
    """Remove the pending file at ``path`` once every change in it is decided (only a
    pending file: anything else there stays)."""
    if is_pending_file(path):
        os.unlink(path)
        sync_directory(Path(path).parent)
