"""The entry points: ``record()``, ``replay()`` and the switches that turn recording on.

These build the tapes of the front (``sessiontape.tape``) and bring in what the project's
``sessiontape_*`` hooks contribute: extra scrubbers, noise masks, a custom matcher. The
tapes themselves never call hooks, so the layers below know nothing of plugins.
"""

from __future__ import annotations

import os

# ``record(None)`` (recording off, the production default) must cost next to nothing, so
# this module imports only what that path needs; the engines, the cassette format and the
# hooks are imported by the calls that use them.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping, Sequence
    from typing import Any, Final, Literal

    from .cassette import Level, Recording
    from .recorder import IfExists
    from .replayer import Fork, Noise, Schedule
    from .scrub import PathRoots
    from .tape import ReplayTape, Tape

__all__ = ["ENV_VAR", "add_record_argument", "record", "record_path", "replay"]

#: The environment variable that turns recording on: ``SESSIONTAPE_RECORD=PATH``.
ENV_VAR: Final = "SESSIONTAPE_RECORD"


def record(
    path: str | os.PathLike[str] | None = None,
    *,
    config: Any = None,
    app_version: str | None = None,
    entrypoint: str | None = None,
    level: Level | str = "full",
    if_exists: IfExists = "force",
    roots: Mapping[str, str] | PathRoots | None = None,
    max_inline_bytes: int | None = None,
    redact: bool = True,
) -> Tape:
    """Start recording a session to the cassette at ``path``.

    With ``path=None`` the ``SESSIONTAPE_RECORD`` environment variable names the cassette;
    when it is unset too, recording is disabled and the returned tape passes everything
    through untouched. ``if_exists="force"`` moves an existing cassette to
    ``NAME.old.TIMESTAMP``; ``"append"`` resumes it, continuing its seqs. ``roots`` maps
    placeholder names to directories (``{"repo": "/srv/app"}``) in addition to the
    defaults (the git checkout around the current directory, home, temp). A payload
    larger than ``max_inline_bytes`` (default 64 KiB) goes to the cassette's sidecar at
    level ``full``, and is kept as a digest only at lower levels.
    """
    if path is None:
        path = os.environ.get(ENV_VAR) or None
    if path is None:
        from .tape import DisabledTape

        return DisabledTape()
    from . import _hooks
    from .cassette import DEFAULT_MAX_INLINE_BYTES
    from .recorder import Recorder
    from .tape import RecordTape

    if max_inline_bytes is None:
        max_inline_bytes = DEFAULT_MAX_INLINE_BYTES
    recorder = Recorder(
        path,
        config=config,
        app_version=app_version,
        entrypoint=entrypoint,
        level=level,
        if_exists=if_exists,
        roots=roots,
        max_inline_bytes=max_inline_bytes,
        redact=redact,
        scrubbers=_hooks.scrub_functions(),
    )
    return RecordTape(recorder)


