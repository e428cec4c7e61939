"""Values the program made up, put back as recorded when a live call takes a recorded
call's place.

A program that makes up values (the Claude Agent SDK's ``req_1_`` + four random bytes)
sends today's to a process run live, and the process echoes them. Written as they came,
every live re-record with no change of code would rewrite that call (the values are new
each run), and ``git diff`` of the tape would stop being a review of what the world
changed. Replay follows the program's values whatever the tape holds (``_correlate``), so
before a live call takes a recorded call's place, each value the program made up today
goes back to the one the recorded call carries, in what it sent and in what came back.

A value is put back only when it is found as replay finds one (:func:`~._correlate.detect`:
at the same place in what both calls sent, the recorded one echoed in the recorded
answers and not come to the worker in an answer before), and today's value is echoed in
today's answers the same way. A value the world gave (a new commit sha in an answer, sent
on by the program) came to the program in an answer: it stays as today's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

import msgspec

from ..cassette import CallEntry, Chunk, ProcessCall, Recording, eager
from ._correlate import EARLIER_CALLS, HOW_CLOCK, _alternation, _replace, detect
from ._match import Noise
from ._timegaps import TimeGaps

__all__ = ["MadeUp"]

_REPLACE: Final = msgspec.structs.replace


class MadeUp:
    """Puts a recording's made-up values back into the live calls that replace its calls."""

    def __init__(self, recording: Recording, noise: Noise) -> None:
        self._recording = recording
        self._noise = noise
        self._gaps: TimeGaps | None = None

    def put_back(self, rec: CallEntry, live: CallEntry) -> CallEntry:
        """``live`` with the values the program made up today back as ``rec`` has them
        (``live`` itself when there are none: any call but a process's, for one)."""
        if not (isinstance(rec, ProcessCall) and isinstance(live, ProcessCall)):
            return live
        then, now = _sent(rec), _sent(live)
        if then == now:
            return live
        if self._gaps is None:
            self._gaps = TimeGaps(self._recording)
        found = detect(
            then,
            now,
            path=(),
            noise=self._noise,
            worker=rec.worker,
            gaps=self._gaps,
            answers=lambda: _answers(rec),
            earlier=lambda: self._earlier(rec),
        )
        echoed = list(_answers(live))
        table = {
            f.today: f.recorded
            for f in found.found
            if f.how != HOW_CLOCK
            and isinstance(f.today, str)
            and isinstance(f.recorded, str)
            and any(f.today in text for text in echoed)
        }
        return _substituted(live, table) if table else live

    def _earlier(self, rec: CallEntry) -> Iterator[str]:
        """The answers the worker had before ``rec`` (its last calls, any boundary)."""
        calls = [e for e in self._recording.calls if e.worker == rec.worker and e.seq < rec.seq]
        for lazy in reversed(calls[-EARLIER_CALLS:]):
            entry = eager(lazy)  # its answers decoded
            if isinstance(entry, ProcessCall):
                yield from _answers(entry)
            else:
                result = getattr(entry, "result", None)
                if result is not None:
                    yield msgspec.json.encode(result).decode()


def _sent(entry: ProcessCall) -> dict[str, Any]:
    """What the program sent the process: its request, and its stdin chunks."""
    stdin = [c.data for c in entry.chunks or () if c.stream == "stdin"]
    return {
        "argv": entry.argv,
        "cwd": entry.cwd,
        "env": entry.env,
        "input": entry.input,
        "stdin": stdin,
    }


def _answers(entry: ProcessCall) -> Iterator[str]:
    """What came back, as kept in the line (a payload in the sidecar is not searched)."""
    if entry.chunks is not None:
        payloads = [c.data for c in entry.chunks if c.stream != "stdin"]
    else:
        payloads = [entry.stdout, entry.stderr]
    for payload in payloads:
        if isinstance(payload, str):
            yield payload


def _substituted(call: ProcessCall, table: Mapping[str, str]) -> ProcessCall:
    """``call`` with every text of ``table`` replaced by its value, wherever it is (as
    ``_correlate`` substitutes: longest first, in texts, lists and mappings)."""
    regex = _alternation(table)

    def sub(value: Any) -> Any:
        return _replace(value, regex, table, {})

    chunks = call.chunks
    return _REPLACE(
        call,
        argv=sub(call.argv),
        cwd=sub(call.cwd),
        env=sub(call.env),
        input=sub(call.input),
        stdout=sub(call.stdout),
        stderr=sub(call.stderr),
        chunks=None if chunks is None else [Chunk(c.stream, sub(c.data)) for c in chunks],
    )
