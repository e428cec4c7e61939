"""The loader's contract, and a mutation fuzzer over real cassettes that checks it.

The contract (:func:`contract`): for any bytes, ``loads``/``load`` return a Recording or
raise :class:`~sessiontape.CassetteError` naming the file (and the line, when one is to
blame), and so does ``load_for_replay``, taking whatever ``load`` takes to the same
entries; ``is_cassette`` answers a bool; a loaded tape has its entries in strictly
increasing seq order, and ``validate``'s checks and a replay engine's report run on it
without raising. Mutations (:func:`mutate`) are what damages real tapes: flipped bytes
and bits, cuts, lost, doubled, swapped and joined lines, edited seqs and timestamps,
absurd numbers, deep nesting, invalid UTF-8, unknown kinds, missing fields, garbage.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape import CassetteError
from sessiontape.cassette import _loader, _mapped, eager, load_for_replay
from sessiontape.cli._validate import check
from sessiontape.report import describe

from ._tapes import good_tape

ROOT = Path(__file__).resolve().parents[2]


def bases() -> list[bytes]:
    """Real cassettes to start from: the regression corpus, whole and cut to a few lines,
    and a small hand-written tape."""
    found: list[bytes] = [good_tape(), good_tape(1)]
    for path in sorted((ROOT / "cassettes").glob("*.jsonl")):
        data = path.read_bytes()
        lines = data.splitlines(keepends=True)
        found.append(data)
        found += [b"".join(lines[:n]) for n in (2, 5, 12)]
    return found


ABSURD_NUMBERS: list[Any] = [
    -1, -(2**63), 2**53, 2**63, 2**64, 10**26, 10**400, 1e300, -0.0, 1.5, "7", None, True,
    [], {},
]  # fmt: skip
TIME_FIELDS = ("seq", "ts_ns", "mono_ns", "duration_ns", "parent")


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _edit_field(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    index = rng.randrange(len(lines))
    try:
        entry = json.loads(lines[index])
    except (ValueError, RecursionError):
        return data
    if not isinstance(entry, dict):
        return data
    field = rng.choice(
        [*TIME_FIELDS, "kind", "format_version", "level", "argv", "stdout", "result", "error"]
    )
    choice = rng.random()
    if choice < 0.5:
        entry[field] = rng.choice(ABSURD_NUMBERS)
    elif choice < 0.65:
        entry.pop(field, None)
    elif choice < 0.8 and field == "seq":
        try:
            other = json.loads(rng.choice(lines) or b"{}")
        except (ValueError, RecursionError):
            other = {}
        entry["seq"] = other.get("seq", 0) if isinstance(other, dict) else 0
    else:
        entry[field] = rng.choice(
            ["nope", "session_start", "session_resume", "", "x" * 300, "minimal", "standard"]
        )
    try:
        lines[index] = json.dumps(entry).encode()
    except (ValueError, OverflowError, RecursionError):
        return data
    return b"\n".join(lines)


def _deep(rng: random.Random, data: bytes) -> bytes:
    depth = rng.choice([100, 2_000, 20_000, 200_000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
    nest = opener * depth + b"1" + closer * depth
    lines = _lines(data)
    index = rng.randrange(len(lines))
    line = lines[index]
    cut = line.rfind(b"}")
    if cut > 0:
        lines[index] = line[:cut] + b', "result": ' + nest + line[cut:]
    else:
        lines.insert(index, nest)
    return b"\n".join(lines)


def _flip_byte(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    at = rng.randrange(len(data))
    return data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]


def _flip_bit(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    at = rng.randrange(len(data))
    return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :]


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _line_op(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(4)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(j, lines[i])
    elif op == 2:
        lines[i], lines[j] = lines[j], lines[i]
    elif i + 1 < len(lines):
        lines[i : i + 2] = [lines[i] + lines[i + 1]]
    return b"\n".join(lines)


def _bad_bytes(rng: random.Random, data: bytes) -> bytes:
    junk = rng.choice(
        [b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\x00", b"\\ud800", b'"\\ud800"', b"\r", b"\x1b["]
    )
    at = rng.randrange(len(data) + 1)
    return data[:at] + junk + data[at:]


def _garbage(rng: random.Random, data: bytes) -> bytes:
    junk = rng.choice(
        [
            bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))),
            b"{}", b"[]", b"null", b'{"kind": "process"}', b" ", b"\n\n\n",
            b'{"kind": "session_start", "seq": 0}', b"9" * 5000,
            b'{"kind":"process","seq":5,"ts_ns":1,"mono_ns":1,"argv":["x"],"stdout":"'
            + b"a" * 70_000 + b'"}',
        ]
    )  # fmt: skip
    lines = _lines(data)
    lines.insert(rng.randrange(len(lines) + 1), junk)
    return b"\n".join(lines)


def _replace_all(rng: random.Random, data: bytes) -> bytes:
    return rng.choice([b"", b"\n", b" \n", bytes(rng.randrange(256) for _ in range(64))])


MUTATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "edit a field": _edit_field,
    "deep nesting": _deep,
    "flip a byte": _flip_byte,
    "flip a bit": _flip_bit,
    "truncate": _truncate,
    "lose, double, swap or join lines": _line_op,
    "invalid UTF-8 and control bytes": _bad_bytes,
    "garbage line": _garbage,
    "not a cassette at all": _replace_all,
}
_WEIGHTS = [6, 1, 3, 2, 2, 4, 2, 2, 0.2]


def mutate(rng: random.Random, data: bytes) -> tuple[bytes, list[str]]:
    """``data`` damaged by one to three mutations; their names."""
    names = rng.choices(list(MUTATIONS), weights=_WEIGHTS, k=rng.choice([1, 1, 2, 3]))
    for name in names:
        data = MUTATIONS[name](rng, data)
    return data, names


def contract(data: bytes, path: Path | None = None) -> tuple[str | None, bool]:
    """What breaks the loader's contract for ``data`` (``None``: it holds), and whether
    the bytes loaded (rather than being refused with a CassetteError).

    ``path``, when given, is a file to write ``data`` to, so that ``load`` and
    ``is_cassette`` are checked on the file as well.
    """
    name = "fuzz.jsonl" if path is None else str(path)
    try:
        recording = sessiontape.loads(data, path=name)
    except CassetteError as exc:
        if exc.path != name or not str(exc).startswith(name):
            return f"a CassetteError that does not name the file: {exc}", False
        recording = None
    except BaseException as exc:
        return f"loads raised {type(exc).__name__}: {exc}", False
    loaded = recording is not None
    if path is not None:
        path.write_bytes(data)
        answer = sessiontape.is_cassette(path)
        if type(answer) is not bool:
            return f"is_cassette answered {answer!r}", loaded
        try:
            sessiontape.load(path)
        except CassetteError:
            if recording is not None:
                return "load refused what loads took", loaded
        except BaseException as exc:
            return f"load raised {type(exc).__name__}: {exc}", loaded
        problem = _lazy_agrees(path, recording)
        if problem is not None:
            return problem, loaded
    if recording is None:
        return None, False
    seqs = [e.seq for e in recording.entries]
    if any(a >= b for a, b in itertools.pairwise(seqs)):
        return f"entries not in strictly increasing seq order: {seqs[:20]}", True
    try:
        check(recording)
        for entry in recording.entries:
            describe(entry)  # what show, report and diff print
        if recording.header.level == "full":  # only full tapes replay (a UsageError says so)
            with sessiontape.replay(recording, patch_time=False) as tape:
                tape.finish()
    except BaseException as exc:
        return f"validating or replaying a loaded tape raised {type(exc).__name__}: {exc}", True
    return None, True


def _lazy_agrees(path: Path, recording: sessiontape.Recording | None) -> str | None:
    """What is wrong with loading ``path`` for replay, given what ``load`` made of it.

    It takes what ``load`` takes, to the same entries once decoded; it may take more (an
    output that is not a payload is refused when its call is served, not at load), and
    it refuses with a CassetteError naming the file.
    """
    for map_at in (_loader.MAP_AT, 0):  # read into memory, then mapped (small windows)
        saved = _loader.MAP_AT, _mapped.WINDOW
        _loader.MAP_AT, _mapped.WINDOW = map_at, (_mapped.WINDOW if map_at else 512)
        try:
            lazy = load_for_replay(path)
        except CassetteError as exc:
            if recording is not None:
                return f"load_for_replay refused what load took: {exc}"
            if exc.path != str(path):
                return f"a CassetteError that does not name the file: {exc}"
            continue
        except BaseException as exc:
            return f"load_for_replay raised {type(exc).__name__}: {exc}"
        finally:
            _loader.MAP_AT, _mapped.WINDOW = saved
        if recording is not None and [eager(e) for e in lazy.entries] != recording.entries:
            return "load_for_replay and load made different entries of the same bytes"
    return None


def run_mutations(count: int, seed: int, workdir: Path) -> dict[str, Any]:
    """Check the contract on ``count`` mutated tapes; return counts and the failures."""
    rng = random.Random(seed)
    starts = bases()
    failures: list[dict[str, Any]] = []
    loaded = refused = 0
    by_mutation: dict[str, int] = dict.fromkeys(MUTATIONS, 0)
    path = workdir / f"fuzz-{seed}.jsonl"
    for case in range(count):
        data, names = mutate(rng, rng.choice(starts))
        for mutation in names:
            by_mutation[mutation] += 1
        problem, took = contract(data, path if case % 4 == 0 else None)
        if problem is not None:
            failures.append({"case": case, "mutations": names, "problem": problem})
        elif took:
            loaded += 1
        else:
            refused += 1
    return {
        "cases": count, "loaded": loaded, "refused": refused, "failures": failures,
        "by_mutation": by_mutation,
    }  # fmt: skip
