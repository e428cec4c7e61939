"""Summarise where a recorded session spent its time and its tokens.

Counts entries per kind and calls per worker; gives the time spent in each boundary (the
sum of call durations, and the share of the session's wall time during which at least one
such call was running: concurrent and nested calls are not counted twice); the time per
command (program and first subcommand, ``git merge``) with count, total, mean and max; and
the agent turns with their tokens and cost. Time slept between calls is not recorded.

It also gives the rates (calls per minute per boundary and per program over the run,
the peak minute, the agents' tokens per minute; see ``_rates.py``) and the failed calls
by error class, boundary and worker with the last failure of each (``_failures.py``).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable
from typing import Any, Final

from ..cassette import AgentTurn, ProcessCall, Recording, boundary_of
from ..report import format_ms
from ._common import (
    KIND_OF_TYPE,
    Progress,
    command_name,
    read_recording,
    recorded_duration,
)
from ._failures import Failures, classifier
from ._rates import Rates

__all__ = ["SUMMARY", "add_arguments", "busy_ns", "compute", "run"]

SUMMARY: Final = "time per boundary and command, agent tokens and cost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``stats`` options."""
    parser.add_argument("path", metavar="PATH", help="the cassette to summarise")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")


def busy_ns(intervals: Iterable[tuple[int, int]]) -> int:
    """The length of the union of ``(start, end)`` intervals: time when any was running."""
    total = 0
    covered_until: int | None = None  # the end of the time counted so far
    for start, end in sorted(intervals):
        if covered_until is None or start >= covered_until:
            total += end - start
            covered_until = end
        elif end > covered_until:
            total += end - covered_until
            covered_until = end
    return total


class _Timing:
    """Count, total and maximum of a set of calls' durations, and when they ran."""

    __slots__ = ("count", "max", "spans", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0
        self.max = 0
        self.spans: list[tuple[int, int]] = []

    def add(self, start: int, ns: int, *, span: bool = True) -> None:
        self.count += 1
        self.total += ns
        if ns > self.max:
            self.max = ns
        if span:
            self.spans.append((start, start + ns))

    def as_dict(self) -> dict[str, int]:
        mean = self.total // self.count if self.count else 0
        return {"count": self.count, "total_ns": self.total, "mean_ns": mean, "max_ns": self.max}


def _timing(table: dict[str, _Timing], key: str) -> _Timing:
    timing = table.get(key)
    if timing is None:
        timing = table[key] = _Timing()
    return timing


def compute(recording: Recording) -> dict[str, Any]:
    """Every number ``stats`` prints, as JSON-ready data (durations in ns)."""
    duration = recorded_duration(recording)
    # Counting types runs in C; a tape has hundreds of thousands of entries.
    kinds = {
        KIND_OF_TYPE[entry_type]: count
        for entry_type, count in Counter(map(type, recording.entries)).items()
    }
    workers: dict[str, _Timing] = {}
    boundaries: dict[str, _Timing] = {}
    commands: dict[str, _Timing] = {}
    agents: dict[str, dict[str, Any]] = {}
    origin = recording.header.mono_ns
    failures = Failures(origin)
    rates = Rates(origin)
    classify = classifier()
    for call in Progress("stats", len(recording.calls)).iter(recording.calls):
        boundary = boundary_of(call)
        assert boundary is not None  # every call has a boundary
        start, took = call.mono_ns - origin, call.duration_ns  # as relative_ns(), inlined
        rates.add(call, boundary)
        error_class = classify(call)
        if error_class is not None:
            failures.add(call, error_class)
        _timing(workers, call.worker).add(start, took)
        _timing(boundaries, boundary).add(start, took)
        if isinstance(call, ProcessCall):
            _timing(commands, command_name(call.argv)).add(start, took, span=False)
        elif isinstance(call, AgentTurn):
            turns = agents.get(call.agent)
            if turns is None:
                turns = agents[call.agent] = _new_agent()
            _add_turn(turns, call)

    def busy(timing: _Timing) -> dict[str, Any]:
        ns = busy_ns(timing.spans)
        return {"busy_ns": ns, "busy_percent": round(100 * ns / duration, 1) if duration else None}

    return {
        "cassette": recording.path,
        "run_id": recording.header.run_id,
        "entrypoint": recording.header.entrypoint,
        "level": recording.header.level,
        "crashed": recording.crashed,
        "duration_ns": duration,
        "entries": len(recording.entries),
        "kinds": kinds,
        "workers": {
            name: {"calls": timing.count, **busy(timing)} for name, timing in workers.items()
        },
        "boundaries": {
            name: {**timing.as_dict(), "wall_percent": busy(timing)["busy_percent"]}
            for name, timing in sorted(boundaries.items(), key=lambda kv: -kv[1].total)
        },
        "commands": {
            name: timing.as_dict()
            for name, timing in sorted(commands.items(), key=lambda kv: (-kv[1].total, kv[0]))
        },
        "agents": agents,
        "errors": failures.as_dict(),
        "rates": rates.as_dict(duration),
    }


def _new_agent() -> dict[str, Any]:
    return {
        "turns": 0,
        "turns_with_usage": 0,
        "errors": 0,
        "total_ns": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "cost_usd": 0.0,
    }


def _add_turn(totals: dict[str, Any], turn: AgentTurn) -> None:
    totals["turns"] += 1
    totals["total_ns"] += turn.duration_ns
    if turn.error is not None:
        totals["errors"] += 1
    usage = turn.usage
    if usage is None:
        return
    totals["turns_with_usage"] += 1
    for field in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        totals[field] += getattr(usage, field) or 0
    totals["cost_usd"] += usage.cost_usd or 0.0


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _table(title: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Rows under a heading: the first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in (title, *rows)) for i in range(len(title))]
    lines = []
    for row in (title, *rows):
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


