"""One-line descriptions of entries: the report's context, ``sessiontape show``, candidates."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any, Final

from ..cassette import (
    AgentTurn,
    Blob,
    Call,
    Entry,
    Error,
    Patched,
    Payload,
    ProcessCall,
    SessionEnd,
    SessionResume,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
    stored_result,
)
from ._values import summarize_value

__all__ = ["command_name", "describe", "format_ms", "payload_size", "subcommand"]


def format_ms(ns: int) -> str:
    """A duration in ns as a short human string (``"12.3ms"``, ``"4.20s"``)."""
    if ns >= 10_000_000_000:
        return f"{ns / 1e9:.1f}s"
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:.2f}s"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.1f}ms"
    return f"{ns / 1e3:.0f}µs"


def payload_size(payload: Payload) -> int:
    """Size in bytes of a stored payload (the original size for digests)."""
    if payload is None:
        return 0
    if isinstance(payload, Blob):
        return payload.size
    return len(payload.encode("utf-8", "surrogateescape"))


def _args(args: list[Any], kwargs: dict[str, Any], width: int) -> str:
    parts = [summarize_value(a, width) for a in args]
    parts += [f"{k}={summarize_value(v, width)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _method_call(name: str, entry: AgentTurn | StoreMutation | Call, width: int) -> str:
    """``name(args) -> result`` (or ``-> Type: message`` when the call raised)."""
    if entry.error is not None:
        outcome = f"{entry.error.type}: {entry.error.message}"
    else:
        outcome = summarize_value(stored_result(entry.result), width)
    return f"{name}({_args(entry.args, entry.kwargs, 30)}) -> {outcome}"


def describe(entry: Entry, *, width: int = 60) -> str:
    """``seq 12 worker-2 process: git status -> 0 (3.1ms)`` — the five W's on one line."""
    head = f"seq {entry.seq} {entry.worker}"
    if isinstance(entry, ProcessCall):
        cmd = shlex.join(entry.argv)
        if len(cmd) > width:
            cmd = cmd[: width - 1] + "…"
        if entry.spawn_error is not None:
            outcome = f"{entry.spawn_error.type}: {entry.spawn_error.message}"
        elif entry.timed_out:
            outcome = f"timed out after {entry.timeout}s"
        else:
            outcome = f"exit {entry.returncode}"
        return f"{head} process: {cmd} -> {outcome} ({format_ms(entry.duration_ns)})"
    if isinstance(entry, AgentTurn):
        call = _method_call(f"{entry.agent}.{entry.method}", entry, width)
        return f"{head} {call} ({format_ms(entry.duration_ns)})"
    if isinstance(entry, StoreMutation):
        return f"{head} {_method_call(f'{entry.store}.{entry.operation}', entry, width)}"
    if isinstance(entry, Call):
        return f"{head} {_method_call(f'{entry.boundary}.{entry.method}', entry, width)}"
    if isinstance(entry, StoreSnapshot):
        size = len(entry.data) if isinstance(entry.data, (list, dict)) else 1
        return f"{head} snapshot of {entry.store} ({size} item(s))"
    if isinstance(entry, Error):
        ended = "" if entry.origin == "session" else f" (ended a {entry.origin} of {entry.worker})"
        return f"{head} error: {entry.type}: {entry.message}{ended}"
    if isinstance(entry, SessionEnd):
        return (
            f"{head} session end: {summarize_value(entry.outcome, width)} "
            f"after {format_ms(entry.duration_ns)}"
        )
    if isinstance(entry, SessionStart):
        return (
            f"{head} session start: run {entry.run_id} of {entry.entrypoint or '?'} "
            f"(level {entry.level}, recorded {entry.recorded_at})"
        )
    if isinstance(entry, Patched):
        return f"{head} patched: the code knew the change {entry.id!r}"
    if isinstance(entry, SessionResume):
        return (
            f"{head} session resumed: by {entry.entrypoint or '?'} "
            f"(level {entry.level}, recorded {entry.recorded_at})"
        )
    raise TypeError(f"not a sessiontape entry: {entry!r}")  # pragma: no cover


# A subcommand: a word, not a path, a file name or a sentence (`git merge`, `gh pr`).
_SUBCOMMAND: Final = re.compile(r"[A-Za-z][A-Za-z0-9_:-]*")


def _subcommand_at(argv: Sequence[str]) -> int | None:
    """The index of the first plain word after the options (see :func:`command_name`)."""
    skip_next = False
    for index in range(1, len(argv)):
        arg = argv[index]
        if skip_next:
            skip_next = False
            continue
        if arg == "--":
            continue
        if arg.startswith("-"):
            skip_next = len(arg) == 2
            continue
        return index if _SUBCOMMAND.fullmatch(arg) else None
    return None


def command_name(argv: Sequence[str]) -> str:
    """The program's base name and its first subcommand: ``git -C {repo} merge x`` -> ``git merge``.

    The value right after a two-letter option (``-C dir``, ``-c key=value``) is skipped, as
    it most likely belongs to the option; the first remaining argument that is a plain word
    is the subcommand. A program without one is named alone (``sh -c '...'`` -> ``sh``).
    """
    if not argv:
        return "?"
    program = argv[0].replace("\\", "/").rsplit("/", 1)[-1] or argv[0]
    at = _subcommand_at(argv)
    return program if at is None else f"{program} {argv[at]}"


def subcommand(argv: Sequence[str]) -> str | None:
    """The subcommand of a call that has one for sure: the first plain word after the
    options, when more arguments follow it (``git -C {repo} status --short`` ->
    ``status``; in ``python -c CODE word`` the last word is an argument, not one)."""
    at = _subcommand_at(argv)
    return argv[at] if at is not None and at < len(argv) - 1 else None
