"""Replay receipts read back by ``report``, ``show`` and ``serve`` to mark mismatches.

A receipt is the JSON a replay left behind, in either of its two forms:

* one report object, as ``ReplayReport.to_json()`` writes it;
* the list ``pytest --sessiontape-report PATH`` writes: one report object per replayed
  test item, each with the item's ``nodeid`` added, and for a chaos schedule
  (``--sessiontape-chaos``) its result as ``chaos``: ``ChaosResult.to_dict()``, whose
  ``schedule`` lists the calls in the order they ran as ``{seq, worker, boundary, order}``
  items (``seq``: the recorded call that answered it, ``null`` for a store call with no
  recorded twin; ``order``: 1, 2, ... as they ran). The viewer draws that schedule.

A receipt may hold reports of many cassettes (a whole corpus run). The reports of one
cassette are those of its run id; when several cassettes share a run id (a copy altered
by hand, a slice), the reports whose ``cassette`` path names the same file win.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, final

import msgspec

from ..report import Explanation, Mismatch, ReplayReport
from ._common import CommandError, plural

__all__ = [
    "RECEIPT_HELP",
    "Receipt",
    "ReceiptReport",
    "add_receipt_argument",
    "chaos_data",
    "drawn_schedule",
    "marks",
    "read_receipt",
    "shown_first",
]

#: The ``--receipt`` help text, the same in every command that takes one.
RECEIPT_HELP: Final = (
    "mark the mismatches of a replay: the JSON of ReplayReport.to_json(), or the list "
    "'pytest --sessiontape-report PATH' writes (the reports of this cassette are picked "
    "by run id)"
)


@final
class ReceiptReport(msgspec.Struct, frozen=True):
    """One report of a receipt, with the pytest item that replayed it (if any)."""

    report: ReplayReport
    nodeid: str | None = None
    #: The schedule of the chaos replay that wrote the report, when it was one: the calls
    #: in the order they ran, ``{"seq", "worker", "boundary", "order"}`` each (the calls
    #: with a recorded seq, which are the ones drawn).
    schedule: list[dict[str, Any]] | None = None
    #: That chaos replay's ``seed``, ``strategy``, ``depth``, ``verdict`` and ``command``.
    chaos: dict[str, Any] | None = None

    @property
    def chaos_failed(self) -> bool:
        """Whether the report is of a chaos schedule that failed."""
        return self.chaos is not None and self.chaos.get("verdict") == "failed"


@final
class Receipt:
    """The reports of a receipt file, in the order written."""

    __slots__ = ("path", "reports")

    def __init__(self, path: str, reports: Sequence[ReceiptReport]) -> None:
        self.path = path
        self.reports = list(reports)

    def reports_for(self, run_id: str, cassette: str) -> list[ReceiptReport]:
        """The reports of the cassette at ``cassette`` whose header has ``run_id``.

        Among several reports of the run, those naming the same file (or, failing that, a
        file of the same name) are kept: copies of a tape share its run id.
        """
        same_run = [r for r in self.reports if r.report.run_id == run_id]
        if len(same_run) <= 1:
            return same_run
        for same in (_same_file, _same_name):
            picked = [r for r in same_run if same(r.report.cassette, cassette)]
            if picked:
                return picked
        return same_run

    def require(self, run_id: str, cassette: str) -> list[ReceiptReport]:
        """:meth:`reports_for`, or a :class:`CommandError` saying why none applies."""
        found = self.reports_for(run_id, cassette)
        if found:
            return found
        if len(self.reports) == 1:
            other = self.reports[0].report.run_id
            raise CommandError(
                f"the replay report {self.path} is of run {other}, the cassette {cassette} "
                f"of run {run_id}; pass the report of a replay of this cassette."
            )
        raise CommandError(
            f"the receipt {self.path} holds {plural(len(self.reports), 'report')}, none of "
            f"run {run_id} (the cassette {cassette}); pass the receipt of a run that "
            "replayed this cassette."
        )


def marks(reports: Sequence[ReceiptReport]) -> dict[int, list[Mismatch]]:
    """The mismatches of ``reports`` by the seq of the recorded entry they concern.

    Mismatches without a recorded entry (an unexpected call, a call past the end of the
    tape) have no seq and so mark no entry.
    """
    marked: dict[int, list[Mismatch]] = {}
    for item in reports:
        for mismatch in item.report.mismatches:
            if mismatch.seq is not None:
                marked.setdefault(mismatch.seq, []).append(mismatch)
    return marked


def _shown(reports: Sequence[ReceiptReport]) -> ReceiptReport | None:
    """The chaos schedule a page leads with: the failing one of the lowest seed, else the
    first one (a receipt of ``--sessiontape-chaos N`` holds N schedules of a tape, in the
    order pytest reported them)."""
    scheduled = [r for r in reports if r.chaos is not None]
    failing = [r for r in scheduled if r.chaos_failed]
    if failing:
        return min(failing, key=lambda r: r.chaos.get("seed", 0) if r.chaos else 0)
    return scheduled[0] if scheduled else None


def shown_first(reports: Sequence[ReceiptReport]) -> list[ReceiptReport]:
    """``reports`` with the chaos schedule a page leads with first (see :func:`chaos_data`)."""
    shown = _shown(reports)
    return [r for r in reports if r is shown] + [r for r in reports if r is not shown]


def drawn_schedule(reports: Sequence[ReceiptReport]) -> list[dict[str, Any]] | None:
    """The chaos schedule the lane view draws: the shown schedule's calls (see
    :func:`chaos_data`)."""
    shown = _shown([r for r in reports if r.schedule])
    return shown.schedule if shown is not None else None


def chaos_data(reports: Sequence[ReceiptReport]) -> dict[str, Any] | None:
    """What a page leads with for a receipt of chaos schedules: the shown schedule's
    seed, strategy, depth, verdict, failure (or why it was inadmissible), calls and the
    command that runs it again, and how many schedules of the cassette failed or were
    inadmissible. ``None`` when no report is of a schedule."""
    shown = _shown(reports)
    if shown is None:
        return None
    assert shown.chaos is not None
    verdicts = [r.chaos.get("verdict") for r in reports if r.chaos is not None]
    return {
        **shown.chaos,
        "nodeid": shown.nodeid,
        "schedules": len(verdicts),
        "failed": verdicts.count("failed"),
        "inadmissible_schedules": verdicts.count("inadmissible"),
    }


def read_receipt(path: str) -> Receipt:
    """Read a receipt in either form; a :class:`CommandError` says what is wrong with it."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(
            f"cannot read the receipt {path}: {exc.strerror or exc}. Check the path."
        ) from None
    try:
        parsed: Any = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise CommandError(f"{path} is not a replay receipt: it is not JSON ({exc}).") from None
    if isinstance(parsed, dict):
        return Receipt(path, [_report(path, parsed, None)])
    if isinstance(parsed, list):
        return Receipt(path, [_report(path, item, index) for index, item in enumerate(parsed)])
    raise CommandError(
        f"{path} is not a replay receipt: expected the JSON object ReplayReport.to_json() "
        "writes or the list 'pytest --sessiontape-report' writes, found "
        f"{type(parsed).__name__}."
    )


