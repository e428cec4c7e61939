"""How a replay fails a test: the report as the failure text, and tracebacks without
sessiontape's own frames.

A diverged replay fails its test in the call phase with :func:`pytest.fail` and
``pytrace=False``: the report is the whole message, first divergence first, as pytest
shows an assertion. Without ``-v`` the first few mismatches and field diffs are shown;
``-v`` shows them all.

When the application raises through sessiontape (an unanswered call, a strict stop), the
frames that matter are the test's and the application's: the ones inside sessiontape (the
fake runner, the stand-ins, the engine) are cut out of the traceback, and so are pluggy's
when a cassette item's hook is called through it. ``--full-trace`` shows everything.
sessiontape cannot mark those frames with ``__tracebackhide__`` without touching every
boundary, so the plugin filters the traceback where pytest builds the report
(:func:`hide_own_frames`): one mechanism for fixture tests and cassette items alike.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Final, NoReturn

import pluggy
import pytest

from ._options import shown_path

if TYPE_CHECKING:
    from ..report import ReplayReport

__all__ = ["fail_replay", "failure_text", "hide_own_frames"]

#: Mismatches shown in a failure without ``-v``, and field diffs per mismatch.
SHOWN_MISMATCHES: Final = 3
SHOWN_DIFFS: Final = 5
_ALL: Final = 1 << 30

_PACKAGE_DIR: Final = Path(os.path.realpath(__file__)).parent.parent
#: The bundled example is an application like any other: its frames are shown.
_EXAMPLES_DIR: Final = _PACKAGE_DIR / "examples"
_PLUGGY_DIR: Final = Path(os.path.realpath(pluggy.__file__)).parent
#: pytest's own code, beside its public ``pytest`` package.
_PYTEST_DIR: Final = Path(os.path.realpath(pytest.__file__)).parent.parent / "_pytest"


def _cut(report: ReplayReport) -> bool:
    """Whether the short form leaves out mismatches or field diffs."""
    return len(report.mismatches) > SHOWN_MISMATCHES or any(
        len(m.diffs) > SHOWN_DIFFS for m in report.mismatches[:SHOWN_MISMATCHES]
    )


def failure_text(
    report: ReplayReport,
    config: pytest.Config,
    *,
    error: str | None = None,
    rerecord: str = "",
    replay_command: str | None = None,
) -> str:
    """The report as a test failure: everything at ``-v``, the first few otherwise.

    ``error`` is what stopped the replay, when something did; ``rerecord`` is the command
    that records the cassette afresh, for a test that has one; ``replay_command`` the
    pytest run that replays the tape (``pytest --replay CASSETTE`` by default), which the
    command recording the calls the tape has no answer for builds on. The cassette is
    named as the user would type it, relative to where pytest was started.
    """
    import msgspec  # loaded already: a report exists

    report = msgspec.structs.replace(report, cassette=shown_path(Path(report.cassette), config))
    if config.get_verbosity() > 0:
        text = report.render(max_mismatches=_ALL, max_diffs=_ALL, pytest_command=replay_command)
    else:
        text = report.render(
            max_mismatches=SHOWN_MISMATCHES, max_diffs=SHOWN_DIFFS, pytest_command=replay_command
        )
        if _cut(report):
            text += (
                f"\n(pytest -v shows all {len(report.mismatches)} mismatches and every "
                "differing field)"
            )
    if error is not None:
        text += f"\n\nthe replay stopped with: {error}"
    if rerecord:
        text += f"\n\nif today's behaviour is right, record the cassette again: {rerecord}"
    return text


def fail_replay(
    report: ReplayReport,
    config: pytest.Config,
    *,
    error: str | None = None,
    rerecord: str = "",
    replay_command: str | None = None,
) -> NoReturn:
    """Fail the running test with the report as its message (no traceback)."""
    text = failure_text(
        report, config, error=error, rerecord=rerecord, replay_command=replay_command
    )
    pytest.fail(text, pytrace=False)


def _ours(filename: str) -> bool:
    """Whether code at ``filename`` is sessiontape's (not its example) or pluggy's."""
    try:
        parents = Path(os.path.realpath(filename)).parents
    except (TypeError, ValueError, OSError):  # <string> code and the like
        return False
    if _PLUGGY_DIR in parents:
        return True
    return _PACKAGE_DIR in parents and _EXAMPLES_DIR not in parents


def _users(filename: str) -> bool:
    """Whether code at ``filename`` is the test's or the application's."""
    if _ours(filename):
        return False
    try:
        return _PYTEST_DIR not in Path(os.path.realpath(filename)).parents
    except (TypeError, ValueError, OSError):
        return True


def hide_own_frames(excinfo: pytest.ExceptionInfo[BaseException], config: pytest.Config) -> None:
    """Cut sessiontape's (and pluggy's) frames out of ``excinfo``'s traceback.

    The traceback objects themselves are relinked, since pytest rebuilds a test
    function's traceback from them. Kept whole with ``--full-trace``, and when no frame
    of the test or the application is left to show.
    """
    if config.getoption("fulltrace", False):
        return
    head: TracebackType | None = excinfo.tb
    node = head
    names = []
    while node is not None:
        names.append(node.tb_frame.f_code.co_filename)
        node = node.tb_next
    if not any(map(_users, names)) or not any(map(_ours, names[1:])):
        return
    node = head
    while node is not None:
        following = node.tb_next
        while following is not None and _ours(following.tb_frame.f_code.co_filename):
            following = following.tb_next
        node.tb_next = following
        node = following
    excinfo.traceback = excinfo.traceback.filter(
        lambda entry: not _ours(str(entry.frame.code.raw.co_filename))
    )
