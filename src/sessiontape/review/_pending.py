"""One tape's pending changes, checked against the tape, decided, and written.

:class:`PendingTape` is what ``sessiontape review``, ``pending``, ``accept``, ``reject``
and the viewer work with: the pending file beside a tape, loaded (data only, validated),
checked against the tape as it is on disk (a tape changed since is refused, nothing
written), and the decisions taken on it. :meth:`PendingTape.save` writes what was
decided:

1. the pending file again, with the decisions and the SHA-256 of the tape about to be
   written (and of the tape before it, so a ``kill -9`` between the two writes leaves a
   pair the next accept recognises and completes);
2. the tape: its base (the tape the update read) with every accepted change applied,
   written the way every rewrite is (``cassette.replace_cassette``: a new file beside,
   flushed, validated, renamed over), only when it differs from the tape on disk;
3. once every change is decided, the pending file is removed.

A rejected change leaves the recorded entry in place: the replay keeps failing there.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from .._errors import CassetteError, UsageError
from ..cassette import (
    Decision,
    Entry,
    PendingChange,
    Recording,
    SessionEnd,
    SessionStart,
    encode_entry,
    load_pending,
    loads,
    remove_pending,
    replace_cassette,
    sha256_of,
    tape_of_pending,
    write_pending,
)
from ..replayer import pending_tape

__all__ = ["PendingTape", "Saved", "StalePending", "entry_text", "find_pending"]

_RERUN: Final = (
    "Run the update again to propose changes against the tape as it is now: pytest ... "
    "--sessiontape-update=pending (it replaces this pending file)."
)


class StalePending(CassetteError):
    """The tape changed since its pending changes were proposed: they are refused."""


class Saved(msgspec.Struct, frozen=True):
    """What :meth:`PendingTape.save` wrote: the tape (``None``: unchanged), and whether
    the pending file is gone (every change decided)."""

    tape: Path | None
    done: bool


def _tape_bytes(lines: Iterable[bytes]) -> bytes:
    return b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)


class PendingTape:
    """The pending changes of one tape (see the module's docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        #: The pending file.
        self.path = Path(path)
        #: The tape it belongs to.
        self.tape = tape_of_pending(self.path)
        self._file = load_pending(self.path)
        self._base = self._file.base.encode("utf-8")
        if sha256_of(self._base) != self._file.base_sha256:
            raise CassetteError(
                f"is a damaged pending file (the tape it holds is not the one it names). {_RERUN}",
                path=str(self.path),
            )
        try:
            with open(self.tape, "rb") as file:
                today = sha256_of(file.read())
        except OSError as exc:
            raise StalePending(
                f"its tape {self.tape} cannot be read ({exc.strerror or exc}). {_RERUN}",
                path=str(self.path),
            ) from None
        if today not in (self._file.tape_sha256, self._file.prior_sha256):
            raise StalePending(
                f"the tape {self.tape} changed since these changes were proposed (its "
                f"SHA-256 is not the one they were proposed against); nothing was written. "
                f"{_RERUN}",
                path=str(self.path),
            )
        #: The tape on disk is the one before an accept a kill cut short: write it again.
        self._behind = today != self._file.tape_sha256
        self._today = today
        self._decisions: dict[str, Decision | None] = {c.id: c.decision for c in self._file.changes}
        self._recording: Recording | None = None

    @property
    def behind(self) -> bool:
        """Whether the tape on disk is the one before an accept that a kill cut short:
        :meth:`save` writes the decided tape again."""
        return self._behind

    # -- what is pending -----------------------------------------------------------------

    @property
    def changes(self) -> list[PendingChange]:
        """Every change, in the order of the tape, with its decision so far."""
        return [
            msgspec.structs.replace(c, decision=self._decisions[c.id]) for c in self._file.changes
        ]

    @property
    def undecided(self) -> list[PendingChange]:
        """The changes not decided yet."""
        return [c for c in self.changes if c.decision is None]

    @property
    def base(self) -> Recording:
        """The tape the update read (the changes' seqs are its seqs)."""
        if self._recording is None:
            self._recording = loads(self._base, path=str(self.tape))
        return self._recording

    def change(self, change_id: str) -> PendingChange:
        """The change ``change_id``; a :class:`UsageError` when there is none."""
        for c in self.changes:
            if c.id == change_id:
                return c
        raise UsageError(f"{self.path}: no pending change {change_id!r}.")

    def old_entries(self, change: PendingChange) -> list[Entry]:
        """The recorded entries ``change`` replaces or drops."""
        seqs = sorted({*change.changed, *change.dropped})
        return [e for e in (self.base.by_seq(s) for s in seqs) if e is not None]

    def new_entries(self, change: PendingChange) -> list[Entry]:
        """The entries ``change`` writes (changed, or created)."""
        out: list[Entry] = [
            self._file.changed[s].unpack() for s in change.changed if s in self._file.changed
        ]
        wanted = set(change.inserted)
        out += [i.entry for i in self._file.inserted if i.entry.seq in wanted]
        return out

    def neighbours(self, change: PendingChange) -> tuple[Entry | None, Entry | None]:
        """The recorded calls of the same worker just before and just after ``change``
        (context for a reviewer)."""
        if change.seq is not None:
            at: float = change.seq
        else:
            created = [i for i in self._file.inserted if i.entry.seq in set(change.inserted)]
            after = created[0].after if created else None
            at = (after if after is not None else -1) + 0.5
        same = [e for e in self.base.entries if getattr(e, "worker", None) == change.worker]
        calls = [e for e in same if not isinstance(e, (SessionStart, SessionEnd))]
        before = [e for e in calls if e.seq < at]
        later = [e for e in calls if e.seq > at]
        return (before[-1] if before else None, later[0] if later else None)

    # -- deciding ------------------------------------------------------------------------

    def decide(self, change_id: str, decision: Decision) -> None:
        """Decide one change (kept in memory until :meth:`save`). A change already
        decided the other way is refused: an accepted change may already be written."""
        current = self.change(change_id).decision
        if current is not None and current != decision:
            raise UsageError(
                f"{self.path}: change {change_id} was already {current}ed; decisions are final."
            )
        self._decisions[change_id] = decision

    def decide_all(self, decision: Decision) -> list[str]:
        """Decide every change not decided yet; their ids."""
        ids = [c.id for c in self.undecided]
        for change_id in ids:
            self._decisions[change_id] = decision
        return ids

    def tape_lines(self) -> list[bytes]:
        """The tape the accepted changes make (the base when none is accepted)."""
        accepted = {i for i, d in self._decisions.items() if d == "accept"}
        if not accepted:
            return self._base.splitlines(keepends=True)
        return list(pending_tape(self._file, self.base, accepted).lines(self._base))

    def save(self) -> Saved:
        """Write what was decided (see the module's docstring)."""
        lines = self.tape_lines()
        data = _tape_bytes(lines)
        new_sha = sha256_of(data)
        done = all(d is not None for d in self._decisions.values())
        changes = self.changes
        if not done or new_sha != self._today:
            write_pending(
                self.path,
                msgspec.structs.replace(
                    self._file, changes=changes, tape_sha256=new_sha, prior_sha256=self._today
                ),
            )
        written: Path | None = None
        if new_sha != self._today:
            written = replace_cassette(self.tape, lines)
        if done:
            remove_pending(self.path)
        self._file = msgspec.structs.replace(
            self._file, changes=changes, tape_sha256=new_sha, prior_sha256=self._today
        )
        self._today = new_sha
        self._behind = False
        return Saved(written, done)

    # -- as data -------------------------------------------------------------------------

    def to_data(self) -> list[dict[str, Any]]:
        """Every change as JSON-ready data (``sessiontape pending --json``)."""
        out: list[dict[str, Any]] = []
        for c in self.changes:
            data = msgspec.to_builtins(c)
            data["tape"] = str(self.tape)
            data.setdefault("decision", None)
            out.append(data)
        return out


def entry_text(entry: Entry) -> str:
    """One entry as its cassette line (for ``d`` in the review loop)."""
    return encode_entry(entry).decode("utf-8").rstrip("\n")


def find_pending(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The pending files of ``paths``: a tape (its ``NAME.pending``, when there is one),
    a pending file, or a folder searched recursively; the current folder when none."""
    from ..cassette import PENDING_SUFFIX, is_pending_file, pending_path

    found: list[Path] = []
    for given in paths or ["."]:
        path = Path(given)
        if path.is_dir():
            found += sorted(p for p in path.rglob(f"*{PENDING_SUFFIX}") if is_pending_file(p))
        elif path.name.endswith(PENDING_SUFFIX):
            if not is_pending_file(path):
                raise UsageError(f"{path} is not a sessiontape pending file.")
            found.append(path)
        elif path.exists():
            candidate = pending_path(path)
            if is_pending_file(candidate):
                found.append(candidate)
        else:
            raise UsageError(f"no such file or folder: {given}. Check the path.")
    seen: set[Path] = set()
    unique: list[Path] = []
    for p in found:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique
