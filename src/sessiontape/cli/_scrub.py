"""Rewrite a cassette with its secrets redacted, as the recorder would have done.

Every recorded value goes through the same scrubber the recorder uses: argv, env, stdin,
stdout and stderr text, agent/store/custom call arguments and results, error messages and
tracebacks, the header's config and the session outcome. Token-shaped secrets become
``[REDACTED:<kind>]`` and values found by a secret name ``[REDACTED]``; scrubbers a project
registers through the ``sessiontape_scrubbers`` hook run too. Paths stay as they are unless
``--roots name=/path`` names directories to write as ``{name}`` placeholders (the header
then records what each placeholder stood for). Identifiers and timing are never touched.

The output is written atomically (a temporary file, then a rename) with mode 0600, in seq
order; a torn last line is dropped. Payloads kept in the cassette's sidecar are scrubbed
too: a changed one is written to the output's sidecar under its new digest, an unchanged
one copied there (or left in place with --in-place).

With --check nothing is written: each secret still in a cassette is listed by file, line,
seq and field, with its kind but never the secret itself, and the exit code is 1 when
there is one, 0 when every cassette is clean and 2 when one cannot be read.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any, Final

import msgspec

from .. import _hooks
from ..cassette import (
    Blob,
    Entry,
    Payload,
    ProcessCall,
    Recording,
    SessionStart,
    Sidecar,
    line_numbers,
)
from ..report import FieldDiff, diff_values_counted
from ..scrub import PathRoots, Scrubber, scrub_fields
from ._common import CommandError, Progress, load_each, plural, read_recording, write_entries

__all__ = [
    "SUMMARY",
    "ScrubbedEntry",
    "add_arguments",
    "count_secrets",
    "run",
    "scrub_entry",
    "secret_kinds",
]

SUMMARY: Final = "redact secrets (and optionally paths) in a cassette, or --check for them"

# Changed values named per entry by --check; the rest are counted.
_SHOWN_PER_ENTRY: Final = 10


class ScrubbedEntry(msgspec.Struct, frozen=True):
    """An entry after scrubbing: the new entry, the first changed values and their count."""

    entry: Entry
    changes: list[FieldDiff]
    changed: int


#: Where a cassette's sidecar payloads are read from, and where their scrubbed forms go
#: (``None``: nowhere, they are only looked at, as ``--check`` does).
Sidecars = tuple[Sidecar, "Sidecar | None"]


def scrub_entry(
    entry: Entry, scrubber: Scrubber, *, limit: int = 20, sidecars: Sidecars | None = None
) -> ScrubbedEntry:
    """``entry`` with every recorded value scrubbed, and which values that changed.

    The fields and how each is scrubbed are the recorder's own (``scrub.scrub_fields``, the
    function every entry goes through before it is written). ``changes`` holds the first
    ``limit`` changed values (path, old, new), ``changed`` counts them all. ``validate``
    and ``scrub --check`` use it to find values still holding secrets, so every command
    agrees with the recorder on what a secret is. With ``sidecars``, payloads kept in the
    sidecar are read and scrubbed too (see :func:`_sidecar_payload`).
    """
    replaced = scrub_fields(entry, scrubber)
    changes: list[FieldDiff] = []
    changed = 0
    for field, new in replaced.items():
        old = getattr(entry, field)
        diffs, count = diff_values_counted(
            msgspec.to_builtins(old), msgspec.to_builtins(new), field,
            limit=max(0, limit - changed),
        )  # fmt: skip
        changes += diffs
        changed += count
    if sidecars is not None and isinstance(entry, ProcessCall):
        for field, payload, put in _sidecar_fields(entry, replaced):
            new_payload, diffs, count = _sidecar_payload(
                payload, scrubber, sidecars, field, max(0, limit - changed)
            )
            changes += diffs
            changed += count
            if new_payload is not payload:
                put(new_payload)
    if not replaced:
        return ScrubbedEntry(entry, changes, changed)
    return ScrubbedEntry(msgspec.structs.replace(entry, **replaced), changes, changed)


def _sidecar_fields(
    entry: ProcessCall, replaced: dict[str, Any]
) -> list[tuple[str, Blob, Callable[[Payload], None]]]:
    """Each payload of ``entry`` kept in the sidecar: its path, itself, and how to replace
    it in ``replaced`` (the fields already scrubbed)."""
    found: list[tuple[str, Blob, Callable[[Payload], None]]] = []
    for field in ("input", "stdout", "stderr"):
        payload = replaced.get(field, getattr(entry, field))
        if isinstance(payload, Blob) and payload.sidecar:

            def put(new: Payload, field: str = field) -> None:
                replaced[field] = new

            found.append((field, payload, put))
    chunks = replaced.get("chunks", entry.chunks)
    for i, chunk in enumerate(chunks or ()):
        if isinstance(chunk.data, Blob) and chunk.data.sidecar:

            def put_chunk(new: Payload, i: int = i) -> None:
                current = list(replaced.get("chunks", entry.chunks) or ())
                current[i] = msgspec.structs.replace(current[i], data=new)
                replaced["chunks"] = current

            found.append((f"chunks[{i}].data", chunk.data, put_chunk))
    return found


def _sidecar_payload(
    payload: Blob, scrubber: Scrubber, sidecars: Sidecars, path: str, limit: int
) -> tuple[Payload, list[FieldDiff], int]:
    """A payload kept in the sidecar, scrubbed: the payload to keep, and what changed.

    A changed text is stored under its own digest in the target sidecar (it is content
    addressed); an unchanged payload is copied there; bytes that are not UTF-8 are kept
    as they are. With no target, nothing is written: only the changes are found.
    """
    source, target = sidecars
    raw = source.get(payload.sha256, gz=payload.gzip)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    scrubbed = scrubber.text(text) if text is not None else None
    if text is None or scrubbed == text:
        if target is not None and target.directory != source.directory:
            source.copy_to(target, payload.sha256, gz=payload.gzip)
        return payload, [], 0
    assert scrubbed is not None
    diffs, count = diff_values_counted(text, scrubbed, path, limit=limit)
    if target is None:
        return payload, diffs, count
    data = scrubbed.encode("utf-8", "surrogateescape")
    sha256, gz = target.put(data)
    return msgspec.structs.replace(payload, size=len(data), sha256=sha256, gzip=gz), diffs, count


def _root(text: str) -> tuple[str, str]:
    # PathRoots checks the name and that the path is absolute, with its own messages.
    name, equals, path = text.partition("=")
    if not (name and equals and path):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=/PATH (e.g. repo=/srv/app)")
    return name, path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``scrub`` options."""
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="the cassette to scrub (several with --check)"
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", metavar="OUT", help="write the scrubbed cassette here")
    where.add_argument("--in-place", action="store_true", help="replace PATH itself")
    where.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if a cassette holds a secret (listing where, never what)",
    )
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


