"""Text shaped like what flows through an orchestrator, cheap to cut into many payloads.

The generated tapes (``bench/gen.py``) and the per-call cases draw their prompts, outputs
and results from it, so scrubbing them costs what scrubbing real traffic costs.
"""

from __future__ import annotations

import random
from typing import Final

__all__ = ["Text", "lognormal_bytes"]

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


class Text:
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


def lognormal_bytes(rng: random.Random, median: int, sigma: float, cap: int) -> int:
    return min(cap, int(rng.lognormvariate(0, sigma) * median))
