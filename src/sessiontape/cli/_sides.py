"""Two runs side by side: which calls of two tapes match, and where the runs part.

``sessiontape serve A --against B`` and ``sessiontape report A --against B`` show two tapes
as two sets of lanes on one time axis (each run's time since its own start). What they
draw comes from here:

- **pairs**: a call of A and a call of B match when they are of the same worker and
  boundary and ask the same thing (the request ``sessiontape diff`` compares: argv and
  stdin, or method and arguments). Within each (worker, boundary) stream, the longest
  common prefix is matched call by call, and the rest in order by content
  (:class:`difflib.SequenceMatcher`), so a call that one run made and the other did not
  leaves the calls after it matched. A call in no pair was made by one run only.
- **the fork point**: the ``forked_from`` of the branch's header (``--sessiontape-fork``
  writes it) when either tape has one; otherwise the first place where ``sessiontape diff``
  finds the runs part (the lowest seq of its differences).
"""

from __future__ import annotations

import bisect
import difflib
import os
from collections.abc import Iterator, Sequence
from typing import Any, Final

import msgspec

from ..cassette import Recording
from ._diff import Difference, call_streams, compare, request_of
from ._viewdata import Rows, cassette_data

__all__ = ["fork_point", "pair_calls", "sides_data"]

#: Past this many cells (calls of A after the common prefix, times those of B) a stream's
#: rest is matched by occurrence (the n-th call asking X in A with the n-th in B) rather
#: than by :class:`difflib.SequenceMatcher`, whose time grows with that product.
_ORDERED_LIMIT: Final = 4_000_000

_KEY: Final = msgspec.json.Encoder(order="deterministic")


def _match(xs: Sequence[bytes], ys: Sequence[bytes]) -> Iterator[tuple[int, int]]:
    """Index pairs of equal keys of ``xs`` and ``ys``, in order."""
    common = 0
    limit = min(len(xs), len(ys))
    while common < limit and xs[common] == ys[common]:
        common += 1
    yield from ((i, i) for i in range(common))
    rest_a, rest_b = xs[common:], ys[common:]
    if not rest_a or not rest_b:
        return
    if len(rest_a) * len(rest_b) <= _ORDERED_LIMIT:
        matcher = difflib.SequenceMatcher(None, rest_a, rest_b, autojunk=False)
        for block in matcher.get_matching_blocks():
            for k in range(block.size):
                yield common + block.a + k, common + block.b + k
        return
    waiting: dict[bytes, list[int]] = {}
    for j in reversed(range(len(rest_b))):
        waiting.setdefault(rest_b[j], []).append(j)
    for i, key in enumerate(rest_a):
        found = waiting.get(key)
        if found:
            yield common + i, common + found.pop()


def pair_calls(a: Recording, b: Recording) -> list[tuple[int, int]]:
    """The matching calls of ``a`` and ``b`` as ``(seq in a, seq in b)``, by ``a``'s seq."""
    streams_b = call_streams(b)
    pairs: list[tuple[int, int]] = []
    for key, calls_a in call_streams(a).items():
        calls_b = streams_b.get(key)
        if not calls_b:
            continue
        keys_a = [_KEY.encode(request_of(c)) for c in calls_a]
        keys_b = [_KEY.encode(request_of(c)) for c in calls_b]
        pairs += ((calls_a[i].seq, calls_b[j].seq) for i, j in _match(keys_a, keys_b))
    pairs.sort()
    return pairs


def _forked(a: Recording, b: Recording) -> dict[str, Any] | None:
    """The fork a header records (the branch's ``forked_from``), as the page marks it."""
    for side, recording in (("B", b), ("A", a)):
        # Read by name: tapes written before forks existed have no such field.
        forked = getattr(recording.header, "forked_from", None)
        seq = getattr(forked, "seq", None)
        if forked is None or not isinstance(seq, int):
            continue
        tape = getattr(forked, "tape", "") or "its original"
        how = "run live" if getattr(forked, "answer", None) is None else "another answer given"
        return {
            "source": "forked_from",
            "a_seq": seq,
            "b_seq": seq,
            "text": f"{side} was forked from {tape} at seq {seq} ({how})",
        }
    return None


def _first_parting(found: Sequence[Difference]) -> dict[str, Any] | None:
    """Where ``sessiontape diff`` finds the runs part first: its lowest seq."""

    def first(d: Difference) -> int:
        return min(s for s in (d.a_seq, d.b_seq) if s is not None)

    placed = [d for d in found if d.a_seq is not None or d.b_seq is not None]
    if not placed:
        return None
    d = min(placed, key=first)
    where = f"{d.worker} {d.boundary}, call {d.position}" if d.worker is not None else "session"
    return {
        "source": "diverged",
        "a_seq": d.a_seq,
        "b_seq": d.b_seq,
        "text": f"the runs part at seq {first(d)} ({where}): {d.message}",
    }


def fork_point(a: Recording, b: Recording, found: Sequence[Difference]) -> dict[str, Any] | None:
    """The point the page marks: a recorded fork, else the first place the runs part."""
    return _forked(a, b) or _first_parting(found)


def _time_at(rows: Rows, seq: int | None) -> int | None:
    """The start (ns since the session began) of the entry ``seq``, or of the next one."""
    if seq is None or not rows.seq:
        return None
    at = min(bisect.bisect_left(rows.seq, seq), len(rows.seq) - 1)
    return rows.start[at]


def _side(name: str, recording: Recording, rows: Rows) -> dict[str, Any]:
    """One run as the page shows it: what the viewer says of a cassette, its columns
    (texts included) and the fork its header records."""
    forked = getattr(recording.header, "forked_from", None)
    return {
        **cassette_data(name, recording, rows, None, None),
        "forked_from": None if forked is None else msgspec.to_builtins(forked),
        "columns": rows.columns(),
    }


def sides_data(
    a: Recording, rows_a: Rows, b: Recording, rows_b: Rows, names: tuple[str, str] | None = None
) -> dict[str, Any]:
    """What the side-by-side page draws, as JSON builtins.

    ``a`` and ``b`` with their rows, each side's summary and columns (texts included),
    ``pairs`` (``[seq in A, seq in B]``), how many calls each run made alone, the fork
    point (``source`` ``forked_from`` or ``diverged``, its seq in each tape, its time in
    each run, and a sentence), and how many places ``sessiontape diff`` finds.
    """
    name_a, name_b = names or (os.path.basename(a.path), os.path.basename(b.path))
    found = compare(a, b)
    pairs = pair_calls(a, b)
    fork = fork_point(a, b, found)
    if fork is not None:
        fork["a_ns"] = _time_at(rows_a, fork["a_seq"])
        fork["b_ns"] = _time_at(rows_b, fork["b_seq"])
    return {
        "a": _side(name_a, a, rows_a),
        "b": _side(name_b, b, rows_b),
        "pairs": [list(p) for p in pairs],
        "only_a": len(a.calls) - len(pairs),
        "only_b": len(b.calls) - len(pairs),
        "fork": fork,
        "differences": len(found),
    }
