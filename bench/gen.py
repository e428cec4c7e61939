"""Synthetic session tapes at scale, shaped like a real orchestrator's run.

Several workers each loop over backlog tasks: claim the task (store), add a git worktree,
``git status``, then edit/review rounds with the agent (each agent turn runs a nested
``claude`` process whose stream-json output is kilobytes, sometimes over the 64 KiB
inline limit and so kept as a digest), commit, ``git diff`` (kilobytes, a few over the
limit), ``git log``, merge (sometimes a conflict, aborted, resolved by the agent, merged
again), ``git rev-parse``, now and then ``gh pr create`` with a token in its environment,
remove the worktree, mark the task complete; a failed task is released and the worker
backs off (a gap in the timestamps). Timestamps are scaled so the session lasts as long
as asked: eight hours for the big tape.

Entries are written directly with :func:`sessiontape.cassette.encode_entry`; lines come
in the order a recorder writes them (when each call *ends*), seqs in the order the calls
*started*. Usage::

    python bench/gen.py OUT.jsonl --entries 260000 --workers 8 --hours 8
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

_HERE = Path(__file__).resolve().parent
if str(_HERE.parent / "src") not in sys.path:
    sys.path.insert(0, str(_HERE.parent / "src"))
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from cases.app import STORE_NAME, BenchStore  # noqa: E402

from sessiontape import (  # noqa: E402
    AgentTurn,
    ProcessCall,
    SessionEnd,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
)
from sessiontape.cassette import Level, PayloadCodec, encode_entry  # noqa: E402

__all__ = ["RECORDED_ROOTS", "TapeInfo", "generate"]

#: The roots of the production host the tapes pretend to come from.
RECORDED_ROOTS: Final = {"repo": "/srv/orchestrator/repo", "home": "/home/orch", "tmp": "/tmp"}
_NS: Final = 1_000_000_000
_START_WALL_NS: Final = 1_763_700_000_000_000_000  # 2025-11-21
_START_MONO_NS: Final = 912_345_678_901
_CODEC: Final = PayloadCodec(Level.FULL)  # digests payloads over 64 KiB exactly as recorded
# fmt: off
_WORDS: Final = (
    "the", "a", "to", "of", "and", "in", "is", "for", "on", "with", "that", "this", "be", "it",
    "as", "are", "by", "from", "or", "at", "an", "not", "we", "you", "task", "worker",
    "backlog", "merge", "branch", "commit", "review", "change", "test", "file", "module",
    "function", "class", "update", "fix", "add", "remove", "refactor", "config", "store",
    "agent", "process", "replay", "tape", "session", "error", "return", "value", "result",
    "state", "queue", "thread", "lock", "retry", "timeout", "status", "diff", "patch", "line",
    "path",
)
# fmt: on


@dataclass(frozen=True)
class TapeInfo:
    """What :func:`generate` wrote."""

    path: str
    entries: int
    bytes: int
    workers: int
    recorded_duration_ns: int
    kinds: dict[str, int]
    truncated_payloads: int
    seconds: float


class _Text:
    """Cheap varied text: slices of one random corpus, built once per generator.

    The corpus reads like what flows through an orchestrator: prose with capitals and
    punctuation, Python code (``snake_case``, ``key=value``, ``a: b``, calls), paths and
    log lines. It holds the characters the secret and path scanners stop at (``_ - : =``,
    capitals, ``/``), so scrubbing it costs what scrubbing real output costs.
    """

    def __init__(self, rng: random.Random, size: int = 1 << 20) -> None:
        w = _WORDS
        names = [f"{rng.choice(w)}_{rng.choice(w)}" for _ in range(200)]
        lines: list[str] = []
        length = 0
        while length < size:
            pick = rng.random()
            a, b, c = rng.choice(w), rng.choice(w), rng.choice(w)
            n1, n2 = rng.choice(names), rng.choice(names)
            if pick < 0.35:
                words = " ".join(rng.choice(w) for _ in range(rng.randrange(6, 16)))
                line = f"{a.capitalize()} {words}, then {b} the {c}."
            elif pick < 0.55:
                line = f"    {n1} = {n2}({a}, {b}={rng.randrange(100)})"
            elif pick < 0.65:
                line = f"def {n1}(self, {a}: str, {b}: int = 0) -> {c.capitalize()} | None:"
            elif pick < 0.75:
                line = (
                    f"src/{a}/{n1}.py:{rng.randrange(1, 900)}: {c.capitalize()}Error: "
                    f"{b} {n2} failed"
                )
            elif pick < 0.85:
                line = (
                    f"2025-11-21T0{rng.randrange(10)}:{rng.randrange(10, 60)}:"
                    f"{rng.randrange(10, 60)} INFO {n1} - {a} {b} ({c}={rng.random():.3f})"
                )
            else:
                line = f"- [{rng.choice(' x')}] {a.capitalize()} {b} in `{n1}` ({c})"
            lines.append(line)
            length += len(line) + 1
        self.corpus = "\n".join(lines)
        self.rng = rng

    def take(self, n: int) -> str:
        n = max(0, min(n, len(self.corpus) - 1))
        start = self.rng.randrange(0, len(self.corpus) - n)
        return self.corpus[start : start + n]


def _lognormal_bytes(rng: random.Random, median: int, sigma: float, cap: int) -> int:
    return min(cap, int(rng.lognormvariate(0, sigma) * median))


@dataclass
class _Call:
    """One boundary call of one worker, before seqs are assigned."""

    start: float  # seconds on the worker's raw timeline
    duration: float
    worker: str
    kind: str  # process | agent | store
    fields: dict[str, Any]
    children: list[_Call] = field(default_factory=list)


class _Worker:
    """Builds one worker's timeline of calls."""

    def __init__(self, name: str, index: int, rng: random.Random, text: _Text) -> None:
        self.name = name
        self.index = index
        self.rng = rng
        self.text = text
        self.t = rng.uniform(0, 2.0)  # workers start staggered
        self.calls: list[_Call] = []
        self.tasks: list[str] = []
        self.outcomes = {"completed": 0, "failed": 0, "released": 0, "conflicts": 0}

    # -- call builders -------------------------------------------------------------------

    def _gap(self, low: float = 0.0005, high: float = 0.006) -> None:
        self.t += self.rng.uniform(low, high)

    def store(self, operation: str, *args: Any) -> None:
        d = self.rng.uniform(0.0002, 0.002)
        self.calls.append(
            _Call(self.t, d, self.name, "store", {"operation": operation, "args": list(args)})
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
        env: dict[str, str] | None = None,
        program: str = "git",
    ) -> None:
        d = self.rng.uniform(*seconds)
        self.calls.append(
            _Call(
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

    def agent(self, task_id: str, step: str, attempt: int, worktree: str, result: dict) -> None:
        rng = self.rng
        prompt = self.text.take(_lognormal_bytes(rng, 700, 0.6, 16_000))
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
        size = _lognormal_bytes(rng, 1200, 1.2, 300_000)
        while size > 0:
            chunk = self.text.take(min(size, rng.randrange(120, 600)))
            lines.append('{"type":"assistant","message":{"content":' + json.dumps(chunk) + "}}")
            size -= len(chunk) + 44
        claude = _Call(
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
            _Call(
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
            size = _lognormal_bytes(rng, 1000, 1.0, 60_000)
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
            self.git(
                repo,
                "merge",
                "--no-ff",
                "-m",
                f"Merge {branch}",
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
        self.git(
            repo,
            "merge",
            "--no-ff",
            "-m",
            f"Merge {branch}",
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


def _payload(value: Any) -> tuple[Any, bool]:
    encoded = _CODEC.encode(value) if value else (value if value == "" else None)
    truncated = getattr(encoded, "truncated", False)
    return encoded, truncated


def generate(
    path: str | os.PathLike[str],
    entries: int,
    *,
    workers: int = 8,
    hours: float | None = None,
    seed: int = 20251121,
) -> TapeInfo:
    """Write a tape of exactly ``entries`` lines to ``path``; return what was written.

    ``hours`` is the recorded duration (default: 8 hours per 250,000 entries).
    """
    began = time.perf_counter()
    if entries < 50:
        raise ValueError("a generated tape needs at least 50 entries")
    rng = random.Random(seed)
    text = _Text(rng)
    pool = [_Worker(f"worker-{i + 1}", i, rng, text) for i in range(workers)]
    budget = entries - 3  # session_start, store_snapshot, session_end
    # Round-robin cycles until the workers together made enough calls.
    made = 0
    task_no = 0
    pending: dict[str, str | None] = {w.name: None for w in pool}
    while made < budget:
        for w in pool:
            tid = pending[w.name]
            if tid is None:
                task_no += 1
                tid = f"T{task_no:06d}"
                w.tasks.append(tid)
            before = len(w.calls)
            done = w.cycle(tid)
            pending[w.name] = None if done else tid
            made += sum(1 + len(c.children) for c in w.calls[before:])
    # Every call (nested ones too) on one timeline, by start time: that is seq order.
    flat = heapq.merge(
        *(sorted(_flatten(w.calls), key=lambda c: c.start) for w in pool),
        key=lambda c: c.start,
    )
    calls = list(flat)[:budget]
    raw_end = max(c.start + c.duration for c in calls)
    wanted_h = hours if hours is not None else 8.0 * entries / 250_000
    scale = wanted_h * 3600 / raw_end

    def ns(seconds: float) -> int:
        return int(seconds * scale * _NS)

    # Backlog: every task a worker claimed, plus a tail never reached.
    backlog = []
    for w in pool:
        for prio, tid in enumerate(w.tasks + [f"{w.name}-later-{k}" for k in range(3)]):
            backlog.append(
                {
                    "id": tid,
                    "title": f"Task {tid}: {text.take(40)}",
                    "status": "pending",
                    "affinity": w.name,
                    "worker": None,
                    "claims": 0,
                    "attempt": 0,
                    "commit": None,
                    "priority": prio,
                }
            )
    store = BenchStore(backlog)
    header = SessionStart(
        seq=0,
        ts_ns=_START_WALL_NS,
        mono_ns=_START_MONO_NS,
        run_id=f"bench{seed:x}{entries}",
        recorded_at="2025-11-21T05:20:00+00:00",
        sessiontape_version="bench",
        app_version="orchestrator 3.1.4",
        entrypoint=f"orchestrator run --workers {workers}",
        config={"workers": workers, "backlog": "backlog.db"},
        level="full",
        host="prod-runner-7",
        platform="Linux-6.8-x86_64",
        python="3.11.7",
        roots=dict(RECORDED_ROOTS),
    )
    lines: list[tuple[int, int, bytes]] = [(0, 0, encode_entry(header))]
    snap = StoreSnapshot(
        seq=1,
        ts_ns=_START_WALL_NS + 1000,
        mono_ns=_START_MONO_NS + 1000,
        store=STORE_NAME,
        data=store.snapshot(),
    )
    lines.append((1, 1, encode_entry(snap)))
    seq_of: dict[int, int] = {}
    kinds = {"process": 0, "agent_turn": 0, "store_mutation": 0}
    truncated = 0
    for offset, call in enumerate(calls):
        seq = offset + 2
        seq_of[id(call)] = seq
        start = ns(call.start) + 2000
        common = {
            "seq": seq,
            "ts_ns": _START_WALL_NS + start,
            "mono_ns": _START_MONO_NS + start,
            "worker": call.worker,
            "thread": f"orchestrator-{call.worker}",
            "duration_ns": max(1, ns(call.duration)),
        }
        f = call.fields
        entry: Any
        if call.kind == "process":
            parent = getattr(call, "parent_seq", None)
            stdout, t1 = _payload(f["stdout"])
            stderr, t2 = _payload(f["stderr"])
            stdin, t3 = _payload(f.get("input"))
            truncated += t1 + t2 + t3
            entry = ProcessCall(
                **common,
                parent=parent,
                argv=f["argv"],
                cwd=f["cwd"],
                env=f["env"],
                input=stdin,
                text=f["text"],
                returncode=f["returncode"],
                stdout=stdout,
                stderr=stderr,
            )
            kinds["process"] += 1
        elif call.kind == "agent":
            for child in call.children:
                child.parent_seq = seq  # type: ignore[attr-defined]
            entry = AgentTurn(
                **common, args=f["args"], result=f["result"], result_type="cases.app.StepResult"
            )
            kinds["agent_turn"] += 1
        else:
            result = getattr(store, f["operation"])(*f["args"])
            entry = StoreMutation(
                **common, store=STORE_NAME, operation=f["operation"], args=f["args"], result=result
            )
            kinds["store_mutation"] += 1
        lines.append((common["ts_ns"] + common["duration_ns"], seq, encode_entry(entry)))
    end_offset = max(end for end, _, _ in lines) - _START_WALL_NS + 1000
    outcome = {k: sum(w.outcomes[k] for w in pool) for k in pool[0].outcomes}
    end = SessionEnd(
        seq=len(calls) + 2,
        ts_ns=_START_WALL_NS + end_offset,
        mono_ns=_START_MONO_NS + end_offset,
        outcome=outcome,
        counts={"session_start": 1, "store_snapshot": 1, **kinds, "session_end": 1},
        duration_ns=end_offset,
    )
    # A recorder writes a line when its call ends: file order is end order.
    lines.sort(key=lambda t: (t[0], t[1]))
    data = b"".join(line for _, _, line in lines) + encode_entry(end)
    Path(path).write_bytes(data)
    return TapeInfo(
        path=os.fspath(path),
        entries=len(lines) + 1,
        bytes=len(data),
        workers=workers,
        recorded_duration_ns=end_offset,
        kinds={"session_start": 1, "store_snapshot": 1, **kinds, "session_end": 1},
        truncated_payloads=truncated,
        seconds=time.perf_counter() - began,
    )


def _flatten(calls: list[_Call]) -> list[_Call]:
    out: list[_Call] = []
    for call in calls:
        out.append(call)
        out.extend(call.children)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the .jsonl tape to write")
    parser.add_argument("--entries", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--hours", type=float, default=None)
    parser.add_argument("--seed", type=int, default=20251121)
    args = parser.parse_args(argv)
    info = generate(args.out, args.entries, workers=args.workers, hours=args.hours, seed=args.seed)
    print(
        f"{info.path}: {info.entries} entries, {info.bytes / 1e6:.1f} MB, {info.workers} "
        f"workers, {info.recorded_duration_ns / 3.6e12:.2f} h recorded, "
        f"{info.truncated_payloads} payloads over the inline limit, {info.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
