"""Figure 1b: one replayed call on the agent, store and user boundaries, against its floor.

Each boundary's tape is recorded through the real recorder (``sessiontape.record`` with
the bench application's adapter, store and client), so its entries are what a recording
holds: requests scrubbed, paths under the repository as ``{repo}`` placeholders. Then,
batch by batch, the calls are replayed as the application makes them:

* **agent**: ``tape.agent(result_type=StepResult).execute(request)``, the request a dict
  with a worktree path, a prompt of about 700 characters and the files it names; the
  result a ``StepResult`` with a payload of a few hundred characters and its usage;
* **store**: ``tape.store(factory=BenchStore, mutations=...)`` seeded from the recorded
  snapshot, claiming, starting, attempting and completing tasks for real, each
  mutation's arguments and result verified against the tape;
* **user**: a ``tape.boundary("api", methods=["request"])`` substitute (an HTTP-style
  client of the user's own), answering each request dict with the recorded response.

The floor beside each (:class:`~cases.replay_call.DequeFloor`) takes the next recorded
(request, result) pair from a ``collections.deque`` and compares today's request with it;
for the store, the real mutation runs and its result is compared too. Replay and floor
take turns batch by batch; a fresh tape (or floor) per batch, built outside the timed
region.
"""

from __future__ import annotations

import functools
import os
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec

import sessiontape
from sessiontape.cassette import load_for_replay

from .app import STORE_NAME, BenchStore, StepResult
from .common import now_ns, per_call_each
from .replay_call import DequeFloor
from .texts import Text, lognormal_bytes

__all__ = ["BOUNDARIES", "boundary_case", "record_case", "run"]

#: The boundaries measured here; the process boundary is figure 1.
BOUNDARIES: Final = ("agent", "store", "user")
_WORKER: Final = "main"
_SEED: Final = 20251121


class _Agent:
    """The agent adapter recorded: answers with the prepared results, in order."""

    def __init__(self, results: list[StepResult]) -> None:
        self._results = iter(results)

    def execute(self, request: dict[str, Any]) -> StepResult:
        return next(self._results)


class _Api:
    """A user's own client (HTTP-style) recorded through ``tape.boundary``."""

    def __init__(self, responses: list[dict[str, Any]]) -> None:
        self._responses = iter(responses)

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        return next(self._responses)


def _agent_calls(text: Text, rng: random.Random, calls: int, repo: str) -> list[Any]:
    """(request, result) pairs of agent turns shaped like the generated tapes' ones."""
    out = []
    for i in range(calls):
        task = f"T{i:06d}"
        request = {
            "step": "edit" if i % 2 else "review",
            "task": task,
            "attempt": 1 + i % 3,
            "worktree": os.path.join(repo, "worktrees", task),
            "prompt": text.take(lognormal_bytes(rng, 700, 0.6, 16_000)),
            "files": {f"src/pkg/mod_{rng.randrange(200)}.py": {"lines": rng.randrange(900)}},
        }
        result = StepResult(
            state="edited",
            payload={"message": f"{task}: {text.take(60)}", "diff": text.take(400)},
            usage={"input_tokens": rng.randrange(2000, 90000), "output_tokens": 812},
        )
        out.append((request, result))
    return out


def _api_calls(text: Text, rng: random.Random, calls: int) -> list[Any]:
    """(request, response) pairs of a JSON API: a query, a page of items back."""
    out = []
    for i in range(calls):
        request = {"method": "GET", "url": f"/v1/tasks/{i % 97}/events", "params": {"page": i}}
        response = {
            "status": 200,
            "items": [
                {"id": rng.randrange(10**6), "kind": "comment", "text": text.take(80)}
                for _ in range(3)
            ],
        }
        out.append((request, response))
    return out


def _backlog(tasks: int) -> list[dict[str, Any]]:
    return [
        {"id": f"T{i:06d}", "title": f"Task {i}", "status": "pending", "affinity": _WORKER,
         "worker": None, "claims": 0, "attempt": 0, "commit": None}
        for i in range(tasks)
    ]  # fmt: skip


def _store_calls(tasks: int) -> list[tuple[str, tuple[Any, ...]]]:
    """The mutations a worker makes to take ``tasks`` tasks from claim to completion."""
    out: list[tuple[str, tuple[Any, ...]]] = []
    for i in range(tasks):
        task = f"T{i:06d}"
        out += [
            ("claim_next", (_WORKER,)),
            ("mark_in_progress", (task, _WORKER)),
            ("record_attempt", (task, 1)),
            ("mark_complete", (task, f"{i * 7919:040x}")),
        ]
    return out


def _copy(value: Any) -> Any:
    """``value`` as a tape gives it back: equal, and objects of its own."""
    return msgspec.json.decode(msgspec.json.encode(value))


@dataclass(frozen=True)
class _Case:
    """One boundary: the calls the application makes, and what answers them."""

    calls: list[tuple[str, tuple[Any, ...]]]
    record: Callable[[Any], Any]  # tape -> the object recorded
    replay: Callable[[Any], Any]  # tape -> the stand-in replay hands out
    floor: Callable[[], Any]  # a fresh floor


