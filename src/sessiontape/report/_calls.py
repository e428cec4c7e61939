"""What call an entry is: its identity (``git merge``) and its shape.

Two tapes that run ``git commit -q -m 'one'`` and ``git commit -q -m 'two'`` make a call of
the same shape, ``process git commit -m -q``: the boundary, and the request normalised to
what decides which code path the application takes (a process's program, subcommand and
flag names; a store's operation; an agent's step kind and request keys; a user boundary's
method). ``corpus`` counts shapes; ``shrink`` names a failing call by the same identity;
``export --format chrome-trace`` names a process's span by its command.
"""

from __future__ import annotations

from typing import Any, Final

from ..cassette import AgentTurn, Call, Entry, ProcessCall, StoreMutation
from ._describe import command_name

__all__ = ["agent_step", "call_shape", "flag_names"]

#: The keys of an agent request that name the kind of step asked for, in order of preference.
STEP_KEYS: Final = ("step", "kind", "type", "action", "phase")


def agent_step(request: Any) -> str | None:
    """The kind of step an agent request asks for (``{"step": "review", ...}`` -> ``review``)."""
    if isinstance(request, dict):
        for key in STEP_KEYS:
            value = request.get(key)
            if isinstance(value, str):
                return value
    return None


def flag_names(argv: list[str]) -> list[str]:
    """An argv's option names, sorted, without values (``--format=x`` -> ``--format``)."""
    flags = {
        arg.split("=", 1)[0] for arg in argv[1:] if arg.startswith("-") and arg not in ("-", "--")
    }
    return sorted(flags)


def call_shape(entry: Entry) -> str | None:
    """The shape of a call entry; ``None`` for session metadata (header, snapshot, end)."""
    if isinstance(entry, ProcessCall):
        return " ".join(["process", command_name(entry.argv), *flag_names(entry.argv)])
    if isinstance(entry, StoreMutation):
        return f"store {entry.store}.{entry.operation}"
    if isinstance(entry, AgentTurn):
        first = entry.args[0] if entry.args else None
        step = agent_step(first)
        keys = sorted({*(first if isinstance(first, dict) else {}), *entry.kwargs})
        shape = f"agent {entry.agent}.{entry.method}"
        if step is not None:
            shape += f" {step}"
        return f"{shape} ({', '.join(keys)})" if keys else shape
    if isinstance(entry, Call):
        return f"{entry.boundary} {entry.method}"
    return None
