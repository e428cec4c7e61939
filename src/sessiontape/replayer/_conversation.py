"""A conversation's turns, and one of them answered otherwise: a fork inside a long process.

A conversation (a process spoken to over its pipes for a long time: ``ProcessCall.chunks``,
a stream-json agent, ``git cat-file --batch``) is one call made of turns. Turn N (from 1)
is the program's N-th write to the process's stdin (writes with no output between them
count as one) and what the process said after it, up to the program's next write; turn 0
is what it said before the program wrote anything.

A fork at a conversation's seq answers one turn: ``{"turn": N, "stdout": ..., "stderr":
...}`` puts the text given in place of what the process said on that stream in that turn
(one chunk, where the stream's first chunk of the turn stood, or at the turn's end; a
stream left out keeps its recorded chunks), and ``returncode``, if given, replaces the
process's. The turns before it replay as recorded; each later one is the tape's while the
program writes what it wrote when recording (``after``: the first chunk a fork compares
as coming after the answer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import msgspec

from .._errors import UsageError
from ..cassette import Chunk, Payload, ProcessCall
from ..report import summarize_value

__all__ = ["answer_turn", "turn_of"]

#: The fields a conversation's answer may give, beside ``turn``.
_FIELDS: Final = frozenset({"stdout", "stderr", "returncode"})


def _outputs(chunks: Sequence[Chunk]) -> list[tuple[int, int]]:
    """Each turn's output, as the range of chunk indexes it spans (turn 0 first)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for index, chunk in enumerate(chunks):
        if chunk.stream != "stdin":
            continue
        if index == 0 or chunks[index - 1].stream != "stdin":
            spans.append((start, index))  # the turn before this write ends here
        start = index + 1
    spans.append((start, len(chunks)))
    return spans


def turn_of(chunks: Sequence[Chunk], index: int) -> int:
    """The turn whose write the chunk at ``index`` is (or whose output it follows)."""
    return sum(1 for start, _ in _outputs(chunks)[1:] if start <= index + 1)


def answer_turn(
    entry: ProcessCall, answer: Any, encode: Callable[[str | bytes], Payload]
) -> tuple[ProcessCall, int]:
    """``entry`` (a conversation) with one turn answered as ``answer`` says (see the
    module's documentation), and the index of the first chunk after that answer."""
    chunks = entry.chunks
    assert chunks is not None
    spans = _outputs(chunks)
    last = len(spans) - 1
    shape = (
        '{"turn": N, "stdout": ..., "stderr": ...} (N from 0, what the process said before '
        f"the program wrote anything, to {last}, the answer to its last write; the streams "
        "left out, and returncode, keep their recorded values)"
    )
    if not isinstance(answer, Mapping) or "turn" not in answer:
        raise UsageError(
            f"seq {entry.seq} is a conversation ({last} write(s) to its stdin, each "
            f"answered in turn): a fork answers one turn of it, {shape}, not "
            f"{summarize_value(answer, 60)}. Or fork it live whole (no answer)."
        )
    turn = answer["turn"]
    fields = set(answer) - {"turn"}
    if type(turn) is not int or not 0 <= turn <= last or not fields or not fields <= _FIELDS:
        raise UsageError(
            f"seq {entry.seq} is a conversation: its answer is {shape}, not {answer!r}."
        )
    if "returncode" in answer and type(answer["returncode"]) is not int:
        raise UsageError(f"the answer's returncode is not an integer: {answer!r}.")
    start, end = spans[turn]
    said = list(chunks[start:end])
    for stream in ("stdout", "stderr"):
        if stream not in answer:
            continue
        text = answer[stream]
        if not isinstance(text, (str, bytes)):
            raise UsageError(f"the answer's {stream} is not text: {answer!r}.")
        # In place of the stream's first chunk of the turn (or at its end); the others go.
        at = next((i for i, c in enumerate(said) if c.stream == stream), len(said))
        said = [
            *said[:at],
            Chunk(stream, encode(text)),
            *(c for c in said[at:] if c.stream != stream),
        ]
    replaced: dict[str, Any] = {"chunks": [*chunks[:start], *said, *chunks[end:]]}
    replaced.update(spawn_error=None, timed_out=False)
    if "returncode" in answer:
        replaced["returncode"] = answer["returncode"]
    return msgspec.structs.replace(entry, **replaced), start + len(said)
