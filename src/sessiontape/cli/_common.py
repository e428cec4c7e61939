"""What the subcommands share: reading cassettes, errors, exit codes, JSON output, entry
geometry, call trees, output files, progress."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Final, TextIO, TypeVar

import msgspec

from .._errors import SessiontapeError
from ..cassette import (
    KIND_OF_TYPE,
    AgentTurn,
    Call,
    CallEntry,
    CallTree,
    Entry,
    ProcessCall,
    Recording,
    StoreMutation,
    encode_entry,
    is_call,
    is_cassette,
    load,
    seq_ranges,
    write_new_cassette,
)
from ..report import command_name, describe

__all__ = [
    "EXIT_CODES",
    "KINDS",
    "KIND_OF_TYPE",
    "PROGRESS_THRESHOLD",
    "CallTree",
    "CommandError",
    "Progress",
    "add_workers_option",
    "as_call",
    "call_duration",
    "command_name",
    "entry_data",
    "format_relative",
    "is_call",
    "kind_of",
    "load_each",
    "non_negative_int",
    "plural",
    "positive_int",
    "print_json",
    "read_recording",
    "recorded_duration",
    "relative_ns",
    "seconds",
    "seq_ranges",
    "what",
    "worker_count",
    "write_atomic",
    "write_entries",
]

T = TypeVar("T")

#: Every entry kind, in the order of the union.
KINDS: Final[tuple[str, ...]] = tuple(KIND_OF_TYPE.values())

#: Tapes with more entries than this show a progress line on a terminal's stderr.
PROGRESS_THRESHOLD = 50_000

#: The exit codes every command uses, for ``--help`` (and the README says the same).
EXIT_CODES: Final = (
    "exit codes: 0 all is well; 1 a finding (validate found an error, diff found a "
    "divergence); 2 a usage error, or an input that cannot be read or written. Errors are "
    "one line on stderr: 'sessiontape: error: <path>: what went wrong, what to do'."
)

#: How much of a file is looked at to tell a binary file from a cassette.
_SNIFF_BYTES: Final = 8192

_CALL_TYPES: Final = (ProcessCall, AgentTurn, StoreMutation, Call)


class CommandError(SessiontapeError):
    """A subcommand cannot go on: a bad argument or a file it cannot write.

    ``main`` prints the message as ``sessiontape: error: <message>`` and exits with 2.
    """


def read_recording(path: str, loader: Callable[[str], Recording] = load) -> Recording:
    """Load the cassette at ``path`` with ``loader``, or raise a one-line
    :class:`CommandError` that says what is wrong with the path and what to do (a
    :class:`CassetteError` for a bad line).

    Every command reads its cassettes through here, so each says the same about the same
    file. A file whose first line is a ``session_start`` entry is a cassette, damaged or
    not: the loader names its bad line (``x.jsonl:11: not valid JSON``), or keeps the
    prefix of a torn tail (a crash can leave NUL bytes after the last write). Only a file
    that is not a cassette and holds NUL bytes is called binary.
    """
    target = Path(path)
    if target.is_dir():
        raise CommandError(
            f"{path}: is a directory, not a cassette; name a cassette file in it "
            f"('sessiontape list {shlex.quote(path)}' shows them)."
        )
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except FileNotFoundError:
        return load(path)  # the loader says it: no such cassette, and how to record one
    except PermissionError:
        raise CommandError(
            f"{path}: permission denied; make the file readable (chmod u+r "
            f"{shlex.quote(path)}), or run as a user who can read it."
        ) from None
    except OSError as exc:
        raise CommandError(
            f"{path}: cannot read it ({exc.strerror or exc}); check the path and the disk."
        ) from None
    if b"\0" in head and not is_cassette(path):
        raise CommandError(
            f"{path}: a binary file, not a sessiontape cassette (a text file of JSON lines "
            "whose first line is a session_start entry); check the path."
        )
    return loader(path)


def print_json(data: Any, *, default: Callable[[Any], Any] | None = None) -> None:
    """Print ``data`` as indented JSON on stdout (``default`` converts what JSON lacks)."""
    encoded = msgspec.json.encode(data, enc_hook=default)
    sys.stdout.write(msgspec.json.format(encoded, indent=2).decode("utf-8") + "\n")


def kind_of(entry: Entry) -> str:
    """The entry's ``kind`` tag (``process``, ``agent_turn``, ...)."""
    return KIND_OF_TYPE[type(entry)]


def non_negative_int(text: str) -> int:
    """An argparse ``type=`` for counts and seqs."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative; give 0 or more")
    return value


def positive_int(text: str) -> int:
    """An argparse ``type=`` for limits."""
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("give 1 or more")
    return value


def worker_count(text: str) -> int:
    """An argparse ``type=`` for worker processes as pytest-xdist's ``-n`` takes them: a
    count (0 or more), or ``auto`` for one per core."""
    if text == "auto":
        return os.cpu_count() or 1
    try:
        return non_negative_int(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or 'auto')") from None


def add_workers_option(parser: argparse.ArgumentParser, *flags: str, auto: bool) -> None:
    """The option of the commands that replay in worker processes (``corpus -n``,
    ``shrink -j``): all cores by default; ``auto`` also takes ``auto`` and 0."""
    choices = ", or 'auto'" if auto else ""
    parser.add_argument(
        *flags,
        type=worker_count if auto else positive_int,
        default=os.cpu_count() or 1,
        metavar="N",
        help=f"replay worker processes{choices} (default: all cores)",
    )


def seconds(text: str) -> float:
    """An argparse ``type=`` for times since the start of the session, in seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"{text!r} is not 0 seconds or more")
    return value


