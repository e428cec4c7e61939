"""The settings a run resolves its options to (command line over ini over defaults), and
the record mode of the ``tape`` fixture.

Imported when sessiontape is in use in a run (an option or ini setting, a hook in a
conftest, the ``tape`` fixture, a collected cassette: see ``_run.activate``), never by
the entry point: a run that does not use sessiontape resolves nothing.
"""

from __future__ import annotations

import argparse
import enum
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

import pytest

from .._errors import SessiontapeError

if TYPE_CHECKING:
    from ..fleet import Shard
    from ..replayer import Fork

__all__ = [
    "SETTINGS",
    "RecordMode",
    "Settings",
    "fork_settings",
    "in_ci",
    "record_mode",
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


def record_mode(value: str) -> RecordMode:
    """``--sessiontape-mode`` (and the ini key, and the marker's ``mode=``): one of the
    :class:`RecordMode` values."""
    try:
        return RecordMode(value.strip().lower())
    except ValueError:
        choices = ", ".join(m.value for m in RecordMode)
        raise argparse.ArgumentTypeError(
            f"unknown record mode {value!r}; use one of {choices}."
        ) from None


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
    #: ``--sessiontape-fork`` (with its answer and ``-no-live``): where and how each
    #: replayed tape is forked (``None``: it is not).
    fork: Fork | None = None

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
        fork = fork_settings(config)
        if fork is not None and (chaos or update or live):
            raise pytest.UsageError(
                "--sessiontape-fork writes a branch beside each tape and runs live what the "
                "tape cannot answer: run it in a pytest run of its own, without "
                "--sessiontape-update, --sessiontape-live or the chaos options."
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
            fork=fork,
        )


def fork_settings(config: pytest.Config) -> Fork | None:
    """The fork ``--sessiontape-fork`` asks for, its answer read from its JSON file."""
    seq: int | None = config.getoption("sessiontape_fork", None)
    answer_file: str | None = config.getoption("sessiontape_fork_answer", None)
    no_live = bool(config.getoption("sessiontape_fork_no_live", False))
    if seq is None:
        if answer_file is not None or no_live:
            raise pytest.UsageError(
                "--sessiontape-fork-answer and --sessiontape-fork-no-live go with "
                "--sessiontape-fork=SEQ: name the call to fork at."
            )
        return None
    answer = None
    if answer_file is not None:
        path = config.invocation_params.dir / answer_file
        try:
            answer = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(
                f"--sessiontape-fork-answer={answer_file}: cannot read a JSON answer from "
                f"it ({exc}). Write the answer as a JSON file."
            ) from None
        if answer is None:
            raise pytest.UsageError(
                f"--sessiontape-fork-answer={answer_file} holds null; leave the option out "
                "to run the call live."
            )
    from ..replayer import Fork

    return Fork(seq=seq, answer=answer, live=not no_live)


SETTINGS: Final = pytest.StashKey[Settings]()


def update_mode(value: str | None) -> bool | Literal["pending"]:
    """What ``--sessiontape-update[=pending|=write]`` asks of each replay: ``False`` (no
    update), ``True`` (rewrite in place) or ``"pending"``. Plain ``--sessiontape-update``
    (``"auto"``) in CI with no terminal is pending: a bot never rewrites a tape unseen
    (as insta)."""
    if value is None:
        return False
    if value == "pending":
        return "pending"
    if value == "auto" and in_ci() and not _interactive():
        return "pending"
    return True


def _interactive() -> bool:
    try:
        return os.isatty(0)
    except OSError:
        return False


def in_ci() -> bool:
    """Whether the run is in CI (``CI`` set to anything but empty, ``false`` or ``0``)."""
    value = os.environ.get("CI", "").strip().lower()
    return value not in ("", "false", "0")
