"""Serve a local viewer over cassettes: a list page, and per cassette its entries in a browser.

PATH is a cassette or a folder of them (searched recursively for *.jsonl cassettes); the
default is the current folder. Per cassette the viewer shows a row per entry with a
swimlane per worker and a timeline bar (or, switched, a lane per worker on one zoomable
time axis), filters (worker, boundary, kind, status, error class, free text), entry
details with their parent and children, and, with --receipt, the replay's mismatches
and their field diffs; with a chaos receipt whose failing schedule was explained
(--sessiontape-chaos-explain), the probability of the failure by decision as a line above
the lanes. With --against B, PATH is one cassette A and the page opens on A and B side by
side: two sets of lanes on one time axis, matching calls joined, calls only one run made
coloured, the fork point marked. Virtual scrolling keeps a million entries smooth. The
same data is JSON under /api/cassettes. The server binds to 127.0.0.1 unless --host says
otherwise, loads each cassette the first time it is opened, and stops on Ctrl-C.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import Final

from ._catalog import Catalog
from ._common import CommandError, non_negative_int, plural
from ._receipt import add_receipt_argument, read_receipt
from ._server import ViewerServer, _is_loopback

__all__ = ["DEFAULT_PORT", "SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "serve a local viewer (and a JSON API) over a cassette or a folder of them"

#: The port ``serve`` listens on unless told otherwise.
DEFAULT_PORT: Final = 8470


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` options."""
    parser.add_argument(
        "paths",
        nargs="*",
        default=["."],
        metavar="PATH",
        help="a cassette or a folder of cassettes (default: the current folder)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only)",
    )
    parser.add_argument(
        "--port",
        type=non_negative_int,
        default=DEFAULT_PORT,
        help=f"the port to listen on (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    add_receipt_argument(parser)
    parser.add_argument(
        "--against",
        metavar="B",
        help="open PATH (one cassette, A) and the cassette B side by side: two sets of lanes "
        "on one time axis, matching calls joined, the fork point marked",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")


def _log(line: str) -> None:
    print(f"sessiontape serve: {line}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """``sessiontape serve``: runs until interrupted."""
    receipt = read_receipt(args.receipt) if args.receipt else None
    paths = list(args.paths)
    if args.against is not None:
        if len(paths) != 1 or not os.path.isfile(paths[0]):
            raise CommandError(
                "--against B shows two cassettes side by side: name one cassette A before it "
                "(sessiontape serve A.jsonl --against B.jsonl)."
            )
        paths.append(args.against)
    catalog = Catalog(paths, receipt=receipt, log=_log)
    if args.against is not None:
        a, b = catalog.name_of(paths[0]), catalog.name_of(args.against)
        if a is None or b is None or a == b:
            raise CommandError(
                f"{args.against} is {paths[0]} itself: name another cassette to compare with."
            )
        catalog.against = (a, b)
    if receipt is not None and receipt.reports and not catalog.matched_reports():
        _log(
            f"note: none of the {plural(len(receipt.reports), 'report')} in {receipt.path} "
            "is of a cassette served here; no mismatch will be marked."
        )
    try:
        server = ViewerServer(catalog, args.host, args.port, verbose=args.verbose)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise CommandError(
                f"cannot listen on {args.host}:{args.port}: the port is in use. Pass another "
                "--port, or --port 0 for a free one."
            ) from None
        raise CommandError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}."
        ) from None
    if not _is_loopback(args.host):
        _log(
            f"warning: listening on {args.host}, so other machines can read these cassettes; "
            "they hold recorded production data."
        )
    print(
        f"sessiontape serve: {plural(len(catalog), 'cassette')} at {server.url} (Ctrl-C stops)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print("sessiontape serve: stopped.", flush=True)
    return 0
