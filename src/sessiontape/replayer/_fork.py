"""Fork: replay a tape exactly up to a call, answer that call otherwise, and see what follows.

The fourth way to drive the boundaries, beside record, replay, and update and live. A
:class:`ForkEngine` is a replay that parts from its tape at :attr:`Fork.seq`
(``_branching.py`` says what answers each call before and after), and writes the branch
beside the tape at the end (``_fork_save.py``) when the part before the fork replayed
without a divergence and nothing stopped it; the report's ``fork`` says what happened.
After the fork, an exception that ends a worker or the whole run is the branch's own
end: written as recording writes a crash, not compared with the tape.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from .._context import worker_var
from .._errors import UnrecordedCallError, UsageError
from ..cassette import (
    AgentTurn,
    Call,
    CallEntry,
    Entry,
    Error,
    ErrorOrigin,
    ForkedFrom,
    Level,
    PayloadCodec,
    ProcessCall,
    Recording,
    StoreMutation,
    boundary_of,
    eager,
    request_of,
)
from ..report import (
    ForkResult,
    MismatchKind,
    ReplayMismatch,
    ReplayReport,
    describe,
    summarize_value,
)
from ..scrub import qualname, scrub_entry
from ._branching import Branching, Fork
from ._conversation import answer_turn
from ._engine import UNSET
from ._fork_save import check_fork_target, fork_target, sha256_of, write_fork
from ._scheduler import ScheduleStopped

__all__ = ["ForkEngine"]

#: The fields a process call's answer may give.
_PROCESS_ANSWER: Final = frozenset({"returncode", "stdout", "stderr"})
#: Effectively unlimited: the answer given is kept inline (the fork reads it at once).
_INLINE: Final = 1 << 40


def _answered(entry: CallEntry, answer: Any, codec: PayloadCodec) -> tuple[CallEntry, int | None]:
    """``entry`` with ``answer`` in place of its recorded answer (see :class:`Fork`); for a
    conversation, with one turn answered, and the index of its first chunk after that."""
    replace = msgspec.structs.replace
    if isinstance(entry, ProcessCall):
        if entry.chunks is not None:
            return answer_turn(entry, answer, codec.encode)
        if not isinstance(answer, Mapping) or not set(answer) <= _PROCESS_ANSWER or not answer:
            raise UsageError(
                f"seq {entry.seq} is a process call: its answer is a JSON object of "
                f"returncode, stdout and stderr, not {summarize_value(answer, 60)}."
            )
        fields: dict[str, Any] = {"spawn_error": None, "timed_out": False}
        if "returncode" in answer:
            if not isinstance(answer["returncode"], int):
                raise UsageError(f"the answer's returncode is not an integer: {answer!r}.")
            fields["returncode"] = answer["returncode"]
        for name in ("stdout", "stderr"):
            if name in answer:
                fields[name] = codec.encode(answer[name])
        return replace(entry, **fields), None
    if isinstance(entry, StoreMutation) or (isinstance(entry, Call) and entry.mode == "verify"):
        raise UsageError(
            f"seq {entry.seq} is a call of a verify boundary, which runs for real on replay: "
            "its result is not the tape's to give. Fork at a process, agent or substitute "
            "call, or fork it live (no answer)."
        )
    assert isinstance(entry, (AgentTurn, Call))
    return replace(entry, result=answer, error=None), None


class ForkEngine(Branching):
    """A replay that parts from its tape at :attr:`Fork.seq` (see the module's docs)."""

    def __init__(
        self,
        recording: Recording,
        *,
        fork: Fork,
        original: tuple[bytes, list[Entry]] | None = None,
        **options: Any,
    ) -> None:
        """``original``: the bytes ``recording`` was loaded from and its entries in the
        order of their lines (``load_with_lines``); without it the tape is read again."""
        if recording.path == "<memory>":
            raise UsageError(
                "a fork writes its branch beside the tape; this recording was loaded from "
                "memory. Pass the cassette's path to replay()."
            )
        super().__init__(recording, **options)
        seq = fork.seq
        entry = recording.by_seq(seq)
        if entry is None or boundary_of(entry) is None:
            what = "no entry" if entry is None else f"a {type(entry).__name__} entry"
            raise UsageError(
                f"{recording.path}: seq {seq} is {what}, not a boundary call; fork at the "
                f"seq of a call (sessiontape show {recording.path})."
            )
        if seq in self._index.hidden:
            raise UsageError(
                f"{recording.path}: seq {seq} was made inside the call at seq "
                f"{entry.parent}, which replay answers whole; fork at seq {entry.parent}."
            )
        if fork.answer is None and not fork.live:
            raise UsageError(
                "a fork with no answer runs the call at its seq live, and live calls are "
                "forbidden (--sessiontape-fork-no-live): give the answer "
                "(--sessiontape-fork-answer=FILE.json)."
            )
        path = Path(recording.path)
        self._in_order: list[Entry] | None = None
        if original is not None:
            self._original, self._in_order = original
        else:
            with open(path, "rb") as file:
                self._original = file.read()
        self._forked_from = ForkedFrom(
            tape=path.name,
            sha256=sha256_of(self._original),
            seq=seq,
            answer=self.data(fork.answer) if fork.answer is not None else None,
        )
        #: Where the branch is written (refused now, before anything runs, if taken).
        self.target = fork_target(path, seq)
        check_fork_target(self.target, self._forked_from.tape, self._forked_from.sha256)
        self._crash: BaseException | None = None
        self._outcome_data: Any = None
        recorded = entry
        assert isinstance(recorded, (ProcessCall, AgentTurn, StoreMutation, Call))
        at_fork: CallEntry = recorded
        after: int | None = None
        if fork.answer is not None:
            # Scrubbed as recording scrubs: the fork is served what its tape will hold.
            codec = PayloadCodec(Level.FULL, _INLINE, scrub=self.scrubber.text)
            answered, after = _answered(eager(recorded), fork.answer, codec)
            given = scrub_entry(answered, self.scrubber)
            assert isinstance(given, (ProcessCall, AgentTurn, StoreMutation, Call))
            queue = self._index.queues[(boundary_of(recorded) or "", recorded.worker)]
            at = next(i for i, e in enumerate(queue) if e is recorded)
            queue[at] = at_fork = given
        self._branch_from(fork, at_fork, after=after)

    # -- crashes after the fork are the branch's own --------------------------------------

    def _error(self, exc: BaseException, origin: ErrorOrigin) -> Error:
        clock = self.clock
        return Error(
            seq=0,
            ts_ns=clock.time_ns(),
            mono_ns=clock.monotonic_ns(),
            worker=worker_var.get(),
            thread=threading.current_thread().name,
            type=qualname(type(exc)),
            message=self.scrubber.text(str(exc)),
            origin=origin,
        )

    def worker_crashed(
        self, exc: BaseException, frame: str | None = None, origin: ErrorOrigin = "thread"
    ) -> None:
        if isinstance(exc, ScheduleStopped):
            return
        if self._forked:
            self.branch.crashed(self._error(exc, origin))
            return
        super().worker_crashed(exc, frame, origin)

    def application_error(self, exc: BaseException, frame: str | None = None) -> None:
        if isinstance(exc, ScheduleStopped):
            return
        if self._forked:
            self.branch.crashed(self._error(exc, "thread"))
            return
        super().application_error(exc, frame)

    # -- the end --------------------------------------------------------------------------

    def _check_the_end(self, outcome: Any) -> None:
        if not self._forked:
            super()._check_the_end(outcome)
            return
        # The branch's end is its own: nothing to compare it with.
        if outcome is not UNSET:
            self._outcome_data = self.data(outcome)

    def _unconsumed(self) -> list[tuple[tuple[str, str], deque[CallEntry]]]:
        if not self._forked:
            return super()._unconsumed()
        # The calls before the fork must all have been made; the rest are the tape's.
        seq, used = self.fork.seq, self._used
        return [
            (key, deque(e for e in queue if e.seq < seq and e.seq not in used))
            for key, queue in self._index.remaining()
        ]

    def finish(self, outcome: Any = UNSET) -> ReplayReport:
        done = self._outcome
        if done.report is not None:
            return done.report
        # Not strict while the report is built: a branch whose calls all ran live served
        # nothing from the tape and passed all the same.
        strict, done.strict = done.strict, False
        try:
            report = super().finish(outcome)
        finally:
            done.strict = strict
        if self._forked and not report.mismatches:
            report.ok = True
        report.fork = self._result(report)
        if strict and not report.ok:
            raise ReplayMismatch(report)
        return report

    def _result(self, report: ReplayReport) -> ForkResult:
        """What the fork did; its branch written when the part before the fork replayed
        as recorded and nothing stopped it."""
        from_tape, live = self.branch.counts()
        result = ForkResult(
            tape=str(self.recording.path),
            seq=self.fork.seq,
            answered_at_fork=self.fork.answer is not None,
            from_tape=from_tape,
            live=live,
            stopped=self._stopped,
            advice=self._advice,
        )
        if not self._forked:
            self._outcome.collect(
                MismatchKind.UNCONSUMED,
                seq=self.fork.seq,
                worker=self._fork_entry.worker,
                boundary=boundary_of(self._fork_entry) or "",
                message=f"the replay never reached the call at seq {self.fork.seq} "
                f"({describe(self._fork_entry)}), where the fork was to part.",
                expected=request_of(self._fork_entry),
                position=self.fork.seq,
            )
            rebuilt = self._outcome.build_report()
            report.mismatches, report.ok = rebuilt.mismatches, False
            return result
        if self._stopped is not None:
            report.ok = False
            return result
        if report.ok:
            end = self._error(self._crash, "session") if self._crash is not None else None
            written, renumbered = write_fork(
                self.recording,
                self._original,
                self.target,
                self._forked_from,
                self.branch.made,
                end,
                self._outcome_data,
                self._in_order,
            )
            result.written = str(written)
            result.ran_live = sorted(renumbered[seq] for seq in self.branch.live_seqs())
        return result

    def close(self, exc: BaseException | None) -> bool:
        if isinstance(exc, ScheduleStopped):
            self.finish()
            return True
        if isinstance(exc, Exception) and self._stopped is not None:
            # What ended the program after the fork stopped (a conversation's output
            # ended there, a worker's result never came) is the stop's doing: the stop is
            # the fork's end, and its result says where it stopped.
            said = self.scrubber.text(str(exc))
            said = said if len(said) <= 160 else said[:159] + "…"
            self._stopped += f"; the program then ended with {qualname(type(exc))}: {said}"
            self.finish()
            return True
        if (
            exc is not None
            and self._forked
            and isinstance(exc, Exception)
            and not isinstance(exc, UnrecordedCallError)
        ):
            # The branch ended with an exception: that is its end, written as a crash.
            self._crash = exc
            self.finish()
            return False
        return super().close(exc)
