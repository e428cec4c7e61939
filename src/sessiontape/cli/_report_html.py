"""Write the viewer of a cassette as one self-contained HTML file, to open offline or share.

The page is the viewer 'sessiontape serve' shows: a row per entry with a swimlane per
worker, filters (worker, boundary, kind, status, error class, free text), virtual
scrolling, entry details and parent links, and beside the table the lane view (a lane per
worker on one time axis, zoomable). With --receipt (the JSON of ReplayReport.to_json(), or the list
'pytest --sessiontape-report PATH' wrote), the entries where the replay diverged are
marked and their details show the field diff. The data is inside the page, compressed
(gzip, unpacked by the browser); the page fetches nothing. In the details, values whose
JSON is over 400 bytes are clipped: the cassette, and 'sessiontape serve', have them whole.
With a chaos receipt whose failing schedule was explained (--sessiontape-chaos-explain),
the probability of the failure by decision is drawn as a line above the lanes.

With --against B the page shows PATH (A) and B side by side instead: two sets of lanes on
one time axis, matching calls joined, calls only one run made coloured, and the fork
point marked (the branch's recorded fork, else where 'sessiontape diff A B' finds the
runs part first).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import queue
import sys
import threading
import zlib
from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import islice
from typing import Final, final

import msgspec

from ..cassette import Entry, Recording, load_for_view
from ._common import CommandError, Progress, plural, read_recording, write_atomic
from ._receipt import ReceiptReport, add_receipt_argument, marks, read_receipt
from ._sides import sides_data
from ._viewdata import Facts, build_rows, cassette_data, pack_all
from ._viewer import page
from ._viewpending import pending_data

__all__ = ["LEVEL", "SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "write the viewer of a cassette as one offline HTML file, mismatches marked"

#: The gzip level of the embedded data. Level 1 deflates a 120,000-entry tape's details
#: about three times faster than level 6, for an output a quarter larger: the page stays
#: far under half the tape's size either way, and the time is what a big tape feels.
LEVEL: Final = 1

_LINES: Final = msgspec.json.Encoder()

#: Entries encoded per piece handed to the compressing thread.
_CHUNK: Final = 2048


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``report`` options."""
    parser.add_argument("path", metavar="PATH", help="the cassette to show")
    add_receipt_argument(parser)
    parser.add_argument(
        "--against",
        metavar="B",
        help="show PATH (A) and the cassette B side by side: two sets of lanes on one time "
        "axis, matching calls joined, the fork point marked",
    )
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT.html", help="where to write the page"
    )


class _Abort(Exception):
    """Stops the writing thread when the main thread failed; the page is not written."""


