"""``sessiontape review [PATH...]``: decide pending changes one at a time, in a terminal.

Each change shows its tape, worker, seq and boundary, the recorded calls of its worker
just before and after it, and a field-level diff (old in red, new in green). Keys:

  a  accept      r  reject      s  skip (decide later)
  A  accept all that remain     R  reject all that remain     S  skip all that remain
  d  the whole entry, old and new
  o  the viewer's address of the entry (``sessiontape serve``)
  q  quit: what was decided is written, the rest stays pending (run review again)

Accepted changes are written into the tape when the loop ends (a new file beside,
validated, renamed over); a rejected change keeps the recorded entry, so the test keeps
failing there. Keys are read one at a time when standard input is a terminal, else one
line at a time (its first character). The paths are tapes, pending files or folders
(searched recursively); the current folder by default.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final, TextIO
from urllib.parse import quote

from ..report import describe, render_field_change
from ._common import plural
from ._decide import WHAT
from ._serve import DEFAULT_PORT

if TYPE_CHECKING:
    from ..cassette import Decision, Entry, PendingChange
    from ..review import PendingTape

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY: Final = "review pending changes one at a time: accept, reject or skip each"

_KEYS: Final = (
    "a accept  r reject  s skip  A/R/S all that remain  d whole entry  o open in viewer  q quit"
)
_DECISIONS: Final[dict[str, Decision]] = {"a": "accept", "r": "reject"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``review`` options."""
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="tapes, pending files or folders (default: the current folder)",
    )


@contextlib.contextmanager
def _keys(stream: TextIO) -> Iterator[Callable[[], str]]:
    """A function that reads one key: raw (no Enter needed) on a terminal, else the first
    character of a line; ``""`` at the end of input."""
    try:
        fd = stream.fileno()
        terminal = os.isatty(fd)
    except (OSError, ValueError):
        terminal = False
    if not terminal:

        def line() -> str:
            text = stream.readline()
            if not text:
                return ""
            return text.strip()[:1] or " "

        yield line
        return
    import termios
    import tty

    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)

        def key() -> str:
            data = os.read(fd, 1)
            return data.decode("utf-8", "replace") if data else ""

        yield key
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class _Screen:
    """What the loop prints."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.color = out.isatty() and "NO_COLOR" not in os.environ

    def line(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _call(self, label: str, entry: Entry | None) -> None:
        if entry is not None:
            self.line(f"  {label} {describe(entry)}")

    def show(self, tape: PendingTape, change: PendingChange, at: int, total: int) -> None:
        before, after = tape.neighbours(change)
        where = f"seq {change.seq}" if change.seq is not None else "new call"
        self.line()
        what = WHAT.get(change.change, change.change)
        self.line(f"[{at}/{total}] {change.id}  {change.category}: {what}")
        self.line(f"  {tape.tape}  {where}  worker {change.worker}  boundary {change.boundary}")
        self._call("before:", before)
        if change.change == "dropped":
            for entry in tape.old_entries(change):
                self.line(self._paint(f"  - {describe(entry)}", "31"))
        elif change.change == "added":
            for entry in tape.new_entries(change):
                self.line(self._paint(f"  + {describe(entry)}", "32"))
        else:
            for field in change.fields:
                for text in render_field_change(
                    field.field, field.old, field.new, color=self.color
                ):
                    self.line(text)
        self._call("after: ", after)

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def entries(self, tape: PendingTape, change: PendingChange) -> None:
        from ..review import entry_text

        old, new = tape.old_entries(change), tape.new_entries(change)
        for entry in old:
            self.line(f"  old: {entry_text(entry)}")
        for entry in new:
            self.line(f"  new: {entry_text(entry)}")
        if not new:
            self.line("  new: (none: the call is dropped)")

    def address(self, tape: PendingTape, change: PendingChange) -> None:
        seq = change.seq if change.seq is not None else None
        anchor = f"#c={quote(tape.tape.name)}" + (f"&seq={seq}" if seq is not None else "")
        self.line(
            f"  sessiontape serve {shlex.quote(str(tape.tape))}, then open "
            f"http://127.0.0.1:{DEFAULT_PORT}/{anchor}"
        )


def run(args: argparse.Namespace) -> int:
    """``sessiontape review``."""
    from ..review import open_pending  # the replay engine: only when review runs

    tapes = open_pending(args.paths)
    queue = [(tape, change) for tape in tapes for change in tape.undecided]
    screen = _Screen(sys.stdout)
    if not queue:
        for tape in tapes:  # decided, but the last accept was cut short: finish it
            if tape.behind and (written := tape.save().tape) is not None:
                screen.line(f"wrote {written}")
        screen.line("no pending changes")
        return 0
    decided: dict[Decision, int] = {"accept": 0, "reject": 0}
    touched: set[int] = set()
    with _keys(sys.stdin) as read:
        i = 0
        total = len(queue)
        shown = -1
        while i < len(queue):
            tape, change = queue[i]
            if shown != i:  # after d or o, the same change stays: only the keys again
                screen.show(tape, change, i + 1, total)
                shown = i
            screen.line(_KEYS)
            try:
                key = read()
            except KeyboardInterrupt:
                key = "q"
            if key in ("", "q"):
                screen.line("> quit")
                break
            if key in _DECISIONS:
                tape.decide(change.id, _DECISIONS[key])
                decided[_DECISIONS[key]] += 1
                touched.add(id(tape))
                screen.line(f"> {_DECISIONS[key]}ed")
            elif key in ("A", "R"):
                for other, rest in queue[i:]:
                    other.decide(rest.id, _DECISIONS[key.lower()])
                    decided[_DECISIONS[key.lower()]] += 1
                    touched.add(id(other))
                screen.line(f"> {plural(len(queue) - i, 'change')} {_DECISIONS[key.lower()]}ed")
                break
            elif key == "S":
                screen.line(f"> {plural(len(queue) - i, 'change')} skipped")
                break
            elif key == "d":
                screen.entries(tape, change)
                continue
            elif key == "o":
                screen.address(tape, change)
                continue
            elif key == "s":
                screen.line("> skipped")
            else:
                screen.line(f"  unknown key {key!r}")
                continue
            i += 1
    screen.line()
    for tape in tapes:
        if id(tape) in touched or tape.behind:
            saved = tape.save()
            if saved.tape is not None:
                screen.line(f"wrote {saved.tape}")
    left = sum(len(t.undecided) for t in tapes)
    summary = f"{decided['accept']} accepted, {decided['reject']} rejected"
    if left:
        summary += f"; {plural(left, 'change')} still pending: sessiontape review"
    screen.line(summary)
    return 0