def render(stats: dict[str, Any]) -> str:
    """The numbers of :func:`compute` as text."""
    state = "crashed" if stats["crashed"] else "complete"
    lines = [
        f"{stats['cassette']}: run {stats['run_id']} ({stats['entrypoint'] or '?'}), "
        f"level {stats['level']}, {state}",
        f"duration {format_ms(stats['duration_ns'])}, {stats['entries']} entries, "
        f"{len(stats['workers'])} worker(s)",
        "",
    ]
    lines += _table(("kind", "entries"), [(k, str(n)) for k, n in stats["kinds"].items()])
    if stats["workers"]:
        lines.append("")
        lines += _table(
            ("worker", "calls", "busy", "busy%"),
            [
                (name, str(w["calls"]), format_ms(w["busy_ns"]), _percent(w["busy_percent"]))
                for name, w in stats["workers"].items()
            ],
        )
    if stats["boundaries"]:
        lines.append("")
        lines += _table(
            ("boundary", "calls", "total", "mean", "max", "wall%"),
            [
                (
                    name,
                    str(b["count"]),
                    format_ms(b["total_ns"]),
                    format_ms(b["mean_ns"]),
                    format_ms(b["max_ns"]),
                    _percent(b["wall_percent"]),
                )
                for name, b in stats["boundaries"].items()
            ],
        )
    if stats["commands"]:
        lines.append("")
        lines += _table(
            ("command", "count", "total", "mean", "max"),
            [
                (
                    name,
                    str(c["count"]),
                    format_ms(c["total_ns"]),
                    format_ms(c["mean_ns"]),
                    format_ms(c["max_ns"]),
                )
                for name, c in stats["commands"].items()
            ],
        )
    if stats["agents"]:
        lines.append("")
        lines += _table(
            ("agent", "turns", "time", "tokens in", "tokens out", "cost"),
            [
                (
                    name,
                    str(a["turns"]),
                    format_ms(a["total_ns"]),
                    f"{a['input_tokens']:,}",
                    f"{a['output_tokens']:,}",
                    f"${a['cost_usd']:.4f}",
                )
                for name, a in stats["agents"].items()
            ],
        )
        without = sum(a["turns"] - a["turns_with_usage"] for a in stats["agents"].values())
        if without:
            lines.append(f"({without} turn(s) carried no usage and count as 0 tokens)")
    lines += _rates_lines(stats["rates"])
    lines += _errors_lines(stats["errors"])
    return "\n".join(lines)


def _rates_lines(rates: dict[str, Any]) -> list[str]:
    """Calls per minute per boundary and program, and the agents' tokens per minute."""
    if not rates["calls"]["calls"]:
        return []
    rows: list[tuple[str, ...]] = [
        (f"{kind} {name}", f"{r['per_minute']:,.1f}", f"{r['peak']:,}", str(r["peak_minute"]))
        for kind, table in (("boundary", rates["boundaries"]), ("program", rates["programs"]))
        for name, r in table.items()
    ]
    tokens = rates["agent_tokens"]
    if tokens["tokens"]:
        rows.append(
            ("agent tokens", f"{tokens['per_minute']:,.1f}", f"{tokens['peak']:,}",
             str(tokens["peak_minute"]))
        )  # fmt: skip
    return ["", *_table(("rate", "per minute", "peak", "peak minute"), rows)]


def _errors_lines(errors: dict[str, Any]) -> list[str]:
    """The failed calls per class, and the last failure of each class."""
    if not errors["total"]:
        return []
    rows: list[tuple[str, ...]] = [
        (name, str(c["count"]), f"seq {c['last']['seq']} ({c['last']['worker']}): "
         f"{c['last']['error']}")
        for name, c in errors["classes"].items()
    ]  # fmt: skip
    return ["", *_table(("error", "calls", "last"), rows)]


def run(args: argparse.Namespace) -> int:
    """``sessiontape stats``."""
    stats = compute(read_recording(args.path))
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print(render(stats))
    return 0