def _cases(calls: int, repo: str) -> dict[str, _Case]:
    rng = random.Random(_SEED)
    text = Text(rng, size=1 << 18)
    agent = _agent_calls(text, rng, calls, repo)
    api = _api_calls(text, rng, calls)
    tasks = max(1, calls // 4)
    mutations = _store_calls(tasks)
    backlog = _backlog(tasks)
    dry = BenchStore(backlog)
    verified = [(_copy(list(a)), _copy(getattr(dry, m)(*a))) for m, a in mutations]
    return {
        "agent": _Case(
            [("execute", (request,)) for request, _ in agent],
            lambda tape: tape.agent(_Agent([result for _, result in agent])),
            lambda tape: tape.agent(result_type=StepResult),
            lambda: DequeFloor((_copy(request), result) for request, result in agent),
        ),
        "store": _Case(
            mutations,
            lambda tape: tape.store(
                BenchStore(backlog),
                mutations=BenchStore.MUTATIONS,
                snapshot=BenchStore.snapshot,
                name=STORE_NAME,
            ),
            lambda tape: tape.store(
                mutations=BenchStore.MUTATIONS, factory=BenchStore, name=STORE_NAME
            ),
            lambda: _StoreFloor(BenchStore(backlog), verified),
        ),
        "user": _Case(
            [("request", (request,)) for request, _ in api],
            lambda tape: tape.boundary(
                "api", _Api([response for _, response in api]), methods=["request"]
            ),
            lambda tape: tape.boundary("api", methods=["request"]),
            lambda: DequeFloor((_copy(request), response) for request, response in api),
        ),
    }


def boundary_case(kind: str, calls: int, repo: str) -> _Case:
    """The workload of one boundary (``agent``, ``store`` or ``user``) of ``calls`` calls."""
    return _cases(calls, repo)[kind]


def _make(target: Any, calls: list[tuple[str, tuple[Any, ...]]]) -> int:
    """Make ``calls`` (method name, arguments) on ``target``, as the application would."""
    for method, args in calls:
        getattr(target, method)(*args)
    return len(calls)


def record_case(path: Path, repo: str, case: _Case) -> sessiontape.Recording:
    """Record the case's calls through the real recorder; the tape, loaded."""
    with sessiontape.record(path, roots={"repo": repo}) as tape:
        _make(case.record(tape), case.calls)
        tape.finish(outcome={"calls": len(case.calls)})
    # Loaded as a replay loads it (outputs and results kept as their JSON until served).
    recording = load_for_replay(path)
    if len(recording.calls) != len(case.calls):
        raise AssertionError(f"{path.name}: {len(recording.calls)} of {len(case.calls)} calls")
    # The timed replays are these calls served and matched: check one whole replay.
    with sessiontape.replay(recording, roots={"repo": repo}) as tape:
        _make(case.replay(tape), case.calls)
        report = tape.finish(outcome={"calls": len(case.calls)})
    if not report.ok or report.consumed != len(case.calls):
        raise AssertionError(f"{path.name} did not replay: {report.render()}")
    return recording


def _batch(make: Callable[[], tuple[Any, Callable[[], Any] | None]], calls: list[Any]) -> Any:
    """A batch maker for :func:`per_call_each`: ``make()`` gives the object to call and
    its clean-up."""

    def batch() -> Any:
        target, cleanup = make()
        go = functools.partial(_make, target, calls)
        return (go, cleanup) if cleanup is not None else go

    return batch


def _fresh(factory: Callable[[], Any]) -> Callable[[], tuple[Any, None]]:
    """A fresh ``factory()`` per batch, with nothing to clean up."""

    def make() -> tuple[Any, None]:
        return factory(), None

    return make


def _replaying(
    recording: sessiontape.Recording, repo: str, wire: Callable[[Any], Any]
) -> Callable[[], tuple[Any, Callable[[], Any]]]:
    """A fresh replay of ``recording`` per batch, wired by ``wire(tape)``."""

    def make() -> tuple[Any, Callable[[], Any]]:
        tape = sessiontape.replay(recording, roots={"repo": repo})
        tape.__enter__()
        return wire(tape), lambda: tape.__exit__(None, None, None)

    return make


class _StoreFloor:
    """The verify boundary's floor: the real mutation, its arguments and result compared."""

    def __init__(self, store: BenchStore, recorded: list[tuple[Any, Any]]) -> None:
        take = iter(recorded).__next__
        for name in BenchStore.MUTATIONS:
            setattr(self, name, self._checked(getattr(store, name), take))

    @staticmethod
    def _checked(method: Callable[..., Any], take: Callable[[], Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            result = method(*args)
            recorded_args, recorded_result = take()
            if list(args) != recorded_args or result != recorded_result:
                raise AssertionError(f"the store floor diverged at {args!r}")
            return result

        return call


def run(
    *, calls: int, batches: int, workdir: Path, clock: Callable[[], int] = now_ns
) -> dict[str, Any]:
    """Each boundary's replay per call against its floor; see the module docstring
    (``clock``: see :func:`~cases.common.per_call_each`)."""
    repo = tempfile.mkdtemp(prefix="bench-boundaries-", dir=workdir)
    out: dict[str, Any] = {}
    for name, case in _cases(calls, repo).items():
        recording = record_case(workdir / f"boundary-{name}.jsonl", repo, case)
        out[name] = per_call_each(
            {
                "sessiontape": _batch(_replaying(recording, repo, case.replay), case.calls),
                "floor": _batch(_fresh(case.floor), case.calls),
            },
            batches=batches,
            clock=clock,
        )
        out[name]["calls_per_batch"] = len(case.calls)
    return out
