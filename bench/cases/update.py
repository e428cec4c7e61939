"""Update mode: a 100k-entry tape updated (``replay(path, update=True)``) against its plain
replay, each in a fresh interpreter, on copies of the generated tape.

``changed``: one process call in a hundred recorded with an argument today's code no
longer passes (its last argument edited in the copy), so the update rewrites those lines
and renames the new tape over the old. ``unchanged``: the tape as generated, so the update
finds nothing to change and writes nothing (the file's inode and mtime are checked). The
figure is the update of the changed tape over the plain replay of the same tape as it is
after the update (target: at most 3×).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from sessiontape.cassette import load_for_replay
from sessiontape.replayer import prepare

from .app import replay_session
from .common import cpu_ns, in_subprocess, median, now_ns

__all__ = ["child_update", "edit_arguments", "run"]

_PROCESS_ARGV = re.compile(rb'^(\{"kind":"process".*?"argv":\[[^\]]*?)"([^"\\]*)"\]')


def edit_arguments(path: Path, every: int = 100) -> int:
    """Edit the last argument of one process call in ``every`` (of three or more
    arguments, so it stays the same program and subcommand, and one the tape has once, so
    no other recorded call matches today's request); how many were edited."""
    lines = path.read_bytes().splitlines(keepends=True)
    matches = [
        _PROCESS_ARGV.match(line) if line.startswith(b'{"kind":"process"') else None
        for line in lines
    ]
    seen_argv: dict[bytes, int] = {}
    for match in matches:
        if match is not None:
            argv = match.group(0)[match.group(0).index(b'"argv":') :]
            seen_argv[argv] = seen_argv.get(argv, 0) + 1
    edited = seen = 0
    for i, line in enumerate(lines):
        match = matches[i]
        if match is None:
            continue
        seen += 1
        if seen % every:
            continue
        argv = match.group(0)[match.group(0).index(b'"argv":') :]
        if match.group(1).count(b'","') < 2 or seen_argv[argv] > 1:
            continue
        lines[i] = match.group(1) + b'"' + match.group(2) + b'-then"]' + line[match.end() :]
        edited += 1
    path.write_bytes(b"".join(lines))
    return edited


def child_update(path: str, today: str, workdir: str, update: bool) -> dict[str, Any]:
    """One replay of ``path`` (updating it with ``update``) by code that makes the calls
    of ``today``, timed after the one-time set-up (and loading ``today``)."""
    prepare()
    made = load_for_replay(today)
    before = os.stat(path)
    roots = {"repo": tempfile.mkdtemp(prefix="bench-update-", dir=workdir)}
    wall0, cpu0 = now_ns(), cpu_ns()
    report, _ = replay_session(path, roots=roots, update=update, today=made)
    wall, cpu = now_ns() - wall0, cpu_ns() - cpu0
    after = os.stat(path)
    if not report.ok:
        raise AssertionError(f"the replay did not pass: {report.mismatches[:3]!r}")
    return {
        "wall_ns": wall,
        "cpu_ns": cpu,
        "rewrites": len(report.rewrites),
        "written": report.rewritten_to is not None,
        "same_file": (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns),
    }


def run(*, path: Path, workdir: Path, repeat: int) -> dict[str, Any]:
    """The update of the changed tape, the plain replay, and the update finding nothing."""
    target = "cases.update:child_update"
    updates: list[dict[str, Any]] = []
    plains: list[dict[str, Any]] = []
    unchanged: list[dict[str, Any]] = []
    edited = 0
    for _ in range(repeat):
        copy = workdir / "update-copy.jsonl"
        shutil.copyfile(path, copy)
        edited = edit_arguments(copy)
        common = {"today": str(path), "workdir": str(workdir)}
        updates.append(in_subprocess(target, path=str(copy), update=True, **common))
        plains.append(in_subprocess(target, path=str(copy), update=False, **common))
        unchanged.append(in_subprocess(target, path=str(copy), update=True, **common))
    update_ns = median([u["wall_ns"] for u in updates])
    plain_ns = median([p["wall_ns"] for p in plains])
    return {
        "edited": edited,
        "rewrites": updates[0]["rewrites"],
        "update_ns": update_ns,
        "plain_ns": plain_ns,
        "unchanged_ns": median([u["wall_ns"] for u in unchanged]),
        "unchanged_written": any(u["written"] or not u["same_file"] for u in unchanged),
        "ratio": update_ns / plain_ns if plain_ns else None,
        "unchanged_ratio": median([u["wall_ns"] for u in unchanged]) / plain_ns
        if plain_ns
        else None,
    }
