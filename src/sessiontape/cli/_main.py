"""The ``sessiontape`` command: argument parsing, dispatch to a subcommand, exit codes.

Exit codes: 0 all is well; 1 a finding (``validate`` found an error, ``diff`` found a
divergence); 2 a usage error or input that cannot be read or written. Every error is one
line on stderr, ``sessiontape: error: <path>: what went wrong, what to do``, never a
traceback (``SESSIONTAPE_DEBUG=1`` shows the traceback of an unexpected one).
"""

from __future__ import annotations

import argparse
import gc
import inspect
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from .._errors import SessiontapeError
from .._version import __version__
from . import (
    _corpus,
    _diff,
    _explain,
    _export,
    _list,
    _pull,
    _push,
    _receipts,
    _report_html,
    _review,
    _scrub,
    _serve,
    _show,
    _shrink,
    _slice,
    _stats,
    _validate,
)
from ._common import EXIT_CODES
from ._decide import ACCEPT, PENDING, REJECT

__all__ = ["build_parser", "main"]

PROG: Final = "sessiontape"
#: Set to show the traceback of an unexpected error (a bug) instead of its one line.
DEBUG_VAR: Final = "SESSIONTAPE_DEBUG"
_EPILOG: Final = textwrap.fill(EXIT_CODES, width=88)


class _Command(Protocol):
    """What a subcommand module provides; its docstring is the command's description."""

    @property
    def SUMMARY(self) -> str:
        """One line for the command list of ``sessiontape --help``."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


_COMMANDS: Final[dict[str, _Command]] = {
    "list": _list,
    "show": _show,
    "stats": _stats,
    "diff": _diff,
    "validate": _validate,
    "scrub": _scrub,
    "slice": _slice,
    "shrink": _shrink,
    "explain": _explain,
    "corpus": _corpus,
    "report": _report_html,
    "serve": _serve,
    "export": _export,
    "push": _push,
    "pull": _pull,
    "receipts": _receipts,
    "review": _review,
    "pending": PENDING,
    "accept": ACCEPT,
    "reject": REJECT,
}

_DEMO_MODULE: Final = f"{__package__}._demo"
_DEMO_SUMMARY: Final = (
    "record a real multi-worker session of the bundled example orchestrator and replay it"
)


def _add_demo(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], wanted: bool
) -> None:
    """Register ``demo``, importing its module only when ``demo`` is the command run.

    The demo pulls in the example orchestrator; the other subcommands should not pay for it.
    """
    parser = subparsers.add_parser(
        "demo", help=_DEMO_SUMMARY, description=_DEMO_SUMMARY, epilog=_EPILOG
    )
    run: Callable[[argparse.Namespace], int] = _demo_missing
    if wanted:
        try:
            from . import _demo  # type: ignore[attr-defined, unused-ignore]
        except ImportError as exc:
            # Only the demo module itself being absent means "not in this build"; an import
            # error inside it is a bug that must show.
            if exc.name != _DEMO_MODULE:
                raise
        else:
            _demo.add_demo_arguments(parser)
            run = _demo.run_demo
    parser.set_defaults(run=run)


def _demo_missing(args: argparse.Namespace) -> int:
    print(f"{PROG}: error: demo is not available in this build.", file=sys.stderr)
    return 2


def build_parser(*, demo: bool = False) -> argparse.ArgumentParser:
    """The argument parser; ``demo`` imports the demo's own arguments."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Look into sessiontape cassettes: listings, timelines, statistics, "
        "differences, validation, scrubbing, slicing, a viewer (served or as an HTML report) "
        "and OpenTelemetry export. list, show, stats, validate and diff take --json for "
        "scripts.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    _add_demo(subparsers, demo)
    for name, module in _COMMANDS.items():
        sub = subparsers.add_parser(
            name,
            help=module.SUMMARY,
            description=_plain(inspect.getdoc(module) or module.SUMMARY),
            epilog=_EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def _plain(docstring: str) -> str:
    """A module docstring as help text: paragraphs refilled, without reST literal quotes."""
    paragraphs = docstring.replace("``", "").split("\n\n")
    return "\n\n".join(textwrap.fill(" ".join(p.split()), width=88) for p in paragraphs)


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (the first argument that is not an option)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sessiontape`` command with ``argv`` (default: ``sys.argv[1:]``).

    Returns the exit code instead of exiting, so it can be called from Python and tests.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(demo=_command_of(args_list) == "demo")
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # --help, --version and usage errors
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: name a command; see '{PROG} --help'.", file=sys.stderr)
        return 2
    # A loaded tape is millions of objects without cycles; the cyclic collector would scan
    # them again and again as the command allocates (half the run time on a 250k-entry tape).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return run(args)
    except SessiontapeError as exc:
        # CassetteError and CommandError messages already say where and what to do.
        return _error(str(exc))
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            return _stdout_closed()
        where = f"{exc.filename}: " if exc.filename is not None else ""
        problem = exc.strerror or str(exc)
        return _error(f"{where}{problem}; check the path, its permissions and the disk.")
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted.", file=sys.stderr)
        return 130  # what a shell reports for a process ended by SIGINT
    except Exception as exc:
        if os.environ.get(DEBUG_VAR):
            raise
        return _error(
            f"unexpected {type(exc).__name__}: {exc}. This is a bug in sessiontape; please "
            f"report it with the command you ran (set {DEBUG_VAR}=1 to see the traceback)."
        )
    finally:
        if gc_was_enabled:
            gc.enable()


def _error(message: str) -> int:
    """Print ``message`` as the command's one error line; return the usage exit code."""
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def _stdout_closed() -> int:
    """The reader stopped reading (``sessiontape show x | head``): not an error of ours.

    Point stdout at devnull so that flushing it at exit raises nothing more.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0