def relative_ns(entry: Entry, recording: Recording) -> int:
    """When ``entry`` started, in ns since the session started.

    Monotonic time, the clock the recorder measures durations with, so that starts and
    durations share one axis (the wall clock may be adjusted during a long run).
    """
    return entry.mono_ns - recording.header.mono_ns


def call_duration(entry: Entry) -> int:
    """How long a boundary call took, in ns; 0 for session metadata.

    ``SessionEnd.duration_ns`` is the whole session's, not an event's, so it is not counted.
    """
    return entry.duration_ns if isinstance(entry, _CALL_TYPES) else 0


def recorded_duration(recording: Recording) -> int:
    """The session's duration in ns, as the replay report states it (crashed tapes too)."""
    return recording.duration_ns


def format_relative(ns: int) -> str:
    """A time since the start of the session: ``+12.345s``."""
    return f"+{ns / 1e9:.3f}s"


def what(entry: Entry, *, width: int = 60) -> str:
    """:func:`describe` without its leading ``seq N worker``: what happened, for a table row."""
    text = describe(entry, width=width)
    head = f"seq {entry.seq} {entry.worker} "
    return text[len(head) :] if text.startswith(head) else text


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 entry``, ``2 entries``: a count with its noun."""
    return f"{count} {word}" if count == 1 else f"{count} {words or word + 's'}"


def entry_data(entry: Entry) -> dict[str, Any]:
    """The entry as JSON builtins, ``kind`` included: what a cassette line holds."""
    data: dict[str, Any] = msgspec.to_builtins(entry)
    return data


def load_each(paths: Iterable[str]) -> Iterator[tuple[str, Recording | None]]:
    """Each path with its loaded recording, or ``None`` once the reason it cannot be read
    has been printed (``sessiontape: error: PATH:LINE: ...``): for commands that look at
    several cassettes and go on past an unreadable one (exit code 2 for it)."""
    for path in paths:
        try:
            recording: Recording | None = read_recording(path)
        except SessiontapeError as exc:
            print(f"sessiontape: error: {' '.join(str(exc).split())}", file=sys.stderr)
            recording = None
        yield path, recording


def write_atomic(path: str, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` to ``path`` through a temporary file and :func:`os.replace`.

    A reader never sees half a file, and a failure leaves an existing file untouched. The
    file gets mode 0600: everything the subcommands write holds recorded production data.
    """
    target = Path(path)
    try:
        # In the target's directory, so that os.replace is a rename; mkstemp makes it 0600.
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise CommandError(
            f"cannot write {path}: {exc.strerror or exc}. Check that the directory exists "
            "and is writable."
        ) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}.") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_entries(path: str, entries: Iterable[Entry]) -> None:
    """Write a cassette whole or not at all, one encoded line per entry, the way every
    tape is written (``cassette.write_new_cassette``: checked against the rules of
    ``sessiontape validate``, written beside, renamed over; only a cassette is replaced)."""
    try:
        write_new_cassette(path, (encode_entry(entry) for entry in entries))
    except OSError as exc:
        raise CommandError(
            f"cannot write {path}: {exc.strerror or exc}. Check that the directory exists "
            "and is writable."
        ) from None


class Progress:
    """A one-line progress counter on stderr, for long work on big inputs.

    Only shown when there are more than ``threshold`` items (default
    :data:`PROGRESS_THRESHOLD` entries) and the stream is a terminal, so logs, pipes and
    ``--json`` output stay clean. The line is erased when the work is done.
    """

    __slots__ = ("_active", "_label", "_stream", "_total", "_unit")

    def __init__(
        self,
        label: str,
        total: int,
        *,
        stream: TextIO | None = None,
        threshold: int | None = None,
        unit: str = "entries",
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._label = label
        self._total = total
        self._unit = unit
        if threshold is None:
            threshold = PROGRESS_THRESHOLD
        isatty = getattr(self._stream, "isatty", None)
        self._active = total > threshold and callable(isatty) and bool(isatty())

    def iter(self, items: Iterable[T]) -> Iterator[T]:
        """Yield ``items``, updating the line every percent."""
        if not self._active:
            yield from items
            return
        step = max(1, self._total // 100)
        try:
            for done, item in enumerate(items):
                if done % step == 0:
                    self._show(done)
                yield item
        finally:
            self._stream.write("\r\x1b[K")
            self._stream.flush()

    def _show(self, done: int) -> None:
        percent = 100 * done // self._total
        self._stream.write(f"\r{self._label}: {done:,}/{self._total:,} {self._unit} ({percent}%)")
        self._stream.flush()


def as_call(entry: Entry) -> CallEntry | None:
    """``entry`` as a boundary call, or ``None`` for session metadata."""
    return entry if isinstance(entry, _CALL_TYPES) else None
