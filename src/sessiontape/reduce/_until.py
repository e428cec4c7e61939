"""``shrink --until CMD``: the user's shell command decides instead of a replay."""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from ._verdict import Signature, Verdict

__all__ = ["Until"]


class Until:
    """An :class:`~._verdict.Oracle` that runs ``command`` on each candidate's path, ``jobs``
    at a time: exit 0 means the candidate is still interesting (as C-Reduce's test does)."""

    def __init__(self, command: str, jobs: int) -> None:
        #: The signature every candidate gets when the command exits 0.
        self.signature = Signature("until", "command", "exit 0")
        self.command = command
        self.size = jobs
        self.replays = 0
        self.timeout: float | None = None
        self._threads = ThreadPoolExecutor(max_workers=jobs)

    def _one(self, path: str) -> Verdict:
        quoted = shlex.quote(path)
        line = (
            self.command.replace("{}", quoted)
            if "{}" in self.command
            else (f"{self.command} {quoted}")
        )
        started = time.perf_counter()
        try:
            code = subprocess.run(
                line,
                shell=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=self.timeout,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            return Verdict(True, lost=True)
        spent = time.perf_counter() - started
        if code == 0:
            return Verdict(False, self.signature, "the command exited 0", seconds=spent)
        return Verdict(True, seconds=spent)

    def run(self, paths: Sequence[str]) -> list[Verdict]:
        """Run the command on each of ``paths``; a verdict each, in their order."""
        verdicts = list(self._threads.map(self._one, paths))
        self.replays += len(paths)
        return verdicts

    def close(self) -> None:
        """Wait for the commands still running; start no more."""
        self._threads.shutdown(wait=True, cancel_futures=True)
