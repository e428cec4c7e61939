"""The ``tape`` fixture and the ``sessiontape`` marker: a test's cassette, recorded the
first time and replayed afterwards.

The entry point declares the fixture and imports this module when a test uses it
(:func:`tape_fixture`). A replay is finished as soon as the test function returns, in the
test's call phase (``_FixtureHooks.pytest_runtest_call``, registered by the first test
that uses the fixture), so that a divergence fails the test itself, with the report as its
message, rather than surfacing as an error in teardown. :func:`report_failure` is what the
entry point's ``pytest_runtest_makereport`` calls for a failure that concerns a tape.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, NoReturn

import pytest

from .._api import record, replay
from .._errors import CassetteError, SessiontapeError
from ._failure import fail_replay, failure_text, hide_own_frames
from ._options import (
    ACTIVE_TAPE,
    MARKER,
    MARKER_KWARGS,
    assert_never,
    shown_path,
)
from ._run import attach_report, run_settings
from ._settings import RecordMode, in_ci, record_mode

if TYPE_CHECKING:
    from ..replayer import Noise
    from ..tape import Tape

__all__ = ["report_failure", "tape_fixture"]

_UNSAFE_FILENAME: Final = re.compile(r"[^A-Za-z0-9_.,=+\-\[\]]")
_MAX_STEM: Final = 120


class _Active:
    """The tape a test's ``tape`` fixture opened, and how the test has fared around it."""

    __slots__ = ("failed", "reported", "tape")

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        #: The setup (after the fixture) or the call raised.
        self.failed = False
        #: The replay's report already failed the test, as its message.
        self.reported = False


class _FixtureHooks:
    """The call phase of a test with a tape, registered by the first ``tape`` fixture of
    a run (pytest reads the hooks at each call: the first test's call phase has it)."""

    NAME: Final = "sessiontape-fixture"

    @classmethod
    def register(cls, config: pytest.Config) -> None:
        if config.pluginmanager.get_plugin(cls.NAME) is None:
            config.pluginmanager.register(cls(), cls.NAME)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        """Finish the test's replay when the test function returns, and fail it on
        divergence.

        pytest has no way for a fixture to fail the call phase from its teardown, so the
        plugin finishes the tape here, right after the test function (an exception from
        the test propagates untouched; the report then joins it as a section).
        """
        result = yield
        _finish_call(item)
        return result


def _finish_call(item: pytest.Item) -> None:
    """After the test function: finish a replay and fail the test when it diverged."""
    active: _Active | None = item.stash.get(ACTIVE_TAPE, None)
    if active is None:
        return
    from ..report import ReplayMismatch
    from ..tape import ReplayTape

    if isinstance(active.tape, ReplayTape):
        player = active.tape
        try:
            report = player.finish()
        except ReplayMismatch as exc:  # strict: the report is the failure all the same
            report = exc.report
        player.close()
        if not report.ok:
            active.reported = True
            fail_replay(
                report,
                item.config,
                rerecord=_record_command(item),
                replay_command=_replay_command(item),
            )


