"""The ``sessiontape`` command itself: version, usage errors, demo, ``python -m``, helpers."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import sessiontape
import sessiontape.cli
from sessiontape.cli._common import Progress, command_name, seq_ranges

from .conftest import Terminal

if TYPE_CHECKING:
    from .conftest import Cli


def test_version(cli: Cli) -> None:
    result = cli("--version")
    assert result.code == 0
    assert result.out == f"sessiontape {sessiontape.__version__}\n"


def test_no_command_is_a_usage_error(cli: Cli) -> None:
    result = cli()
    assert result.code == 2
    assert result.out == ""
    assert result.err.endswith("sessiontape: error: name a command; see 'sessiontape --help'.\n")


def test_unknown_command_is_a_usage_error(cli: Cli) -> None:
    result = cli("shwo", "x.jsonl")
    assert result.code == 2
    assert "invalid choice: 'shwo'" in result.err


def test_help_lists_every_command(cli: Cli) -> None:
    result = cli("--help")
    assert result.code == 0
    for name in (
        "demo", "list", "show", "stats", "diff", "validate", "scrub", "slice", "report", "serve",
        "export",
    ):  # fmt: skip
        assert f"\n    {name} " in result.out


def test_demo_says_when_it_is_not_in_the_build(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes the import fail as if the module did not exist.
    monkeypatch.setitem(sys.modules, "sessiontape.cli._demo", None)
    # ...and the package forgets a module an earlier command imported.
    monkeypatch.delattr(sessiontape.cli, "_demo", raising=False)
    result = cli("demo")
    assert result.code == 2
    assert result.out == ""
    assert result.err == "sessiontape: error: demo is not available in this build.\n"


def test_demo_runs_the_demo_module(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[argparse.Namespace] = []
    demo = types.ModuleType("sessiontape.cli._demo")

    def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--workers", type=int, default=2)

    def run_demo(args: argparse.Namespace) -> int:
        seen.append(args)
        return 0

    demo.add_demo_arguments = add_demo_arguments  # type: ignore[attr-defined]
    demo.run_demo = run_demo  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sessiontape.cli._demo", demo)
    monkeypatch.setattr(sessiontape.cli, "_demo", demo, raising=False)
    assert cli("demo", "--workers", "3").code == 0
    assert [args.workers for args in seen] == [3]


def test_python_dash_m_runs_the_command(cassette: Path) -> None:
    src = Path(sessiontape.__file__).parent.parent
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "sessiontape.cli", "show", str(cassette), "--from-seq", "14"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "+0.033s  14  main  MainThread  session end: {'done': 2} after 33.0ms\n"
    missing = subprocess.run(
        [sys.executable, "-m", "sessiontape.cli", "stats", str(cassette) + ".nope"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert missing.returncode == 2
    assert missing.stderr.startswith(f"sessiontape: error: {cassette}.nope: no such cassette.")


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["git", "merge", "task/t1"], "git merge"),
        (["/usr/bin/git", "-C", "/srv/repo", "checkout", "-b", "x"], "git checkout"),
        (["git", "-c", "user.name=bot", "commit", "-m", "msg"], "git commit"),
        (["git", "--no-pager", "log"], "git log"),
        (["gh", "pr", "create"], "gh pr"),
        (["claude", "-p", "fix"], "claude"),
        (["sh", "-c", "git status && ls"], "sh"),
        (["python", "script.py"], "python"),
        (["{repo}/bin/tool"], "tool"),
        ([], "?"),
    ],
)
def test_command_name(argv: list[str], name: str) -> None:
    assert command_name(argv) == name


def test_seq_ranges() -> None:
    assert seq_ranges([9, 3, 4, 5, 11, 12]) == "3-5, 9, 11-12"
    assert seq_ranges([]) == ""


def test_progress_shows_on_a_terminal_for_big_work_only() -> None:
    terminal = Terminal()
    assert list(Progress("scrub", 400, stream=terminal, threshold=100).iter(range(400))) == list(
        range(400)
    )
    text = terminal.getvalue()
    assert text.startswith("\rscrub: 0/400 entries (0%)\rscrub: 4/400 entries (1%)")
    assert "\rscrub: 396/400 entries (99%)" in text
    assert text.endswith("\r\x1b[K")  # the line is erased at the end
    quiet = Terminal()
    list(Progress("scrub", 100, stream=quiet, threshold=100).iter(range(100)))
    piped = io.StringIO()
    list(Progress("scrub", 400, stream=piped, threshold=100).iter(range(400)))
    assert quiet.getvalue() == piped.getvalue() == ""
