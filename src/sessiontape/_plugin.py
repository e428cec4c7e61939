"""The pytest plugin: the ``tape`` fixture, cassettes as test items, and the options.

Registered through the ``pytest11`` entry point. Everything it adds lives in one option
group, ``sessiontape``: the two headline flags ``--record-session [DIR]`` and
``--replay PATH``, and ``--sessiontape-*`` for the rest; each has an ini twin in
``[tool.pytest.ini_options]`` (the command line wins).

Three ways in:

* the ``tape`` fixture records a test's session to ``DIR/<module>/<test>.jsonl`` the first
  time and replays it afterwards (record modes ``once``, ``none``, ``all``, ``new``);
* ``pytest cassettes/`` or ``pytest --replay PATH`` turns every cassette into a test item,
  replayed through the project's ``sessiontape_replay`` hook (in ``conftest.py``);
* ``--sessiontape-report PATH`` writes the JSON report of every replay, merged across
  pytest-xdist workers.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import hashlib
import json
import os
import re
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final, NoReturn

import msgspec
import pluggy
import pytest

from . import _hooks
from ._cassette import is_cassette
from ._entries import SessionStart
from ._errors import ReplayMismatch, SessiontapeError
from ._match import Noise
from ._record import record
from ._replay import ReplayTape, replay
from ._report import ReplayReport
from ._tape import Tape

__all__ = ["CassetteFailed", "CassetteFile", "CassetteItem", "RecordMode", "tape"]


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
_USE_CASSETTE_DIR: Final = ""
_MARKER: Final = "sessiontape"
_MARKER_KWARGS: Final = frozenset({"cassette", "mode", "strict", "noise", "roots"})
_REPORT_PROPERTY: Final = "sessiontape_report"
#: A ``tape`` fixture records the test's node id as the entrypoint (``tests/x.py::test``);
#: an application records its command line, which never starts like this.
_NODEID_ENTRYPOINT: Final = re.compile(r"^[^\s:]+\.py::")
_UNSAFE_FILENAME: Final = re.compile(r"[^A-Za-z0-9_.,=+\-\[\]]")
_MAX_STEM: Final = 120


def _assert_never(value: NoReturn) -> NoReturn:
    raise AssertionError(f"unhandled value {value!r}")  # pragma: no cover


# -- option values ------------------------------------------------------------------------
# argparse calls these ``type=`` callables; ArgumentTypeError becomes pytest's usage error
# ("error: argument --replay: ..."), so a bad value stops the run before anything happens.


def _record_mode(value: str) -> RecordMode:
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
        return _USE_CASSETTE_DIR
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
    """``--replay PATH``: an existing cassette file or folder."""
    path = Path(value)
    if path.is_dir():
        return value
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{value!r}: no such cassette file or folder.")
    if not is_cassette(path):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a sessiontape cassette (its first line is not a "
            "session_start entry)."
        )
    return value


def _report_path(value: str) -> str:
    """``--sessiontape-report PATH``: a file to write, not a directory."""
    if not value.strip() or Path(value).is_dir():
        raise argparse.ArgumentTypeError(f"{value!r} is a directory; name a .json file.")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sessiontape", "sessiontape: record and replay sessions")
    group.addoption(
        "--record-session",
        dest="sessiontape_record_session",
        nargs="?",
        const=_USE_CASSETTE_DIR,
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


@dataclasses.dataclass(frozen=True)
class _Settings:
    """The resolved options of one pytest run (command line over ini over defaults)."""

    mode: RecordMode
    #: ``--record-session`` was given: every ``tape`` test records.
    record_session: bool
    cassette_dir: Path
    strict: bool
    noise: tuple[str, ...]
    report: Path | None
    replay: tuple[str, ...]

    @classmethod
    def from_config(cls, config: pytest.Config) -> _Settings:
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
                mode = _record_mode(ini_mode)
            except argparse.ArgumentTypeError as exc:
                raise pytest.UsageError(f"sessiontape_record_mode: {exc}") from None
        strict: bool | None = config.getoption("sessiontape_strict")
        if strict is None:
            strict = bool(config.getini("sessiontape_strict"))
        noise = tuple(str(m) for m in config.getini("sessiontape_noise"))
        try:
            Noise(noise)
        except SessiontapeError as exc:
            raise pytest.UsageError(f"sessiontape_noise: {exc}") from None
        report: str | None = config.getoption("sessiontape_report")
        return cls(
            mode=mode,
            record_session=record_dir is not None,
            cassette_dir=cassette_dir.resolve(),
            strict=strict,
            noise=noise,
            report=(invocation / report).resolve() if report else None,
            replay=tuple(config.getoption("sessiontape_replay")),
        )


_SETTINGS: Final = pytest.StashKey[_Settings]()


def _settings(config: pytest.Config) -> _Settings:
    return config.stash[_SETTINGS]


def _in_ci() -> bool:
    value = os.environ.get("CI", "").strip().lower()
    return value not in ("", "false", "0")


def _shown(path: Path, config: pytest.Config) -> str:
    """``path`` as the user would type it: relative to where pytest was started."""
    try:
        return os.path.relpath(path, config.invocation_params.dir)
    except ValueError:  # another drive on Windows
        return str(path)


def _read_header(path: Path) -> SessionStart | None:
    """The cassette's first line, or ``None`` when it is not a readable header."""
    try:
        with path.open("rb") as fh:
            first = fh.readline(1 << 20)
        return msgspec.json.decode(first, type=SessionStart)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def _fixture_nodeid(header: SessionStart | None) -> str | None:
    """The test whose ``tape`` fixture recorded this cassette, if one did."""
    entrypoint = header.entrypoint if header is not None else None
    if entrypoint and _NODEID_ENTRYPOINT.match(entrypoint):
        return entrypoint
    return None


