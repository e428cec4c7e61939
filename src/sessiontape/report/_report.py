"""The replay report: structured data first, readable text second.

The replay engine builds a :class:`ReplayReport` out of :class:`Mismatch` objects; this
module owns its JSON form (a receipt a CI job can keep) and its text form (what a failing
pytest item shows), and :class:`ReplayMismatch`, the error that carries it.
"""

from __future__ import annotations

import shlex
from typing import Any

import msgspec

from .._errors import SessiontapeError
from ._advice import LIVE_KINDS, suggest_next_step
from ._diff import diff_values
from ._fork import ForkResult
from ._model import Correlation, Mismatch, MismatchKind, compute_ok
from ._rewrites import Rewrite, pending_line, render_rewrites
from ._values import json_enc_hook, jsonable, restore_missing, summarize_value

__all__ = ["ReplayMismatch", "ReplayReport", "render_field_change"]


def format_duration(ns: int) -> str:
    if ns < 1_000_000:
        return f"{ns / 1000:.0f} µs"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.1f} ms"
    seconds = ns / 1_000_000_000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    return f"{minutes}m {secs:02d}s"


def plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


class _Style:
    """ANSI styling that turns into plain text when colour is off."""

    __slots__ = ("color",)

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def bad(self, text: str) -> str:
        return self._wrap("1;31", text)

    def good(self, text: str) -> str:
        return self._wrap("1;32", text)

    def expected(self, text: str) -> str:
        return self._wrap("32", text)

    def actual(self, text: str) -> str:
        return self._wrap("31", text)

    def hint(self, text: str) -> str:
        return self._wrap("1;33", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)


def render_field_change(field: str, old: Any, new: Any, *, color: bool) -> list[str]:
    """One changed field as a reviewer sees it: the field diff of ``old`` against
    ``new`` (nested values down to the fields that differ, their paths as in a mismatch),
    each path with its old value (``-``, red) and its new one (``+``, green); a value only
    one side has is shown whole."""
    style = _Style(color)
    if old is None or new is None:
        sign, value, paint = ("-", old, style.actual) if new is None else ("+", new, style.expected)
        label = f"{field}: " if field else ""
        return [paint(f"  {sign} {label}{summarize_value(value, 100)}")]
    diffs = diff_values(old, new, field)
    lines: list[str] = []
    for d in diffs:
        path = d.path or "<value>"
        lines.append(style.actual(f"  - {path}: {summarize_value(d.expected, 100)}"))
        lines.append(style.expected(f"  + {path}: {summarize_value(d.actual, 100)}"))
    return lines


