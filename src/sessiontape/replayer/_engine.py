"""The replay engine: a loaded tape served to today's code, and the report of it.

The recording is indexed once into one FIFO queue per (boundary, worker). Boundaries ask
the engine to :meth:`~ReplayEngine.take` the entry answering a request (alignment, in
``_align.py``), then mark it :meth:`~ReplayEngine.served` (which moves the virtual clock).
Verify boundaries also wait for their recorded turn (``_order.py``). :meth:`finish` runs
the final checks and builds the report (``_outcome.py``).
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

from .._context import worker_var
from .._errors import UnrecordedCallError, UsageError
from ..cassette import (
    CallEntry,
    ErrorOrigin,
    Level,
    Payload,
    PayloadCodec,
    Recording,
    Sidecar,
    boundary_of,
)
from ..report import MismatchKind, ReplayMismatch, ReplayReport
from ..scrub import PathRoots, Scrubber, Unencodable, to_data
from ._align import Aligner
from ._clock import FakeClock
from ._correlate import Correlations
from ._index import TapeIndex
from ._invariants import Invariant, Invariants
from ._match import Matcher, Noise
from ._order import Progress
from ._outcome import Outcome
from ._payloads import answer_texts, served, stored
from ._select import Selectors
from ._serving import Serving
from ._timepatch import prepare as prepare_time
from ._turns import Turns
from ._update import Updater

__all__ = ["DEFAULT_LOOKAHEAD", "DEFAULT_ORDER_TIMEOUT", "UNSET", "ReplayEngine"]

#: How many entries ahead of the queue head a request may match before it counts as a
#: mismatch (the recorded calls in between are reported as unconsumed).
DEFAULT_LOOKAHEAD: Final = 8
#: Real seconds for which the whole replay must stand still (no call served, no live call
#: running) before a verify-boundary call waiting for its recorded turn gives up.
DEFAULT_ORDER_TIMEOUT: Final = 2.0
#: ``finish()`` called without an outcome: nothing to compare.
UNSET: Final[Any] = object()


def _default_roots(extra: Mapping[str, str] | None) -> PathRoots:
    """``PathRoots.default(extra)``, computed once per working directory, home, temp dir
    and extra roots: finding the git checkout and resolving symlinks costs more than a
    whole one-call replay, and a corpus replays many tapes from the same directory."""
    named = tuple(sorted((name, os.fspath(path)) for name, path in (extra or {}).items()))
    # HOME rather than expanduser("~"): the key only has to change when the home does.
    return _roots_for(os.getcwd(), os.environ.get("HOME"), tempfile.gettempdir(), named)


def prepare() -> None:
    """Do now the one-time work of the process's first replay: the fake clock's set-up
    (see ``_timepatch.prepare``) and the default path roots of this directory."""
    prepare_time()
    _default_roots(None)


@functools.lru_cache(maxsize=64)
def _roots_for(cwd: str, home: str, tmp: str, named: tuple[tuple[str, str], ...]) -> PathRoots:
    # cwd, home and tmp are the key: PathRoots.default reads them itself.
    return PathRoots.default(dict(named))


@functools.lru_cache(maxsize=64)
def _scrubber(roots: PathRoots, extra: tuple[Callable[[str], str], ...]) -> Scrubber:
    """One scrubber per roots and hook scrubbers: its memo of scrubbed texts then serves
    every replay of a corpus (scrubbing is a pure function of those two)."""
    return Scrubber(roots, extra=extra)


class ReplayEngine(Serving):
    """Serves one recording: queues, alignment, ordering, the clock and the outcome."""

    #: The project's declared invariants (``None``: none, and nothing is checked).
    _invariants: Invariants | None = None

    def __init__(
        self,
        recording: Recording,
        *,
        strict: bool = False,
        noise: Noise | None = None,
        matcher: Matcher | None = None,
        roots: Mapping[str, str] | PathRoots | None = None,
        scrubbers: Sequence[Callable[[str], str]] = (),
        lookahead: int = DEFAULT_LOOKAHEAD,
        order_timeout: float = DEFAULT_ORDER_TIMEOUT,
        update: bool | Literal["pending"] = False,
        live: Sequence[str] = (),
        app_version: str | None = None,
    ) -> None:
        level = Level.parse(recording.header.level)
        if level is not Level.FULL:
            raise UsageError(
                f"{recording.path}: the cassette was recorded at level {level.value!r}, which "
                "keeps no payloads; only level 'full' tapes replay. Re-record with level='full'."
            )
        self.recording = recording
        self._scrubbers = tuple(scrubbers)
        self.clock = FakeClock(recording.header.ts_ns, recording.header.mono_ns)
        #: The calls a live re-record runs for real (``None``: no live re-record).
        self.live = Selectors(live, recording) if live else None
        self._index = index = TapeIndex(recording, live=self.live)
        self.loaded = index.loaded
        self._outcome = Outcome(recording, strict=strict, loaded=index.loaded, hidden=index.hidden)
        self._outcome.live = tuple(self.live.texts) if self.live is not None else ()
        self._aligner = Aligner(
            recording,
            index,
            self._outcome,
            noise=noise or Noise(),
            matcher=matcher,
            lookahead=lookahead,
            answers=lambda entry, after, before: answer_texts(
                self.codec, recording, entry, after, before
            ),
            skipped=lambda entry: self.turns.skipped(entry),
        )
        #: The values the program made up today, carried into the answers that echo them.
        self.correlations: Correlations = self._aligner.correlations
        self._outcome.correlations = self.correlations
        #: Whether the replay is moving: a verify call waiting for its turn watches it.
        self.progress = Progress(self._outcome.served)
        self._set_roots(roots)
        #: Whether this replay rewrites its tape to match today's code (update mode, or a
        #: live re-record): a verify call the tape lacks then runs and is added.
        self.updating = bool(update) or bool(live)
        #: The update or live re-record this replay makes (``None``: a plain replay).
        self.updater = (
            Updater(
                recording,
                self._outcome,
                update=bool(update),
                live=self.live,
                app_version=app_version,
                clock=self.clock,
                pending=update == "pending",
            )
            if update or live
            else None
        )
        #: The recorded orders of the stores' calls (see ``_turns``); an update goes on
        #: past a recorded call that never comes.
        self.turns = Turns(
            index.verify_order,
            order_timeout,
            self.progress,
            index.queues,
            self.mismatch,
            skip_missing=self.updater is not None,
        )
        #: Each store's sequencer, which every store call asks (``wait_turn``, ``turn_done``).
        self._sequencers = self.turns.sequencers

    # -- settings ---------------------------------------------------------------------

    @property
    def strict(self) -> bool:
        """Whether the first mismatch stops the replay with :class:`ReplayMismatch`."""
        return self._outcome.strict

    @property
    def noise(self) -> Noise:
        """The noise masks and patterns every request comparison applies."""
        return self._aligner.noise

    @property
    def lookahead(self) -> int:
        """How far ahead of its queue's head a request may match."""
        return self._aligner.lookahead

    @property
    def report(self) -> ReplayReport | None:
        """The report, once :meth:`finish` has run."""
        return self._outcome.report

    def _set_roots(self, roots: Mapping[str, str] | PathRoots | None) -> None:
        self.roots = roots if isinstance(roots, PathRoots) else _default_roots(roots)
        self.scrubber = _scrubber(self.roots, self._scrubbers)
        self._outcome.scrub = self.scrubber.secrets
        self.codec = PayloadCodec(
            Level.FULL,
            scrub=self.scrubber.text,
            expand=self.roots.expand,
            sidecar=Sidecar(self.recording.path),
        )

    def set_roots(self, roots: Mapping[str, str] | PathRoots) -> None:
        """Name today's directories for the recorded path placeholders (before any call)."""
        if self._outcome.started:
            raise UsageError(
                "set_roots() must come before the first replayed call: requests already "
                "matched were normalised with the old roots."
            )
        self._set_roots(roots)

    # -- serving: see ``_serving.Serving`` -----------------------------------------------

    def payload(
        self, entry: CallEntry, stored: Payload | msgspec.Raw, field: str, *, text: bool
    ) -> Any:
        """A recorded payload as served today (placeholders expanded, and the values the
        program made up today in place of the recorded ones); see
        :func:`._payloads.served` for the errors of a digest-only or damaged payload."""
        value = served(self.codec, self.recording, entry, stored, field, text=text)
        if self.correlations.pairs:
            where = (boundary_of(entry) or "", entry.worker, entry.seq, field)
            return self.correlations.answer(*where, value)
        return value

    def stored(self, entry: CallEntry, value: Payload | msgspec.Raw, field: str) -> Payload:
        """A process call's ``stdout`` or ``stderr`` as stored (see :func:`._payloads.stored`)."""
        return stored(self.recording, entry, value, field)

    def unanswered(self, boundary: str, what: str) -> UnrecordedCallError:
        """The error raised when a call has no recorded answer."""
        worker = worker_var.get()
        self.turns.stopped(worker)
        # ``what`` shows today's request, which may hold a secret: redacted, as the report
        # it also reaches (and the receipt on disk) must be.
        what = self.scrubber.secrets(what)
        return UnrecordedCallError(
            f"sessiontape: worker {worker!r}: {what} has no recorded answer on "
            f"{self.recording.path}; see the replay report.",
            boundary=boundary,
            worker=worker,
        )

    def mismatch(self, kind: MismatchKind, **fields: Any) -> None:
        """Report a mismatch a boundary found (see :meth:`Outcome.mismatch`)."""
        self._outcome.mismatch(kind, **fields)

    def unseen_process(self, event: str, command: str, where: str) -> None:
        """A process was started outside the interception (see :meth:`Outcome.unseen_process`)."""
        self._outcome.unseen_process(event, command, where, worker_var.get())

    # -- update mode ------------------------------------------------------------------

    def verifies(self, boundary: str) -> None:
        """Note that ``boundary`` runs for real: update mode adds its calls the tape lacks."""
        self._outcome.verify.add(boundary)
        if self.updater is not None:
            self.updater.verify.add(boundary)

    def add_call(self, entry: CallEntry) -> None:
        """Update mode: add ``entry`` (made for real just now) after the worker's last call."""
        self.progress.moved()
        if self.updater is not None:
            self.updater.add(entry, self._outcome.position)

    def worker_crashed(
        self, exc: BaseException, frame: str | None = None, origin: ErrorOrigin = "thread"
    ) -> None:
        """An exception ended the calling worker (its thread, or a future or task nobody
        read): passes when it reproduces the worker's recorded crash, is an
        ``error_mismatch`` when it differs from it, an ``application_error`` when the
        worker did not crash in the recording."""
        if isinstance(exc, Exception) and self._outcome.crashes.met(
            exc, worker_var.get(), origin, self.scrubber
        ):
            return
        self.application_error(exc, frame)

    def application_error(self, exc: BaseException, frame: str | None = None) -> None:
        """Report an exception that ended the calling worker, unlike the recording."""
        worker = worker_var.get()
        self._outcome.application_error(exc, worker, frame)
        self.turns.stopped(worker)

    # -- ordering of verify boundaries --------------------------------------------------

    def wait_turn(self, name: str, boundary: str, seq: int) -> None:
        """Wait until the recorded call ``seq`` of store ``name`` is next in its order (an
        update goes on past a recorded call that never comes: ``Turns.skip_missing``);
        a call waited for in vain breaks the order, reported once (``Turns.broke``)."""
        # Every store call's path: the store's sequencer asked directly, not through Turns.
        sequencer = self._sequencers.get(name)
        if sequencer is None or sequencer.broken:
            return
        turns = self.turns
        waited_on = sequencer.wait_turn(seq, skip_missing=turns.skip_missing)
        if waited_on is not None:
            turns.broke(name, boundary, seq, waited_on)

    def wait_order_end(self, name: str) -> None:
        """Wait until every recorded call of store ``name`` has run: where a call the
        tape lacks, from a worker with none of that store's calls left, takes its turn."""
        self.turns.wait_all(name)

    def turn_done(self, name: str, seq: int) -> None:
        """The recorded call ``seq`` of store ``name`` has run: let the next one through."""
        # ``Turns.done`` inline: every store call's path.
        sequencer = self._sequencers.get(name)
        if sequencer is not None:
            sequencer.done(seq)

    # -- invariants ---------------------------------------------------------------------

    def add_invariant(self, check: Invariant) -> None:
        """Check ``check`` after every verify-boundary call and at the end; a violation
        is an ``invariant_violated`` mismatch (see ``_invariants.py``)."""
        if self._invariants is None:
            self._invariants = Invariants(self._outcome)
            # Only now does turn_done check anything: a replay with no invariant keeps the
            # plain method, with no check per call.
            self.turn_done = self._invariants.checking(self.turn_done)  # type: ignore[method-assign,assignment]
        self._invariants.add(check)

    # -- data -------------------------------------------------------------------------

    @staticmethod
    def raw(value: Any) -> Any:
        """``value`` as JSON data, not yet scrubbed (an unencodable value as its repr)."""
        if not value and (type(value) is dict or type(value) is list):
            return type(value)()
        try:
            return to_data(value)
        except Unencodable:
            return {"$repr": repr(value)}

    def data(self, value: Any) -> Any:
        """``value`` as JSON data scrubbed as at record time."""
        return self.scrubber.data(self.raw(value))

    # -- ending -----------------------------------------------------------------------

    def finish(self, outcome: Any = UNSET) -> ReplayReport:
        """Run the final checks and return the report (raising in strict mode if not ok)."""
        done = self._outcome
        if done.report is not None:
            return done.report
        self._check_the_end(outcome)
        done.check_unconsumed(self._unconsumed())
        updater = self.updater
        done.report = done.build_report() if updater is None else updater.finish(self.noise)
        if done.strict and not done.report.ok:
            raise ReplayMismatch(done.report)
        return done.report

    def _check_the_end(self, outcome: Any) -> None:
        """The checks of a run that reached its end: outcome, crash, invariants."""
        done = self._outcome
        if outcome is not UNSET and self.recording.end is not None:
            # Scrubbed only if it differs: the rules compile on first use (20 ms a process).
            done.check_outcome(self.raw(outcome), self.scrubber.data)
        done.check_no_crash()
        done.crashes.check_missed()
        if self._invariants is not None:
            self._invariants.check("session", None)

    def _unconsumed(self) -> list[tuple[tuple[str, str], deque[CallEntry]]]:
        """The queues whose calls left over are reported unconsumed."""
        return self._index.remaining()

    def close(self, exc: BaseException | None) -> bool:
        """Finish the replay; return whether ``exc`` reproduces the recorded crash."""
        done = self._outcome
        reproduced = exc is not None and done.check_crash(exc, self.scrubber)
        if done.report is None and not isinstance(exc, ReplayMismatch):
            strict, done.strict = done.strict, False
            try:
                self.finish()
            finally:
                done.strict = strict
        if exc is not None and not reproduced and done.report is not None:
            _explain(exc, done.report)
        return reproduced


def _explain(exc: BaseException, report: ReplayReport) -> None:
    """Name, on the exception that ends a replay, the command that records the calls the
    tape had no answer for: a traceback is all some callers see."""
    record = report.record_command()
    if record is None:
        return
    note = f"sessiontape: the tape has no answer for some calls; record them for real: {record}"
    if hasattr(exc, "add_note"):  # Python 3.11+
        if note not in getattr(exc, "__notes__", ()):
            exc.add_note(note)
    elif isinstance(exc, UnrecordedCallError) and exc.args and note not in str(exc.args[0]):
        exc.args = (f"{exc.args[0]}\n{note}", *exc.args[1:])
