"""What the program writes to a replayed process's stdin: cut into chunks, checked against the tape.

Recorded output that followed stdin (a conversation) is released only once the program
has written that stdin: the recorded stdin chunk before it, or today's version of it.
Today's chunk (:class:`Chunks`) is the bytes the program wrote from where the last one
ended: as many lines as the recorded chunk holds when it ends with a newline (so a line
may be longer or shorter today, carrying a value the program made up), else as many
bytes, or what came before stdin was closed. A chunk that is not byte for byte the
recorded one is compared by :class:`StdinCheck` through the replay engine's one
comparison of requests (``ReplaySide.check``): noise masks and patterns apply, the values
the program made up are correlated, so that the answers that follow carry them. Whole
``input`` (a process that was not a conversation) is one chunk, at the path ``input``;
a chunk of a conversation is at ``chunks[N].data``, as the report names it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

from ...cassette import Blob, Payload, ProcessCall
from ...report import FieldDiff, MismatchKind
from .._process import ProcessReplay

__all__ = ["STALL_SECONDS", "Chunks", "OnChunk", "StdinCheck"]

#: Real seconds the pump waits for stdin that gates recorded output before it reports the
#: program stalled and ends the process's output (so the program is not left blocked).
STALL_SECONDS: Final = 10.0

#: Told a stdin chunk that is not the recorded one byte for byte: the item's index, the
#: recorded bytes, today's bytes, and whether stdin closed before the chunk was complete.
OnChunk = Callable[[int, bytes, bytes, bool], None]

#: The stdin problems reported whatever the bytes compare to: a wait that never ended.
_STALLS: Final = frozenset({"stalled", "unanswered"})


class Chunks:
    """The pump's stdin: the bytes the program wrote, and the recorded chunks they answer."""

    __slots__ = ("consumed", "eof", "extra", "last", "on_chunk", "pending", "received")

    def __init__(self, eof: bool) -> None:
        #: What the program wrote to stdin, and how much of it made the chunks so far.
        self.received = bytearray()
        self.consumed = 0
        #: The recorded stdin chunk waiting for today's (its item index and bytes).
        self.pending: tuple[int, bytes] | None = None
        #: The last chunk completed: its item index, where it began, its recorded bytes.
        self.last: tuple[int, int, bytes] | None = None
        self.eof = eof
        #: Whether the program wrote more than the tape holds (reported once).
        self.extra = False
        #: Called with a chunk that is not the recorded one byte for byte.
        self.on_chunk: OnChunk = lambda index, recorded, today, short: None

    def partial(self) -> bool:
        """Whether the program has written part of the chunk the next output waits for
        (a request whose recorded answer waits for the rest)."""
        return self.pending is not None and len(self.received) > self.consumed

    def complete(self) -> bool:
        """Take today's version of the pending chunk, if the program has written it all
        (see the module's documentation); whether it has."""
        assert self.pending is not None
        index, recorded = self.pending
        received, start = self.received, self.consumed
        if received[start : start + len(recorded)] == recorded:
            self._completed(index, start, recorded, start + len(recorded))
            return True
        end = self._end(recorded, start)
        if end is None:
            return False
        self._completed(index, start, recorded, end)
        today = bytes(received[start:end])
        short = self.eof and end == len(received) and len(today) < len(recorded)
        self.on_chunk(index, recorded, today, short)
        return True

    def _completed(self, index: int, start: int, recorded: bytes, end: int) -> None:
        self.pending = None
        self.consumed = end
        self.last = (index, start, recorded)

    def _end(self, recorded: bytes, start: int) -> int | None:
        """Where today's chunk ends, if the program has written it all."""
        received = self.received
        if recorded.endswith(b"\n"):
            at = start
            for _ in range(recorded.count(b"\n")):
                found = received.find(b"\n", at)
                if found < 0:
                    break
                at = found + 1
            else:
                return at
        elif len(received) - start >= len(recorded):
            return start + len(recorded)
        return len(received) if self.eof else None

    def runs_past(self, all_served: bool) -> bool:
        """Whether the program has, for the first time, written more than the tape holds."""
        past = all_served and self.pending is None and len(self.received) > self.consumed
        if past and not self.extra:
            self.extra = True
            return True
        return False


if TYPE_CHECKING:  # what the check needs, for mypy (no class made on every replay)

    class _Pumped(Protocol):
        stdin_chunks: Chunks

    class Replayed(Protocol):
        """What :class:`StdinCheck` needs of a replayed process (``_fake.Fake``)."""

        server: ProcessReplay
        entry: ProcessCall
        #: Raised where the program next waits for the process (strict mode's mismatch).
        error: BaseException | None

        @property
        def stdin_pump(self) -> _Pumped | None:
            """The pump feeding its pipes, once it has one."""


