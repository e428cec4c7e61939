"""What ``sessiontape serve`` serves: the cassettes found under its paths, and queries on them.

A :class:`Catalog` finds the cassettes once, at start: a file named on the command line,
or every ``*.jsonl`` file under a folder whose first line is a ``session_start`` entry.
Each gets a name (its path under the folder), and names are all the server ever looks
up: a request never reaches the file system, so it can name nothing else.

A cassette is loaded the first time it is asked for, and kept. Its rows are columns
(:class:`~sessiontape.cli._viewdata.Rows`), so a query over a million entries is a few
passes in C over lists (``itertools.compress``, ``map``) and answers in a fraction of a
second; the last few selections are kept, so scrolling through one pages in constant time.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import operator
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

import msgspec

from .._time import REAL
from ..cassette import Recording, is_cassette, load, read_header
from ._common import KINDS, CommandError, plural
from ._receipt import Receipt, ReceiptReport, marks
from ._sides import sides_data
from ._viewdata import (
    ERROR_CLASSES,
    STATUSES,
    Rows,
    build_rows,
    cassette_data,
    entry_object,
    mismatch_data,
)
from ._viewpending import pending_data

__all__ = ["MAX_LIMIT", "Catalog", "Loaded", "Query", "QueryError"]

#: The most rows one page of the entries API returns.
MAX_LIMIT: Final = 1000
#: Children of an entry listed with its details (the rest are counted).
CHILDREN_SHOWN: Final = 100
#: Selections kept per cassette: each filter the viewer is paging through.
_SELECTIONS_KEPT: Final = 16
#: Cassettes this big (bytes) take a second or more to load: the log says it has begun.
_ANNOUNCED: Final = 20_000_000


class QueryError(ValueError):
    """A query the API cannot answer: a bad number, an unknown worker or kind."""


@dataclass(frozen=True)
class Query:
    """Which entries to list: each set allows its values (empty: all), ``q`` is free text.

    Free text matches a row whose text (its one-line description) holds ``q``, ignoring
    case; the page's in-browser copy of the API matches the same way.
    """

    workers: frozenset[str] = frozenset()
    boundaries: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()
    statuses: frozenset[str] = frozenset()
    q: str = ""
    errors: frozenset[str] = frozenset()

    @classmethod
    def from_params(cls, params: dict[str, list[str]]) -> Query:
        """The query of URL parameters ``worker``, ``boundary``, ``kind``, ``status``, ``q``
        and ``error`` (an error class)."""
        kinds = frozenset(params.get("kind", ()))
        unknown = sorted(kinds - set(KINDS))
        if unknown:
            raise QueryError(f"unknown kind {unknown[0]!r}; use one of {', '.join(KINDS)}.")
        statuses = frozenset(params.get("status", ()))
        unknown = sorted(statuses - set(STATUSES))
        if unknown:
            raise QueryError(f"unknown status {unknown[0]!r}; use one of {', '.join(STATUSES)}.")
        errors = frozenset(params.get("error", ()))
        unknown = sorted(errors - set(ERROR_CLASSES))
        if unknown:
            raise QueryError(
                f"unknown error class {unknown[0]!r}; use one of {', '.join(ERROR_CLASSES)}."
            )
        return cls(
            errors=errors,
            workers=frozenset(params.get("worker", ())),
            boundaries=frozenset(params.get("boundary", ())),
            kinds=kinds,
            statuses=statuses,
            q=params.get("q", [""])[-1],
        )

    @property
    def everything(self) -> bool:
        """Whether the query lets every entry through."""
        return not (
            self.workers or self.boundaries or self.kinds or self.statuses or self.q or self.errors
        )


def _codes(names: Iterable[str], known: Sequence[str], what: str, cassette: str) -> set[int]:
    index = {name: i for i, name in enumerate(known)}
    missing = [name for name in names if name not in index]
    if missing:
        listed = ", ".join(known) or "none"
        raise QueryError(f"no {what} {missing[0]!r} in {cassette}; its {what}s: {listed}.")
    return {index[name] for name in names}


def _keep(selected: Sequence[int], column: Sequence[Any], allowed: set[Any]) -> list[int]:
    """The indexes of ``selected`` whose value in ``column`` is allowed (in C, not Python)."""
    values = map(column.__getitem__, selected)
    return list(itertools.compress(selected, map(allowed.__contains__, values)))


@final
class Loaded:
    """One cassette as the server holds it: the recording, its rows and its receipt reports."""

    __slots__ = ("_lock", "_lower", "_mismatches", "_selections", "data", "recording", "rows")

    def __init__(
        self,
        name: str,
        recording: Recording,
        reports: Sequence[ReceiptReport] | None,
        receipt: str | None,
    ) -> None:
        self.recording = recording
        self.rows: Rows = build_rows(recording, marks(reports or ()))
        self.data: dict[str, Any] = cassette_data(name, recording, self.rows, reports, receipt)
        self.data["pending"] = pending_data(recording.path)
        by_seq: dict[int, list[dict[str, Any]]] = {}
        for mismatch in mismatch_data(reports or ()):
            if mismatch["seq"] is not None:
                by_seq.setdefault(mismatch["seq"], []).append(mismatch)
        self._mismatches = by_seq
        self._lower: list[str] | None = None
        self._selections: collections.OrderedDict[Query, Sequence[int]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def _lowered(self) -> list[str]:
        """Every row's text in lower case, made for the first free-text query."""
        with self._lock:
            if self._lower is None:
                self._lower = [text.lower() for text in self.rows.text]
            return self._lower

    def select(self, query: Query) -> Sequence[int]:
        """The indexes of the rows ``query`` lets through, in seq order."""
        if query.everything:
            return range(len(self.rows))
        with self._lock:
            found = self._selections.get(query)
            if found is not None:
                self._selections.move_to_end(query)
                return found
        found = self._select(query)
        with self._lock:
            self._selections[query] = found
            while len(self._selections) > _SELECTIONS_KEPT:
                self._selections.popitem(last=False)
        return found

    def _select(self, query: Query) -> list[int]:
        rows, name = self.rows, self.data["name"]
        selected: Sequence[int] = range(len(rows))
        if query.q:
            needle = query.q.lower()
            hits = map(operator.contains, self._lowered(), itertools.repeat(needle))
            selected = list(itertools.compress(selected, hits))
        if query.workers:
            allowed = _codes(query.workers, rows.workers, "worker", name)
            selected = _keep(selected, rows.worker, allowed)
        if query.boundaries:
            allowed = _codes(query.boundaries, rows.boundaries, "boundary", name)
            selected = _keep(selected, rows.boundary, allowed)
        if query.kinds:
            selected = _keep(selected, rows.kind, _codes(query.kinds, KINDS, "kind", name))
        if query.statuses:
            allowed = _codes(query.statuses, STATUSES, "status", name)
            selected = _keep(selected, rows.status, allowed)
        if query.errors:
            allowed = _codes(query.errors, ERROR_CLASSES, "error class", name)
            selected = _keep(selected, rows.error, allowed)
        return list(selected)

    def columns(self) -> bytes:
        """The rows' columns as JSON, without their texts (the lane view's geometry)."""
        columns = self.rows.columns()
        del columns["text"]
        return msgspec.json.encode(columns)

    def index_of(self, seq: int) -> int | None:
        """The row of the entry with ``seq`` (rows are in seq order), or ``None``."""
        seqs = self.rows.seq
        at = bisect.bisect_left(seqs, seq)
        return at if at < len(seqs) and seqs[at] == seq else None

    def position(self, selected: Sequence[int], seq: int | None) -> int | None:
        """Where the entry with ``seq`` is among ``selected`` rows, or ``None``."""
        index = None if seq is None else self.index_of(seq)
        if index is None:
            return None
        at = bisect.bisect_left(selected, index)
        return at if at < len(selected) and selected[at] == index else None

    def page(
        self, query: Query, offset: int, limit: int, seek: int | None = None
    ) -> dict[str, Any]:
        """Rows ``offset`` to ``offset + limit`` of the selection, and its size.

        With ``seek``, ``position`` says where the entry with that seq is in the selection
        (``None`` when the query leaves it out).
        """
        selected = self.select(query)
        rows = self.rows
        page: dict[str, Any] = {
            "total": len(selected),
            "offset": offset,
            "limit": limit,
            "rows": [rows.row(i) for i in selected[offset : offset + limit]],
        }
        if seek is not None:
            page["position"] = self.position(selected, seek)
        return page

    def entry(self, seq: int, query: Query) -> dict[str, Any] | None:
        """Everything the detail panel shows about one entry, or ``None`` for no such seq.

        ``positions`` says where the entry, its parent and its children are among the rows
        ``query`` selects, so that the page can draw the links between them.
        """
        index = self.index_of(seq)
        if index is None:
            return None
        rows = self.rows
        entry = self.recording.entries[index]
        parent = None if entry.parent is None else self.index_of(entry.parent)
        children = rows.tree.children.get(seq, [])
        shown = children[:CHILDREN_SHOWN]
        selected = self.select(query)
        linked = [seq, *shown] if parent is None else [seq, entry.parent, *shown]
        return {
            "row": rows.row(index),
            "entry": entry_object(entry),
            "parent": None if parent is None else rows.row(parent),
            "children": [rows.row(i) for i in map(self.index_of, shown) if i is not None],
            "children_total": len(children),
            "mismatches": self._mismatches.get(seq, []),
            "positions": {str(s): self.position(selected, s) for s in linked},
        }


