"""Zoo program 3: a thread pool releasing packages with GitPython.

The style: a batch job built on ``concurrent.futures``. The main thread submits one task
per package to a ``ThreadPoolExecutor`` (the tasks do not name themselves: sessiontape
names them by submission order) and collects the futures as they complete. Each task
drives git through GitPython's command layer (``git.Git(path).init()``, ``.add()``,
``.commit()``: intercepted by ``tape.patch_subprocess()``, the program takes no runner),
asks a reviewer (a user-defined substitute boundary, ``tape.boundary``) for a verdict, and
adds the package's line count to a shared ledger (``tape.store``). Between retries it
backs off with ``time.sleep``.

A deploy token comes from ``ZOO_TOKEN``: it goes into each package's remote URL (argv),
``git remote -v`` prints it back (output), and the listing runs with ``GH_TOKEN`` in its
environment.

The planted race, a lost update: the ledger's total is read, then written back with the
package's lines added, in two store calls. The deployed ledger writes only when the total
is still what was read (a task that loses retries); the ``racy`` variant's ledger writes
whatever happened in between, so two interleaved tasks lose one's lines.

Variants (``--variant``): ``default``; ``racy``; ``changed`` (a reworded review request
and ``git add --all``: an update); ``new_call`` (``git status`` before each commit: a live
re-record); ``patched`` (that call behind ``sessiontape.patched``); ``broken`` (package
``gamma`` commits with ``--allow-empty``: a failure to shrink).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import git

import sessiontape

ENTRYPOINT = "zoo-pool"
PACKAGES = {"alpha": 3, "beta": 5, "gamma": 2, "delta": 4}
POOL = 3
BACKOFF = 0.01
MUTATIONS = ("read_total", "write_total")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "zoo",
    "GIT_AUTHOR_EMAIL": "zoo@example.com",
    "GIT_COMMITTER_NAME": "zoo",
    "GIT_COMMITTER_EMAIL": "zoo@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
}


@dataclasses.dataclass(frozen=True)
class Review:
    """The reviewer's verdict on a package."""

    package: str
    approved: bool
    summary: str


class Reviewer:
    """The agent, a deterministic stand-in for a model, behind a user boundary."""

    def review(self, package: str, files: list[str], note: str) -> Review:
        return Review(package, True, f"{note}: {package} ({len(files)} file)")


class Ledger:
    """The running total of released lines. Each public method is one store call."""

    def __init__(self, state: dict[str, int], *, checked: bool = True) -> None:
        self._lock = threading.Lock()
        self.total = state["total"]
        self.applied = state["applied"]
        self.checked = checked

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {"total": self.total, "applied": self.applied}

    def read_total(self) -> int:
        with self._lock:
            return self.total

    def write_total(self, value: int, added: int) -> bool:
        """Store ``value`` (read total + ``added``); checked, only if nothing came between."""
        with self._lock:
            if self.checked and self.total != value - added:
                return False
            self.total = value
            self.applied += added
            return True


class Release:
    """The batch: one pool task per package."""

    def __init__(self, ledger: Any, reviewer: Any, workdir: Path, variant: str) -> None:
        self.ledger = ledger
        self.reviewer = reviewer
        self.workdir = workdir
        self.variant = variant
        self.token = os.environ.get("ZOO_TOKEN", "")

    def add_lines(self, lines: int) -> None:
        while True:
            total = self.ledger.read_total()
            if self.ledger.write_total(total + lines, lines):
                return
            time.sleep(BACKOFF)  # another task wrote in between: back off, read again

    def release(self, package: str) -> dict[str, Any]:
        path = self.workdir / "packages" / package
        path.mkdir(parents=True, exist_ok=True)
        lines = PACKAGES[package]
        (path / "lib.py").write_text("".join(f"x{i} = {i}\n" for i in range(lines)))
        repo = git.Git(path)
        repo.init("-q", "-b", "main")
        repo.add("--all" if self.variant == "changed" else ".")
        files = repo.diff("--cached", "--name-only").split()
        note = "Release review" if self.variant == "changed" else "review"
        verdict = self.reviewer.review(package, files, note)
        if self.variant == "new_call" or (
            self.variant == "patched" and sessiontape.patched("zoo-pool-status")
        ):
            repo.status("--short")
        flags = ["--allow-empty"] if self.variant == "broken" and package == "gamma" else []
        repo.commit("-q", "-m", verdict.summary, *flags, env=GIT_ENV)
        remotes = ""
        if self.token:
            url = f"https://x-access-token:{self.token}@github.com/acme/{package}.git"
            repo.remote("add", "origin", url)
            remotes = repo.remote("-v", env={"GH_TOKEN": self.token})
        self.add_lines(lines)
        sha = repo.rev_parse("HEAD")
        return {"sha": sha, "remotes": len(remotes.splitlines()), "approved": verdict.approved}

    def run(self) -> dict[str, Any]:
        done: dict[str, Any] = {}
        with ThreadPoolExecutor(max_workers=POOL) as pool:
            futures = {pool.submit(self.release, p): p for p in PACKAGES}
            for future in as_completed(futures):
                done[futures[future]] = future.result()
        return {"packages": dict(sorted(done.items())), "total": self.ledger.read_total()}


def run(tape: sessiontape.Tape, workdir: Path, variant: str = "default") -> dict[str, Any]:
    """The whole program, wired through ``tape`` (the same in every mode)."""
    checked = variant != "racy"
    fresh = {"total": 0, "applied": 0}
    live = Ledger(fresh, checked=checked) if tape.mode is not sessiontape.Mode.REPLAY else None

    def seeded(state: dict[str, int]) -> Ledger:
        return Ledger(state, checked=checked)

    ledger = tape.store(live, mutations=MUTATIONS, snapshot=Ledger.snapshot, factory=seeded)
    reviewer = tape.boundary("reviewer", Reviewer(), methods=["review"], result_type=Review)

    def nothing_lost() -> str | None:
        state = ledger.snapshot()
        if state["total"] != state["applied"]:
            return f"lost update: total {state['total']}, lines added {state['applied']}"
        return None

    tape.invariant(nothing_lost)
    with tape.patch_subprocess():
        outcome = Release(ledger, reviewer, workdir, variant).run()
    tape.finish(outcome=outcome)
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zoo-pool", description=__doc__)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--variant", default="default")
    sessiontape.add_record_argument(parser)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = sessiontape.record_path(args)
    roots = {"work": str(args.workdir)}
    with sessiontape.record(path, entrypoint=ENTRYPOINT, roots=roots) as tape:
        print(run(tape, args.workdir, args.variant))
    return 0


if __name__ == "__main__":
    sys.exit(main())
