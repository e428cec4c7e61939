"""How fast a run called: calls per minute per boundary and per program, tokens per minute.

Each call counts in the minute of the run it started in (minute 0 is the session's first
60 seconds, on the recorded monotonic clock). A rate over the run is the count divided
by the run's length in minutes (at least one minute, so a short test run's rate is not
inflated); the peak is the busiest single minute. The agent boundary's tokens (input
plus output, as the turns' usage recorded them) are counted the same way, so a
rate-limit incident shows in its tape as a peak just before the errors.
"""

from __future__ import annotations

from typing import Any, Final, final

from ..cassette import AgentTurn, CallEntry, ProcessCall

__all__ = ["MINUTE_NS", "Rates", "program_name"]

MINUTE_NS: Final = 60_000_000_000


def program_name(argv: list[str]) -> str:
    """The program a process call ran: its argv[0] without the directory."""
    return argv[0].replace("\\", "/").rsplit("/", 1)[-1] if argv else "?"


@final
class _Counter:
    """A total and a count per minute."""

    __slots__ = ("minutes", "total")

    def __init__(self) -> None:
        self.total = 0
        self.minutes: dict[int, int] = {}

    def add(self, minute: int, amount: int = 1) -> None:
        self.total += amount
        self.minutes[minute] = self.minutes.get(minute, 0) + amount

    def as_dict(self, span_minutes: float, unit: str) -> dict[str, Any]:
        peak_minute, peak = (
            min(self.minutes.items(), key=lambda kv: (-kv[1], kv[0])) if self.minutes else (0, 0)
        )
        return {
            unit: self.total,
            "per_minute": round(self.total / span_minutes, 2),
            "peak_minute": peak_minute,
            "peak": peak,
        }


@final
class Rates:
    """Calls per minute per boundary and per program, and the agents' tokens per minute."""

    def __init__(self, origin: int) -> None:
        self._origin = origin
        self.calls = _Counter()
        self.boundaries: dict[str, _Counter] = {}
        self.programs: dict[str, _Counter] = {}
        self.tokens = _Counter()

    def add(self, call: CallEntry, boundary: str) -> None:
        """Count one call of ``boundary`` (its program and tokens too)."""
        minute = max(0, call.mono_ns - self._origin) // MINUTE_NS
        self.calls.add(minute)
        _counter(self.boundaries, boundary).add(minute)
        if isinstance(call, ProcessCall):
            _counter(self.programs, program_name(call.argv)).add(minute)
        elif isinstance(call, AgentTurn) and call.usage is not None:
            usage = call.usage
            self.tokens.add(minute, (usage.input_tokens or 0) + (usage.output_tokens or 0))

    def as_dict(self, duration_ns: int) -> dict[str, Any]:
        """The rates as JSON-ready data, over a run of ``duration_ns``."""
        span = max(1.0, duration_ns / MINUTE_NS)
        return {
            "minutes": round(duration_ns / MINUTE_NS, 2),
            "calls": self.calls.as_dict(span, "calls"),
            "boundaries": {
                name: c.as_dict(span, "calls")
                for name, c in sorted(self.boundaries.items(), key=lambda kv: -kv[1].total)
            },
            "programs": {
                name: c.as_dict(span, "calls")
                for name, c in sorted(self.programs.items(), key=lambda kv: (-kv[1].total, kv[0]))
            },
            "agent_tokens": self.tokens.as_dict(span, "tokens"),
        }


def _counter(table: dict[str, _Counter], key: str) -> _Counter:
    counter = table.get(key)
    if counter is None:
        counter = table[key] = _Counter()
    return counter
