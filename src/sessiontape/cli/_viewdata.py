"""The viewer's data, shared by ``serve`` and ``report``: rows, entry details, summaries.

A cassette is shown as one row per entry: seq, worker, kind, boundary, parent, nesting
depth, start, duration, status (``ok``, ``error``, ``mismatch``) and a one-line text.
:func:`build_rows` makes them in one pass, as columns (a list per field), so the server
can filter a million rows in a fraction of a second and the report can embed them as one
compact JSON object. :func:`detail_values` gives an entry's recorded fields as an array
in the order of :data:`SCHEMA`, big values clipped: what the detail panel shows;
:func:`pack` gives a row's text and its details at once, for the report.

Everything here runs once per entry of tapes with hundreds of thousands of entries, and
``report`` must write its page in about three times the time :func:`sessiontape.load`
takes; so the row text is built here with plain string operations rather than with
``describe()`` (which quotes and walks values, several times slower), values are
encoded by msgspec once each, and nothing is walked in Python.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Final, final

import msgspec

from ..cassette import (
    LAZY_KINDS,
    PRESET_BOUNDARIES,
    VIEW_KINDS,
    AgentTurn,
    Call,
    Entry,
    Error,
    ProcessCall,
    Recording,
    StoreMutation,
    ViewProcessCall,
)
from ..report import format_ms
from ._clip import CLIPPED, MORE, clip_json, clip_raw, clip_text
from ._common import KIND_OF_TYPE, KINDS, CallTree, recorded_duration, what
from ._failures import ERROR_CLASSES, error_column, error_counts, failed_rows
from ._receipt import ReceiptReport, chaos_data, drawn_schedule, shown_first
from ._show import crash_note

__all__ = [
    "CLIPPED",
    "ERROR_CLASSES",
    "MORE",
    "REPORT_LIMIT",
    "SCHEMA",
    "SERVE_LIMIT",
    "STATUSES",
    "Facts",
    "Rows",
    "build_rows",
    "cassette_data",
    "detail_values",
    "entry_object",
    "mismatch_data",
    "pack",
    "pack_all",
    "row_text",
]

#: Row statuses, by the number the ``status`` column holds. Only these get status colours.
STATUSES: Final = ("ok", "error", "mismatch")
_OK: Final = 0
_ERROR: Final = 1
_MISMATCH: Final = 2

#: Each entry kind's fields, in the order :func:`detail_values` gives their values.
SCHEMA: Final[dict[str, tuple[str, ...]]] = {
    KIND_OF_TYPE[cls]: tuple(cls.__struct_fields__) for cls in typing.get_args(Entry)
}

#: Recorded values longer than this (characters of text, bytes of JSON) are clipped in
#: the report's entry details; the cassette has them whole.
REPORT_LIMIT: Final = 400
#: ... and in the server's, which sends one entry at a time.
SERVE_LIMIT: Final = 256 * 1024

#: The widest a row's text gets, and the widest a value in it (arguments, result).
TEXT_WIDTH: Final = 160
_VALUE_WIDTH: Final = 60

_encode = msgspec.json.encode
_astuple = msgspec.structs.astuple


@final
class Rows:
    """One cassette's rows, as columns: ``seq[i]``, ``worker[i]``, ... describe entry ``i``.

    ``worker``, ``kind`` and ``boundary`` hold indexes into ``workers``, ``kinds`` (which
    is :data:`~sessiontape.cli._common.KINDS`) and ``boundaries``; ``boundary`` is ``None``
    for session metadata and ``parent`` for a top-level call. ``start`` and ``duration``
    are ns since the session started (monotonic clock) and ns taken; ``status`` indexes
    :data:`STATUSES`. ``error`` is the index in :data:`ERROR_CLASSES` of a failed call's
    error class (``None`` for every other entry). ``tree`` holds the parent links.
    """

    __slots__ = (
        "boundaries",
        "boundary",
        "depth",
        "duration",
        "error",
        "kind",
        "parent",
        "seq",
        "start",
        "status",
        "text",
        "tree",
        "worker",
        "workers",
    )

    def __init__(self, tree: CallTree) -> None:
        self.tree = tree
        self.seq: list[int] = []
        self.worker: list[int] = []
        self.kind: list[int] = []
        self.boundary: list[int | None] = []
        self.parent: list[int | None] = []
        self.depth: list[int] = []
        self.start: list[int] = []
        self.duration: list[int] = []
        self.status: list[int] = []
        self.error: list[int | None] = []
        self.text: list[str] = []
        self.workers: list[str] = []
        self.boundaries: list[str] = []

    def __len__(self) -> int:
        return len(self.seq)

    def row(self, index: int) -> dict[str, Any]:
        """Row ``index`` as the JSON API gives it (and the page's embedded API builds it)."""
        boundary, error = self.boundary[index], self.error[index]
        return {
            "index": index,
            "seq": self.seq[index],
            "worker": self.workers[self.worker[index]],
            "kind": KINDS[self.kind[index]],
            "boundary": None if boundary is None else self.boundaries[boundary],
            "parent": self.parent[index],
            "depth": self.depth[index],
            "start_ns": self.start[index],
            "duration_ns": self.duration[index],
            "status": STATUSES[self.status[index]],
            "error_class": None if error is None else ERROR_CLASSES[error],
            "text": self.text[index],
        }

    def columns(self) -> dict[str, Any]:
        """Every column and name list, as the report embeds them.

        The error classes are sparse (few calls fail): ``error_at`` lists the rows of
        failed calls and ``error_class`` their classes.
        """
        failed = failed_rows(self.error)
        return {
            "seq": self.seq,
            "worker": self.worker,
            "kind": self.kind,
            "boundary": self.boundary,
            "parent": self.parent,
            "depth": self.depth,
            "start": self.start,
            "duration": self.duration,
            "status": self.status,
            "text": self.text,
            "workers": self.workers,
            "kinds": list(KINDS),
            "boundaries": self.boundaries,
            "statuses": list(STATUSES),
            "error_at": failed,
            "error_class": [self.error[i] for i in failed],
            "error_classes": list(ERROR_CLASSES),
        }


def build_rows(
    recording: Recording,
    mismatched: Collection[int] = (),
    *,
    texts: list[str] | None = None,
    facts: list[Facts] | None = None,
    classify: Callable[[Any], str | None] | None = None,
) -> Rows:
    """The rows of ``recording``; entries whose seq is in ``mismatched`` get that status.

    ``texts`` and ``facts`` are the rows' texts and :data:`Facts` when the caller has them
    already (the report gathers them as it packs each entry, with :func:`pack_all`).
    ``classify`` gives a failed call's error class (default: :func:`._failures.classifier`);
    only the rows whose status is ``error`` are asked.

    One pass over the entries gathers each one's facts as a tuple (one call per entry,
    picked by its type), and ``zip`` turns the tuples into columns: this runs over every
    entry of tapes of a million entries, where a pass per column would touch every entry
    once per column (each a cache miss, on a long tape).
    """
    entries = recording.entries
    if facts is None:
        facts = [_FACTS[type(e)](e) for e in entries]
    seqs, names, parents, starts, kinds, found, durations, statuses = (
        (list(column) for column in zip(*facts, strict=True))
        if entries
        else ([], [], [], [], [], [], [], [])
    )
    rows = Rows(CallTree.of(seqs, parents))
    depth = rows.tree.depth
    base = recording.header.mono_ns
    workers = {name: index for index, name in enumerate(dict.fromkeys(names))}
    boundaries = [name for name in dict.fromkeys(found) if name is not None]
    boundary_index: dict[str | None, int | None] = {n: i for i, n in enumerate(boundaries)}
    boundary_index[None] = None
    rows.seq = seqs
    rows.worker = [workers[name] for name in names]
    rows.kind = kinds
    rows.boundary = [boundary_index[name] for name in found]
    rows.parent = parents
    rows.depth = [depth[seq] for seq in seqs]
    rows.start = [start - base for start in starts]
    rows.duration = durations
    rows.status = statuses
    rows.error = error_column(entries, statuses, _ERROR, classify)
    if mismatched:
        pairs = zip(seqs, statuses, strict=True)
        rows.status = [_MISMATCH if seq in mismatched else status for seq, status in pairs]
    rows.text = texts if texts is not None else [row_text(e) for e in entries]
    rows.workers = list(workers)
    rows.boundaries = boundaries
    return rows


#: What a row needs of an entry: seq, worker, parent, start, kind (its index in
#: ``KINDS``), boundary name, duration and status.
Facts = tuple[int, str, "int | None", int, int, "str | None", int, int]


def _facts_maker(cls: type) -> typing.Callable[[Any], Facts]:
    """The function giving the row facts of an entry of type ``cls`` (a public kind)."""
    kind = list(KIND_OF_TYPE).index(cls)
    fixed = PRESET_BOUNDARIES.get(cls)  # None for a Call: it names its own
    if cls is ProcessCall:

        def process(e: Any) -> Facts:
            failed = e.returncode != 0 or e.timed_out or e.spawn_error is not None
            return (e.seq, e.worker, e.parent, e.mono_ns, kind, fixed,
                    e.duration_ns, _ERROR if failed else _OK)  # fmt: skip

        return process
    if cls in (AgentTurn, StoreMutation, Call):

        def method(e: Any) -> Facts:
            return (e.seq, e.worker, e.parent, e.mono_ns, kind,
                    e.boundary if fixed is None else fixed, e.duration_ns,
                    _OK if e.error is None else _ERROR)  # fmt: skip

        return method
    status = _ERROR if cls is Error else _OK

    def other(e: Any) -> Facts:
        return (e.seq, e.worker, e.parent, e.mono_ns, kind, None, 0, status)

    return other


#: An entry's public kind, for the lazy ones too (a replay's, outputs and results kept as
#: their JSON, and the report's, its arguments, environments and stdin too; see
#: ``cassette/_lazy.py``).
_PUBLIC: Final[dict[type, type]] = {t: t for t in typing.get_args(Entry)} | LAZY_KINDS | VIEW_KINDS

#: Each entry type's row facts function (:func:`build_rows`), the lazy types too.
_FACTS: Final = {cls: _facts_maker(public) for cls, public in _PUBLIC.items()}


def _brief(raw: bytes, strip: bool = False) -> str:
    """Encoded JSON made short (``strip`` drops the brackets of a list or object)."""
    text = raw[: 4 * _VALUE_WIDTH].decode("utf-8", "ignore")
    if strip:
        text = text[1:-1] if len(raw) <= 4 * _VALUE_WIDTH else text[1:]
    return text if len(text) <= _VALUE_WIDTH else text[: _VALUE_WIDTH - 1] + "…"


def _process_text(entry: ProcessCall, command: str | None = None) -> str:
    """``argv -> exit N`` (``command`` is the argv joined, when the caller has it)."""
    if command is None:
        command = " ".join(entry.argv)
    if len(command) > TEXT_WIDTH:
        command = command[: TEXT_WIDTH - 1] + "…"
    if entry.spawn_error is not None:
        return f"{command} -> {entry.spawn_error.type}: {entry.spawn_error.message}"
    if entry.timed_out:
        return f"{command} -> timed out after {entry.timeout}s"
    return f"{command} -> exit {entry.returncode}"


_Method = AgentTurn | StoreMutation | Call
_METHODS: Final = (AgentTurn, StoreMutation, Call)


def _method_name(entry: _Method) -> str:
    if isinstance(entry, AgentTurn):
        return f"{entry.agent}.{entry.method}"
    if isinstance(entry, StoreMutation):
        return f"{entry.store}.{entry.operation}"
    return f"{entry.boundary}.{entry.method}"


def _method_text(entry: _Method, args: bytes, kwargs: bytes, result: bytes) -> str:
    """``name(args) -> result``, from the encoded arguments and result."""
    shown = _brief(args, strip=True)
    named = _brief(kwargs, strip=True)
    if named:
        shown = f"{shown}, {named}" if shown else named
    if entry.error is not None:
        outcome = f"{entry.error.type}: {entry.error.message}"
    else:
        outcome = _brief(result)
    text = f"{_method_name(entry)}({shown}) -> {outcome}"
    return text if len(text) <= TEXT_WIDTH else text[: TEXT_WIDTH - 1] + "…"


def row_text(entry: Entry) -> str:
    """What happened, on one line: ``git status -> exit 0``, ``store.claim("t1") -> {...}``.

    Session metadata (start, snapshots, errors, end) is described as ``sessiontape show``
    describes it; a call is its command or method, arguments and outcome, values as JSON.
    """
    if isinstance(entry, ProcessCall):
        return _process_text(entry)
    if isinstance(entry, _METHODS):
        args, kwargs, result = _encode(entry.args), _encode(entry.kwargs), _encode(entry.result)
        return _method_text(entry, args, kwargs, result)
    return what(entry, width=TEXT_WIDTH)


#: The fields that hold recorded data of any size; the others hold numbers, flags, names.
_DATA_FIELDS: Final = frozenset(
    {"argv", "env", "input", "stdout", "stderr", "spawn_error", "args", "kwargs", "result"}
    | {"error", "data", "outcome", "config", "message", "traceback"}
)
_DATA_AT: Final[dict[type, tuple[int, ...]]] = {
    cls: tuple(i for i, name in enumerate(cls.__struct_fields__) if name in _DATA_FIELDS)
    for cls in typing.get_args(Entry)
}


def _short_raw(value: Any, limit: int) -> bool:
    """Whether a lazy payload is stored JSON short enough to be shown as it is stored."""
    return type(value) is msgspec.Raw and len(value) <= limit


def detail_values(entry: Entry, limit: int = REPORT_LIMIT) -> list[Any]:
    """The entry's field values in :data:`SCHEMA` order, the big ones clipped at ``limit``.

    A recorded string longer than ``limit`` characters keeps its first ``limit`` and says
    how many more the cassette holds. Any other recorded value (arguments, a result, an
    environment), and any value the entry holds as stored JSON, whose JSON is longer than
    ``limit`` bytes is replaced by its first ``limit`` bytes of JSON, as ``{CLIPPED:
    text, MORE: bytes left}`` (see ``_clip.py``). Numbers, flags and names are kept as
    they are. Each value is encoded once: the small ones come back as ``msgspec.Raw``.
    """
    values = list(_astuple(entry))
    for at in _DATA_AT[_PUBLIC[type(entry)]]:
        if values[at] is not None:
            values[at] = _clip_value(values[at], limit)
    return values


def _clip_value(value: Any, limit: int) -> Any:
    """A recorded value as :func:`detail_values` shows it."""
    if type(value) is msgspec.Raw:  # stored JSON (a lazy output, result, argument...)
        return clip_json(value, limit)
    if type(value) is str:
        return value if len(value) <= limit else clip_text(value, limit)
    return clip_raw(_encode(value), limit)


# Where a method call's args, kwargs, result and error are among its values, by type.
_METHOD_AT: Final = {
    cls: tuple(cls.__struct_fields__.index(f) for f in ("args", "kwargs", "result", "error"))
    for cls in _METHODS
}


def _short_process(entry: ProcessCall, limit: int) -> bool:
    """Whether no recorded value of a process call can be over ``limit``, checked cheaply.

    Its payloads are plain strings (or nothing) of at most ``limit`` characters, it has
    no environment delta and no spawn error, and its argv is short enough that even with
    every character escaped (six bytes at most) its JSON fits.
    """
    out, err, stdin, argv = entry.stdout, entry.stderr, entry.input, entry.argv
    return (
        (out is None or (type(out) is str and len(out) <= limit) or _short_raw(out, limit))
        and (err is None or (type(err) is str and len(err) <= limit) or _short_raw(err, limit))
        and (stdin is None or (type(stdin) is str and len(stdin) <= limit))
        and not entry.env
        and entry.spawn_error is None
        and 6 * sum(map(len, argv)) + 3 * len(argv) + 2 <= limit
    )


def _pack_process(entry: ProcessCall, limit: int) -> tuple[str, Sequence[Any]]:
    if _short_process(entry, limit):  # nothing to clip: the values as they are
        return _process_text(entry), _astuple(entry)
    return _process_text(entry), detail_values(entry, limit)


#: Where the values a report's process call keeps as JSON are among its values.
_VIEW_RAW_AT: Final = tuple(
    ProcessCall.__struct_fields__.index(f) for f in ("env", "input", "stdout", "stderr")
)


def _pack_view_process(entry: ViewProcessCall, limit: int) -> tuple[str, Sequence[Any]]:
    """:func:`_pack_process` for the report's entries, whose payloads and environment are
    their stored JSON: a value of at most ``limit`` bytes of JSON is shown as it is."""
    command = " ".join(entry.argv)
    # A long argv, a spawn error, a conversation: clipped field by field. (Each character
    # of an argv takes at most six bytes of JSON, and its quotes and commas three more.)
    if (
        entry.spawn_error is not None
        or entry.chunks
        or (6 * len(command) + 8 > limit and len(_encode(entry.argv)) > limit)
    ):
        return _process_text(entry, command), detail_values(entry, limit)
    values: Sequence[Any] = _astuple(entry)
    if (
        len(entry.stdout) > limit
        or len(entry.stderr) > limit
        or len(entry.input) > limit
        or len(entry.env) > limit
    ):
        values = list(values)
        for at in _VIEW_RAW_AT:
            if len(values[at]) > limit:
                values[at] = clip_json(values[at], limit)
    return _process_text(entry, command), values


def _pack_method(entry: _Method, limit: int) -> tuple[str, Sequence[Any]]:
    # The arguments and the result are what both the text and the details show.
    args, kwargs, result = _encode(entry.args), _encode(entry.kwargs), _encode(entry.result)
    values = list(_astuple(entry))
    at_args, at_kwargs, at_result, at_error = _METHOD_AT[_PUBLIC[type(entry)]]  # type: ignore[index]
    values[at_args] = clip_raw(args, limit)
    values[at_kwargs] = clip_raw(kwargs, limit)
    values[at_result] = clip_raw(result, limit)
    if entry.error is not None:
        values[at_error] = clip_raw(_encode(entry.error), limit)
    return _method_text(entry, args, kwargs, result), values


def _pack_other(entry: Entry, limit: int) -> tuple[str, Sequence[Any]]:
    return row_text(entry), detail_values(entry, limit)


_PACK: Final[dict[type, Any]] = {
    ProcessCall: _pack_process,
    AgentTurn: _pack_method,
    StoreMutation: _pack_method,
    Call: _pack_method,
}


#: The packing function of every entry type, the lazy ones too.
_PACK_TYPE: Final[dict[type, Any]] = {
    cls: _PACK.get(public, _pack_other) for cls, public in _PUBLIC.items()
} | {ViewProcessCall: _pack_view_process}


def pack(entry: Entry, limit: int = REPORT_LIMIT) -> tuple[str, Sequence[Any]]:
    """:func:`row_text` and :func:`detail_values` at once, each value encoded once.

    The report packs every entry of a tape this way, so the common cases are cut short:
    a process call with nothing to clip is encoded as it is, and the arguments and
    result of a method call, which both the text and the details show, are encoded once.
    """
    packed: tuple[str, Sequence[Any]] = _PACK_TYPE[type(entry)](entry, limit)
    return packed


def pack_all(
    entries: Sequence[Entry], limit: int = REPORT_LIMIT
) -> tuple[list[str], list[Sequence[Any]], list[Facts]]:
    """:func:`pack` and the row facts of every entry: the texts, the values, the facts.

    Both passes run over the same few entries at a time, while they are in the cache:
    on a long tape, reading an entry's facts in a pass of its own costs a cache miss for
    each entry.
    """
    packs, facts_of = _PACK_TYPE, _FACTS
    packed = [packs[type(e)](e, limit) for e in entries]
    facts = [facts_of[type(e)](e) for e in entries]
    return [text for text, _ in packed], [values for _, values in packed], facts


def entry_object(entry: Entry, limit: int = SERVE_LIMIT) -> dict[str, Any]:
    """The entry as the JSON API gives it: ``kind`` and every field, big values clipped."""
    kind = KIND_OF_TYPE[_PUBLIC[type(entry)]]
    return {"kind": kind, **dict(zip(SCHEMA[kind], detail_values(entry, limit), strict=True))}


def mismatch_data(reports: Iterable[ReceiptReport]) -> list[dict[str, Any]]:
    """Every mismatch of ``reports`` as JSON builtins, with the pytest item that found it."""
    out: list[dict[str, Any]] = []
    for item in reports:
        data = item.report.to_dict()  # JSON-ready: bytes as base64, a missing side as text
        out.extend({**m, "nodeid": item.nodeid} for m in data["mismatches"])
    return out


def _report_data(item: ReceiptReport) -> dict[str, Any]:
    r = item.report
    return {
        "nodeid": item.nodeid,
        "cassette": r.cassette,
        "ok": r.ok,
        "strict": r.strict,
        "loaded": r.loaded,
        "consumed": r.consumed,
        "unconsumed": r.unconsumed,
        "extra": r.extra,
        "mismatches": len(r.mismatches),
        "chaos": item.chaos,
    }


def _info(recording: Recording, duration: int) -> list[tuple[str, str]]:
    header = recording.header
    state = "complete" if not recording.crashed else "crashed (no session_end)"
    rows = [
        ("run", header.run_id),
        ("entrypoint", header.entrypoint or "?"),
        ("recorded at", header.recorded_at),
        ("app version", header.app_version or "?"),
        ("host", f"{header.host} ({header.platform}, Python {header.python})"),
        ("level", header.level),
        ("duration", format_ms(duration)),
        ("entries", f"{len(recording)} ({len(recording.calls)} calls), {state}"),
    ]
    if header.config is not None:
        config = _encode(header.config).decode()
        if len(config) > REPORT_LIMIT:
            config = clip_text(config, REPORT_LIMIT)
        rows.append(("config", config))
    return rows


def cassette_data(
    name: str,
    recording: Recording,
    rows: Rows,
    reports: Sequence[ReceiptReport] | None,
    receipt: str | None,
) -> dict[str, Any]:
    """What the viewer shows above a cassette's rows, as JSON builtins.

    ``reports`` are the receipt's reports of this cassette (``None`` without a receipt).
    """
    header = recording.header
    duration = recorded_duration(recording)
    counts = [0] * len(STATUSES)
    for status in rows.status:
        counts[status] += 1
    return {
        "name": name,
        "path": recording.path,
        "run_id": header.run_id,
        "entrypoint": header.entrypoint,
        "recorded_at": header.recorded_at,
        "entries": len(recording),
        "calls": len(recording.calls),
        "duration_ns": duration,
        "crashed": recording.crashed,
        "notes": crash_note(recording),
        "info": _info(recording, duration),
        "workers": rows.workers,
        "kinds": list(KINDS),
        "boundaries": rows.boundaries,
        "statuses": dict(zip(STATUSES, counts, strict=True)),
        "error_classes": error_counts(rows.error),
        "schema": SCHEMA,
        "receipt": None
        if reports is None
        else {
            "path": receipt,
            "reports": [_report_data(r) for r in reports],
            "mismatches": mismatch_data(shown_first(reports)),
            "schedule": drawn_schedule(reports),
            "chaos": chaos_data(reports),
        },
    }