class ReplayReport(msgspec.Struct, kw_only=True):
    """The outcome of replaying one cassette, as data; :meth:`render` gives the text form.

    ``loaded`` counts the call entries available to replay, ``consumed`` those served,
    ``unconsumed`` those never requested, ``extra`` the calls made that had no entry.
    ``crashed`` says the tape is of a session that crashed. ``context`` holds one-line
    summaries of the entries just before the first divergence. ``warnings`` are what a
    lenient replay noticed without failing: processes started outside the interception
    (``unseen_process``), each with where it was started.
    """

    cassette: str
    run_id: str
    ok: bool
    strict: bool
    loaded: int
    consumed: int
    unconsumed: int
    extra: int
    mismatches: list[Mismatch] = []
    recorded_duration_ns: int = 0
    replay_duration_ns: int = 0
    crashed: bool = False
    context: list[str] = []
    workers: list[str] = []
    warnings: list[Mismatch] = []
    #: The changes an update or a live re-record made to the tape (see ``Rewrite``).
    rewrites: list[Rewrite] = []
    #: Where the changed tape was written (``None``: nothing was written).
    rewritten_to: str | None = None
    #: Where the changes were written for a reviewer instead (``--sessiontape-update=
    #: pending``: ``NAME.pending``; ``None``: nowhere), and the category of each change.
    pending_to: str | None = None
    pending: list[str] = []
    #: The values today's run made up in place of recorded ones, carried into the
    #: answers that echo them, and the times read between calls matched within their gap.
    correlations: list[Correlation] = []
    #: The ``--sessiontape-live`` selector that records the calls the tape has no answer
    #: for (``None``: there is none), built from the workers that made them.
    live_selector: str | None = None
    #: What the tape is, when it is a saved chaos schedule: the schedule, the failure it
    #: was saved with, and the workers stopped where the schedule stopped them.
    saved_schedule: str | None = None
    #: What a fork did (``--sessiontape-fork``; ``None``: the replay was not a fork).
    fork: ForkResult | None = None

    compute_ok = staticmethod(compute_ok)

    # -- data ----------------------------------------------------------------------------

    def ordered_mismatches(self) -> list[Mismatch]:
        """The mismatches earliest first.

        The replay engine stores them in timeline order (where in each worker's recorded
        sequence the divergence happened), so this is the stored order.
        """
        return list(self.mismatches)

    @property
    def first(self) -> Mismatch | None:
        """The earliest divergence, or ``None`` when there is none."""
        return self.mismatches[0] if self.mismatches else None

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready builtins (bytes as ``{"base64": ...}``, MISSING as text)."""
        result: dict[str, Any] = jsonable(self)
        return result

    def to_json(self) -> bytes:
        """The report as JSON: the receipt a CI job can keep and :meth:`from_json` reads back."""
        return msgspec.json.encode(self.to_dict(), enc_hook=json_enc_hook)

    @classmethod
    def from_json(cls, data: bytes | str) -> ReplayReport:
        """Read a report written by :meth:`to_json`.

        ``"<missing>"`` on either side of a field diff comes back as :data:`MISSING`; bytes
        stay in their ``{"base64": ...}`` form and tuples become lists.
        """
        report = msgspec.json.decode(data, type=cls)
        report.mismatches = [
            msgspec.structs.replace(
                m,
                diffs=[
                    msgspec.structs.replace(
                        d,
                        expected=restore_missing(d.expected),
                        actual=restore_missing(d.actual),
                    )
                    for d in m.diffs
                ],
            )
            for m in report.mismatches
        ]
        return report

    # -- text ----------------------------------------------------------------------------

    def _headline(self, style: _Style, first: Mismatch | None) -> str:
        where = f"replay of {self.cassette}"
        if self.pending_to is not None and first is None:
            return style.bad(pending_line(self.cassette, self.pending))
        if first is not None:
            at = f"at seq {first.seq}" if first.seq is not None else "at an unrecorded call"
            return style.bad(
                f"{where} diverged {at} ({first.worker}, {first.boundary}): {first.kind.value}"
            )
        if self.ok:
            return style.good(f"{where} matched: {plural(self.consumed, 'call')} served")
        if self.consumed == 0:
            if self.loaded == 0:
                return style.bad(f"{where} served nothing: the cassette holds no calls to replay")
            return style.bad(
                f"{where} served nothing: none of the {plural(self.loaded, 'recorded call')} "
                "was requested"
            )
        return style.bad(f"{where} failed: {plural(self.consumed, 'call')} served")

    def _counts(self) -> str:
        parts = [
            f"calls: {self.loaded} loaded, {self.consumed} consumed, "
            f"{self.unconsumed} unconsumed, {self.extra} extra",
            plural(len(self.mismatches), "mismatch", "mismatches"),
            "strict" if self.strict else "lenient",
        ]
        if self.recorded_duration_ns or self.replay_duration_ns:
            parts.append(
                f"recorded {format_duration(self.recorded_duration_ns)}, "
                f"replayed {format_duration(self.replay_duration_ns)}"
            )
        if self.crashed:
            parts.append("tape of a crashed session")
        return "; ".join(parts)

    def _render_mismatch(
        self, m: Mismatch, index: int, total: int, style: _Style, max_diffs: int
    ) -> list[str]:
        at = f"seq {m.seq}" if m.seq is not None else "an unrecorded call"
        label = f"mismatch {index} of {total}" if total > 1 else "mismatch"
        lines = [style.bad(f"{label}: {m.kind.value} at {at} ({m.worker}, {m.boundary})")]
        lines.append(f"  {m.message}")
        for d in m.diffs[:max_diffs]:
            lines.append(
                f"  {d.path or '<value>'}: expected "
                f"{style.expected(summarize_value(d.expected, 60))} got "
                f"{style.actual(summarize_value(d.actual, 60))}"
            )
            if d.detail:
                lines.append(f"    {d.detail}")
        hidden = len(m.diffs[max_diffs:]) + m.omitted_diffs
        if hidden:
            lines.append(f"  ... and {plural(hidden, 'more differing field')}")
        if not m.diffs:
            # Kinds about results show both sides even when one is None: None is the news.
            both = m.kind in (
                MismatchKind.STORE_MISMATCH,
                MismatchKind.OUTCOME_MISMATCH,
                MismatchKind.ERROR_MISMATCH,
            ) or (m.expected is not None and m.actual is not None)
            if both or m.expected is not None:
                lines.append(f"  expected: {style.expected(summarize_value(m.expected))}")
            if both or m.actual is not None:
                lines.append(f"  actual:   {style.actual(summarize_value(m.actual))}")
        if m.nearest is not None:
            n = m.nearest
            how = "same request" if n.distance == 0 else plural(n.distance, "differing field")
            lines.append(f"  nearest recorded call: seq {n.seq} ({n.worker}), {how}: {n.summary}")
        next_step = m.next_step or suggest_next_step(m.kind, m.boundary, m.worker, m.diffs)
        lines.append(f"  {style.hint('next:')} {next_step}")
        return lines

    def record_command(self, pytest_command: str | None = None) -> str | None:
        """The commands that record the calls the tape has no answer for (``None``: there
        is none): ``pytest_command`` (the pytest run that replays this tape; by default
        ``pytest --replay CASSETTE``) with the live selector, and the same in Python."""
        selector = self.live_selector
        if selector is None:
            return None
        run = pytest_command or f"pytest --replay {shlex.quote(self.cassette)}"
        live = selector.split(",")
        return (
            f"{run} --sessiontape-live={selector} --sessiontape-update (in Python: "
            f"sessiontape.replay({self.cassette!r}, live={live!r}, update=True))"
        )

    def render(
        self,
        *,
        color: bool = False,
        max_mismatches: int = 20,
        max_diffs: int = 10,
        pytest_command: str | None = None,
    ) -> str:
        """The report as text, first divergence first, in the spirit of pytest's assertions.

        A headline, a counts line, the command that records the calls the tape cannot
        answer (if any), the context before the first divergence, then one block per
        mismatch (field diffs, nearest recorded call, next step), at most
        ``max_mismatches`` blocks of at most ``max_diffs`` field diffs each.
        ``pytest_command`` is the pytest run that replays this tape (see
        :meth:`record_command`).
        """
        style = _Style(color)
        ordered = self.ordered_mismatches()
        first = ordered[0] if ordered else None
        lines = [self._headline(style, first), self._counts()]
        record = self.record_command(pytest_command)
        if record is not None and self.live_selector is not None:
            parts = self.live_selector.split(",")
            picked = {part.split("@", 1)[0].split(":", 1)[0] for part in parts}
            unanswered = sum(1 for m in ordered if m.kind in LIVE_KINDS and m.boundary in picked)
            lines.append(
                style.hint(
                    f"{plural(unanswered, 'call')} the tape has no answer for; record them "
                    f"for real: {record}"
                )
            )
        if self.workers:
            lines.append(f"workers: {', '.join(self.workers)}")
        if self.saved_schedule:
            lines.append(f"saved schedule: {self.saved_schedule}")
        if self.fork is not None:
            lines.append(self.fork.line())
        lines.extend(render_rewrites(self.rewrites, self.rewritten_to, self.pending_to))
        if self.correlations:
            lines.append(
                plural(len(self.correlations), "value", "values")
                + " made up today or read between calls, followed:"
            )
            lines.extend(f"  {c.render()}" for c in self.correlations[:max_mismatches])
            if len(self.correlations) > max_mismatches:
                rest = len(self.correlations) - max_mismatches
                lines.append(f"  and {rest} more (see the JSON report)")
        if first is not None and self.context:
            lines.append("context before the divergence:")
            lines.extend(style.dim(f"  {line}") for line in self.context)
        shown = ordered[: max(max_mismatches, 0)]
        for i, m in enumerate(shown, 1):
            lines.append("")
            lines.extend(self._render_mismatch(m, i, len(ordered), style, max_diffs))
        rest = len(ordered) - len(shown)
        if rest:
            lines.append("")
            more = plural(rest, "more mismatch", "more mismatches")
            lines.append(f"and {more} (see the JSON report)")
        if self.warnings:
            lines.append("")
            lines.append(style.bad(plural(len(self.warnings), "warning", "warnings") + ":"))
            for w in self.warnings[: max(max_mismatches, 0)]:
                lines.append(f"  {w.kind.value} ({w.worker}): {w.message}")
            if len(self.warnings) > max_mismatches:
                lines.append(
                    f"  and {len(self.warnings) - max_mismatches} more (see the JSON report)"
                )
            lines.append(f"  next step: {self.warnings[0].next_step}")
        return "\n".join(lines)


class ReplayMismatch(SessiontapeError, AssertionError):
    """Strict replay stopped at the first divergence; ``report`` holds the details."""

    __module__ = "sessiontape"  # its public name, in tracebacks and for pickle

    def __init__(self, report: ReplayReport) -> None:
        super().__init__(report.render())
        self.report = report
