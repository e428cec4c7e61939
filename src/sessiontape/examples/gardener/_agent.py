"""The agent side: the :class:`StepResult` protocol and a scripted, deterministic adapter.

A real gardener asks an LLM for each step; the bundled example answers from a script so
that a demo run needs no network and no API key. The script is keyed by task and the
answer depends only on the request (step, attempt, claim count, file contents), never on
the order in which threads happen to call: two live runs of a scenario get the same
answers, whatever the scheduling.

Like a real adapter that runs ``claude -p`` and reads its answer from stdout, the scripted
agent, given a process runner, runs a small model process for every turn (:data:`MODEL_ARGV`,
which echoes its input: the request and the scripted answer) and returns what that process
printed. Through the tape's runner, that process call is recorded inside the agent turn
(its ``parent``), so the timeline, the viewer and the OpenTelemetry export show it nested;
on replay the turn is answered from the tape and the process is not expected.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

from sessiontape import ProcessRunner

__all__ = [
    "MODEL",
    "MODEL_ARGV",
    "PROVIDER",
    "AgentAdapter",
    "ScriptedAgent",
    "StepResult",
    "TaskScript",
    "merge_versions",
]

#: The model process of each turn: it prints its stdin, a JSON document holding the request
#: and the scripted answer, so its stdout is the agent's answer.
MODEL_ARGV: Final = ("sh", "-c", "cat")
#: The model and provider the scripted agent reports on each result.
MODEL: Final = "gardener-scripted-1"
PROVIDER: Final = "sessiontape.scripted"

#: The ``step`` values the orchestrator sends.
STEPS: Final = ("edit", "review", "resolve_conflict")

#: A line marking a draft the reviewer will send back (the review loop's first round).
DRAFT_MARKER: Final = "# draft: tidy this up before review\n"


@dataclass(frozen=True)
class StepResult:
    """What an agent adapter returns to the orchestrator's state machine.

    ``state`` names the outcome (``edited``, ``approve``, ``needs_changes``, ``resolved``,
    ``error``, ``failed``...), ``terminal`` says whether the task's agent work is over,
    ``payload`` carries the step's data and ``usage`` its token counts
    (``input_tokens``/``output_tokens``) when the backend reports them; ``model`` and
    ``provider`` name what answered.
    """

    state: str
    terminal: bool
    payload: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, int] | None = None
    model: str | None = None
    provider: str | None = None


class AgentAdapter(Protocol):
    """An agent backend: one request (JSON data) in, one :class:`StepResult` out."""

    def execute(self, request: dict[str, Any]) -> StepResult:
        """Run one agent step."""
        ...


@dataclass(frozen=True)
class TaskScript:
    """How :class:`ScriptedAgent` behaves for one task.

    ``files`` maps each path the task edits to its final content. ``review_rounds`` is
    how many reviews answer ``needs_changes`` before one approves (the edits before the
    last carry :data:`DRAFT_MARKER`). ``transient_errors`` is how many claims of the task
    the edit step answers with a retryable ``error``. ``outcome`` is ``"approve"``,
    ``"fail"`` (the edit step gives up, terminally) or ``"crash"`` (the review answers
    ``escalate``, a state the orchestrator has no transition for).
    """

    files: Mapping[str, str]
    review_rounds: int = 0
    transient_errors: int = 0
    outcome: Literal["approve", "fail", "crash"] = "approve"


def _tokens(data: Any) -> int:
    # A stable stand-in for a tokenizer: about four characters per token.
    return len(json.dumps(data, sort_keys=True)) // 4 + 1


def merge_versions(base: str, ours: str, theirs: str) -> str:
    """A three-way line merge that is symmetric in ``ours`` and ``theirs``.

    Lines changed on one side only take that side. A line both sides changed differently
    becomes both, sorted; ``key = value`` lines keep the key once and join the values
    (``color = blue, green``). Symmetry is the point: which of two conflicting tasks
    merges first is a race, and the resolved file must not depend on who won it.
    """
    base_lines, our_lines, their_lines = (v.splitlines() for v in (base, ours, theirs))
    if not len(base_lines) == len(our_lines) == len(their_lines):
        # Lines were added or removed: keep every distinct line of both, in sorted order.
        merged = sorted(set(our_lines) | set(their_lines))
        return "".join(f"{line}\n" for line in merged)
    out = []
    for b, o, t in zip(base_lines, our_lines, their_lines, strict=True):
        if o == t or t == b:
            out.append(o)
        elif o == b:
            out.append(t)
        else:
            ok, _, ov = o.partition(" = ")
            tk, _, tv = t.partition(" = ")
            if ov and tv and ok == tk:
                out.append(f"{ok} = {', '.join(sorted({ov, tv}))}")
            else:
                out.extend(sorted({o, t}))
    return "".join(f"{line}\n" for line in out)


class ScriptedAgent:
    """A deterministic :class:`AgentAdapter` answering from a per-task :class:`TaskScript`.

    Requests are dicts with ``step`` (one of ``edit``, ``review``, ``resolve_conflict``)
    and ``task``; see the orchestrator for the other fields. A task missing from the
    script fails terminally, as an agent would that does not understand it. With a
    ``runner``, every answer comes back through a model process (:data:`MODEL_ARGV`).
    """

    def __init__(
        self, script: Mapping[str, TaskScript], runner: ProcessRunner | None = None
    ) -> None:
        """Answer for the tasks in ``script``, through model processes run by ``runner``."""
        self.script = dict(script)
        self.runner = runner

    def execute(self, request: dict[str, Any]) -> StepResult:
        """Answer one request; the answer depends on the request's content only."""
        answer = self._answer(request)
        if self.runner is None:
            return answer
        return self._through_model(request, answer)

    def _through_model(self, request: dict[str, Any], answer: StepResult) -> StepResult:
        """Run the model process on the request and the answer; return what it printed."""
        assert self.runner is not None
        prompt = {"request": request, "answer": dataclasses.asdict(answer)}
        done = self.runner.run(
            list(MODEL_ARGV), input=json.dumps(prompt, sort_keys=True), text=True
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"the model process {list(MODEL_ARGV)!r} failed with exit code "
                f"{done.returncode}: {str(done.stderr).strip()}; check that 'sh' and 'cat' "
                "are on PATH"
            )
        return StepResult(**json.loads(done.stdout)["answer"])

    def _answer(self, request: dict[str, Any]) -> StepResult:
        step = request.get("step")
        task_id = request.get("task")
        if step not in STEPS:
            raise ValueError(
                f"ScriptedAgent cannot answer step {step!r} (task {task_id!r}); "
                f"it knows {', '.join(STEPS)}"
            )
        script = self.script.get(str(task_id))
        if script is None:
            result = StepResult("failed", True, {"reason": f"no script for task {task_id!r}"})
        elif step == "edit":
            result = self._edit(request, script)
        elif step == "review":
            result = self._review(request, script)
        else:
            result = self._resolve(request)
        usage = {"input_tokens": _tokens(request), "output_tokens": _tokens(result.payload)}
        return StepResult(result.state, result.terminal, result.payload, usage, MODEL, PROVIDER)

    @staticmethod
    def _edit(request: Mapping[str, Any], script: TaskScript) -> StepResult:
        if int(request.get("claim", 1)) <= script.transient_errors:
            return StepResult(
                "error", False, {"reason": "agent backend overloaded", "retryable": True}
            )
        if script.outcome == "fail":
            return StepResult(
                "failed", True, {"reason": "the requested change contradicts the garden plan"}
            )
        draft = int(request.get("attempt", 1)) <= script.review_rounds
        files = {
            path: DRAFT_MARKER + content if draft else content
            for path, content in sorted(script.files.items())
        }
        title = request.get("title", request.get("task"))
        return StepResult(
            "edited", False, {"files": files, "message": f"{request.get('task')}: {title}"}
        )

    @staticmethod
    def _review(request: Mapping[str, Any], script: TaskScript) -> StepResult:
        attempt = int(request.get("attempt", 1))
        if script.outcome == "crash":
            return StepResult("escalate", False, {"reason": "the reviewer wants a human"})
        if attempt <= script.review_rounds:
            return StepResult(
                "needs_changes",
                False,
                {"feedback": f"round {attempt}: remove the draft marker and tidy up"},
            )
        return StepResult("approve", True, {"summary": f"approved in round {attempt}"})

    @staticmethod
    def _resolve(request: Mapping[str, Any]) -> StepResult:
        conflicts: Mapping[str, Mapping[str, str]] = request.get("files", {})
        files = {
            path: merge_versions(sides["base"], sides["ours"], sides["theirs"])
            for path, sides in sorted(conflicts.items())
        }
        return StepResult("resolved", False, {"files": files})