def _report(path: str, item: Any, index: int | None) -> ReceiptReport:
    where = f"{path}" if index is None else f"{path}, item {index}"
    if not isinstance(item, dict):
        raise CommandError(
            f"{where} is not a replay report: expected a JSON object, found "
            f"{type(item).__name__}. Pass the file ReplayReport.to_json() or "
            "'pytest --sessiontape-report' wrote."
        )
    try:
        # from_json restores what to_json turned into text (a missing side of a diff).
        report = ReplayReport.from_json(msgspec.json.encode(item))
    except msgspec.ValidationError as exc:
        raise CommandError(
            f"{where} is not a replay report written by ReplayReport.to_json() or "
            f"'pytest --sessiontape-report' ({exc})."
        ) from None
    nodeid = item.get("nodeid")
    chaos = item.get("chaos")
    if not isinstance(chaos, dict):
        return ReceiptReport(report, nodeid if isinstance(nodeid, str) else None)
    return ReceiptReport(
        report,
        nodeid if isinstance(nodeid, str) else None,
        _schedule(chaos.get("schedule")),
        _chaos_summary(chaos),
    )


#: The scalars of a receipt's ``chaos`` object the viewer shows, and their types.
_CHAOS_FIELDS: Final = (
    ("seed", int),
    ("strategy", str),
    ("depth", int),
    ("verdict", str),
    ("command", str),
    ("steps", int),
    ("inadmissible", str),
)
#: The fields of its ``failure``, and their types.
_FAILURE_FIELDS: Final = (("kind", str), ("message", str), ("worker", str), ("after", int))


def _chaos_summary(chaos: dict[str, Any]) -> dict[str, Any]:
    """The scalars of a chaos result, and its failure (the receipt is data: a field of
    another type is left out)."""
    summary = _typed(chaos, _CHAOS_FIELDS)
    calls = chaos.get("schedule")
    summary["calls"] = len(calls) if isinstance(calls, list) else 0
    failure = chaos.get("failure")
    if isinstance(failure, dict) and type(failure.get("message")) is str:
        summary["failure"] = _typed(failure, _FAILURE_FIELDS)
    explained = _explanation(chaos.get("explain"))
    if explained is not None:
        summary["explain"] = explained
    return summary


def _explanation(value: Any) -> dict[str, Any] | None:
    """A failing schedule's explanation (``--sessiontape-chaos-explain``), read back as an
    :class:`~sessiontape.report.Explanation` (every field of its type, or none of it) and
    written again: its verdict and row are made from those fields, never taken as text."""
    if not isinstance(value, dict):
        return None
    try:
        explained = msgspec.convert(value, Explanation)
    except msgspec.ValidationError:
        return None
    return explained.to_dict()


def _typed(data: dict[str, Any], fields: Sequence[tuple[str, type]]) -> dict[str, Any]:
    return {name: data[name] for name, kind in fields if type(data.get(name)) is kind}


def _schedule(value: Any) -> list[dict[str, Any]] | None:
    """The schedule items a report carries that name a seq and an order; the rest is
    left out (the receipt is data: only these four keys are kept, as numbers and text)."""
    if not isinstance(value, list):
        return None
    kept = [
        {
            "seq": item["seq"],
            "order": item["order"],
            "worker": str(item.get("worker", "")),
            "boundary": str(item.get("boundary", "")),
        }
        for item in value
        if isinstance(item, dict)
        and type(item.get("seq")) is int
        and type(item.get("order")) is int
    ]
    return kept or None


def add_receipt_argument(parser: argparse.ArgumentParser) -> None:
    """``--receipt PATH`` (alias ``--replay-report``), for ``report``, ``show`` and ``serve``."""
    parser.add_argument(
        "--receipt", "--replay-report", dest="receipt", metavar="JSON", help=RECEIPT_HELP
    )


def _same_file(recorded: str, cassette: str) -> bool:
    try:
        return os.path.samefile(recorded, cassette)
    except OSError:
        return False


def _same_name(recorded: str, cassette: str) -> bool:
    return os.path.basename(recorded) == os.path.basename(cassette)
