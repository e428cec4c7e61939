"""Cassettes as test items: ``pytest cassettes/`` and ``pytest --replay PATH``.

Each cassette becomes one :class:`CassetteItem`, replayed through the project's
``sessiontape_replay`` hook; a divergence fails the item with the rendered report, as
a ``tape`` fixture test fails (see ``_failure``).

The entry point's ``pytest_collect_file`` sees every file of every run and hands this
module only a ``.jsonl`` file or a path named on the command line (:func:`collect_cassette`
reads its first line); the first cassette collected brings sessiontape into the run and
registers :class:`_ItemHooks`, so a run without cassettes has none of these hooks.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn

import pytest

from .. import _hooks
from .._api import replay
from .._errors import SessiontapeError
from ._chaos import CHAOS_PROPERTY, ChaosSettings, chaos_settings, reproduce_command
from ._failure import fail_replay, failure_text, hide_own_frames
from ._options import fixture_nodeid, read_header, shown_path
from ._run import attach_report, run_settings
from ._sources import is_chosen, store_nodeid

if TYPE_CHECKING:
    from ..cassette import Recording, SessionStart
    from ..replayer import Schedule
    from ..report import ChaosResult, Explanation, ReplayReport
    from ..tape import ReplayTape

__all__ = [
    "CassetteFile",
    "CassetteItem",
    "ChaosItem",
    "collect_cassette",
    "release_lingering_time",
]


def collect_cassette(file_path: Path, parent: pytest.Collector) -> CassetteFile | None:
    """``pytest_collect_file`` for a ``.jsonl`` file or a path named on the command line:
    a :class:`CassetteFile` when it is a cassette to replay."""
    # A cassette named on the command line (or chosen by a shard or from a store) is
    # collected whatever its suffix, and even when a tape fixture recorded it (the item
    # then says which test replays it).
    named = parent.session.isinitpath(file_path) or is_chosen(parent.config, file_path)
    if file_path.suffix != ".jsonl" and not named:
        return None
    from ..cassette import is_cassette

    if not is_cassette(file_path):
        return None
    header = read_header(file_path)
    if fixture_nodeid(header) and not named:
        return None
    _ItemHooks.register(parent.config)
    # A store's tape is named by its URL, not by where this machine's cache keeps it.
    nodeid = store_nodeid(parent.config, file_path)
    file: CassetteFile = CassetteFile.from_parent(parent, path=file_path, nodeid=nodeid)
    file.header = header
    return file


class CassetteFile(pytest.File):
    """A cassette file: collects one :class:`CassetteItem`."""

    #: The cassette's first line, read once when it was collected.
    header: SessionStart | None = None

    def collect(self) -> Iterator[CassetteItem]:
        chaos = chaos_settings(self.config)
        if chaos.on:
            # One item per schedule, so pytest-xdist spreads them over its workers.
            for seed in chaos.seeds:
                scheduled: ChaosItem = ChaosItem.from_parent(
                    self, name=f"{self.path.stem}[chaos-{seed}]"
                )
                scheduled.header = self.header
                scheduled.seed = seed
                yield scheduled
            return
        item: CassetteItem = CassetteItem.from_parent(self, name=self.path.stem)
        item.header = self.header
        yield item


#: The lingering time patch of a run of consecutive cassette items (see ``lingering``).
_LINGER: Final = pytest.StashKey[ExitStack]()


def _linger(config: pytest.Config) -> None:
    """Keep virtual time's process patch applied until the run of cassette items ends:
    each replay then only points it at its own clock."""
    if _LINGER not in config.stash:
        from ..replayer import lingering

        stack = ExitStack()
        stack.enter_context(lingering())
        config.stash[_LINGER] = stack
        # An interrupted run skips the teardown that would release it.
        config.add_cleanup(lambda: release_lingering_time(config))


def release_lingering_time(config: pytest.Config) -> None:
    """End the run of cassette items: undo the lingering time patch, if any."""
    stack = config.stash.get(_LINGER, None)
    if stack is not None:
        del config.stash[_LINGER]
        stack.close()


class _ItemHooks:
    """The run's hooks around cassette items, registered with the first cassette."""

    NAME: Final = "sessiontape-items"

    @classmethod
    def register(cls, config: pytest.Config) -> None:
        if config.pluginmanager.get_plugin(cls.NAME) is None:
            run_settings(config)  # a cassette is a use: the run's settings, its plugin
            config.pluginmanager.register(cls(), cls.NAME)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Before a run of cassette items: the process's one-time replay set-up (what a
        replay imports, freezegun, the first search of the loaded modules, the hook
        manager), so that it is not counted against the first cassette (in
        ``--durations``, per-test timeouts)."""
        if session.config.option.collectonly or not any(
            isinstance(item, CassetteItem) for item in session.items
        ):
            return
        # Imported before the search below, which then covers them: a replay's modules.
        from ..cassette import load_for_replay  # noqa: F401
        from ..replayer import prepare
        from ..report import ReplayMismatch  # noqa: F401
        from ..tape import ReplayTape  # noqa: F401

        _hooks.get_plugin_manager()
        prepare()

    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """Release the lingering time patch when the next item is not a cassette (or
        none): between two cassette items only pytest runs, but a test may read the time
        itself."""
        if not isinstance(nextitem, CassetteItem):
            release_lingering_time(item.config)


class CassetteItem(pytest.Item):
    """One cassette, replayed through the ``sessiontape_replay`` hook."""

    #: The cassette's first line as collected (read again when the item was made alone).
    header: SessionStart | None = None

    def runtest(self) -> None:
        from ..cassette import load_for_replay
        from ..report import ReplayMismatch

        settings = run_settings(self.config)
        _linger(self.config)
        player: ReplayTape | None = None
        handled = False
        try:
            # One read of the file: the header check below uses the loaded recording.
            recording = load_for_replay(self.path)
            recorded_by = fixture_nodeid(recording.header)
            if recorded_by is not None:
                _fail(
                    f"{shown_path(self.path, self.config)} was recorded by the `tape` "
                    f"fixture of {recorded_by}; that test replays it: "
                    f"pytest {shlex.quote(recorded_by)}"
                )
            player = replay(
                recording,
                strict=settings.strict,
                noise=settings.noise,
                update=settings.update,
                live=settings.live,
                fork=settings.fork,
            )
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
                _fail(str(exc))
            self._fail(player.report, str(exc))
        except Exception:
            if player is not None and player.report is not None:
                attach_report(self, player.report)
                text = failure_text(player.report, self.config)
                self.add_report_section("call", "sessiontape", text)
            raise
        if not handled:
            _fail(
                f"no sessiontape_replay hook handled {shown_path(self.path, self.config)}: "
                "implement "
                "sessiontape_replay(tape, recording) in conftest.py (wire the application "
                "through the tape, run it, and return its outcome, or anything but None)"
            )
        assert player.report is not None
        if not player.report.ok:
            self._fail(player.report)
        attach_report(self, player.report)

    def _fail(self, report: ReplayReport, error: str | None = None) -> NoReturn:
        attach_report(self, report)
        fail_replay(report, self.config, error=error)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A failed replay as its rendered report (first divergence first, no traceback);
        an application crash as the traceback of the hook and the code below it."""
        if not excinfo.errisinstance(pytest.fail.Exception):
            # The application crashed in the hook: show its frames, not pytest's, pluggy's
            # or sessiontape's.
            traceback = excinfo.traceback
            for i, entry in enumerate(traceback):
                if entry.frame.code.raw is CassetteItem.runtest.__code__:
                    excinfo.traceback = traceback[i + 1 :].filter(excinfo) or traceback
                    break
            hide_own_frames(excinfo, self.config)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        header = self.header if self.header is not None else read_header(self.path)
        run = header.run_id if header is not None else "?"
        return self.path, None, f"cassette: {self.name} run {run}"


