"""Times a program read between two calls and sent in a request: matched by their gap.

A program that reads the clock between boundary calls (``time.time()``,
``datetime.now()``, ``time.monotonic()``) and sends what it read reads, on replay, the
virtual clock: the end of the last call served (plus any virtual sleep since), not what
production read. Both readings lie in the same recorded gap, though: after the same call
ended and before the next one started. So a time in a request (a number, or an ISO-8601
text, or a number inside a text) that differs from the recorded one is taken as equal to
it when both fall in the same interval between the starts and ends of the recorded calls
of the request's worker. Nothing is recorded for it: recording costs nothing more.

A value is read as wall time in seconds, milliseconds, microseconds or nanoseconds since
the epoch, or as monotonic seconds or nanoseconds, whichever puts both values inside the
tape; both must be read the same way. A naive ISO text is read as UTC, and a recorded one
also as this machine's local time (production's ``datetime.now()`` is local time, the
virtual clock's naive ``now()`` is UTC).
"""

from __future__ import annotations

import bisect
import datetime as _dt
import re
import threading
from collections.abc import Iterator
from typing import Final

from .._time import EPOCH_UTC
from ..cassette import Recording

__all__ = ["TimeGaps"]

_NUMBER: Final = r"\d+(?:\.\d+)?"
_ISO: Final = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?"
#: How far a float reading may be off its true value, in ns (a float of seconds since
#: the epoch holds about a quarter of a microsecond).
_FLOAT_SLACK_NS: Final = 1_000
#: ns per unit a number may be counted in, wall time first.
_WALL_UNITS: Final = (1_000_000_000, 1_000_000, 1_000, 1)
_MONO_UNITS: Final = (1_000_000_000, 1)


class TimeGaps:
    """The recorded calls' starts and ends per worker, on the wall and monotonic clocks."""

    def __init__(self, recording: Recording) -> None:
        self._recording = recording
        self._lock = threading.Lock()
        self._by_worker: dict[str, tuple[list[int], list[int]]] | None = None

    def _events(self, worker: str) -> tuple[list[int], list[int]]:
        with self._lock:
            if self._by_worker is None:
                header = self._recording.header
                wall: dict[str, list[int]] = {}
                mono: dict[str, list[int]] = {}
                for entry in self._recording.calls:
                    if entry.worker not in wall:  # the session's start opens every timeline
                        wall[entry.worker] = [header.ts_ns]
                        mono[entry.worker] = [header.mono_ns]
                    duration = entry.duration_ns or 0
                    wall[entry.worker].extend((entry.ts_ns, entry.ts_ns + duration))
                    mono[entry.worker].extend((entry.mono_ns, entry.mono_ns + duration))
                self._by_worker = {w: (sorted(wall[w]), sorted(mono[w])) for w in wall}
            return self._by_worker.get(worker, ([], []))

    def same(self, worker: str, recorded: object, today: object) -> bool:
        """Whether ``recorded`` and ``today`` are times read in the same gap between the
        recorded calls of ``worker`` (see the module's documentation): two numbers, or
        two texts that are numbers or ISO-8601 times."""
        if recorded == today:
            return False
        if isinstance(recorded, str) and isinstance(today, str):
            # re's own cache compiles these once, when first needed (not at import).
            if re.fullmatch(_NUMBER, recorded) and re.fullmatch(_NUMBER, today):
                kind: type = float if "." in recorded or "." in today else int
                return self.same(worker, kind(recorded), kind(today))
            if re.fullmatch(_ISO, recorded) and re.fullmatch(_ISO, today):
                return self._same_iso(worker, recorded, today)
            return False
        if (
            isinstance(recorded, (int, float))
            and isinstance(today, (int, float))
            and not isinstance(recorded, bool)
            and not isinstance(today, bool)
        ):
            return self._same_number(worker, recorded, today)
        return False

    def _same_number(self, worker: str, recorded: int | float, today: int | float) -> bool:
        wall, mono = self._events(worker)
        if not wall:
            return False
        floats = isinstance(recorded, float) or isinstance(today, float)
        for events, units in ((wall, _WALL_UNITS), (mono, _MONO_UNITS)):
            for unit in units:
                if floats and unit < 1_000_000:
                    continue  # a float counts seconds or milliseconds
                if _same_gap(events, _span(recorded, unit), _span(today, unit)):
                    return True
        return False

    def _same_iso(self, worker: str, recorded: str, today: str) -> bool:
        wall, _ = self._events(worker)
        now = _iso_ns(today, local=False)
        if not wall or now is None:
            return False
        for local in (False, True):
            then = _iso_ns(recorded, local=local)
            # An ISO text holds microseconds at most.
            if then is not None and _same_gap(wall, (then, then + 1_000), (now, now + 1_000)):
                return True
        return False


def _span(value: int | float, unit: int) -> tuple[int, int]:
    """The ns a reading counted in ``unit`` stands for: ``[low, high)``."""
    if isinstance(value, float):
        ns = round(value * unit)
        return ns - _FLOAT_SLACK_NS, ns + _FLOAT_SLACK_NS
    return value * unit, (value + 1) * unit


def _gaps(events: list[int], span: tuple[int, int]) -> Iterator[int]:
    """The intervals between recorded events that ``span`` touches (none outside the tape)."""
    low, high = span
    if high < events[0] or low > events[-1]:
        return iter(())
    return iter(range(bisect.bisect_right(events, low), bisect.bisect_right(events, high) + 1))


def _same_gap(events: list[int], recorded: tuple[int, int], today: tuple[int, int]) -> bool:
    then = set(_gaps(events, recorded))
    return bool(then) and any(gap in then for gap in _gaps(events, today))


def _iso_ns(text: str, *, local: bool) -> int | None:
    """ns since the epoch of an ISO-8601 text; a naive one as UTC, or as local time."""
    try:
        moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:  # naive: UTC, or this machine's local time
        moment = moment.astimezone() if local else moment.replace(tzinfo=_dt.timezone.utc)
    delta = moment - EPOCH_UTC
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
