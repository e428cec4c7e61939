"""Where a chaos failure became certain: ``sessiontape explain RECEIPT``.

RECEIPT is the receipt a chaos run wrote (``pytest --replay X --sessiontape-chaos N
--sessiontape-report RECEIPT``), or a failing schedule saved as a tape
(``--sessiontape-chaos-save DIR``), whose header names the tape, seed, strategy and depth
it came from (the tape is looked for with ``--tape``, else by its name in the current
directory and beside the saved one, and must have the same run id). For its failing
schedule (the first one, or the one of ``--nodeid``), explain replays that schedule's
tape as ``pytest --replay`` does, through the project's ``sessiontape_replay`` hook (from
the conftest.py pytest finds in the current directory), under
``--sessiontape-chaos-explain``: the failing schedule's first k decisions kept, the rest
chosen at random (M schedules per estimate, seeded), bisection over k. It prints the
point of no return (the decision after which the failure was certain, named by the two
calls it ordered), the probability row, and how many schedules ran. The command it runs
is built from the typed fields (the tape, seed, strategy, depth) of the receipt or the
header, never taken from either as text: they are data.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final, NamedTuple

import msgspec

from ..cassette import is_cassette, read_header
from ._common import CommandError, print_json
from ._receipt import read_receipt

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "the scheduling decision after which a chaos failure was certain"
_STRATEGIES: Final = ("pct", "random")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``explain`` options."""
    parser.add_argument(
        "receipt",
        metavar="RECEIPT",
        help="the receipt of a chaos run: pytest --sessiontape-chaos N --sessiontape-report PATH",
    )
    parser.add_argument(
        "--nodeid", help="explain the failing schedule of this test item (default: the first)"
    )
    parser.add_argument(
        "--tape",
        metavar="PATH",
        help="for a saved schedule: the tape it was saved from (default: found by name)",
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=None,
        metavar="M",
        help="schedules per estimate (default 20)",
    )
    parser.add_argument("--json", action="store_true", help="print the explanation as JSON")


def run(args: argparse.Namespace) -> int:
    if args.samples is not None and args.samples < 1:
        raise CommandError(f"--samples must be 1 or more, got {args.samples}.")
    if is_cassette(args.receipt):
        explained = _explain(_from_saved(args.receipt, args.tape), args.samples)
    else:
        explained = _explain(_from_receipt(args.receipt, args.nodeid), args.samples)
    if args.json:
        print_json(explained)
        return 0
    from ..report import Explanation

    print(msgspec.convert(explained, Explanation).render())
    return 0


class _Failing(NamedTuple):
    """The failing schedule to explain: its tape, seed, strategy and depth."""

    name: str
    tape: str
    seed: Any
    strategy: Any
    depth: Any


def _from_saved(path: str, tape: str | None) -> _Failing:
    """The schedule a saved schedule's header names, on the tape it came from."""
    header = read_header(path)
    saved = header.schedule if header is not None else None
    if saved is None or not saved.kind:
        raise CommandError(
            f"{path} is a tape but not a failing schedule saved by "
            "--sessiontape-chaos-save: explain needs a receipt or such a tape."
        )
    candidates = [tape] if tape else [saved.tape, os.path.join(os.path.dirname(path), saved.tape)]
    for candidate in candidates:
        if os.path.isfile(candidate) and is_cassette(candidate):
            found = read_header(candidate)
            run_id = found.run_id if found is not None else None
            if run_id != saved.run_id:
                raise CommandError(
                    f"{candidate} is not the tape {path} was saved from (run id {run_id}, "
                    f"not {saved.run_id}). Name the right one: sessiontape explain {path} "
                    "--tape ORIGINAL.jsonl"
                )
            return _Failing(path, candidate, saved.seed, saved.strategy, saved.depth)
    raise CommandError(
        f"{path} was saved from {saved.tape}, which is neither here nor beside it. Name it: "
        f"sessiontape explain {path} --tape PATH/{saved.tape}"
    )


def _from_receipt(path: str, nodeid: str | None) -> _Failing:
    """The first failing chaos schedule of a receipt (or the one of ``nodeid``)."""
    receipt = read_receipt(path)
    failing = [r for r in receipt.reports if r.chaos_failed and (nodeid in (None, r.nodeid))]
    if not failing:
        which = f" of {nodeid}" if nodeid else ""
        raise CommandError(
            f"{path} holds no failing chaos schedule{which}: explain needs one. "
            "Find one with: pytest --replay TAPE --sessiontape-chaos 100 "
            "--sessiontape-report receipt.json"
        )
    report = failing[0]
    chaos = report.chaos or {}
    tape = report.report.cassette
    name = report.nodeid or tape
    return _Failing(name, tape, chaos.get("seed"), chaos.get("strategy"), chaos.get("depth"))


def _argv(failing: _Failing, samples: int | None, out: str) -> list[str]:
    """The pytest command that explains ``failing``, from its typed fields."""
    seed, strategy, depth, tape = failing.seed, failing.strategy, failing.depth, failing.tape
    if not (isinstance(seed, int) and strategy in _STRATEGIES and isinstance(depth, int)):
        raise CommandError(
            f"the failing schedule of {failing.name} has no seed, strategy and depth: "
            "write the receipt again with pytest --sessiontape-report."
        )
    if not tape or not os.path.isfile(tape):
        raise CommandError(
            f"the tape of {failing.name} ({tape!r}) is not a file here: run explain in the "
            "directory the chaos run ran in."
        )
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--replay", tape]
    argv += ["--sessiontape-chaos-seed", str(seed), "--sessiontape-chaos-strategy", strategy]
    argv += ["--sessiontape-chaos-depth", str(depth), "--sessiontape-chaos-explain"]
    if samples is not None:
        argv += ["--sessiontape-chaos-explain-samples", str(samples)]
    return [*argv, "--sessiontape-report", out]


def _explain(failing: _Failing, samples: int | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sessiontape-explain-") as work:
        out = str(Path(work) / "receipt.json")
        argv = _argv(failing, samples, out)
        print(f"sessiontape explain: {failing.name} ...", file=sys.stderr)
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        try:
            items = msgspec.json.decode(Path(out).read_bytes())
        except (OSError, msgspec.DecodeError):
            items = []
    for item in items if isinstance(items, list) else []:
        chaos = item.get("chaos") if isinstance(item, dict) else None
        if isinstance(chaos, dict) and isinstance(chaos.get("explain"), dict):
            explained: dict[str, Any] = chaos["explain"]
            return explained
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
    raise CommandError(
        "the schedule's replay gave no explanation (did it fail again?). pytest said:\n" + tail
    )