def _fail(message: str) -> NoReturn:
    """Fail the item with ``message`` alone, the way a diverged replay fails it."""
    pytest.fail(message, pytrace=False)


def _finish_with(player: ReplayTape, result: Any) -> None:
    """Finish a replay the hook did not finish, comparing its returned outcome.

    ``True`` only says "handled"; an outcome is compared only when one was recorded.
    """
    end = player.recording.end
    if result is True or end is None or end.outcome is None:
        player.finish()
    else:
        player.finish(result)


class ChaosItem(CassetteItem):
    """One chaos schedule of a cassette (``--sessiontape-chaos``): fails when the
    schedule fails; an inadmissible schedule is skipped with its reason (and counted in
    the summary)."""

    #: The schedule's seed.
    seed: int = 0

    def runtest(self) -> None:
        from ..cassette import load_for_replay

        chaos = chaos_settings(self.config)
        _linger(self.config)
        try:
            recording = load_for_replay(self.path)
        except SessiontapeError as exc:  # a damaged cassette: the error names file and line
            _fail(str(exc))
        recorded_by = fixture_nodeid(recording.header)
        if recorded_by is not None:
            _fail(
                f"{shown_path(self.path, self.config)} was recorded by the `tape` fixture "
                f"of {recorded_by}; chaos replays only cassettes the sessiontape_replay "
                "hook replays."
            )
        player = self._play(recording, chaos.schedule(self.seed))
        result = player.chaos
        assert result is not None
        assert player.report is not None
        result.command = reproduce_command(shown_path(self.path, self.config), result, chaos)
        data = {**result.to_dict(), "signature": result.signature}
        self.user_properties.append((CHAOS_PROPERTY, data))
        explained = self._explain(chaos) if result.failed and chaos.explain else None
        if explained is not None:
            data["explain"] = explained.to_dict()
        attach_report(
            self,
            player.report,
            chaos={**result.to_dict(), **({"explain": data["explain"]} if explained else {})},
        )
        if result.failed:
            text = result.render()
            if explained is not None:
                text += "\n\n" + explained.render()
            if chaos.save is not None:
                saved = player.save_chaos(chaos.save / f"{self.path.stem}.chaos-{self.seed}.jsonl")
                shown = shown_path(saved, self.config)
                text += (
                    f"\nSaved as {shown}: it replays in plain mode and fails the same way "
                    f"(pytest --replay {shlex.quote(shown)})."
                )
            _fail(text)
        if result.inadmissible is not None:
            pytest.skip(f"inadmissible schedule (seed {self.seed}): {result.inadmissible}")

    def _play(self, recording: Recording, schedule: Schedule) -> ReplayTape:
        """Replay ``recording`` under ``schedule`` through the project's hook."""
        settings = run_settings(self.config)
        player = replay(recording, noise=settings.noise, schedule=schedule)
        handled = False
        with player:  # a chaos tape never raises on: its result says what happened
            hook = _hooks.get_plugin_manager().hook
            try:
                outcome = hook.sessiontape_replay(tape=player, recording=player.recording)
            except BaseException:
                handled = True
                raise
            handled = outcome is not None or player.report is not None
            if handled and player.report is None:
                _finish_with(player, outcome)
        if not handled:
            _fail(
                f"no sessiontape_replay hook handled {shown_path(self.path, self.config)}: "
                "implement sessiontape_replay(tape, recording) in conftest.py"
            )
        return player

    def _explain(self, chaos: ChaosSettings) -> Explanation:
        """Where this failing schedule's failure became certain (``--sessiontape-chaos-
        explain``): each schedule ``explain`` asks for, replayed from a fresh load."""
        from ..cassette import load_for_replay
        from ..replayer import explain

        def run(schedule: Schedule) -> ChaosResult:
            result = self._play(load_for_replay(self.path), schedule).chaos
            assert result is not None
            return result

        return explain(run, chaos.schedule(self.seed), samples=chaos.explain)
