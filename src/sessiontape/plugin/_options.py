"""The plugin's options: one group, ``--record-session``, ``--replay`` and
``--sessiontape-*``, each value checked by argparse, with its ini twin; and the settings
they resolve to.

Imported by every pytest run that has sessiontape installed: the cassette format and the
replay engine are imported only when an option that needs them is given.
"""

from __future__ import annotations

import argparse
import enum
import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, NamedTuple, NoReturn

import pytest

from .._errors import SessiontapeError
from ._chaos import add_chaos_options

if TYPE_CHECKING:
    from ..cassette import SessionStart
    from ..fleet import Shard

__all__ = [
    "MARKER",
    "MARKER_KWARGS",
    "REPORT_PROPERTY",
    "REWRITES_PROPERTY",
    "SETTINGS",
    "USE_CASSETTE_DIR",
    "RecordMode",
    "Settings",
    "assert_never",
    "fixture_nodeid",
    "in_ci",
    "pytest_addoption",
    "read_header",
    "record_mode",
    "recorded_by_fixture",
    "run_settings",
    "shown_path",
    "update_mode",
]


class RecordMode(str, enum.Enum):
    """What the ``tape`` fixture does with a test's cassette.

    ``once``: replay it when it exists, record it when it does not. ``none``: replay only;
    a missing cassette fails the test. ``all``: record every time. ``new``: record only
    missing cassettes (for an existing one, the same as ``once``).
    """

    ONCE = "once"
    NONE = "none"
    ALL = "all"
    NEW = "new"


#: The value of ``--record-session`` given without DIR: "use the cassette dir setting".
#: A string, so the option value stays a plain picklable ``str | None``.
USE_CASSETTE_DIR: Final = ""
MARKER: Final = "sessiontape"
MARKER_KWARGS: Final = frozenset({"cassette", "mode", "strict", "noise", "roots"})
REPORT_PROPERTY: Final = "sessiontape_report"
#: The user property carrying what an update or a live re-record changed in a tape.
REWRITES_PROPERTY: Final = "sessiontape_rewrites"
#: A ``tape`` fixture records the test's node id as the entrypoint (``tests/x.py::test``);
#: an application records its command line, which never starts like this.
_NODEID_ENTRYPOINT: Final = re.compile(r"^[^\s:]+\.py::")


def assert_never(value: NoReturn) -> NoReturn:
    raise AssertionError(f"unhandled value {value!r}")  # pragma: no cover


# -- option values ------------------------------------------------------------------------
# argparse calls these ``type=`` callables; ArgumentTypeError becomes pytest's usage error
# ("error: argument --replay: ..."), so a bad value stops the run before anything happens.


def record_mode(value: str) -> RecordMode:
    """``--sessiontape-mode`` (and the ini key): one of the :class:`RecordMode` values."""
    try:
        return RecordMode(value.strip().lower())
    except ValueError:
        choices = ", ".join(m.value for m in RecordMode)
        raise argparse.ArgumentTypeError(
            f"unknown record mode {value!r}; use one of {choices}."
        ) from None


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


def _live_selector(value: str) -> str:
    """``--sessiontape-live SELECTOR``: a well-formed selector (checked against each tape
    when it is replayed)."""
    for part in value.split(","):
        if not re.fullmatch(r"[\w.-]+(?::[^@\s,]+)?(?:@\S+)?", part.strip()):
            raise argparse.ArgumentTypeError(
                f"{value!r}: write a boundary (process, agent, store or a user boundary's "
                "name), a worker (worker-2), both (process@worker-2) or a program "
                "(process:git)."
            )
    return value


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
        type=record_mode,
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
    add_chaos_options(group)
    parser.addini(
        "sessiontape_cassette_dir",
        "directory of the `tape` fixture's cassettes, relative to the rootdir.",
        default="cassettes",
    )
    parser.addini(
        "sessiontape_record_mode",
        "record mode of the `tape` fixture: once, none, all or new.",
        default=RecordMode.ONCE.value,
    )
    parser.addini("sessiontape_strict", "stop every replay at its first divergence.", type="bool")
    parser.addini(
        "sessiontape_noise",
        "noise masks applied to every replay, one per line (process.env.HOME).",
        type="linelist",
    )


# -- settings -------------------------------------------------------------------------


