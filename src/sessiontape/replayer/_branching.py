"""A replay that parts from its tape at a call: what answers each call before and after.

:class:`Branching` is the serving part of a fork (``_fork.py`` holds the rest): until the
call recorded at :attr:`Fork.seq` comes, it serves the tape as a plain replay does. That
call is answered by the answer given (the recorded entry with the answer in place of its
own, standing in its queue), or runs live: its queue answers nothing to the worker's
next take, and :meth:`Branching.unanswered` raises :class:`RunLive`, which the live
wrappers of ``tape/_live.py`` (the ones ``--sessiontape-live`` uses) catch before anything
was served, to run the call for real. From then on each call is answered by a recorded
call not yet used that asked exactly the same, whichever worker recorded it
(``_asked.py``: its worker's next call when it asked the same, else looked up in an index
made the first time one is needed), and any other runs live, or, when live
calls are forbidden, stops its worker with :class:`ForkStopped`. A worker still short of
its calls before the fork is served them in the tape's order. Verify calls (the stores)
run for real as always; after the fork their results are today's, and the recorded order
holds only for the calls before it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

import msgspec

from .._context import worker_var
from .._errors import UnrecordedCallError
from ..cassette import CallEntry, ProcessCall, boundary_of, request_of
from ..report import FieldDiff, MismatchKind, summarize_value
from ._align import Normalize
from ._asked import Asked
from ._branch import Branch
from ._conversation import turn_of
from ._engine import ReplayEngine
from ._match import Path as MatchPath
from ._scheduler import ScheduleStopped

__all__ = ["Branching", "Fork", "ForkStopped", "RunLive"]


@dataclasses.dataclass(frozen=True)
class Fork:
    """Where and how to fork a tape: at the call recorded at ``seq``.

    ``answer`` is what that call returns instead of its recorded answer: for a process
    call a mapping of ``returncode``, ``stdout`` and ``stderr`` (the ones left out keep
    their recorded values), for a conversation one turn's (``{"turn": N, "stdout": ...}``:
    see ``_conversation.py``), for an agent turn or a user boundary's call the result as
    JSON data (a ``StepResult``'s fields). ``None``: the call runs live. With ``live``
    false, a call after the fork that no recorded call answers stops the fork (the result
    names it) instead of running live.
    """

    seq: int
    answer: Any = None
    live: bool = True


class RunLive(UnrecordedCallError):
    """Raised by a fork's replay side for a call the tape cannot answer: the live
    wrappers catch it and run the call for real. Seen by the application only when the
    boundary was wired without its real object (``tape.agent()`` with no adapter)."""


class ForkStopped(ScheduleStopped):
    """Ends the worker whose call the tape cannot answer in a fork that may not run it
    live (live calls forbidden, or a turn of a conversation): a ``BaseException``, as a
    stopped schedule's, so the application does not carry on."""


class Branching(ReplayEngine):
    """The serving part of a fork (see the module's documentation); ``_fork.ForkEngine``
    calls :meth:`_branch_from` once the fork is known."""

    fork: Fork
    _fork_entry: CallEntry

    def _branch_from(self, fork: Fork, entry: CallEntry, *, after: int | None = None) -> None:
        """Fork at ``entry`` (its queue holds it: the recorded call, or the answer); for a
        conversation answered at one turn, ``after`` is its first chunk after the answer."""
        self.fork = fork
        self._fork_entry = entry
        self._after_chunk = after
        self.branch = Branch()
        self._lock = threading.Lock()
        self._forked = False
        self._used: set[int] = set()
        self._asked: Asked | None = None
        #: (boundary, worker) of the call at the fork, when it runs live: its next take.
        self._live_next: tuple[str, str] | None = None
        self._fork_live_worker: str | None = None
        #: The call that stopped a fork that may not run live (``None``: none did).
        self._stopped: str | None = None
        #: What to do instead, where running the call that stopped it live cannot help.
        self._advice: str | None = None
        self._missed: dict[str, Mapping[str, Any]] = {}
        self._verify_set = frozenset(s for o in self._index.verify_order.values() for s in o)

    # -- the fork point -------------------------------------------------------------------

    def _part(self) -> None:
        """The fork parts from the tape: index the recorded calls not yet used."""
        with self._lock:
            if self._forked:
                return
            # The calls before the fork stay their workers' own, served in the tape's order.
            # The calls after it are looked up by content (``_asked.py``), indexed only
            # when a call is not its worker's next. The lookup is made before any worker
            # is told the fork has parted (it reads ``_forked`` without the lock).
            seq = self.fork.seq
            self._asked = Asked(self._after_fork, self._used, self._aligner.matches, self._next_of)
            # A verify call the tape lacks now runs for real and joins the branch.
            self.updating = True
            self._forked = True
            # The stores' recorded order holds before the fork only: every recorded verify
            # call after it has had its turn, so a call waits for the calls before the
            # fork (and for them alone), whoever makes it and whenever.
            for name, seqs in self._index.verify_order.items():
                for later in seqs:
                    if later > seq:
                        self.turns.done(name, later)

    def _after_fork(self) -> list[CallEntry]:
        """The recorded calls after the fork still in their queues (each queue copied in
        one step, C code under the GIL: other workers take from them meanwhile)."""
        seq = self.fork.seq
        queues = list(self._index.queues.values())
        return [e for q in queues for e in list(q) if e.seq > seq]

    def _next_of(self, boundary: str, worker: str) -> CallEntry | None:
        """``worker``'s next recorded call of ``boundary`` not used, if it is after the fork."""
        queue = self._fresh(self._index.queues.get((boundary, worker)))
        if not queue:
            return None
        head = queue[0]
        return head if head.seq > self.fork.seq else None

    def _note(self, entry: CallEntry, *, verify: bool = False) -> CallEntry:
        """``entry`` was taken by the calling worker: used, and part of the branch when it
        comes at or after the fork."""
        self._used.add(entry.seq)
        if entry is self._fork_entry:
            self._part()
            self.branch.given(entry)
        elif entry.seq > self.fork.seq:
            self.branch.answered(entry, verify=verify)
        return entry

    def _fresh(self, queue: deque[CallEntry] | None) -> deque[CallEntry] | None:
        """``queue`` with the calls used elsewhere (after the fork) gone from its front."""
        if queue and self._forked:
            used = self._used
            while queue and queue[0].seq in used:
                queue.popleft()
        return queue

    def queue(self, boundary: str) -> deque[CallEntry] | None:
        worker = worker_var.get()
        if self._live_next == (boundary, worker):
            return None  # the call at the fork runs live: no recorded call answers it
        queue = self._fresh(self._index.queues.get((boundary, worker)))
        if queue and queue[0] is self._fork_entry and self.fork.answer is None:
            queue.popleft()
            self._used.add(self._fork_entry.seq)
            self._live_next = (boundary, worker)
            self._part()
            return None
        return queue

    def head(self, boundary: str) -> CallEntry | None:
        queue = self.queue(boundary)
        return queue[0] if queue else None

    # -- taking: the tape's order before the fork, the same request after it -------------

    def took(self, entry: CallEntry) -> None:
        super().took(entry)
        self._note(entry, verify=entry.seq in self._verify_set)

    def serve_head(self, queue: deque[CallEntry], head: CallEntry) -> None:
        super().serve_head(queue, head)
        self._note(head)

    def take_head(self, boundary: str) -> CallEntry:
        head = super().take_head(boundary)
        return self._note(head, verify=head.seq in self._verify_set)

    def take(
        self, boundary: str, actual: Mapping[str, Any], normalize: Normalize | None = None
    ) -> CallEntry | None:
        return self._take(boundary, actual, normalize, any_input=False)

    def take_before_stdin(self, boundary: str, actual: Mapping[str, Any]) -> CallEntry | None:
        return self._take(boundary, actual, None, any_input=True)

    def _take(
        self,
        boundary: str,
        actual: Mapping[str, Any],
        normalize: Normalize | None,
        *,
        any_input: bool,
    ) -> CallEntry | None:
        worker = worker_var.get()
        if self._live_next == (boundary, worker):
            return None  # the call at the fork: unanswered() sends it live
        if not self._forked or self._before_fork(boundary, worker):
            entry = super().take(boundary, actual, normalize)
            if entry is None:
                return None
            return self._note(entry, verify=entry.seq in self._verify_set)
        if normalize is not None:
            actual = normalize(actual, None)
        assert self._asked is not None
        noise = self.noise
        loose = bool(noise.masks or noise.patterns) or self.correlations.pairs != {}
        entry = self._asked.take(boundary, actual, worker, any_input=any_input, loose=loose)
        if entry is None:
            if boundary in self._outcome.verify:
                self.branch.adding()  # it runs for real now, and is added (add_call)
            self._missed[worker] = actual  # named if the fork may not run it live
            return None
        self._outcome.position[worker] = entry.seq
        verify = entry.seq in self._verify_set
        self.branch.answered(entry, verify=verify)
        return entry

    def _before_fork(self, boundary: str, worker: str) -> bool:
        """Whether the calling worker's next call of ``boundary`` on the tape is one it
        made before the fork (a worker slower than the fork's own): still the tape's."""
        queue = self._fresh(self._index.queues.get((boundary, worker)))
        return bool(queue) and queue[0].seq < self.fork.seq  # type: ignore[index]

    def stdin_differs(self, entry: CallEntry, written: bytes) -> CallEntry | None:
        """After the fork, the recorded call that asked what ``entry`` asked with the
        stdin ``written`` answers it instead (``entry`` goes back among the unused)."""
        if not self._forked or self._asked is None or not isinstance(entry, ProcessCall):
            return None
        asked = {**request_of(entry), "input": self.codec.comparable(written, entry.input)}
        other = self._asked.take(boundary_of(entry) or "", asked, worker_var.get())
        if other is None:
            return None
        self._used.discard(entry.seq)
        self._asked.add(entry, first=True)
        self.branch.replace(entry, other)
        self._outcome.position[worker_var.get()] = other.seq
        return other

    def unanswered(self, boundary: str, what: str) -> UnrecordedCallError:
        worker = worker_var.get()
        # Today's request, which may hold a secret: redacted, as the plain engine's (the
        # stop reaches the report, the receipt on disk and the terminal).
        what = self.scrubber.secrets(what)
        if self._live_next == (boundary, worker):
            self._live_next = None
            self._fork_live_worker = worker
            return RunLive(
                f"sessiontape: the fork runs {what} at seq {self.fork.seq} live, but the "
                f"{boundary} boundary was wired without its real object; pass it to the "
                "tape as when recording.",
                boundary=boundary,
                worker=worker,
            )
        if not self._forked:
            return super().unanswered(boundary, what)
        if self.fork.live:
            return RunLive(
                f"sessiontape: worker {worker!r}: no recorded call asked {what}, so the fork "
                f"runs it live, but the {boundary} boundary was wired without its real "
                "object; pass it to the tape as when recording.",
                boundary=boundary,
                worker=worker,
            )
        asked = self._missed.get(worker)
        shown = f" asking {summarize_value(dict(asked), 160)}" if asked else ""
        raise self._stop(f"worker {worker!r}, {boundary}: {what}{self.scrubber.secrets(shown)}")

    def _stop(self, stopped: str, advice: str | None = None) -> ForkStopped:
        """Stop the fork at the call ``stopped`` names (the first stop is the one told):
        the error that ends the calling worker."""
        with self._lock:
            if self._stopped is None:
                self._stopped, self._advice = stopped, advice
        return ForkStopped()

    def check(
        self, entry: CallEntry, path: MatchPath, expected: Any, actual: Any
    ) -> tuple[list[FieldDiff], int]:
        """A write to the conversation answered at one turn that is not the recorded one,
        after that answer, is a request the tape cannot answer: the fork stops there,
        live calls allowed or not (a conversation cannot go live from its middle)."""
        diffs, total = super().check(entry, path, expected, actual)
        after = self._after_chunk
        if not diffs or after is None or entry is not self._fork_entry:
            return diffs, total
        index = path[1] if len(path) > 1 and path[0] == "chunks" else None
        if not isinstance(index, int) or index < after:
            return diffs, total  # before the answer: a divergence, as in any replay
        assert isinstance(entry, ProcessCall)
        assert entry.chunks is not None
        turn = turn_of(entry.chunks, index)
        wrote = self.scrubber.secrets(summarize_value(actual, 160))
        seq = self.fork.seq
        raise self._stop(
            f"worker {entry.worker!r}, process: the process call {entry.argv!r}, turn "
            f"{turn}: the program wrote {wrote}",
            advice=f"A conversation cannot go live from its middle: run all of it live, "
            f"--sessiontape-fork={seq} with no --sessiontape-fork-answer (Fork(seq={seq})).",
        )

    # -- live calls: the record side asks these (see ``tape/_live.py``) -------------------

    def provisional_seq(self) -> int:
        """A seq for a live call starting now (negative; renumbered when written)."""
        if self._fork_live_worker is not None and self._fork_live_worker == worker_var.get():
            self._fork_live_worker = None
            return self.branch.provisional_seq(first=True)
        return self.branch.provisional_seq()

    def started(self, seq: int) -> int | None:
        """When the live call ``seq`` started, in real time."""
        return self.branch.started(seq)

    def add_call(self, entry: CallEntry) -> None:
        self.progress.moved()
        if entry.seq == 0:  # a verify call the tape lacks, run for real just now
            clock = self.clock
            took = entry.duration_ns
            entry = msgspec.structs.replace(
                entry,
                worker=worker_var.get(),
                thread=threading.current_thread().name,
                ts_ns=max(0, clock.time_ns() - took),
                mono_ns=max(0, clock.monotonic_ns() - took),
            )
        self.branch.ended(entry)

    # -- verify calls after the fork: today's results, today's order ----------------------

    def mismatch(self, kind: MismatchKind, **fields: Any) -> None:
        seq = fields.get("seq")
        if self._forked and kind is MismatchKind.STORE_MISMATCH and (seq or 0) > self.fork.seq:
            self.branch.gave(fields.get("actual"))
            return
        super().mismatch(kind, **fields)

    def clock_at(self, entry: CallEntry) -> None:
        self.branch.running()  # a verify call starts for real now
        super().clock_at(entry)

    def turn_done(self, name: str, seq: int) -> None:
        self.branch.done_verifying()
        super().turn_done(name, seq)