def _recorded_by_fixture(path: Path) -> str | None:
    """The test whose ``tape`` fixture recorded the cassette at ``path``, if one did.

    Its test replays such a cassette; the ``sessiontape_replay`` hook knows nothing of that
    test, so a folder of cassettes leaves it out.
    """
    return _fixture_nodeid(_read_header(path))


# -- session-wide hooks ---------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(cassette=None, mode=None, strict=None, noise=None, roots=None): "
        "settings of the `tape` fixture for this test: cassette path (relative to the "
        "cassette dir), record mode (once, none, all, new), strict replay, noise masks, "
        "path roots.",
    )
    settings = _Settings.from_config(config)
    config.stash[_SETTINGS] = settings
    if settings.replay:
        # Collect exactly the cassettes asked for, not the testpaths; paths given as
        # arguments as well are kept.
        if config.args_source is pytest.Config.ArgsSource.ARGS:
            config.args = [*config.args, *settings.replay]
        else:
            config.args = list(settings.replay)
    run = _RunPlugin(config, settings)
    # A cleanup runs even when configuring fails later (a conftest with a bad hook
    # signature): the outer run's hooks must come back whatever happens here.
    config.add_cleanup(run.teardown)
    config.pluginmanager.register(run, _RunPlugin.NAME)
    run.configured = True


def pytest_report_header(config: pytest.Config) -> list[str]:
    settings = _settings(config)
    mode = "all (--record-session)" if settings.record_session else settings.mode.value
    cassettes = _shown(settings.cassette_dir, config).replace(os.sep, "/").rstrip("/") + "/"
    lines = [f"sessiontape: mode={mode}, cassettes={cassettes}, strict={settings.strict}"]
    for value in settings.replay:
        path = Path(value)
        if path.is_dir():
            count = sum(
                1 for p in path.rglob("*.jsonl") if is_cassette(p) and not _recorded_by_fixture(p)
            )
            lines.append(f"replay: {value} ({count} cassettes)")
        else:
            header = _read_header(path)
            run = header.run_id if header is not None else "?"
            lines.append(f"replay: {value} (run {run})")
    return lines


