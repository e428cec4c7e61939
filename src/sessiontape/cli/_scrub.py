"""Rewrite a cassette with its secrets redacted, as the recorder would have done.

Every recorded value goes through the same scrubber the recorder uses: argv, env, stdin,
stdout and stderr text, agent/store/custom call arguments and results, error messages and
tracebacks, the header's config and the session outcome. Token-shaped secrets become
``[REDACTED:<kind>]`` and values found by a secret name ``[REDACTED]``; scrubbers a project
registers through the ``sessiontape_scrubbers`` hook run too. Paths stay as they are unless
``--roots name=/path`` names directories to write as ``{name}`` placeholders (the header
then records what each placeholder stood for). Identifiers and timing are never touched.

The output is written atomically (a temporary file, then a rename) with mode 0600, in seq
order; a torn last line is dropped.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Final

import msgspec

from .. import _hooks
from ..cassette import (
    AgentTurn,
    Blob,
    Call,
    Entry,
    Error,
    ErrorInfo,
    ProcessCall,
    SessionEnd,
    SessionResume,
    SessionStart,
    StoreMutation,
    StoreSnapshot,
    load,
)
from ..report import FieldDiff, diff_values_counted
from ..scrub import PathRoots, Scrubber
from ._common import CommandError, Progress, plural, write_entries

__all__ = ["SUMMARY", "ScrubbedEntry", "add_arguments", "run", "scrub_entry"]

SUMMARY: Final = "redact secrets (and optionally paths) in a cassette"

# How each recorded field is scrubbed; fields not named here are identifiers and timing.
_FIELDS: Final[dict[type, tuple[tuple[str, str], ...]]] = {
    SessionStart: (("entrypoint", "text"), ("config", "data")),
    SessionResume: (("entrypoint", "text"), ("config", "data")),
    StoreSnapshot: (("data", "data"), ("error", "error")),
    ProcessCall: (
        ("argv", "argv"),
        ("cwd", "text"),
        ("env", "env"),
        ("input", "payload"),
        ("stdout", "payload"),
        ("stderr", "payload"),
        ("spawn_error", "error"),
    ),
    AgentTurn: (("args", "data"), ("kwargs", "data"), ("result", "data"), ("error", "error")),
    StoreMutation: (("args", "data"), ("kwargs", "data"), ("result", "data"), ("error", "error")),
    Call: (("args", "data"), ("kwargs", "data"), ("result", "data"), ("error", "error")),
    Error: (("message", "text"), ("traceback", "text")),
    SessionEnd: (("outcome", "data"),),
}


class ScrubbedEntry(msgspec.Struct, frozen=True):
    """An entry after scrubbing: the new entry, the first changed values and their count."""

    entry: Entry
    changes: list[FieldDiff]
    changed: int


def _scrub_error(info: ErrorInfo, scrubber: Scrubber) -> ErrorInfo:
    traceback = scrubber.text(info.traceback) if info.traceback is not None else None
    return msgspec.structs.replace(info, message=scrubber.text(info.message), traceback=traceback)


def _scrub_payload(payload: str | Blob, scrubber: Scrubber) -> str | Blob:
    # A Blob holds bytes that are not UTF-8 text, or only a digest: nothing to read.
    return scrubber.text(payload) if isinstance(payload, str) else payload


def _scrubbers(scrubber: Scrubber) -> dict[str, Callable[[Any], Any]]:
    return {
        "text": scrubber.text,
        "argv": scrubber.argv,
        "env": scrubber.env,
        "data": scrubber.data,
        "payload": lambda value: _scrub_payload(value, scrubber),
        "error": lambda value: _scrub_error(value, scrubber),
    }


def scrub_entry(entry: Entry, scrubber: Scrubber, *, limit: int = 20) -> ScrubbedEntry:
    """``entry`` with every recorded value scrubbed, and which values that changed.

    ``changes`` holds the first ``limit`` changed values (path, old, new), ``changed``
    counts them all. ``validate`` uses the same function to find values still holding
    secrets, so both commands always agree on what a secret is.
    """
    how = _scrubbers(scrubber)
    replaced: dict[str, Any] = {}
    changes: list[FieldDiff] = []
    changed = 0
    for field, kind in _FIELDS[type(entry)]:
        old = getattr(entry, field)
        if old is None:
            continue
        new = how[kind](old)
        if new != old:
            replaced[field] = new
            diffs, count = diff_values_counted(old, new, field, limit=max(0, limit - changed))
            changes += diffs
            changed += count
    if not replaced:
        return ScrubbedEntry(entry, [], 0)
    return ScrubbedEntry(msgspec.structs.replace(entry, **replaced), changes, changed)


def _root(text: str) -> tuple[str, str]:
    # PathRoots checks the name and that the path is absolute, with its own messages.
    name, equals, path = text.partition("=")
    if not (name and equals and path):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=/PATH (e.g. repo=/srv/app)")
    return name, path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``scrub`` options."""
    parser.add_argument("path", metavar="PATH", help="the cassette to scrub")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", metavar="OUT", help="write the scrubbed cassette here")
    where.add_argument("--in-place", action="store_true", help="replace PATH itself")
    parser.add_argument(
        "--roots",
        nargs="+",
        action="extend",
        type=_root,
        default=[],
        metavar="NAME=/PATH",
        help="also write paths under these directories as {NAME} placeholders",
    )


def _header_roots(header: SessionStart, roots: PathRoots) -> dict[str, str]:
    """The header's roots with the new ones added; a name may not change its meaning."""
    merged = dict(header.roots)
    for name, path in roots.as_dict().items():
        if merged.get(name, path) != path:
            raise CommandError(
                f"--roots {name}={path}: the cassette's placeholder {{{name}}} already "
                f"stands for {merged[name]}; pick another name for this root."
            )
        merged[name] = path
    return merged


def run(args: argparse.Namespace) -> int:
    """``sessiontape scrub``."""
    recording = load(args.path)
    roots = PathRoots(dict(args.roots)) if args.roots else None
    scrubber = Scrubber(roots, extra=_hooks.scrub_functions())
    header_roots = _header_roots(recording.header, roots) if roots is not None else None
    output: str = args.path if args.in_place else args.output
    entries: list[Entry] = []
    values = touched = 0
    for entry in Progress("scrub", len(recording.entries)).iter(recording.entries):
        scrubbed = scrub_entry(entry, scrubber, limit=0)
        new = scrubbed.entry
        if isinstance(new, SessionStart) and header_roots is not None:
            new = msgspec.structs.replace(new, roots=header_roots)
        if scrubbed.changed:
            values += scrubbed.changed
            touched += 1
        entries.append(new)
    torn = " (its torn last line dropped)" if recording.torn else ""
    if args.in_place and not values and header_roots is None and not recording.torn:
        print(f"{args.path}: nothing to scrub; the file was left as it was.")
        return 0
    write_entries(output, entries)
    print(
        f"{args.path}: scrubbed {plural(values, 'value')} in "
        f"{plural(touched, 'entry', 'entries')}; "
        f"wrote {output}{torn}."
    )
    return 0
