"""Real programs under record and replay: the harness.

A program runs once under recording in one directory and once under replay in another,
where nothing it made exists. ``Spawns`` counts every real process started, by wrapping
the ways Python starts one (``fork_exec``, ``posix_spawn``, ``fork``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import sessiontape

PY = sys.executable


class Spawns:
    """How many real processes were started while :meth:`counting` was open."""

    def __init__(self) -> None:
        self._monkeypatch = pytest.MonkeyPatch()
        self.started: list[Any] = []

    def _wrap(self, owner: Any, name: str) -> None:
        real = getattr(owner, name, None)
        if real is None:
            return

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.started.append((name, args[:1]))
            return real(*args, **kwargs)

        self._monkeypatch.setattr(owner, name, counted)

    @contextmanager
    def counting(self) -> Iterator[Spawns]:
        import _posixsubprocess

        self._wrap(subprocess, "_fork_exec")
        self._wrap(_posixsubprocess, "fork_exec")
        for name in ("posix_spawn", "posix_spawnp", "fork"):
            self._wrap(os, name)
        try:
            yield self
        finally:
            self._monkeypatch.undo()


@pytest.fixture
def spawns() -> Spawns:
    return Spawns()


@dataclass
class RoundTrip:
    """A program recorded in ``recorded_in`` and replayed in ``replayed_in``."""

    recorded: Any
    replayed: Any
    recording: sessiontape.Recording
    report: sessiontape.ReplayReport
    spawned_on_replay: int
    spawned_on_record: int
    recorded_in: Path
    replayed_in: Path

    @property
    def processes(self) -> list[sessiontape.ProcessCall]:
        return [e for e in self.recording.calls if isinstance(e, sessiontape.ProcessCall)]


Program = Callable[[Path], Any]


@pytest.fixture
def round_trip(tmp_path: Path, spawns: Spawns) -> Callable[..., RoundTrip]:
    """Record ``program(workdir)`` in one directory, replay it in another; count spawns."""

    def run(program: Program, *, setup: Callable[[Path], None] | None = None) -> RoundTrip:
        then, now = tmp_path / "then", tmp_path / "now"
        then.mkdir()
        now.mkdir()
        if setup is not None:
            setup(then)
        cassette = tmp_path / "tape" / "real.jsonl"
        with (
            Spawns().counting() as recording_spawns,
            sessiontape.record(cassette, roots={"work": str(then)}) as tape,
            tape.patch_subprocess(),
        ):
            recorded = program(then)
        with (
            spawns.counting() as counted,
            sessiontape.replay(cassette, roots={"work": str(now)}) as replaying,
        ):
            with replaying.patch_subprocess():
                replayed = program(now)
            report = replaying.finish()
        return RoundTrip(
            recorded,
            replayed,
            sessiontape.load(cassette),
            report,
            len(counted.started),
            len(recording_spawns.started),
            then,
            now,
        )

    return run