class _RunPlugin:
    """Per-run state: the ``sessiontape_*`` hooks mirrored from pytest, and the reports.

    Registered in ``pytest_configure`` and removed in ``pytest_unconfigure``, so nothing
    outlives its run. Runs nest (pytester runs pytest inside a test), and the sessiontape
    plugin manager is process-wide: an inner run takes the outer run's conftest hooks out
    of it while it runs and puts them back when it ends.
    """

    NAME: Final = "sessiontape-run"
    #: The runs configured in this process, innermost last.
    _active: list[_RunPlugin] = []  # noqa: RUF012 - shared on purpose, see above

    def __init__(self, config: pytest.Config, settings: _Settings) -> None:
        self.config = config
        self.settings = settings
        self.reports: list[dict[str, Any]] = []
        self._mirrored: list[tuple[object, str | None]] = []
        #: Set once registered: the plugins registered before are all replayed by then.
        self.configured = False
        if self._active:
            self._active[-1]._suspend()
        self._active.append(self)

    def pytest_plugin_registered(self, plugin: object, plugin_name: str | None) -> None:
        # pytest calls this for every plugin and conftest, the earlier ones included (the
        # hook is historic), so the project's `sessiontape_*` functions reach our manager.
        pm = _hooks.get_plugin_manager()
        if pm.is_registered(plugin):
            return
        try:
            _hooks.register(plugin, plugin_name)
        except pluggy.PluginValidationError as exc:
            # pluggy names the file and shows the bad definition; pytest shows a usage
            # error, or a collection error (conftests found while collecting), as bare text.
            message = f"sessiontape: {exc}"
            if self.configured:
                raise pytest.Collector.CollectError(message) from None
            raise pytest.UsageError(message) from None
        if pm.is_registered(plugin):
            self._mirrored.append((plugin, plugin_name))

    def _suspend(self) -> None:
        for plugin, _ in self._mirrored:
            _hooks.unregister(plugin)

    def _resume(self) -> None:
        # pytest has no "plugin unregistered" hook: skip what left pytest meanwhile.
        self._mirrored = [
            (plugin, name)
            for plugin, name in self._mirrored
            if self.config.pluginmanager.is_registered(plugin)
        ]
        for plugin, name in self._mirrored:
            _hooks.register(plugin, name)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Workers attach each replay's report to the item; on the xdist controller (or in
        # a plain run) the teardown report carries all of them exactly once.
        if self.settings.report is None or report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == _REPORT_PROPERTY and isinstance(value, dict):
                self.reports.append(value)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        target = self.settings.report
        if target is None or hasattr(self.config, "workerinput"):
            return
        reports = sorted(self.reports, key=lambda r: str(r.get("nodeid", "")))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(reports, indent=2) + "\n", encoding="utf-8")

    def teardown(self) -> None:
        """Take this run's hooks out and give the outer run its own back (idempotent)."""
        if self not in self._active:
            return
        self._suspend()
        self._mirrored.clear()
        innermost = self._active[-1] is self
        self._active.remove(self)
        if innermost and self._active:
            self._active[-1]._resume()
        if self.config.pluginmanager.is_registered(self):
            self.config.pluginmanager.unregister(self)


def _attach_report(item: pytest.Item, report: ReplayReport) -> None:
    """Hand the report to the run that writes ``--sessiontape-report`` (maybe over xdist)."""
    if _settings(item.config).report is None:
        return
    item.user_properties.append((_REPORT_PROPERTY, {"nodeid": item.nodeid, **report.to_dict()}))


# -- the tape fixture -----------------------------------------------------------------


class _Active:
    """The tape a test's ``tape`` fixture opened, and whether the test failed around it."""

    __slots__ = ("failed", "tape")

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        #: The setup (after the fixture) or the call raised.
        self.failed = False


