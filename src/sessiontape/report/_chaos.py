"""The result of one chaos schedule, as data (the receipt) and as text (the failure).

Nothing here depends on timing, thread ids or the directory a replay ran in: the same
seed gives byte-identical text and data on any machine.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, overload

import msgspec

__all__ = [
    "SHOWN_PER_WORKER",
    "ChaosCall",
    "ChaosDecision",
    "ChaosFailure",
    "ChaosResult",
    "ChaosVerdict",
    "DescribedCalls",
    "FailureKind",
]

#: How many calls of each worker the failure text shows, counting back from the end.
SHOWN_PER_WORKER: Final = 8


class ChaosVerdict(str, enum.Enum):
    """What became of a schedule."""

    #: It ran to its end and no oracle objected.
    PASSED = "passed"
    #: Some call had no recorded answer: the tape cannot say what would have happened.
    #: Not a failure; counted apart.
    INADMISSIBLE = "inadmissible"
    #: An oracle objected (see :class:`FailureKind`).
    FAILED = "failed"


class FailureKind(str, enum.Enum):
    """Which oracle found a failing schedule."""

    #: An exception ended a worker, or left the application, that production did not raise.
    EXCEPTION = "exception"
    #: The application finished with another outcome than recorded.
    OUTCOME = "outcome"
    #: A declared invariant (``tape.invariant``, ``sessiontape_invariant``) was violated.
    INVARIANT = "invariant"
    #: A thread did not reach its next scheduling point within the limit.
    DEADLOCK = "deadlock"


class ChaosCall(msgspec.Struct, frozen=True, kw_only=True):
    """One boundary call as it ran under the schedule."""

    #: Its place in the order the calls ran (1, 2, ...).
    order: int
    #: The worker that made it.
    worker: str
    boundary: str
    #: The recorded call that answered it (``None``: a verify call with no recorded twin).
    seq: int | None
    #: What was asked, in short (``git merge --no-ff ...``, ``claim_next('worker-1')``);
    #: filled for the calls the report shows (the last few of each worker), else empty.
    call: str


class ChaosDecision(msgspec.Struct, frozen=True, kw_only=True):
    """One scheduling decision of a traced schedule (``Schedule(trace=True)``): which
    thread ran when two or more could, named by the calls whose order it fixed."""

    #: Its place among the schedule's decisions (1, 2, ...).
    index: int
    #: The thread picked (start order) and the threads passed over.
    chosen: int
    others: tuple[int, ...]
    #: The picked thread's worker and the call it made next (``""``: it made none).
    worker: str
    call: str
    #: The passed-over thread the decision is named by (the one it preempted, if any),
    #: its worker and the call it made next.
    other: int
    other_worker: str
    other_call: str

    def named(self) -> str:
        """``w2's `next_pending()` ran before w1's `take('alpha')` ``."""
        mine = f"{self.worker}'s `{self.call}`" if self.call else f"{self.worker}'s end"
        theirs = (
            f"{self.other_worker}'s `{self.other_call}`"
            if self.other_call
            else f"{self.other_worker}'s next call (not reached before the failure)"
        )
        return f"{mine} ran before {theirs}"


class ChaosFailure(msgspec.Struct, frozen=True, kw_only=True):
    """What an oracle found."""

    kind: FailureKind
    message: str
    worker: str | None = None
    #: The ``order`` of the last call before the failure (0: before any call).
    after: int = 0


class DescribedCalls(Sequence[ChaosCall]):
    """A schedule's calls, described when first read.

    Most schedules pass and nobody reads their calls; describing every call of a long
    tape would cost a good part of the schedule, so ``describe`` runs on first use (and
    gives the same list whenever it runs: it reads only what the schedule left).
    """

    __slots__ = ("_calls", "_describe")

    def __init__(self, describe: Callable[[], list[ChaosCall]]) -> None:
        self._describe: Callable[[], list[ChaosCall]] | None = describe
        self._calls: list[ChaosCall] = []

    def _list(self) -> list[ChaosCall]:
        describe = self._describe
        if describe is not None:
            self._calls = describe()
            self._describe = None
        return self._calls

    def __len__(self) -> int:
        return len(self._list())

    @overload
    def __getitem__(self, index: int) -> ChaosCall: ...
    @overload
    def __getitem__(self, index: slice) -> list[ChaosCall]: ...
    def __getitem__(self, index: int | slice) -> ChaosCall | list[ChaosCall]:
        return self._list()[index]

    def __iter__(self) -> Iterator[ChaosCall]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DescribedCalls):
            other = other._list()
        return isinstance(other, list) and self._list() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._list())

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (or copied) as the plain list: the describing closure stays behind.
        return (list, (self._list(),))


class ChaosResult(msgspec.Struct, kw_only=True):
    """One chaos schedule of one cassette: its verdict and the calls in the order they ran."""

    cassette: str
    seed: int
    strategy: str
    depth: int
    verdict: ChaosVerdict
    failure: ChaosFailure | None = None
    #: Why the schedule was inadmissible.
    inadmissible: str | None = None
    #: The kind of call it stopped at (``agent call execute``, ``process call git
    #: rev-parse``): what the session's summary counts inadmissible schedules by.
    inadmissible_call: str | None = None
    #: Scheduling decisions made, and threads scheduled.
    steps: int = 0
    threads: int = 0
    #: Recorded calls and the workers that made them, for PCT's bound.
    recorded_calls: int = 0
    recorded_workers: int = 0
    #: The calls in the order they ran (a list, or described on first read).
    calls: Sequence[ChaosCall] = []
    #: The command that runs this schedule again.
    command: str = ""
    #: Its scheduling decisions, when the schedule traced them (else empty).
    decisions: Sequence[ChaosDecision] = ()

    @property
    def failed(self) -> bool:
        return self.verdict is ChaosVerdict.FAILED

    @property
    def signature(self) -> str:
        """What tells two failures apart (kind and message), for counting distinct ones."""
        if self.failure is None:
            return ""
        return f"{self.failure.kind.value}: {self.failure.message}"

    def schedule(self) -> list[dict[str, Any]]:
        """The calls as ``{seq, worker, boundary, order}`` items, in the order they ran
        (the shape the viewer draws)."""
        return [
            {"seq": c.seq, "worker": c.worker, "boundary": c.boundary, "order": c.order}
            for c in self.calls
        ]

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON data (the receipt's ``chaos`` object)."""
        failure = None
        if self.failure is not None:
            failure = {
                "kind": self.failure.kind.value,
                "message": self.failure.message,
                "worker": self.failure.worker,
                "after": self.failure.after,
            }
        return {
            "cassette": self.cassette,
            "seed": self.seed,
            "strategy": self.strategy,
            "depth": self.depth,
            "verdict": self.verdict.value,
            "failure": failure,
            "inadmissible": self.inadmissible,
            "inadmissible_call": self.inadmissible_call,
            "steps": self.steps,
            "threads": self.threads,
            "command": self.command,
            "schedule": self.schedule(),
        }

    def render(self) -> str:
        """The text a failing (or inadmissible) schedule shows."""
        head = f"sessiontape chaos: {self.cassette}: {self.verdict.value}"
        label = f"seed {self.seed}, strategy {self.strategy}"
        if self.strategy == "pct":
            label += f", depth {self.depth}"
        lines = [f"{head} ({label}; {len(self.calls)} calls in {self.steps} steps)"]
        if self.failure is not None:
            who = f" in worker {self.failure.worker!r}" if self.failure.worker else ""
            lines.append(f"{self.failure.kind.value}{who}: {self.failure.message}")
        if self.inadmissible is not None:
            lines.append(f"inadmissible (not a failure): {self.inadmissible}")
        if self.calls:
            lines.append("")
            lines.append(
                "The schedule up to the end, per worker (#order: call [recorded seq]); "
                f"the last {SHOWN_PER_WORKER} calls of each:"
            )
            for worker in sorted({c.worker for c in self.calls}):
                mine = [c for c in self.calls if c.worker == worker]
                lines.append(f"  {worker} ({len(mine)} calls)")
                if len(mine) > SHOWN_PER_WORKER:
                    lines.append("    ...")
                for c in mine[-SHOWN_PER_WORKER:]:
                    seq = f" [seq {c.seq}]" if c.seq is not None else ""
                    lines.append(f"    #{c.order} {c.boundary}: {c.call}{seq}")
            last = self.calls[-1]
            lines.append(f"  last call: #{last.order} by {last.worker}")
        if self.command:
            lines.append("")
            lines.append(f"Reproduce: {self.command}")
        return "\n".join(lines)