@final
class _PageWriter(threading.Thread):
    """Writes the page on a thread of its own, compressing the data it is fed.

    The main thread packs entries into pieces of JSON and feeds them; this thread
    deflates each piece, base64-encodes it and writes it to the page. zlib and the file
    write let go of the GIL, so all that runs beside the packing of the next pieces: on
    two cores the compression and the writing cost almost nothing. The thread needs the
    GIL back between blocks of output; :func:`_short_switches` keeps it from waiting
    5 ms each time.
    """

    def __init__(self, path: str, title: str, blobs: Sequence[str]) -> None:
        super().__init__(name="sessiontape-report-writer", daemon=True)
        self._path = path
        self._title = title
        self._blobs = blobs
        self._pieces: queue.Queue[bytes | object] = queue.Queue(maxsize=8)
        self._error: BaseException | None = None

    def run(self) -> None:
        blobs = [(element_id, self._gzip()) for element_id in self._blobs]
        try:
            write_atomic(self._path, page(self._title, mode="report", blobs=blobs))
        except _Abort:
            return
        except BaseException as exc:  # handed to the main thread by close()
            self._error = exc
            while self._pieces.get() is not _ABORT:  # let feed() return until close()
                pass

    def _gzip(self) -> Iterator[bytes]:
        """One gzip stream: the pieces fed until :meth:`end_blob`."""
        deflate = zlib.compressobj(LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        while (piece := self._pieces.get()) is not _END:
            if not isinstance(piece, bytes):  # _ABORT
                raise _Abort
            yield deflate.compress(piece)
        yield deflate.flush()

    def feed(self, piece: bytes) -> None:
        """Compress ``piece`` into the current blob."""
        if piece:
            self._pieces.put(piece)

    def end_blob(self) -> None:
        """End the current blob; what is fed next goes to the next one."""
        self._pieces.put(_END)

    def close(self) -> None:
        """Wait for the page to be written; or, if it is not complete, drop it."""
        self._pieces.put(_ABORT)  # unread when the page is complete
        self.join()
        if self._error is not None:
            raise self._error


# Fed to the writing thread: the end of a blob, and the end of everything.
_END: Final = object()
_ABORT: Final = object()


@contextlib.contextmanager
def _short_switches() -> Iterator[None]:
    """Let the compressing thread have the GIL back within 0.2 ms rather than 5 ms.

    Between two blocks of output zlib takes the GIL; while the main thread runs Python
    it only gets it at the next switch interval. At the default 5 ms, a 120,000-entry
    tape's compression stalled for most of a second, and the main thread with it.
    """
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _chunks(entries: Iterable[Entry], size: int) -> Iterator[list[Entry]]:
    it = iter(entries)
    while chunk := list(islice(it, size)):
        yield chunk


def run(args: argparse.Namespace) -> int:
    """``sessiontape report``."""
    for tape in (args.path, args.against):
        if tape and os.path.exists(args.output) and os.path.samefile(args.output, tape):
            raise CommandError(
                f"{args.output} is the cassette itself; name another file for the page "
                "(-o run.html)."
            )
    if args.against is not None:
        return _sides_page(args)
    # Loaded to be shown: outputs, results, arguments, environments and stdin stay their
    # JSON, which the page embeds as it is (or clipped), never decoded and encoded again.
    recording = read_recording(args.path, load_for_view)
    reports = None
    if args.receipt:
        reports = read_receipt(args.receipt).require(recording.header.run_id, recording.path)
    marked = marks(reports or ())
    title = f"sessiontape: {recording.header.entrypoint or recording.header.run_id}"
    tape, entries = recording.path, len(recording)
    writer = _PageWriter(args.output, title, ["st-details", "st-text", "st-rows"])
    with _short_switches():
        writer.start()
        try:
            lanes = _feed(writer, recording, marked, reports, args.receipt)
            # Freed now, while the thread compresses and writes the last blob.
            del recording
        finally:
            writer.close()
    size = os.path.getsize(args.output)
    tape_size = os.path.getsize(tape)
    extra = ""
    if reports is not None:
        count = sum(len(seqs) for seqs in marked.values())
        extra = f", {plural(count, 'mismatch', 'mismatches')} marked"
    print(
        f"wrote {args.output}: {plural(entries, 'entry', 'entries')} in "
        f"{plural(lanes, 'swimlane')}{extra}; {_size(size)}, "
        f"{size / tape_size:.0%} of the cassette's {_size(tape_size)}."
    )
    return 0


def _feed(
    writer: _PageWriter,
    recording: Recording,
    marked: Collection[int],
    reports: Sequence[ReceiptReport] | None,
    receipt: str | None,
) -> int:
    """Pack ``recording`` and feed it to ``writer``, blob by blob; return its swimlanes."""
    # The biggest blobs first: the thread compresses and writes each while the main
    # thread makes the next (the rows' texts come out of the details' pass).
    texts: list[str] = []
    facts: list[Facts] = []
    entries = Progress("report", len(recording)).iter(recording.entries)
    for chunk in _chunks(entries, _CHUNK):
        chunk_texts, values, chunk_facts = pack_all(chunk)
        texts += chunk_texts
        facts += chunk_facts
        writer.feed(_LINES.encode_lines(values))
    writer.end_blob()
    writer.feed(msgspec.json.encode(texts))
    writer.end_blob()
    rows = build_rows(recording, marked, texts=texts, facts=facts)
    name = os.path.basename(recording.path)
    data = cassette_data(name, recording, rows, reports, receipt)
    data["pending"] = pending_data(recording.path)
    columns = rows.columns()
    del columns["text"]  # in st-text
    writer.feed(msgspec.json.encode({"cassette": data, "columns": columns}))
    writer.end_blob()
    return len(rows.workers)


def _sides_page(args: argparse.Namespace) -> int:
    """``sessiontape report A --against B``: the side-by-side page, its data embedded."""
    if args.receipt:
        raise CommandError(
            "--receipt marks one replay's mismatches, and --against shows two runs: give one "
            "of them (sessiontape report A.jsonl --against B.jsonl -o sides.html)."
        )
    a, b = read_recording(args.path), read_recording(args.against)
    if os.path.samefile(a.path, b.path):
        raise CommandError(f"{args.against} is {args.path} itself: name another cassette.")
    data = sides_data(a, build_rows(a), b, build_rows(b))
    packed = gzip.compress(msgspec.json.encode(data), LEVEL, mtime=0)
    title = f"sessiontape: {data['a']['name']} and {data['b']['name']} side by side"
    write_atomic(args.output, page(title, mode="report", blobs=[("st-sides", [packed])]))
    fork = data["fork"]
    where = f"; {fork['text']}" if fork is not None else "; the runs do not part"
    print(
        f"wrote {args.output}: {len(data['pairs'])} matching calls joined, "
        f"{data['only_a']} only in A, {data['only_b']} only in B{where}; "
        f"{_size(os.path.getsize(args.output))}."
    )
    return 0


def _size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.1f} kB"
