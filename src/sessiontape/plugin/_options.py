"""The plugin's options: one group, ``--record-session``, ``--replay`` and
``--sessiontape-*``, each value checked by argparse, with its ini twin; and the few helpers
every part of the plugin reads.

The entry point imports this module, so every pytest run that has sessiontape installed
does: it imports nothing of sessiontape beyond the package itself, and builds nothing but
the options. What the options resolve to (``_settings``) is worked out only in a run that
uses sessiontape (:func:`in_use`, and ``_run.activate``); the cassette format and the
engines load only when an option or a tape needs them.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn

import pytest

if TYPE_CHECKING:
    from ..cassette import SessionStart
    from ..fleet import Shard
    from ._settings import RecordMode

__all__ = [
    "ACTIVE_TAPE",
    "MARKER",
    "MARKER_KWARGS",
    "MARKER_LINE",
    "REPORT_PROPERTY",
    "REWRITES_PROPERTY",
    "USE_CASSETTE_DIR",
    "assert_never",
    "fixture_nodeid",
    "in_use",
    "pytest_addoption",
    "read_header",
    "recorded_by_fixture",
    "shown_path",
]

#: The value of ``--record-session`` given without DIR: "use the cassette dir setting".
#: A string, so the option value stays a plain picklable ``str | None``.
USE_CASSETTE_DIR: Final = ""
MARKER: Final = "sessiontape"
MARKER_KWARGS: Final = frozenset({"cassette", "mode", "strict", "noise", "roots"})
#: The marker's line in ``pytest --markers`` (registered in every run: ``--strict-markers``).
MARKER_LINE: Final = (
    f"{MARKER}(cassette=None, mode=None, strict=None, noise=None, roots=None): "
    "settings of the `tape` fixture for this test: cassette path (relative to the "
    "cassette dir), record mode (once, none, all, new), strict replay, noise masks, "
    "path roots."
)
REPORT_PROPERTY: Final = "sessiontape_report"
#: The user property carrying what an update or a live re-record changed in a tape.
REWRITES_PROPERTY: Final = "sessiontape_rewrites"
#: The user property carrying what a fork did (its summary line).
FORK_PROPERTY: Final = "sessiontape_fork"
#: The tape a test's ``tape`` fixture opened (``_fixture._Active``), on the item.
ACTIVE_TAPE: Final = pytest.StashKey[Any]()
#: The ini settings and their defaults: a value other than its default is a use.
_INI_DEFAULTS: Final = {
    "sessiontape_cassette_dir": "cassettes",
    "sessiontape_record_mode": "once",
    "sessiontape_strict": False,
    "sessiontape_noise": [],
}


def assert_never(value: NoReturn) -> NoReturn:
    raise AssertionError(f"unhandled value {value!r}")  # pragma: no cover


# -- option values ------------------------------------------------------------------------
# argparse calls these ``type=`` callables; ArgumentTypeError becomes pytest's usage error
# ("error: argument --replay: ..."), so a bad value stops the run before anything happens.


def _record_mode(value: str) -> RecordMode:
    """``--sessiontape-mode``: the record mode (given: sessiontape is in use)."""
    from ._settings import record_mode

    return record_mode(value)


def _record_dir(value: str) -> str:
    """``--record-session DIR``: refuses a test path swallowed as DIR."""
    if not value.strip():
        # The const of a bare --record-session (argparse converts it too).
        return USE_CASSETTE_DIR
    # nargs="?" makes argparse take the next word as DIR: in `pytest --record-session
    # tests/test_app.py::test_one` that is the test the user meant to select.
    if "::" in value or value.endswith(".py"):
        raise argparse.ArgumentTypeError(
            f"{value!r} looks like a test, not a cassette directory. Put the flag after "
            f"the tests (pytest {shlex.quote(value)} --record-session), or name the "
            "directory with --record-session=DIR."
        )
    return value


def _replay_path(value: str) -> str:
    """``--replay PATH``: an existing cassette file or folder, or a store URL (listed when
    the run is configured)."""
    from ..fleet import is_url

    if is_url(value):
        return value
    path = Path(value)
    if path.is_dir():
        return value
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{value!r}: no such cassette file or folder.")
    from ..cassette import is_cassette

    if not is_cassette(path):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a sessiontape cassette (its first line is not a "
            "session_start entry)."
        )
    return value


def _shard(value: str) -> Shard:
    """``--sessiontape-shard i/N`` (the fleet layer loads only when the option is given)."""
    from ..fleet import parse_shard

    return parse_shard(value)


def _report_path(value: str) -> str:
    """``--sessiontape-report PATH``: a file to write, not a directory."""
    if not value.strip() or Path(value).is_dir():
        raise argparse.ArgumentTypeError(f"{value!r} is a directory; name a .json file.")
    return value


def _fork_seq(value: str) -> int:
    """``--sessiontape-fork SEQ``: a seq, a whole number from 1 (seq 0 is the header)."""
    try:
        seq = int(value)
    except ValueError:
        seq = 0
    if seq < 1:
        raise argparse.ArgumentTypeError(
            f"{value!r}: give the seq of a recorded call (sessiontape show TAPE lists them)."
        )
    return seq


def _live_selector(value: str) -> str:
    """``--sessiontape-live SELECTOR``: a well-formed selector (checked against each tape
    when it is replayed)."""
    import re

    for part in value.split(","):
        if not re.fullmatch(r"[\w.-]+(?::[^@\s,]+)?(?:@\S+)?", part.strip()):
            raise argparse.ArgumentTypeError(
                f"{value!r}: write a boundary (process, agent, store or a user boundary's "
                "name), a worker (worker-2), both (process@worker-2) or a program "
                "(process:git)."
            )
    return value


#: The defaults ``pytest --help`` names, written out so that the help does not import the
#: replay engine: the replayer's ``DEFAULT_DEPTH``, ``DEFAULT_STALL_LIMIT`` and
#: ``DEFAULT_SAMPLES`` (a test checks that they agree). The options default to ``None``,
#: resolved from the replayer.
_HELP_DEPTH: Final = 3
_HELP_STALL_LIMIT: Final = 10.0
_HELP_SAMPLES: Final = 20


def _at_least(minimum: int, what: str) -> Callable[[str], int]:
    """An ``argparse`` type: an integer of at least ``minimum``, else a usage error saying
    the value is not ``what``."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = minimum - 1
        if number < minimum:
            raise argparse.ArgumentTypeError(f"{value!r} is not {what}.")
        return number

    return parse


