"""Work with replay receipts: ``receipts merge`` joins the receipts of several CI shards.

Each shard of a corpus (``pytest --replay URL --sessiontape-shard i/N
--sessiontape-report shard-i.json``) writes the receipt of its own tapes; ``merge`` joins
them into one list, as one serial run would have written it (sorted by test id, one report
per test: when two receipts hold the same test, the one named later wins). ``report``,
``serve``, ``show`` and ``--sessiontape-durations`` read the merged receipt like any other.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

from ._common import CommandError, plural, write_atomic
from ._receipt import read_receipt

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "merge the replay receipts of several CI shards into one"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    merge = actions.add_parser(
        "merge", help="join receipts into one", description=SUMMARY.capitalize() + "."
    )
    merge.add_argument("receipts", nargs="+", metavar="JSON", help="the receipts to join")
    merge.add_argument(
        "-o", "--output", required=True, metavar="JSON", help="where to write the merged one"
    )


def run(args: argparse.Namespace) -> int:
    """``sessiontape receipts merge``."""
    if args.output in args.receipts:
        raise CommandError(
            f"-o {args.output} is one of the receipts being merged; write the merged receipt "
            "to a new file."
        )
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for path in args.receipts:
        receipt = read_receipt(path)  # checks every report, with its file and item
        for item in receipt.reports:
            data: dict[str, Any] = item.report.to_dict()
            if item.nodeid is not None:
                data = {"nodeid": item.nodeid, **data}
            key = (item.nodeid or "", item.report.run_id, item.report.cassette)
            merged.pop(key, None)  # the later receipt's report, in its own place
            merged[key] = data
    reports = sorted(merged.values(), key=lambda r: (str(r.get("nodeid", "")), r["run_id"]))
    write_atomic(args.output, [(json.dumps(reports, indent=2) + "\n").encode()])
    failed = sum(1 for r in reports if not r.get("ok"))
    print(
        f"merged {plural(len(args.receipts), 'receipt')} into {args.output}: "
        f"{plural(len(reports), 'report')}, {failed} failed."
    )
    return 0