_ACTIVE: Final = pytest.StashKey[_Active]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    active = item.stash.get(_ACTIVE, None)
    if active is None or call.when == "teardown" or call.excinfo is None:
        return
    active.failed = True
    player = active.tape
    if (
        call.when == "call"
        and isinstance(player, ReplayTape)
        # A strict stop's message is the report already; a skip is no failure.
        and not call.excinfo.errisinstance((ReplayMismatch, pytest.skip.Exception))
    ):
        # The failure is usually the divergence's doing (an unanswered call raises in the
        # app): finish now, so the report joins the failure this hook is about to build.
        player.close()
        if player.report is not None and not player.report.ok:
            item.add_report_section("call", "sessiontape", player.report.render())


@dataclasses.dataclass(frozen=True)
class _MarkerOptions:
    """The ``sessiontape`` marker's keyword arguments, checked."""

    cassette: str | None = None
    mode: RecordMode | None = None
    strict: bool | None = None
    noise: Noise = dataclasses.field(default_factory=Noise)
    roots: Mapping[str, str] | None = None


def _marker_options(item: pytest.Item) -> _MarkerOptions:
    """Merge the item's ``sessiontape`` markers (the closest wins per keyword)."""
    kwargs: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers(_MARKER))):
        if mark.args:
            _usage(item, f"takes keyword arguments only, got {mark.args!r}")
        unknown = sorted(set(mark.kwargs) - _MARKER_KWARGS)
        if unknown:
            known = ", ".join(sorted(_MARKER_KWARGS))
            _usage(item, f"got unknown keyword(s) {', '.join(unknown)}; it takes {known}")
        kwargs.update(mark.kwargs)
    cassette = kwargs.get("cassette")
    if cassette is not None and not isinstance(cassette, (str, os.PathLike)):
        _usage(item, f"cassette must be a path, got {cassette!r}")
    mode = kwargs.get("mode")
    problem: str | None = None
    if mode is not None:
        try:
            mode = _record_mode(mode.value if isinstance(mode, RecordMode) else str(mode))
        except argparse.ArgumentTypeError as exc:
            problem = f"mode: {exc}"
    if problem is not None:  # raised out of the except block: no chained traceback
        _usage(item, problem)
    strict = kwargs.get("strict")
    if strict is not None and not isinstance(strict, bool):
        _usage(item, f"strict must be True or False, got {strict!r}")
    noise = Noise()
    try:
        noise = Noise.coerce(kwargs.get("noise"))
    except (SessiontapeError, TypeError, ValueError) as exc:
        problem = f"noise: {exc}"
    if problem is not None:
        _usage(item, problem)
    roots = kwargs.get("roots")
    if roots is not None and not (
        isinstance(roots, Mapping) and all(isinstance(k, str) for k in roots)
    ):
        _usage(item, f"roots must map placeholder names to directories, got {roots!r}")
    return _MarkerOptions(
        cassette=os.fspath(cassette) if cassette is not None else None,
        mode=mode,
        strict=strict,
        noise=noise,
        roots=roots,
    )


def _usage(item: pytest.Item, problem: str) -> NoReturn:
    pytest.fail(f"@pytest.mark.{_MARKER} on {item.nodeid}: {problem.rstrip('.')}.", pytrace=False)


def _safe_stem(name: str) -> str:
    """A file name for a test name: parametrize ids may hold any character."""
    safe = _UNSAFE_FILENAME.sub("_", name)
    if safe == name and len(safe) <= _MAX_STEM:
        return safe
    # Two ids can clean up to the same name ([a/b] and [a_b]): a digest keeps them apart.
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe[:_MAX_STEM]}-{digest}"


def _default_cassette_path(item: pytest.Item, cassette_dir: Path) -> Path:
    """``cassette_dir/<module path relative to the rootdir, no .py>/<test name>.jsonl``."""
    try:
        module = item.path.relative_to(item.config.rootpath)
    except ValueError:
        module = Path(item.path.name)
    test = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    stem = _safe_stem(test.replace("::", "."))
    return cassette_dir / module.with_suffix("") / f"{stem}.jsonl"