# NamedTuples, not frozen dataclasses: a dataclass compiles its methods when the module is
# imported, which every pytest run does (about 0.3 ms each).
class Settings(NamedTuple):
    """The resolved options of one pytest run (command line over ini over defaults)."""

    mode: RecordMode
    #: ``--record-session`` was given: every ``tape`` test records.
    record_session: bool
    cassette_dir: Path
    strict: bool
    noise: tuple[str, ...]
    report: Path | None
    replay: tuple[str, ...]
    #: ``--sessiontape-shard``: this job's share of the ``--replay`` cassettes.
    shard: Shard | None = None
    #: ``--sessiontape-cache``: where tapes from a store URL are kept.
    cache_dir: Path = Path(".sessiontape-cache")
    #: ``--sessiontape-offline``: store URLs are replayed from the cache, never the network.
    offline: bool = False
    #: ``--sessiontape-durations``: receipts whose replay durations balance the shards.
    durations: tuple[str, ...] = ()
    #: ``--sessiontape-update``: replays rewrite their tapes to match today's code
    #: (``"pending"``: they write the changes beside them for review instead).
    update: bool | Literal["pending"] = False
    #: ``--sessiontape-live``: the selectors of the calls re-recorded live.
    live: tuple[str, ...] = ()
    #: ``--sessiontape-unused``: list cassettes and calls no test uses.
    unused: bool = False

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        base = config.inipath.parent if config.inipath is not None else config.rootpath
        invocation = config.invocation_params.dir
        record_dir: str | None = config.getoption("sessiontape_record_session")
        if record_dir:
            cassette_dir = invocation / record_dir
        else:
            cassette_dir = base / str(config.getini("sessiontape_cassette_dir"))
        mode: RecordMode | None = config.getoption("sessiontape_mode")
        if mode is None:
            ini_mode = str(config.getini("sessiontape_record_mode"))
            try:
                mode = record_mode(ini_mode)
            except argparse.ArgumentTypeError as exc:
                raise pytest.UsageError(f"sessiontape_record_mode: {exc}") from None
        strict: bool | None = config.getoption("sessiontape_strict")
        if strict is None:
            strict = bool(config.getini("sessiontape_strict"))
        noise = tuple(str(m) for m in config.getini("sessiontape_noise"))
        if noise:
            from ..replayer import Noise

            try:
                Noise(noise)
            except SessiontapeError as exc:
                raise pytest.UsageError(f"sessiontape_noise: {exc}") from None
        report: str | None = config.getoption("sessiontape_report")
        shard: Shard | None = config.getoption("sessiontape_shard")
        replay = tuple(config.getoption("sessiontape_replay"))
        if shard is not None and not replay:
            raise pytest.UsageError(
                "--sessiontape-shard splits the cassettes of --replay; name them: "
                f"pytest --replay cassettes/ --sessiontape-shard {shard}"
            )
        cache: str | None = config.getoption("sessiontape_cache")
        update = update_mode(config.getoption("sessiontape_update"))
        live = tuple(
            part.strip()
            for value in config.getoption("sessiontape_live")
            for part in value.split(",")
            if part.strip()
        )
        chaos = config.getoption("sessiontape_chaos", None) is not None or (
            config.getoption("sessiontape_chaos_seed", None) is not None
        )
        if chaos and (update or live):
            # A schedule runs the tape in an order production did not: nothing it does
            # is a fact about today's code to write back into the tape.
            raise pytest.UsageError(
                "--sessiontape-chaos replays tapes under other schedules and never rewrites "
                "them: run --sessiontape-update or --sessiontape-live in a pytest run of "
                "their own, without the chaos options."
            )
        return cls(
            mode=mode,
            record_session=record_dir is not None,
            cassette_dir=cassette_dir.resolve(),
            strict=strict,
            noise=noise,
            report=(invocation / report).resolve() if report else None,
            replay=replay,
            shard=shard,
            cache_dir=(invocation / cache).resolve() if cache else base / ".sessiontape-cache",
            offline=bool(config.getoption("sessiontape_offline")),
            durations=tuple(str(invocation / d) for d in config.getoption("sessiontape_durations")),
            update=update,
            unused=bool(config.getoption("sessiontape_unused")),
            live=live,
        )


SETTINGS: Final = pytest.StashKey[Settings]()


def run_settings(config: pytest.Config) -> Settings:
    return config.stash[SETTINGS]


#: ``--sessiontape-update`` without a value: in place, or pending in CI.
UPDATE_AUTO: Final = "auto"
UPDATE_PENDING: Final = "pending"
UPDATE_WRITE: Final = "write"


def update_mode(value: str | None) -> bool | Literal["pending"]:
    """What ``--sessiontape-update[=pending|=write]`` asks of each replay: ``False`` (no
    update), ``True`` (rewrite in place) or ``"pending"``. Plain ``--sessiontape-update``
    in CI with no terminal is pending: a bot never rewrites a tape unseen (as insta)."""
    if value is None:
        return False
    if value == UPDATE_PENDING:
        return "pending"
    if value == UPDATE_AUTO and in_ci() and not _interactive():
        return "pending"
    return True


def _interactive() -> bool:
    try:
        return os.isatty(0)
    except OSError:
        return False


def in_ci() -> bool:
    value = os.environ.get("CI", "").strip().lower()
    return value not in ("", "false", "0")


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
    if entrypoint and _NODEID_ENTRYPOINT.match(entrypoint):
        return entrypoint
    return None


def recorded_by_fixture(path: Path) -> str | None:
    """The test whose ``tape`` fixture recorded the cassette at ``path``, if one did.

    Its test replays such a cassette; the ``sessiontape_replay`` hook knows nothing of that
    test, so a folder of cassettes leaves it out.
    """
    return fixture_nodeid(read_header(path))