@final
class _Cassette:
    """A cassette the catalog found: where it is, its header, and (once asked for) itself."""

    __slots__ = ("header", "loaded", "lock", "name", "path", "reports", "size")

    def __init__(self, name: str, path: Path, receipt: Receipt | None) -> None:
        self.name = name
        self.path = path
        self.size = path.stat().st_size
        # None when unreadable: the cassette loads (or says why not) when it is opened.
        self.header = read_header(path)
        self.reports: list[ReceiptReport] | None = None
        if receipt is not None and self.header is not None:
            self.reports = receipt.reports_for(self.header.run_id, os.fspath(path))
        self.loaded: Loaded | None = None
        self.lock = threading.Lock()


@final
class Catalog:
    """The cassettes under ``paths``, found once, loaded when first asked for.

    A path is a cassette file (whatever its name) or a folder, searched recursively for
    ``*.jsonl`` cassettes. ``log`` gets one line per cassette loaded.
    """

    def __init__(
        self,
        paths: Sequence[str],
        *,
        receipt: Receipt | None = None,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.receipt = receipt
        self._log = log
        self._cassettes: dict[str, _Cassette] = {}
        #: The two cassettes the page opens side by side (``serve A --against B``).
        self.against: tuple[str, str] | None = None
        self._sides: dict[tuple[str, str], bytes] = {}
        self._sides_lock = threading.Lock()
        seen: set[str] = set()
        for name, path in _discover(paths):
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            if name in self._cassettes:
                name = os.path.relpath(path)
            while name in self._cassettes:
                name += "+"
            self._cassettes[name] = _Cassette(name, path, receipt)

    def __len__(self) -> int:
        return len(self._cassettes)

    @property
    def names(self) -> list[str]:
        """The cassettes' names, in the order found."""
        return list(self._cassettes)

    def matched_reports(self) -> int:
        """How many of the receipt's reports belong to a cassette of the catalog."""
        matched = {id(r) for c in self._cassettes.values() for r in c.reports or ()}
        return len(matched)

    def listing(self) -> list[dict[str, Any]]:
        """The list page's data: each cassette's name, header and what is known so far.

        ``reports`` counts the receipt's reports of the cassette (``None`` without a
        receipt); ``mismatches`` is ``None`` when there is no report to count them in.
        """
        out = []
        for c in self._cassettes.values():
            header, loaded = c.header, c.loaded
            out.append(
                {
                    "name": c.name,
                    "path": os.fspath(c.path),
                    "size": c.size,
                    "run_id": header.run_id if header else None,
                    "entrypoint": header.entrypoint if header else None,
                    "recorded_at": header.recorded_at if header else None,
                    "entries": len(loaded.recording) if loaded else None,
                    "crashed": loaded.recording.crashed if loaded else None,
                    "reports": None if c.reports is None else len(c.reports),
                    "mismatches": sum(len(r.report.mismatches) for r in c.reports)
                    if c.reports
                    else None,
                }
            )
        return out

    def get(self, name: str) -> Loaded | None:
        """The cassette called ``name``, loaded on first use; ``None`` if there is none.

        Raises :class:`~sessiontape.CassetteError` if the file cannot be loaded.
        """
        cassette = self._cassettes.get(name)
        if cassette is None:
            return None
        with cassette.lock:  # one load, however many requests wait for it
            if cassette.loaded is None:
                if cassette.size >= _ANNOUNCED:
                    self._log(f"loading {name} ({cassette.size / 1e6:.1f} MB)...")
                started = REAL.perf_counter()
                recording = load(cassette.path)
                receipt = None if self.receipt is None else self.receipt.path
                cassette.loaded = Loaded(name, recording, cassette.reports, receipt)
                took = REAL.perf_counter() - started
                self._log(
                    f"loaded {name}: {plural(len(recording), 'entry', 'entries')} in {took:.2f} s"
                )
            return cassette.loaded

    def name_of(self, path: str) -> str | None:
        """The name the catalog gives the cassette at ``path``, or ``None``."""
        real = os.path.realpath(path)
        for name, cassette in self._cassettes.items():
            if os.path.realpath(cassette.path) == real:
                return name
        return None

    def sides(self, a: str, b: str) -> bytes | None:
        """Cassettes ``a`` and ``b`` side by side (:func:`._sides.sides_data`) as JSON,
        made on first use and kept; ``None`` if either is not in the catalog."""
        with self._sides_lock:
            known = self._sides.get((a, b))
        if known is not None:
            return known
        loaded_a, loaded_b = self.get(a), self.get(b)
        if loaded_a is None or loaded_b is None:
            return None
        data = msgspec.json.encode(
            sides_data(loaded_a.recording, loaded_a.rows, loaded_b.recording, loaded_b.rows, (a, b))
        )
        with self._sides_lock:
            self._sides[(a, b)] = data
        return data


def _discover(paths: Sequence[str]) -> Iterable[tuple[str, Path]]:
    """``(name, path)`` of every cassette under ``paths``; a bad path is a CommandError."""
    found = False
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for file in sorted(path.rglob("*.jsonl")):
                if file.is_file() and is_cassette(file):
                    found = True
                    yield file.relative_to(path).as_posix(), file
        elif path.is_file():
            if not is_cassette(path):
                raise CommandError(
                    f"{given} is not a sessiontape cassette: its first line is not a "
                    "session_start entry. Name a cassette, or a folder of them."
                )
            found = True
            yield path.name, path
        else:
            raise CommandError(f"no such file or folder: {given}. Check the path.")
    if not found:
        raise CommandError(
            f"no sessiontape cassettes in {', '.join(paths)} (looked for *.jsonl files whose "
            "first line is a session_start entry). Record one first, or name another folder."
        )