def _record_command(item: pytest.Item) -> str:
    return f"pytest {shlex.quote(item.nodeid)} --record-session"


@pytest.fixture
def tape(request: pytest.FixtureRequest) -> Iterator[Tape]:
    """A :class:`sessiontape.Tape` for this test: replaying its cassette, or recording it.

    The cassette is ``<cassette dir>/<module>/<test>.jsonl`` or the marker's ``cassette=``.
    Record mode ``once`` (the default) replays an existing cassette and records a missing
    one; under CI a missing cassette fails instead. Wire the code under test through the
    tape; at teardown a replay that diverged fails the test with the report.
    """
    item = request.node
    assert isinstance(item, pytest.Item)
    settings = _settings(item.config)
    options = _marker_options(item)
    if options.cassette is not None:
        path = settings.cassette_dir / options.cassette
    else:
        path = _default_cassette_path(item, settings.cassette_dir)
    exists = path.is_file()

    # A marker's mode="none" pins a cassette (a production tape): never overwritten.
    if options.mode is RecordMode.NONE:
        mode = RecordMode.NONE
    elif settings.record_session:
        mode = RecordMode.ALL
    else:
        mode = options.mode or settings.mode
    if mode is RecordMode.ALL:
        recording = True
    elif mode is RecordMode.NONE:
        recording = False
    elif mode is RecordMode.ONCE or mode is RecordMode.NEW:
        recording = not exists
    else:
        _assert_never(mode)

    shown = _shown(path, item.config)
    if not recording and not exists:
        if options.mode is RecordMode.NONE:
            how = (
                f"the {_MARKER} marker pins it (mode='none'): put the tape there (record it "
                "with sessiontape.record(...), or copy a production tape)."
            )
        else:
            how = f"record it with: {_record_command(item)}"
        pytest.fail(
            f"no cassette at {shown} and record mode 'none' replays only; {how}",
            pytrace=False,
        )
    if recording and not exists and _in_ci() and not settings.record_session:
        pytest.fail(
            f"no cassette at {shown}, and CI is set, so sessiontape does not record one "
            "here. Record it locally and commit it: " + _record_command(item),
            pytrace=False,
        )

    strict = options.strict if options.strict is not None else settings.strict
    if recording:
        # Replace, do not move aside: the cassette is under version control, and a
        # NAME.old.* file per --record-session run would litter the cassette dir.
        path.unlink(missing_ok=True)
        recorder = record(path, entrypoint=item.nodeid, roots=options.roots)
        active = item.stash[_ACTIVE] = _Active(recorder)
        with recorder:
            yield recorder
        if active.failed:
            # A tape of a failed test would be replayed by the next run as if it were
            # right: drop it, so that run records afresh.
            path.unlink(missing_ok=True)
        return

    player = replay(
        path, strict=strict, noise=Noise(settings.noise) | options.noise, roots=options.roots
    )
    active = item.stash[_ACTIVE] = _Active(player)
    with player:
        yield player
    # Leaving the block finished the replay, if the failed test had not already.
    report = player.report
    assert report is not None
    _attach_report(item, report)
    if not report.ok and not active.failed:
        pytest.fail(report.render(), pytrace=False)


# -- cassettes as test items ----------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> CassetteFile | None:
    # A cassette named on the command line is collected whatever its suffix, and even
    # when a tape fixture recorded it (the item then says which test replays it).
    if file_path.suffix != ".jsonl" and not parent.session.isinitpath(file_path):
        return None
    if not is_cassette(file_path):
        return None
    if _recorded_by_fixture(file_path) and not parent.session.isinitpath(file_path):
        return None
    file: CassetteFile = CassetteFile.from_parent(parent, path=file_path)
    return file


class CassetteFile(pytest.File):
    """A cassette file: collects one :class:`CassetteItem`."""

    def collect(self) -> Iterator[CassetteItem]:
        yield CassetteItem.from_parent(self, name=self.path.stem)