class StdinCheck:
    """The replay side's check of one process's stdin (see the module's documentation)."""

    __slots__ = ("_fake", "done")

    def __init__(self, fake: Replayed) -> None:
        self._fake = fake
        #: Whether what the program wrote was checked when ``communicate()`` was answered
        #: from the tape (a pump made after that does not check it again).
        self.done = False

    def written(self, written: bytes) -> None:
        """What ``communicate()`` wrote, answered from the tape (checked once, before
        the outputs are read: a value the program made up in it is carried into them)."""
        if self.done:
            return
        fake = self._fake
        if fake.entry.input is not None or written:
            try:
                self._compare(None, 0, written)
            except BaseException as exc:  # strict mode: raised once communicate() is done
                fake.error = exc
        self.done = True

    def chunk(self, index: int, recorded: bytes, today: bytes, short: bool) -> None:
        """The pump found a chunk that is not the recorded one byte for byte."""
        self._compare("short" if short else _what(recorded, today), index, today)

    def problem(self, what: str) -> None:
        """The pump found stdin running past the tape (``extra``), or stalled part-way
        through a chunk (``stalled``, ``unanswered``)."""
        pump = self._fake.stdin_pump
        assert pump is not None
        stdin = pump.stdin_chunks
        received = bytes(stdin.received)
        if what == "extra":
            index, start = (stdin.last[0], stdin.last[1]) if stdin.last is not None else (0, 0)
        else:
            index, start = (stdin.pending[0] if stdin.pending else 0), stdin.consumed
        self._compare(what, index, received[start:])

    def _compare(self, what: str | None, index: int, today: bytes) -> None:
        """Compare ``today``'s bytes for the stdin item ``index`` with the tape, through the
        engine's one comparison of requests, and report a difference (a stall is reported
        whatever it compares to). ``what`` the problem is (``None``: found if it differs)."""
        if self.done and what not in _STALLS:
            return  # checked when communicate() was answered from the tape
        fake = self._fake
        entry = fake.entry
        engine = fake.server.engine
        if entry.chunks is None:
            path: tuple[str | int, ...] = ("input",)
            recorded: Payload = entry.input
            where = "stdin"
        else:
            path = ("chunks", index, "data")
            recorded = entry.chunks[index].data
            where = f"stdin chunk {index}"
        actual = engine.codec.comparable(today, recorded)
        if actual == recorded and what not in _STALLS:
            return  # the recorded bytes (the common case: no comparison to make)
        if isinstance(recorded, Blob) and recorded.sidecar:
            # Kept in the sidecar: compared as text where both are, as an inline chunk is
            # (noise patterns apply, a value the program made up is correlated), not by
            # digest.
            recorded, actual = _as_text(engine, entry, recorded, actual, today)
        diffs, total = engine.check(entry, path, recorded, actual)
        if diffs or what in _STALLS:
            if what is None:
                try:
                    stored: bytes | None = engine.payload(entry, recorded, "input", text=False)
                except Exception:
                    stored = None
                what = _what(stored, today)
            self._report(what, where, recorded, actual, diffs, total)

    def _report(
        self,
        what: str,
        where: str,
        expected: Any,
        actual: Any,
        diffs: list[FieldDiff],
        total: int,
    ) -> None:
        fake = self._fake
        entry = fake.entry
        sentence = {
            "differs": f"the program wrote other bytes to stdin than recorded ({where}).",
            "extra": "the program wrote more to stdin than was recorded.",
            "short": f"the program closed stdin before writing all that was recorded ({where}).",
            "stalled": f"the program wrote nothing to stdin for {STALL_SECONDS:g} s while "
            f"the recorded output waited for it ({where}); its output was ended so that it "
            "does not hang.",
            "unanswered": f"the program wrote part of a request ({where}) whose recorded "
            "answer waits for the rest, and interception ended before the rest came: "
            "nothing answered it.",
        }[what]
        fake.server.engine.mismatch(
            MismatchKind.ARGUMENT_MISMATCH,
            seq=entry.seq,
            worker=entry.worker,
            boundary="process",
            message=f"the process {entry.argv!r} at seq {entry.seq}: {sentence}",
            expected=expected,
            actual=actual,
            diffs=diffs,
            total=total,
        )


def _as_text(
    engine: Any, entry: ProcessCall, recorded: Blob, actual: Payload, today: bytes
) -> tuple[Payload, Payload]:
    """A sidecar chunk and today's, as text when both are UTF-8 (else as they were)."""
    try:
        stored = engine.payload(entry, recorded, "input", text=False)
        pair = (bytes(stored).decode("utf-8"), today.decode("utf-8"))
    except Exception:  # unreadable, or not text: compared by digest
        return recorded, actual
    return pair[0], engine.codec.comparable(pair[1], pair[0])


def _what(recorded: bytes | None, today: bytes) -> str:
    """How today's stdin departs from the recorded bytes: cut ``short``, ``extra`` bytes
    after all of them, or ``differs``."""
    if recorded is not None:
        if len(today) < len(recorded) and recorded.startswith(today):
            return "short"
        if len(today) > len(recorded) and today.startswith(recorded):
            return "extra"
    return "differs"