def replay(
    source: str | os.PathLike[str] | Recording,
    *,
    strict: bool = False,
    noise: Noise | Sequence[str] | Mapping[str, Any] | None = None,
    roots: Mapping[str, str] | PathRoots | None = None,
    patch_time: bool = True,
    lookahead: int | None = None,
    order_timeout: float | None = None,
    update: bool | Literal["pending"] = False,
    live: Sequence[str] = (),
    app_version: str | None = None,
    schedule: Schedule | None = None,
    fork: Fork | None = None,
) -> ReplayTape:
    """Replay a cassette (a path or a loaded :class:`Recording`).

    Wire the application through the returned tape exactly as when recording. ``strict``
    raises :class:`ReplayMismatch` at the first divergence; otherwise everything is
    collected and :meth:`ReplayTape.finish` returns the report. ``noise`` masks fields
    that legitimately differ (``["process.env.HOME", "agent.args[0].prompt"]``, or a
    :class:`Noise` with regex substitutions). ``roots`` names today's directories for the
    recorded path placeholders. With ``patch_time`` (the default), entering the tape
    makes ``time.sleep`` instant and wall-clock reads virtual. ``lookahead`` is how many
    entries past a queue's head a request may match (default 8), ``order_timeout`` how
    many real seconds the whole replay may stand still (no call served, no live call
    running) while a verify-boundary call waits for its recorded turn, before it gives up
    (default 2.0).

    With ``update=True`` the tape is rewritten to match today's code wherever it can
    still answer (today's requests, today's store results, calls no longer made dropped);
    the report lists each change (``report.rewrites``). A call the tape cannot answer
    fails the replay and nothing is written. The cassette must be a file sessiontape may
    replace (not a symlink, in a writable directory). With ``update="pending"`` the tape
    stays as it is: the changes go into ``NAME.pending`` beside it, each with an id and a
    category, for ``sessiontape review`` (or ``accept``/``reject``) to decide, and the
    replay fails, saying so (``report.pending_to``).

    ``live`` re-records a segment: the calls its selectors pick (``"process"``,
    ``"agent"``, ``"worker-2"``, ``"process@worker-2"``, ``"process:git"``) run for real
    through the runner or adapter the application wired, and are recorded (scrubbed as
    when recording); the others are served from the tape. The new tape is written beside
    the old one (``x.rerecorded.jsonl``), or over it with ``update=True``; its header
    notes the segments, the time and ``app_version`` (default: the tape's).

    With a :class:`Schedule`, the replay is a chaos schedule: the application's threads
    run one at a time between boundary calls, interleaved as the schedule's seed decides,
    each call answered by the recorded call that asked the same. The tape then never
    raises on a divergence; ``tape.chaos`` (after the ``with`` block) says whether the
    schedule passed, failed (and how) or was inadmissible.

    With a :class:`Fork` (``Fork(seq=54, answer={...})``), the replay is exact up to the
    call recorded at ``seq``, which gets ``answer`` instead of its recorded one (or runs
    live, with no answer); after it, each call is answered by a recorded call not yet used
    that asked exactly the same, and runs live through the real runner, adapter or
    object the application wired otherwise (``Fork(..., live=False)``: stops there,
    named in ``tape.fork.stopped``). The branch is written beside the tape as
    ``x.fork-SEQ.jsonl``, whose header names the tape, its SHA-256, the seq and the
    answer; ``tape.fork`` says how many calls the tape answered and how many ran live.
    """
    from . import _hooks
    from ._errors import UsageError
    from .cassette import Recording, load_for_replay, load_with_lines
    from .replayer import (
        DEFAULT_LOOKAHEAD,
        DEFAULT_ORDER_TIMEOUT,
        ChaosEngine,
        ForkEngine,
        Noise,
        ReplayEngine,
        SavedScheduleEngine,
    )
    from .tape import ReplayTape

    if update not in (True, False, "pending"):
        raise UsageError(
            f"update={update!r}: pass True (rewrite the tape), 'pending' (write the "
            "changes beside it for review) or False."
        )
    if schedule is not None and (update or live):
        raise UsageError(
            "a chaos schedule replays the tape in an order production did not run and "
            "never rewrites it: pass schedule= without update= or live=."
        )
    if fork is not None and (schedule is not None or update or live):
        raise UsageError(
            "a fork writes its branch beside the tape and runs live what the tape cannot "
            "answer: pass fork= without schedule=, update= or live=."
        )
    if lookahead is None:
        lookahead = DEFAULT_LOOKAHEAD
    if order_timeout is None:
        order_timeout = DEFAULT_ORDER_TIMEOUT
    options: dict[str, Any] = {} if schedule is None else {"schedule": schedule}
    if isinstance(source, Recording):
        recording = source
    elif fork is not None:
        # The branch copies the tape's lines before the fork: those it replayed.
        recording, data, in_order = load_with_lines(source)
        options["original"] = (data, in_order)
    else:
        recording = load_for_replay(source)
    kind: type[ReplayEngine] = ReplayEngine
    if schedule is not None:
        kind = ChaosEngine
    elif fork is not None:
        kind = ForkEngine
        options["fork"] = fork
    elif recording.header.schedule is not None and not update and not live:
        kind = SavedScheduleEngine  # a saved schedule stops where the schedule stopped
    engine = kind(
        recording,
        strict=strict,
        noise=Noise.coerce(noise) | _hooks.noise(),
        matcher=_hooks.custom_matcher(),
        roots=roots,
        scrubbers=_hooks.scrub_functions(),
        lookahead=lookahead,
        order_timeout=order_timeout,
        update=update,
        live=[live] if isinstance(live, str) else live,
        app_version=app_version,
        **options,
    )
    tape = ReplayTape(engine, patch_time=patch_time)
    check = _hooks.invariant_hook(tape)
    if check is not None:
        tape.invariant(check)
    return tape


def add_record_argument(parser: argparse.ArgumentParser, *, flag: str = "--record-session") -> None:
    """Add ``--record-session PATH`` to an application's argparse parser.

    Pair it with :func:`record_path`: ``sessiontape.record(sessiontape.record_path(args))``.
    """
    parser.add_argument(
        flag,
        metavar="PATH",
        default=None,
        help=f"record this run to a sessiontape cassette at PATH (or set {ENV_VAR}=PATH)",
    )


def record_path(
    args: argparse.Namespace | None = None, *, dest: str = "record_session"
) -> str | None:
    """The cassette path asked for by ``--record-session`` or ``SESSIONTAPE_RECORD``."""
    value = getattr(args, dest, None) if args is not None else None
    return value or os.environ.get(ENV_VAR) or None
