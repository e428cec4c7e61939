"""The ``sessiontape_*`` hooks a project (its ``conftest.py``) or a plugin implements.

Implement them as plain module-level functions in ``conftest.py`` (or mark them with
``sessiontape.hookimpl`` in an installed plugin that registers under the ``sessiontape``
entry-point group). The same hooks serve inside pytest and outside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .cassette import CallEntry, Recording
    from .replayer import Noise
    from .tape import ReplayTape

hookspec = pluggy.HookspecMarker("sessiontape")


@hookspec(firstresult=True)
def sessiontape_replay(tape: ReplayTape, recording: Recording) -> Any:
    """Run the application against ``recording`` through ``tape`` (a replay tape).

    Wire the application as in production, using ``tape.process_runner()``,
    ``tape.agent(...)``, ``tape.store(...)`` and ``tape.clock``, and run it. If the
    application learns its directories only now, name them with ``tape.set_roots(...)``
    before the first call.

    Return ``None`` for a cassette that is not yours (the next implementation gets it);
    anything else says it was handled, and the first implementation that handles it wins.
    The outcome is compared with the recorded one when the hook calls
    ``tape.finish(outcome)``, or when it returns the outcome (not ``True``) and the
    recording has one. A hook that lets an exception out has handled the cassette too:
    if it is the recorded crash, the replay passes. ``pytest cassettes/`` calls this for
    every cassette.
    """


@hookspec
def sessiontape_scrubbers() -> Iterable[Callable[[str], str]]:
    """Return functions applied to every recorded text after the built-in redaction.

    Each takes a string and returns it with the project's own secrets replaced, e.g.
    ``lambda s: s.replace(INTERNAL_HOST, "[REDACTED:host]")``.
    """
    return ()


@hookspec
def sessiontape_noise() -> Noise | Iterable[str] | None:
    """Return noise masks that every replay applies before comparing requests.

    Either field paths (``"process.env.HOME"``, ``"agent.args[0].prompt"``) or a
    :class:`sessiontape.Noise` with field masks and regex substitutions.
    """


@hookspec(firstresult=True)
def sessiontape_match(
    boundary: str, expected: Mapping[str, Any], actual: Mapping[str, Any]
) -> bool | None:
    """Decide whether an actual request matches the recorded one.

    Both are normalised request dicts (noise already masked). Return ``True`` to accept,
    ``False`` to reject (the field diff is still reported), ``None`` to leave it to the
    default comparison.
    """


@hookspec(firstresult=True)
def sessiontape_classify_error(entry: CallEntry) -> str | None:
    """Name the class of a recorded call that failed, before the built-in rules.

    ``entry`` is the call as read from the tape (a process call that could not start,
    timed out or exited non-zero; a method call that raised: its ``error`` holds the
    exception's type name and message). Return one of ``auth``, ``rate_limit``,
    ``timeout``, ``validation``, ``server``, ``spawn``, ``exit`` or ``other``, or
    ``None`` to leave it to the rules in the README (any other answer is ignored).
    ``show``, ``stats``, ``export``, ``serve`` and ``report`` ask it.
    """


@hookspec
def sessiontape_invariant(tape: ReplayTape, stores: Mapping[str, Any]) -> str | bool | None:
    """Check an invariant of the application's state during replay.

    Called after every verify-boundary call (a store mutation) and at the end of a replay,
    with ``stores``: the replayed verify boundaries by name (the real objects the replay
    runs, e.g. ``stores["store"]`` for ``tape.store(...)``). Return ``None`` or ``True``
    when the invariant holds; ``False`` or a message saying what is wrong when it does
    not. Under chaos replay (``--sessiontape-chaos``) a violation fails the schedule; in a
    plain replay it is an ``invariant_violated`` mismatch. Declaring none costs nothing.
    """