def report_failure(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """Before pytest builds a failure's report: hide sessiontape's frames from it, and add
    the replay's report to a test that failed on its own."""
    excinfo = call.excinfo
    if excinfo is None or excinfo.errisinstance(pytest.skip.Exception):
        return
    active: _Active | None = item.stash.get(ACTIVE_TAPE, None)
    if active is None:
        if excinfo.errisinstance(SessiontapeError):
            # A sessiontape error in a test that drives a tape by hand: the frame that
            # matters is the caller's.
            hide_own_frames(excinfo, item.config)
        return
    if call.when == "teardown":
        return
    from ..report import ReplayMismatch
    from ..tape import ReplayTape

    hide_own_frames(excinfo, item.config)
    active.failed = True
    player = active.tape
    if (
        call.when == "call"
        and isinstance(player, ReplayTape)
        # A strict stop's message is the report already, and so is our own failure.
        and not active.reported
        and not excinfo.errisinstance(ReplayMismatch)
    ):
        # The failure is usually the divergence's doing (an unanswered call raises in the
        # app): finish now, so the report joins the failure this hook is about to build.
        player.close()
        if player.report is not None and not player.report.ok:
            text = failure_text(
                player.report,
                item.config,
                rerecord=_record_command(item),
                replay_command=_replay_command(item),
            )
            item.add_report_section("call", "sessiontape", text)


class _MarkerOptions(NamedTuple):
    """The ``sessiontape`` marker's keyword arguments, checked."""

    cassette: str | None
    mode: RecordMode | None
    strict: bool | None
    noise: Noise
    roots: Mapping[str, str] | None


def _marker_options(item: pytest.Item) -> _MarkerOptions:
    """Merge the item's ``sessiontape`` markers (the closest wins per keyword)."""
    from ..replayer import Noise

    kwargs: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers(MARKER))):
        if mark.args:
            _usage(item, f"takes keyword arguments only, got {mark.args!r}")
        unknown = sorted(set(mark.kwargs) - MARKER_KWARGS)
        if unknown:
            known = ", ".join(sorted(MARKER_KWARGS))
            _usage(item, f"got unknown keyword(s) {', '.join(unknown)}; it takes {known}")
        kwargs.update(mark.kwargs)
    cassette = kwargs.get("cassette")
    if cassette is not None and not isinstance(cassette, (str, os.PathLike)):
        _usage(item, f"cassette must be a path, got {cassette!r}")
    mode = kwargs.get("mode")
    problem: str | None = None
    if mode is not None:
        try:
            mode = record_mode(mode.value if isinstance(mode, RecordMode) else str(mode))
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
    pytest.fail(f"@pytest.mark.{MARKER} on {item.nodeid}: {problem.rstrip('.')}.", pytrace=False)


def _safe_stem(name: str) -> str:
    """A file name for a test name: parametrize ids may hold any character."""
    safe = _UNSAFE_FILENAME.sub("_", name)
    if safe == name and len(safe) <= _MAX_STEM:
        return safe
    # Two ids can clean up to the same name ([a/b] and [a_b]): a digest keeps them apart.
    import hashlib

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


def _replay_command(item: pytest.Item) -> str:
    return f"pytest {shlex.quote(item.nodeid)}"


def tape_fixture(request: pytest.FixtureRequest) -> Iterator[Tape]:
    """The ``tape`` fixture's body (see the fixture in the entry point)."""
    item = request.node
    assert isinstance(item, pytest.Item)
    settings = run_settings(item.config)
    _FixtureHooks.register(item.config)
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
        assert_never(mode)

    shown = shown_path(path, item.config)
    if not recording and not exists:
        if options.mode is RecordMode.NONE:
            how = (
                f"the {MARKER} marker pins it (mode='none'): put the tape there (record it "
                "with sessiontape.record(...), or copy a production tape)."
            )
        else:
            how = f"record it with: {_record_command(item)}"
        pytest.fail(
            f"no cassette at {shown} and record mode 'none' replays only; {how}",
            pytrace=False,
        )
    if recording and not exists and in_ci() and not settings.record_session:
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
        active = item.stash[ACTIVE_TAPE] = _Active(recorder)
        with recorder:
            yield recorder
        if active.failed:
            # A tape of a failed test would be replayed by the next run as if it were
            # right: drop it, so that run records afresh.
            path.unlink(missing_ok=True)
        return

    from ..replayer import Noise

    try:
        player = replay(
            path,
            strict=strict,
            noise=Noise(settings.noise) | options.noise,
            roots=options.roots,
            update=settings.update,
            live=settings.live,
        )
    except CassetteError as exc:
        unreadable: str | None = f"{exc} Record it again: {_record_command(item)}"
    else:
        unreadable = None
    if unreadable is not None:  # failed out of the except block: no chained traceback
        pytest.fail(unreadable, pytrace=False)
    active = item.stash[ACTIVE_TAPE] = _Active(player)
    with player:
        yield player
    # The replay was finished in the call phase (pytest_runtest_call) or by leaving the
    # block, if the test never got to run.
    report = player.report
    assert report is not None
    attach_report(item, report)
    if not report.ok and not active.failed:
        fail_replay(
            report,
            item.config,
            rerecord=_record_command(item),
            replay_command=_replay_command(item),
        )
