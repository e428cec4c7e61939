"""What a synthetic orchestrator's workers do: each worker's timeline of boundary calls.

Several workers each loop over backlog tasks: claim the task (store), add a git worktree,
``git status``, then edit/review rounds with the agent (each agent turn runs a nested
``claude`` process whose stream-json output is kilobytes, sometimes over the 64 KiB
inline limit), commit, ``git diff``, ``git log``, merge (sometimes a conflict, aborted,
resolved by the agent, merged again), ``git rev-parse``, now and then ``gh pr create``
with a token in its environment, remove the worktree, mark the task complete; a failed
task is released and the worker backs off (a gap in the timestamps). Times here are raw
seconds on each worker's own timeline; ``gen.py`` scales them and assigns seqs.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from cases.texts import Text, lognormal_bytes

__all__ = ["Call", "Worker", "flatten"]


@dataclass
class Call:
    """One boundary call of one worker, before seqs are assigned."""

    start: float  # seconds on the worker's raw timeline
    duration: float
    worker: str
    kind: str  # process | agent | store
    fields: dict[str, Any]
    children: list[Call] = field(default_factory=list)


class Worker:
    """Builds one worker's timeline of calls."""

    def __init__(self, name: str, index: int, rng: random.Random, text: Text) -> None:
        self.name = name
        self.index = index
        self.rng = rng
        self.text = text
        self.t = rng.uniform(0, 2.0)  # workers start staggered
        self.calls: list[Call] = []
        self.tasks: list[str] = []
        self.outcomes = {"completed": 0, "failed": 0, "released": 0, "conflicts": 0}

    # -- call builders -------------------------------------------------------------------

    def _gap(self, low: float = 0.0005, high: float = 0.006) -> None:
        self.t += self.rng.uniform(low, high)

    def store(self, operation: str, *args: Any) -> None:
        d = self.rng.uniform(0.0002, 0.002)
        self.calls.append(
            Call(self.t, d, self.name, "store", {"operation": operation, "args": list(args)})
        )
        self.t += d
        self._gap()

    def git(
        self,
        cwd: str,
        *args: str,
        stdout: str = "",
        stderr: str = "",
        returncode: int = 0,
        seconds: tuple[float, float] = (0.003, 0.06),
        env: dict[str, str | None] | None = None,
        program: str = "git",
    ) -> None:
        d = self.rng.uniform(*seconds)
        self.calls.append(
            Call(
                self.t,
                d,
                self.name,
                "process",
                {
                    "argv": [program, *args],
                    "cwd": cwd,
                    "env": env,
                    "text": True,
                    "returncode": returncode,
                    "stdout": stdout,
                    "stderr": stderr,
                },
            )
        )
        self.t += d
        self._gap()

    def _merge(self, repo: str, branch: str, **outcome: Any) -> None:
        """``git merge --no-ff`` of a task's branch, with the recorded ``outcome``."""
        self.git(repo, "merge", "--no-ff", "-m", f"Merge {branch}", branch, **outcome)

    def agent(
        self, task_id: str, step: str, attempt: int, worktree: str, result: dict[str, Any]
    ) -> None:
        rng = self.rng
        prompt = self.text.take(lognormal_bytes(rng, 700, 0.6, 16_000))
        request = {
            "step": step,
            "task": task_id,
            "attempt": attempt,
            "worktree": worktree,
            "prompt": prompt,
            "files": {
                f"src/pkg/mod_{rng.randrange(200)}.py": {"lines": rng.randrange(20, 900)}
                for _ in range(rng.randrange(1, 4))
            },
        }
        start = self.t
        # The agent adapter runs claude: a nested process call inside the turn.
        claude_t = start + rng.uniform(0.01, 0.05)
        claude_d = rng.uniform(8.0, 90.0)
        lines = []
        size = lognormal_bytes(rng, 1200, 1.2, 300_000)
        while size > 0:
            chunk = self.text.take(min(size, rng.randrange(120, 600)))
            lines.append('{"type":"assistant","message":{"content":' + json.dumps(chunk) + "}}")
            size -= len(chunk) + 44
        claude = Call(
            claude_t,
            claude_d,
            self.name,
            "process",
            {
                "argv": [
                    "claude",
                    "-p",
                    "--output-format",
                    "stream-json",
                    "--model",
                    "claude-sonnet-4",
                    "--max-turns",
                    "30",
                ],
                "cwd": worktree,
                "env": {"ANTHROPIC_API_KEY": "[REDACTED]", "CLAUDE_CODE": "1"},
                "input": prompt,
                "text": True,
                "returncode": 0,
                "stdout": "\n".join(lines) + "\n",
                "stderr": "",
            },
        )
        d = (claude_t - start) + claude_d + rng.uniform(0.005, 0.05)
        self.calls.append(
            Call(
                start,
                d,
                self.name,
                "agent",
                {"args": [request], "result": result},
                children=[claude],
            )
        )
        self.t += d
        self._gap()

    # -- outputs ---------------------------------------------------------------------------

    def _status(self) -> str:
        rng = self.rng
        return "".join(
            f"{rng.choice([' M', 'M ', '??', 'A '])} src/pkg/mod_{rng.randrange(300)}.py\n"
            for _ in range(rng.randrange(0, 25))
        )

    def _diff(self) -> str:
        rng = self.rng
        if rng.random() < 0.02:
            size = rng.randrange(70_000, 400_000)  # a vendored file or lockfile: over the limit
        else:
            size = lognormal_bytes(rng, 1000, 1.0, 60_000)
        body = self.text.take(size)
        header = (
            f"diff --git a/src/pkg/mod_{rng.randrange(300)}.py b/src/pkg/mod_x.py\n"
            f"index {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644\n"
            "--- a/src/pkg/mod.py\n+++ b/src/pkg/mod.py\n@@ -1,40 +1,44 @@\n"
        )
        return (
            header
            + "\n".join(("+" if i % 3 else "-") + ln for i, ln in enumerate(body.split("\n")))
            + "\n"
        )

    def _log(self) -> str:
        rng = self.rng
        return "".join(
            f"{rng.getrandbits(28):07x} {self.text.take(rng.randrange(30, 70))}".replace("\n", " ")
            + "\n"
            for _ in range(30)
        )

    def _sha(self) -> str:
        return f"{self.rng.getrandbits(160):040x}"

    # -- one task ----------------------------------------------------------------------------

    def cycle(self, task_id: str) -> bool:
        """One claimed task, start to end. Returns whether the task left the queue."""
        rng = self.rng
        repo = "{repo}"  # as the recorder writes a path under a root: a placeholder
        rel = f"../worktrees/{task_id}"
        worktree = f"{repo}/{rel}"
        branch = f"task/{task_id}"
        self.store("claim_next", self.name)
        self.store("mark_in_progress", task_id, self.name)
        self.git(
            repo,
            "worktree",
            "add",
            "-q",
            "-B",
            branch,
            rel,
            "base",
            stderr=f"Preparing worktree (resetting branch '{branch}')\n",
            seconds=(0.02, 0.2),
        )
        self.git(worktree, "status", "--porcelain", stdout=self._status())
        rounds = 1 + (rng.random() < 0.35) + (rng.random() < 0.12)
        verdict = "approve"
        for attempt in range(1, rounds + 1):
            self.store("record_attempt", task_id, attempt)
            files = {
                f"src/pkg/mod_{rng.randrange(300)}.py": self.text.take(rng.randrange(200, 1200))
                for _ in range(rng.randrange(1, 3))
            }
            self.agent(
                task_id,
                "edit",
                attempt,
                worktree,
                {
                    "state": "edited",
                    "terminal": False,
                    "payload": {"files": files, "message": f"{task_id}: {self.text.take(50)}"},
                    "usage": {
                        "input_tokens": rng.randrange(2000, 90000),
                        "output_tokens": rng.randrange(100, 8000),
                        "cost_usd": round(rng.uniform(0.01, 1.5), 4),
                    },
                },
            )
            self.git(worktree, "add", "-A")
            self.git(
                worktree, "commit", "-q", "--allow-empty", "-m", f"{task_id} (round {attempt})"
            )
            self.git(worktree, "diff", "base", "HEAD", stdout=self._diff(), seconds=(0.01, 0.3))
            verdict = "approve" if attempt == rounds else "needs_changes"
            if rng.random() < 0.04:
                verdict = "error"
            self.agent(
                task_id,
                "review",
                attempt,
                worktree,
                {
                    "state": verdict,
                    "terminal": verdict == "approve",
                    "payload": {"feedback": self.text.take(rng.randrange(100, 800))},
                    "usage": {
                        "input_tokens": rng.randrange(2000, 60000),
                        "output_tokens": rng.randrange(100, 3000),
                    },
                },
            )
            if verdict == "error":
                break
        if verdict == "error":
            self.git(repo, "worktree", "remove", "--force", rel)
            self.store("release", task_id)
            self.outcomes["released"] += 1
            self.t += rng.uniform(5.0, 60.0)  # back-off: a sleep, a gap in the timestamps
            return False
        self.git(worktree, "log", "--oneline", "-n", "30", stdout=self._log())
        if rng.random() < 0.06:
            path = f"src/pkg/mod_{rng.randrange(300)}.py"
            self._merge(
                repo,
                branch,
                returncode=1,
                stdout=f"Auto-merging {path}\nCONFLICT (content): Merge conflict in {path}\n",
                stderr="Automatic merge failed; fix conflicts and then commit the result.\n",
            )
            self.git(repo, "diff", "--name-only", "--diff-filter=U", stdout=path + "\n")
            self.git(repo, "merge", "--abort")
            self.agent(
                task_id,
                "resolve_conflict",
                1,
                worktree,
                {
                    "state": "resolved",
                    "terminal": False,
                    "payload": {"files": {path: self.text.take(rng.randrange(500, 3000))}},
                },
            )
            self.outcomes["conflicts"] += 1
        self._merge(
            repo,
            branch,
            stdout="Merge made by the 'ort' strategy.\n" + self._status(),
        )
        sha = self._sha()
        self.git(repo, "rev-parse", "HEAD", stdout=sha + "\n", seconds=(0.002, 0.01))
        if rng.random() < 0.1:
            self.git(
                repo,
                "pr",
                "create",
                "--fill",
                "--head",
                branch,
                program="gh",
                env={"GH_TOKEN": "[REDACTED]", "GH_PROMPT_DISABLED": "1", "*": None},
                stdout=f"https://github.com/acme/orchestrator/pull/{rng.randrange(9999)}\n",
                seconds=(0.5, 2.5),
            )
        self.git(repo, "worktree", "remove", "--force", rel, seconds=(0.01, 0.1))
        if rng.random() < 0.03:
            self.store("mark_failed", task_id, "merge produced no changes")
            self.outcomes["failed"] += 1
        else:
            self.store("mark_complete", task_id, sha)
            self.outcomes["completed"] += 1
        self.t += rng.uniform(0.05, 2.0)  # idle before the next claim
        return True


def flatten(calls: list[Call]) -> list[Call]:
    out: list[Call] = []
    for call in calls:
        out.append(call)
        out.extend(call.children)
    return out
