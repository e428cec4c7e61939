"""Path roots: directories written as ``{name}`` placeholders, so a tape moves hosts.

Paths under known roots (the repository, home, temp, a work dir) are recorded as
``{repo}/src``; replay expands the placeholders again with today's roots.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any, Final, final

from .._errors import UsageError

__all__ = ["LEAF_TYPES", "PathRoots", "expand_data"]

# Characters besides letters, digits and "_" that continue a path component: ``/rootfs``
# is not ``{home}fs`` for home ``/root``, and ``/var/tmp`` does not hold ``{tmp}``. Before
# a root "=" does not (``--dir=/tmp/x`` holds ``{tmp}``); after it, it does.
_PATH_PUNCT_BEFORE: Final = frozenset("_.~+@%#$!-")
_PATH_PUNCT_AFTER: Final = _PATH_PUNCT_BEFORE | {"="}
# A "/" that starts a path component (nothing path-like before it): where a POSIX root can
# start. It begins with its literal, so the engine scans for "/" at C speed.
_PATH_START: Final = re.compile(r"/(?<![\w.~+@%#$!-]/)")
_ROOT_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_DRIVE: Final = re.compile(r"[A-Za-z]:\Z")


def _normalize_root(path: str) -> str:
    """``path`` without a trailing separator; ``""`` for a root that must never collapse."""
    if path.startswith("/"):
        path = os.path.normpath(path)
    path = path.rstrip("/\\")
    return "" if _DRIVE.match(path) else path


def _is_absolute(path: str) -> bool:
    """Absolute on POSIX or on Windows: a cassette may come from either."""
    return path.startswith(("/", "\\")) or (len(path) > 2 and path[1] == ":" and path[2] in "/\\")


def _root_at(text: str, at: int, spellings: tuple[str, ...]) -> str | None:
    """The longest of ``spellings`` that is a whole path at ``text[at:]``, if any."""
    if at and (text[at - 1].isalnum() or text[at - 1] in _PATH_PUNCT_BEFORE):
        return None  # inside a longer path component: /data/srv/app is not {repo}
    for spelling in spellings:
        if text.startswith(spelling, at):
            end = at + len(spelling)
            if end == len(text) or not (text[end].isalnum() or text[end] in _PATH_PUNCT_AFTER):
                return spelling
    return None


def _positions(text: str, sub: str) -> Iterator[int]:
    """Every index of ``sub`` in ``text``."""
    at = text.find(sub)
    while at >= 0:
        yield at
        at = text.find(sub, at + 1)


def _git_toplevel(start: str) -> str | None:
    """The nearest directory at or above ``start`` holding ``.git`` (a directory or a file)."""
    current = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


@final
class PathRoots:
    """Named root directories, written as ``{name}`` placeholders in recorded text.

    Built from a mapping of placeholder name to absolute path. Each root also matches its
    symlink-resolved form (``/tmp`` and ``/private/tmp`` on macOS). Empty roots and ``/``
    are ignored, so ``{"home": ""}`` switches a default root off.
    """

    __slots__ = ("_by_prefix", "_expand_re", "_expansions", "_placeholders", "_posix", "_roots")

    def __init__(self, roots: Mapping[str, str | os.PathLike[str]]) -> None:
        self._roots: dict[str, str] = {}
        for name, raw in roots.items():
            if not _ROOT_NAME.match(name):
                raise UsageError(
                    f"path root name {name!r} cannot be a placeholder; use letters, digits, "
                    "'_', '-' and '.', starting with a letter or '_'."
                )
            path = os.fspath(raw)
            if path and not _is_absolute(path):
                raise UsageError(
                    f"path root {name!r} is {path!r}, a relative path; give an absolute path "
                    f"such as {os.path.abspath(path)!r}."
                )
            path = _normalize_root(path)
            if path:
                self._roots[name] = path
        # Every spelling of every root, longest first, so that a root inside another root
        # ({repo} inside {tmp}) wins. Given forms come before resolved forms: when two roots
        # share a spelling, the first one named keeps it.
        self._placeholders: dict[str, str] = {}
        for spelling, name in self._forms():
            self._placeholders.setdefault(spelling, "{" + name + "}")
        # Grouped by their first two characters (every spelling has two or more), longest
        # first: where a path starts, only the roots starting with its first two
        # characters are tried, and the longest of them that is a whole path wins.
        self._by_prefix: dict[str, tuple[str, ...]] = {}
        for spelling in sorted(self._placeholders, key=len, reverse=True):
            prefix = spelling[:2]
            self._by_prefix[prefix] = (*self._by_prefix.get(prefix, ()), spelling)
        # Whether every root starts with "/" (POSIX roots only): the usual case.
        self._posix = all(prefix[0] == "/" for prefix in self._by_prefix)
        # Compiled when first asked for: recording never expands, and compiling a pattern
        # per set of roots is most of what building them would cost.
        self._expand_re: re.Pattern[str] | None = None
        # Each placeholder and its root, for expand().
        self._expansions = tuple(("{" + name + "}", path) for name, path in self._roots.items())

    def _forms(self) -> Iterator[tuple[str, str]]:
        """(spelling, name) for every root: as given, symlinks resolved, ``/`` for ``\\``."""
        for name, path in self._roots.items():
            yield path, name
        for name, path in self._roots.items():
            resolved = _normalize_root(os.path.realpath(path)) if path.startswith("/") else ""
            for spelling in (resolved, path.replace("\\", "/") if "\\" in path else ""):
                if spelling and spelling != path:
                    yield spelling, name

    @classmethod
    def default(
        cls, repo: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]] | None = None
    ) -> PathRoots:
        """The usual roots: ``repo``, ``home`` and ``tmp``.

        ``repo`` is the given directory, else the git checkout around the current directory
        (found by walking up to a ``.git``), else the current directory. ``home`` is
        ``~`` and ``tmp`` is :func:`tempfile.gettempdir`. A mapping instead of ``repo``
        adds roots to these (or replaces them by name: ``{"repo": ..., "work": ...}``);
        where a root it names is also a default root's directory, its name is written.
        """
        extra: Mapping[str, str | os.PathLike[str]] = {}
        if isinstance(repo, Mapping):
            extra, repo = repo, None
        if repo is None:
            cwd = os.getcwd()
            repo = _git_toplevel(cwd) or cwd
        # The roots the program names come first: where one of them is also a default
        # root's directory (a work directory that is the cwd, outside a git checkout), the
        # program's name keeps it, and a replay from another cwd expands it there again.
        roots: dict[str, str | os.PathLike[str]] = dict(extra)
        roots.setdefault("repo", os.path.abspath(repo))
        roots.setdefault("home", os.path.expanduser("~"))
        roots.setdefault("tmp", tempfile.gettempdir())
        return cls(roots)

    def collapse(self, text: str) -> str:
        """``text`` with every root path written as its placeholder: ``{repo}/src``.

        A root is found only where it is a whole path: ``/rootfs`` keeps ``/root``. Where
        several roots start at one place, the longest wins; the text is read from the left
        and a root found is not searched again for others.
        """
        by_prefix = self._by_prefix
        if self._posix:
            # A text without "/" holds no root; else only a "/" that starts a path
            # component can start one (found by a pattern compiled once, whatever the
            # roots: compiling one per set of roots would cost more than a recording's
            # first hundred calls).
            if "/" not in text:
                return text
            found: list[tuple[int, str]] = []
            starts = _PATH_START.search(text)
            while starts is not None:
                at = starts.start()
                spellings = by_prefix.get(text[at : at + 2])
                spelling = _root_at(text, at, spellings) if spellings is not None else None
                if spelling is None:
                    starts = _PATH_START.search(text, at + 1)
                else:
                    found.append((at, spelling))
                    starts = _PATH_START.search(text, at + len(spelling))
        else:
            found = self._found_anywhere(text)
        if not found:
            return text
        table = self._placeholders
        parts: list[str] = []
        done = 0  # text[:done] is in parts
        for at, spelling in found:
            parts.append(text[done:at])
            parts.append(table[spelling])
            done = at + len(spelling)
        parts.append(text[done:])
        return "".join(parts)

    def _found_anywhere(self, text: str) -> list[tuple[int, str]]:
        """(where, spelling) of each root in ``text``, in text order, for roots that do not
        all start with "/" (a Windows drive): every place a root's first two characters
        occur is a candidate."""
        candidates = sorted(
            (at, prefix) for prefix in self._by_prefix for at in _positions(text, prefix)
        )
        found: list[tuple[int, str]] = []
        done = 0
        for at, prefix in candidates:
            if at < done:
                continue
            spelling = _root_at(text, at, self._by_prefix[prefix])
            if spelling is not None:
                found.append((at, spelling))
                done = at + len(spelling)
        return found

    def expand(self, text: str) -> str:
        """``text`` with every known placeholder replaced by today's root; others stay."""
        if "{" not in text:
            return text
        # The replay hot path: a text usually holds one kind of placeholder or none, and
        # then a substring test per root and one replace beat a regex split.
        found: tuple[str, str] | None = None
        for expansion in self._expansions:
            if expansion[0] in text:
                if found is not None:
                    return self._expand_all(text)
                found = expansion
        if found is None:
            return text
        return text.replace(*found)

    def _expand_all(self, text: str) -> str:
        """:meth:`expand` for a text holding two or more kinds of placeholder: one pass,
        so a root's own text is never taken for a placeholder."""
        pattern = self._expand_re
        if pattern is None:
            names = "|".join(re.escape(n) for n in self._roots)
            pattern = self._expand_re = re.compile(r"\{(" + names + r")\}")
        parts = pattern.split(text)
        roots = self._roots
        parts[1::2] = [roots[name] for name in parts[1::2]]
        return "".join(parts)

    def as_dict(self) -> dict[str, str]:
        """Placeholder name to root path, as written to the cassette header."""
        return dict(self._roots)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PathRoots):
            return NotImplemented
        return self._roots == other._roots

    def __hash__(self) -> int:
        return hash(tuple(self._roots.items()))

    def __repr__(self) -> str:
        return f"PathRoots({self._roots!r})"


#: Types that hold no text: returned as they are by the walks over JSON-like data.
LEAF_TYPES: Final = frozenset({int, float, bool, type(None)})


def expand_data(obj: Any, roots: PathRoots) -> Any:
    """JSON-like ``obj`` with placeholders expanded in every string, dict keys included."""
    if isinstance(obj, str):
        return roots.expand(obj)
    # Replay calls this on every agent result: leaves with nothing to expand (numbers, text
    # without a "{") are kept inline rather than through a call each.
    if isinstance(obj, dict):
        return {
            (k if type(k) is str and "{" not in k else expand_data(k, roots)): (
                v
                if (type(v) is str and "{" not in v) or type(v) in LEAF_TYPES
                else expand_data(v, roots)
            )
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [
            v
            if (type(v) is str and "{" not in v) or type(v) in LEAF_TYPES
            else expand_data(v, roots)
            for v in obj
        ]
    if isinstance(obj, tuple):
        return tuple(expand_data(v, roots) for v in obj)
    return obj