class CassetteFailed(SessiontapeError):
    """A cassette item failed: its replay diverged, or it could not be replayed.

    ``report`` is the replay's report when there is one.
    """

    def __init__(self, message: str, report: ReplayReport | None = None) -> None:
        super().__init__(message)
        self.report = report


class CassetteItem(pytest.Item):
    """One cassette, replayed through the ``sessiontape_replay`` hook."""

    def runtest(self) -> None:
        settings = _settings(self.config)
        shown = _shown(self.path, self.config)
        recorded_by = _recorded_by_fixture(self.path)
        if recorded_by is not None:
            raise CassetteFailed(
                f"{shown} was recorded by the `tape` fixture of {recorded_by}; that test "
                f"replays it: pytest {shlex.quote(recorded_by)}"
            )
        player: ReplayTape | None = None
        handled = False
        try:
            player = replay(self.path, strict=settings.strict, noise=settings.noise)
            with player:
                hook = _hooks.get_plugin_manager().hook
                try:
                    result = hook.sessiontape_replay(tape=player, recording=player.recording)
                except BaseException:
                    # An implementation ran the application and it raised: handled,
                    # whether the tape swallows it (the recorded crash) or not.
                    handled = True
                    raise
                # Returning None means "not mine"; a hook that finished the tape but
                # forgot to return still handled it.
                handled = result is not None or player.report is not None
                if handled and player.report is None:
                    _finish_with(player, result)
        except ReplayMismatch as exc:  # strict: stopped at the first divergence
            self._fail(exc.report)
        except SessiontapeError as exc:
            # An unanswered call or a truncated payload: the report says where it happened.
            if player is None or player.report is None:
                # The cassette could not be loaded; CassetteError names the file and line.
                raise CassetteFailed(str(exc)) from None
            self._fail(player.report, str(exc))
        except Exception:
            if player is not None and player.report is not None:
                _attach_report(self, player.report)
                self.add_report_section("call", "sessiontape", player.report.render())
            raise
        if not handled:
            raise CassetteFailed(
                f"no sessiontape_replay hook handled {shown}: implement "
                "sessiontape_replay(tape, recording) in conftest.py (wire the application "
                "through the tape, run it, and return its outcome, or anything but None)"
            )
        assert player.report is not None
        if not player.report.ok:
            self._fail(player.report)
        _attach_report(self, player.report)

    def _fail(self, report: ReplayReport, error: str | None = None) -> NoReturn:
        _attach_report(self, report)
        message = report.render()
        if error is not None:
            message = f"{message}\n\nthe replay stopped with: {error}"
        raise CassetteFailed(message, report)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A failed replay as its rendered report (first divergence first, no traceback);
        an application crash as the traceback of the hook and the code below it."""
        if isinstance(excinfo.value, CassetteFailed):
            return str(excinfo.value)
        # The application crashed in the hook: show its frames, not pytest's and pluggy's.
        traceback = excinfo.traceback
        for i, entry in enumerate(traceback):
            if entry.frame.code.raw is CassetteItem.runtest.__code__:
                excinfo.traceback = (
                    traceback[i + 1 :].filter(_outside_pluggy).filter(excinfo) or traceback
                )
                break
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        header = _read_header(self.path)
        run = header.run_id if header is not None else "?"
        return self.path, None, f"cassette: {self.name} run {run}"


_PLUGGY_DIR: Final = Path(pluggy.__file__).parent


def _outside_pluggy(entry: Any) -> bool:
    return _PLUGGY_DIR not in Path(entry.path).parents


def _finish_with(player: ReplayTape, result: Any) -> None:
    """Finish a replay the hook did not finish, comparing its returned outcome.

    ``True`` only says "handled"; an outcome is compared only when one was recorded.
    """
    end = player.recording.end
    if result is True or end is None or end.outcome is None:
        player.finish()
    else:
        player.finish(result)