_count = _at_least(1, "a number of schedules (1 or more)")
_seed = _at_least(0, "a seed (an integer, 0 or more)")
_depth = _at_least(1, "a PCT depth (1 or more)")


def _strategy(value: str) -> str:
    from ..replayer import Strategy  # argparse calls this only when the option is given

    try:
        return Strategy(value.strip().lower()).value
    except ValueError:
        choices = ", ".join(s.value for s in Strategy)
        raise argparse.ArgumentTypeError(
            f"unknown chaos strategy {value!r}; use one of {choices}."
        ) from None


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number > 0 or math.isinf(number):
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds.")
    return number


def _add_chaos_options(group: Any) -> None:
    """The ``--sessiontape-chaos*`` options, in the plugin's option group."""
    group.addoption(
        "--sessiontape-chaos",
        dest="sessiontape_chaos",
        default=None,
        type=_count,
        metavar="N",
        help="replay each cassette under N chaos schedules (items x[chaos-SEED]): the "
        "workers' threads interleaved by a seeded scheduler, to find races production "
        "did not hit.",
    )
    group.addoption(
        "--sessiontape-chaos-seed",
        dest="sessiontape_chaos_seed",
        default=None,
        type=_seed,
        metavar="S",
        help="the first chaos seed (default 0); alone, run the one schedule S.",
    )
    group.addoption(
        "--sessiontape-chaos-strategy",
        dest="sessiontape_chaos_strategy",
        default=None,
        type=_strategy,
        metavar="{pct,random}",
        help="how the scheduler picks the next thread: pct (default; probabilistic "
        "concurrency testing) or random.",
    )
    group.addoption(
        "--sessiontape-chaos-depth",
        dest="sessiontape_chaos_depth",
        default=None,
        type=_depth,
        metavar="D",
        help=f"PCT's bug depth: D-1 priority change points per schedule (default {_HELP_DEPTH}).",
    )
    group.addoption(
        "--sessiontape-chaos-save",
        dest="sessiontape_chaos_save",
        default=None,
        metavar="DIR",
        help="write each failing schedule to DIR as a cassette of its own, which replays "
        "in plain mode and fails the same way.",
    )
    group.addoption(
        "--sessiontape-chaos-explain",
        dest="sessiontape_chaos_explain",
        action="store_true",
        default=False,
        help="for each failing schedule, find the scheduling decision after which its "
        "failure was certain (the point of no return) and name the two calls it ordered.",
    )
    group.addoption(
        "--sessiontape-chaos-explain-samples",
        dest="sessiontape_chaos_explain_samples",
        default=None,
        type=_count,
        metavar="M",
        help=f"schedules per estimate of --sessiontape-chaos-explain (default "
        f"{_HELP_SAMPLES}; implies it).",
    )
    group.addoption(
        "--sessiontape-chaos-stall-limit",
        dest="sessiontape_chaos_stall_limit",
        default=None,
        type=_seconds,
        metavar="SECONDS",
        help="real seconds a worker may take to reach its next boundary call while others "
        f"wait, before the schedule fails as a possible deadlock (default "
        f"{_HELP_STALL_LIMIT:g}).",
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sessiontape", "sessiontape: record and replay sessions")
    group.addoption(
        "--record-session",
        dest="sessiontape_record_session",
        nargs="?",
        const=USE_CASSETTE_DIR,
        default=None,
        type=_record_dir,
        metavar="DIR",
        help="record the session of every test using the `tape` fixture to "
        "DIR/<module>/<test>.jsonl (default DIR: the sessiontape_cassette_dir setting, "
        "'cassettes'), replacing existing cassettes. Put it after the tests to select.",
    )
    group.addoption(
        "--replay",
        dest="sessiontape_replay",
        action="append",
        default=[],
        type=_replay_path,
        metavar="PATH",
        help="replay this cassette, or every cassette in this folder, as test items through "
        "the sessiontape_replay hook (repeatable). Collects these paths instead of the "
        "default ones.",
    )
    group.addoption(
        "--sessiontape-mode",
        dest="sessiontape_mode",
        default=None,
        type=_record_mode,
        metavar="{once,none,all,new}",
        help="record mode of the `tape` fixture: once (default: replay when the cassette "
        "exists, else record), none (replay only), all (always record), new (record "
        "missing cassettes only).",
    )
    group.addoption(
        "--sessiontape-strict",
        dest="sessiontape_strict",
        action="store_true",
        default=None,
        help="stop every replay at its first divergence.",
    )
    group.addoption(
        "--sessiontape-report",
        dest="sessiontape_report",
        default=None,
        type=_report_path,
        metavar="PATH",
        help="write the JSON report of every replayed cassette to PATH.",
    )
    group.addoption(
        "--sessiontape-shard",
        dest="sessiontape_shard",
        default=None,
        type=_shard,
        metavar="i/N",
        help="replay only shard i of N of the --replay cassettes (one CI job of N), balanced "
        "by the replay durations of --sessiontape-durations.",
    )
    group.addoption(
        "--sessiontape-durations",
        dest="sessiontape_durations",
        action="append",
        default=[],
        metavar="JSON",
        help="a receipt of earlier replays (--sessiontape-report, or 'sessiontape receipts "
        "merge') whose durations balance the shards (repeatable; a tape none knows counts "
        "the median).",
    )
    group.addoption(
        "--sessiontape-cache",
        dest="sessiontape_cache",
        default=None,
        metavar="DIR",
        help="where tapes replayed from a store URL are kept (default: .sessiontape-cache "
        "in the rootdir); each is downloaded once. A store that cannot be reached is "
        "replayed from here, with a warning.",
    )
    group.addoption(
        "--sessiontape-offline",
        dest="sessiontape_offline",
        action="store_true",
        default=False,
        help="replay store URLs from --sessiontape-cache only, as the store was last "
        "listed, never touching the network; a tape missing from the cache is an error.",
    )
    group.addoption(
        "--sessiontape-update",
        dest="sessiontape_update",
        action="store_const",
        const=UPDATE_AUTO,
        default=None,
        help="rewrite each replayed tape to match today's code where the tape can still "
        "answer (today's requests, today's store results, calls no longer made dropped), "
        "and list every change; a call the tape cannot answer still fails the test. In CI "
        "(CI set, stdin not a terminal) this means --sessiontape-update=pending.",
    )
    # Spelled out whole: argparse matches an option string exactly before it splits at
    # '=', and a plain flag keeps `--sessiontape-update tests/` a flag and a path.
    group.addoption(
        f"--sessiontape-update={UPDATE_PENDING}",
        dest="sessiontape_update",
        action="store_const",
        const=UPDATE_PENDING,
        help="leave each replayed tape as it is and write its changes beside it "
        "(NAME.pending), each with an id, for `sessiontape review` (or `sessiontape "
        "accept`/`reject`); the test fails, naming the command that reviews them.",
    )
    group.addoption(
        f"--sessiontape-update={UPDATE_WRITE}",
        dest="sessiontape_update",
        action="store_const",
        const=UPDATE_WRITE,
        help="rewrite each replayed tape in place, in CI too.",
    )
    group.addoption(
        "--sessiontape-unused",
        dest="sessiontape_unused",
        action="store_true",
        default=False,
        help="list the fixture cassettes under the cassette directory that no collected "
        "test owns, and the recorded calls each test left unconsumed (nothing is deleted).",
    )
    group.addoption(
        "--sessiontape-live",
        dest="sessiontape_live",
        action="append",
        default=[],
        type=_live_selector,
        metavar="SELECTOR",
        help="re-record a segment of each replayed tape: the calls SELECTOR picks "
        "(process, agent, a user boundary, worker-2, process@worker-2, process:git) run "
        "for real and are recorded, the others are served from the tape; the new tape is "
        "written beside (x.rerecorded.jsonl), or over the old one with "
        "--sessiontape-update (repeatable, or comma-separated).",
    )
    group.addoption(
        "--sessiontape-fork",
        dest="sessiontape_fork",
        default=None,
        type=_fork_seq,
        metavar="SEQ",
        help="fork each replayed tape at the call recorded at SEQ: everything before it "
        "replays as recorded, that call gets --sessiontape-fork-answer (or runs live), "
        "each later call is answered by a recorded call that asked the same or runs live; "
        "the branch is written beside the tape (x.fork-SEQ.jsonl).",
    )
    group.addoption(
        "--sessiontape-fork-answer",
        dest="sessiontape_fork_answer",
        default=None,
        metavar="FILE.json",
        help="the answer of the call at --sessiontape-fork: a StepResult's fields (an "
        "agent turn), returncode/stdout/stderr (a process call), a user boundary's result.",
    )
    group.addoption(
        "--sessiontape-fork-no-live",
        dest="sessiontape_fork_no_live",
        action="store_true",
        default=False,
        help="with --sessiontape-fork: stop at the first call after the fork that no "
        "recorded call answers, naming it, instead of running it live.",
    )
    _add_chaos_options(group)
    parser.addini(
        "sessiontape_cassette_dir",
        "directory of the `tape` fixture's cassettes, relative to the rootdir.",
        default="cassettes",
    )
    parser.addini(
        "sessiontape_record_mode",
        "record mode of the `tape` fixture: once, none, all or new.",
        default="once",
    )
    parser.addini("sessiontape_strict", "stop every replay at its first divergence.", type="bool")
    parser.addini(
        "sessiontape_noise",
        "noise masks applied to every replay, one per line (process.env.HOME).",
        type="linelist",
    )


def in_use(config: pytest.Config) -> bool:
    """Whether the run asks for sessiontape by its options: a ``--record-session``,
    ``--replay`` or ``--sessiontape-*`` option on the command line (or in ``addopts``), or
    a ``sessiontape_*`` ini setting other than its default."""
    for name, value in vars(config.option).items():
        if name.startswith("sessiontape_") and not (
            value is None or value is False or (type(value) is list and not value)
        ):
            return True
    return any(config.getini(name) != default for name, default in _INI_DEFAULTS.items())


#: ``--sessiontape-update`` without a value: in place, or pending in CI (the values are
#: read by ``_settings.update_mode``).
UPDATE_AUTO: Final = "auto"
UPDATE_PENDING: Final = "pending"
UPDATE_WRITE: Final = "write"


def shown_path(path: Path, config: pytest.Config) -> str:
    """``path`` as the user would type it: relative to where pytest was started."""
    try:
        return os.path.relpath(path, config.invocation_params.dir)
    except ValueError:  # another drive on Windows
        return str(path)


def read_header(path: Path) -> SessionStart | None:
    """The cassette's first line, or ``None`` when it is not a readable header."""
    from ..cassette import read_header as header_of  # msgspec: only once a tape is read

    return header_of(path)


def fixture_nodeid(header: SessionStart | None) -> str | None:
    """The test whose ``tape`` fixture recorded this cassette, if one did."""
    entrypoint = header.entrypoint if header is not None else None
    if entrypoint and _is_nodeid(entrypoint):
        return entrypoint
    return None


def _is_nodeid(entrypoint: str) -> bool:
    """Whether ``entrypoint`` reads as a test's node id (``tests/x.py::test``): a path
    without spaces or colons ending in ``.py``, then ``::``."""
    path, sep, _ = entrypoint.partition("::")
    return (
        bool(sep)
        and path.endswith(".py")
        and len(path) > 3
        and not any(c.isspace() or c == ":" for c in path)
    )


def recorded_by_fixture(path: Path) -> str | None:
    """The test whose ``tape`` fixture recorded the cassette at ``path``, if one did.

    Its test replays such a cassette; the ``sessiontape_replay`` hook knows nothing of that
    test, so a folder of cassettes leaves it out.
    """
    return fixture_nodeid(read_header(path))