_MARK: Final = re.compile(r"\[REDACTED(?::([\w-]+))?\]")


def secret_kinds(change: FieldDiff) -> list[str]:
    """The kinds of secret a scrubbed value gained (``github``, ``secret name``...)."""
    before = set(_MARK.findall(change.expected)) if isinstance(change.expected, str) else set()
    after = _MARK.findall(change.actual) if isinstance(change.actual, str) else []
    return sorted({kind or "secret name" for kind in after if kind not in before})


def count_secrets(recording: Recording, scrubber: Scrubber) -> int:
    """How many values of ``recording`` (its sidecar payloads included) hold a secret that
    ``scrub --check`` would report."""
    sidecars: Sidecars = (Sidecar(recording.path), None)
    return sum(
        scrub_entry(entry, scrubber, limit=0, sidecars=sidecars).changed
        for entry in recording.entries
    )


def _check(paths: list[str], scrubber: Scrubber) -> int:
    """``scrub --check``: where secrets are, per file, line, seq and field; never the secret."""
    status = 0
    for path, recording in load_each(paths):
        if recording is None:
            status = 2
            continue
        found = entries = 0
        lines: dict[int, int] | None = None
        sidecars: Sidecars = (Sidecar(recording.path), None)
        for entry in Progress("scrub", len(recording.entries)).iter(recording.entries):
            scrubbed = scrub_entry(entry, scrubber, limit=_SHOWN_PER_ENTRY, sidecars=sidecars)
            if not scrubbed.changed:
                continue
            if lines is None:
                lines = line_numbers(path)
            entries += 1
            found += scrubbed.changed
            where = f"{path}:{lines.get(entry.seq, '?')}: seq {entry.seq}"
            for change in scrubbed.changes:
                kinds = ", ".join(secret_kinds(change)) or "secret"
                print(f"{where}: {change.path} holds a secret ({kinds}).")
            if scrubbed.changed > len(scrubbed.changes):
                print(f"{where}: ... and {scrubbed.changed - len(scrubbed.changes)} more.")
        if found:
            status = max(status, 1)
            print(
                f"{path}: {plural(found, 'secret')} in {plural(entries, 'entry', 'entries')}. "
                f"Run 'sessiontape scrub --in-place {path}', and rotate the secrets."
            )
        else:
            print(f"{path}: no secrets found.")
    return status


def run(args: argparse.Namespace) -> int:
    """``sessiontape scrub``."""
    if args.check:
        if args.roots:
            raise CommandError("--roots rewrites paths; it has no meaning with --check.")
        return _check(args.paths, Scrubber(None, extra=_hooks.scrub_functions()))
    if len(args.paths) != 1:
        raise CommandError(
            f"-o/--in-place scrub one cassette at a time, got {len(args.paths)}; give one "
            "PATH, or use --check to look at several."
        )
    args.path = args.paths[0]
    recording = read_recording(args.path)
    roots = PathRoots(dict(args.roots)) if args.roots else None
    scrubber = Scrubber(roots, extra=_hooks.scrub_functions())
    header_roots = _header_roots(recording.header, roots) if roots is not None else None
    output: str = args.path if args.in_place else args.output
    to_output: Sidecars = (Sidecar(recording.path), Sidecar(output))
    entries: list[Entry] = []
    values = touched = 0
    for entry in Progress("scrub", len(recording.entries)).iter(recording.entries):
        scrubbed = scrub_entry(entry, scrubber, limit=0, sidecars=to_output)
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
