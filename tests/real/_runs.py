"""One harness, two ways in: every update and live re-record of a tape, run through the
Python API (``sessiontape.replay(path, update=..., live=...)``) or through pytest
(``pytest --replay PATH --sessiontape-update --sessiontape-live=...`` in a ``pytester``
project), with the same outcome to assert on. Update and live are one mechanism; each
test of them runs both ways.

The program is given by a :class:`Program`: how to run it on a tape (the API way) and the
files of a project whose ``sessiontape_replay`` hook runs it (the pytest way).
"""

from __future__ import annotations

import hashlib
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import sessiontape

#: How a program is run on a replay tape (API way): ``run(tape, changes)``, returning its
#: outcome.
RunOnTape = Callable[[Any, frozenset[str]], Any]


@dataclass
class Program:
    """A program under test: recorded to a tape, run on a tape, and the project files
    that replay it."""

    record: Callable[[Path, frozenset[str]], Any]
    run: RunOnTape
    #: The files of a pytester project that replays its tapes (name -> source).
    project: dict[str, str]
    #: The environment variable that tells the project's hook today's changes.
    changes_env: str


@dataclass
class Done:
    """What one update or live re-record did, either way it was run."""

    ok: bool
    #: The report's text (API) or pytest's output (pytest).
    text: str
    report: sessiontape.ReplayReport | None = None
    #: The exception that left the replay (API), if any.
    error: BaseException | None = None
    outcomes: dict[str, int] = field(default_factory=dict)

    def live_flags(self) -> list[str]:
        """The ``--sessiontape-live=...`` and ``--sessiontape-update`` flags of the command
        the output says records the calls the tape has no answer for."""
        found = re.search(r"(--sessiontape-live=\S+) --sessiontape-update", self.text)
        assert found is not None, self.text
        return [found.group(1), "--sessiontape-update"]

    def command(self) -> str:
        """The whole ``pytest ...`` command the output names for that."""
        found = re.search(
            r"(pytest --replay \S+ --sessiontape-live=\S+ --sessiontape-update)", self.text
        )
        assert found is not None, self.text
        return found.group(1)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Runs:
    """Replays of one tape, the API way or the pytest way (``via``)."""

    def __init__(
        self, via: str, program: Program, tape: Path, request: pytest.FixtureRequest
    ) -> None:
        self.via = via
        self.program = program
        self.tape = tape
        self._request = request
        self._pytester: pytest.Pytester | None = None

    def record(self, changes: Sequence[str] = ()) -> bytes:
        """Record the tape (with the code of ``changes``); its bytes."""
        self.tape.parent.mkdir(parents=True, exist_ok=True)
        self.program.record(self.tape, frozenset(changes))
        return self.tape.read_bytes()

    def _project(self) -> pytest.Pytester:
        if self._pytester is None:
            pytester: pytest.Pytester = self._request.getfixturevalue("pytester")
            for name, source in self.program.project.items():
                (pytester.path / name).write_text(source, encoding="utf-8")
            self._pytester = pytester
        return self._pytester

    def replay(
        self,
        changes: Sequence[str] = (),
        *,
        update: bool = False,
        live: Sequence[str] = (),
        flags: Sequence[str] | None = None,
    ) -> Done:
        """Replay the tape with today's ``changes``; ``flags`` (pytest's, e.g. from
        :meth:`Done.live_flags`) stand for ``update`` and ``live`` when given."""
        if flags is not None:
            update = "--sessiontape-update" in flags
            live = [
                part
                for f in flags
                if f.startswith("--sessiontape-live=")
                for part in f.split("=", 1)[1].split(",")
            ]
        if self.via == "api":
            return self._api(frozenset(changes), update, live)
        return self._pytest(changes, update, live)

    def _api(self, changes: frozenset[str], update: bool, live: Sequence[str]) -> Done:
        player = sessiontape.replay(self.tape, update=update, live=list(live))
        error: BaseException | None = None
        try:
            with player:
                outcome = self.program.run(player, changes)
                player.finish(outcome)
        except Exception as exc:  # the application's end, or a strict stop
            error = exc
        report = player.report
        assert report is not None
        text = report.render(max_mismatches=1000)
        if error is not None:
            text += "\n" + "".join(str(x) for x in (error, *getattr(error, "__notes__", ())))
        return Done(report.ok and error is None, text, report=report, error=error)

    def _pytest(self, changes: Sequence[str], update: bool, live: Sequence[str]) -> Done:
        pytester = self._project()
        args = ["-p", "no:randomly", "-p", "no:cacheprovider", "--replay", str(self.tape)]
        if update:
            args.append("--sessiontape-update")
        if live:
            args.append(f"--sessiontape-live={','.join(live)}")
        monkeypatch = self._request.getfixturevalue("monkeypatch")
        monkeypatch.setenv(self.program.changes_env, ",".join(changes))
        result = pytester.runpytest_subprocess(*args)
        outcomes = result.parseoutcomes()
        text = result.stdout.str() + result.stderr.str()
        ok = outcomes.get("passed", 0) == 1 and not outcomes.get("failed")
        return Done(ok, text, outcomes=outcomes)

    def paste(self, command: str) -> Done:
        """Run a ``pytest ...`` command exactly as the output printed it (pytest way)."""
        argv = shlex.split(command)
        assert argv[0] == "pytest"
        pytester = self._project()
        result = pytester.run(sys.executable, "-m", "pytest", *argv[1:])
        outcomes = result.parseoutcomes()
        return Done(
            outcomes.get("passed", 0) == 1 and not outcomes.get("failed"),
            result.stdout.str() + result.stderr.str(),
            outcomes=outcomes,
        )


VIA = [pytest.param("api", id="api"), pytest.param("pytest", id="pytest")]

__all__ = ["VIA", "Done", "Program", "Runs", "sha256"]
