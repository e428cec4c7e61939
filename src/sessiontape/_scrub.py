"""Scrubbing: secrets redacted and paths made portable before anything reaches disk.

The recorder passes every payload through a :class:`Scrubber`: token-shaped secrets
(GitHub, AWS, OpenAI, Anthropic, Slack, bearer tokens, private keys, ``password=...``
assignments) become ``[REDACTED:<kind>]``, values found by a secret *name* (an environment
variable, a command-line option, a dict key, an assignment) become ``[REDACTED]``, and
paths under known roots (repo, home, temp, ...) become placeholders such as ``{repo}/src``.
Replay expands the placeholders again with today's roots (:meth:`PathRoots.expand`,
:func:`expand_data`).

Everything here runs on every recorded call, so each scan is one compiled regex built once,
and the common case, a string holding nothing to scrub, leaves after one failed search.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple, cast, final

from ._errors import UsageError

__all__ = [
    "REDACTED_MARK",
    "SECRET_ENV_NAME",
    "PathRoots",
    "Scrubber",
    "contains_secret",
    "expand_data",
    "is_secret_name",
    "redact",
    "redaction_mark",
]

#: What a value found by its secret *name* (env var, option, dict key, assignment) becomes.
#: Token-shaped secrets become ``[REDACTED:<kind>]`` (see :func:`redaction_mark`); both
#: start with ``"[REDACTED"``.
REDACTED_MARK: Final = "[REDACTED]"


def redaction_mark(kind: str | None = None) -> str:
    """The text a redacted secret is replaced with: ``[REDACTED]`` or ``[REDACTED:<kind>]``."""
    return REDACTED_MARK if kind is None else f"[REDACTED:{kind}]"


# -- secret names -------------------------------------------------------------------
#
# A name is split into words by ``_``, ``-``, ``.``, digits and camelCase humps, so that
# ``API_KEY``, ``api-key`` and ``apiKey`` all hold the word KEY while ``KEYBOARD`` and
# ``MONKEY`` do not (MONKEY is deliberately *not* secret: glued words are only recognised
# for the usual prefixes, APIKEY, ACCESSKEY, ...). Words that are unmistakable wherever
# they occur (PASSWORD, SECRET, CREDENTIAL, ...) match inside glued names too.

_WORD_START: Final = r"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))"
_WORD_END: Final = r"(?:(?![A-Za-z])|(?<=[a-z])(?=[A-Z]))"

_SECRET_WORDS: Final = (
    # Unmistakable wherever they occur: DBPASSWORD, clientSecret, GOOGLE_CREDENTIALS.
    r"(?i:password|passwd|passphrase|secret|credential|cookie|private|signature)"
    # TOKEN must end a word (TOKENIZERS_PARALLELISM and input_tokens are not secret) but
    # may be glued behind another word (GHTOKEN, AUTHTOKEN, accessToken).
    rf"|(?i:token){_WORD_END}"
    # KEY is a word of its own or glued behind a usual prefix; KEYBOARD, MONKEY are not.
    rf"|(?:{_WORD_START}|(?i:api|access|auth|app|client|license|master|signing|encryption"
    rf"|ssh|gpg|pgp))(?i:keys?){_WORD_END}"
    # Short words only as words of their own: BYPASS, AUTHOR, PWDX are not secret. PWD alone
    # is the working directory and is excluded below.
    rf"|{_WORD_START}(?i:pass|pwd|o?auth(?:orization)?|session(?:id)?|dsn){_WORD_END}"
)

# Whole names that hold a secret word yet are well known not to be secret: the shell's
# working directory, desktop-session plumbing, identifiers called "key", token counts.
_NOT_SECRET_NAMES: Final = (
    r"(?i:pwd|key|keys|ssh_auth_sock|gpg_agent_info|desktop_session|session_manager"
    r"|xdg_session_[a-z_]+|dbus_session_bus_address"
    r"|.*?(?:sort|cache|primary|foreign|partition|routing|lookup|idempotency|dedupe?|group"
    r"|hash|range|shard|object|row|hot)[_.-]?keys?"
    r"|.*?tokens?[_.-]?(?:count|counts|usage|limit|limits|budget|type|estimate)s?)"
)

#: Matches environment variable names (and dict keys, option names) that hold secrets:
#: TOKEN, KEY, SECRET, PASSWORD, PASSWD, PASS, AUTH, COOKIE, CREDENTIAL, SESSION, PRIVATE,
#: SIGNATURE, DSN as words of the name, in any case. Use ``SECRET_ENV_NAME.search(name)``.
SECRET_ENV_NAME: Final[re.Pattern[str]] = re.compile(
    rf"^(?!{_NOT_SECRET_NAMES}\Z).*?(?:{_SECRET_WORDS})", re.DOTALL
)


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a variable, option or key called ``name`` holds a secret (see ``SECRET_ENV_NAME``).

    Cached: environments and JSON documents repeat the same few hundred names.
    """
    return SECRET_ENV_NAME.search(name) is not None


# Options whose value names where a secret lives rather than holding it, or that are flags
# taking no value at all: ``--password-file PATH``, ``--password-stdin``, ``--no-auth``,
# ``gh auth login --with-token``.
_INDIRECT_OPTION: Final = re.compile(
    r"^(?:no|with|without)-|[_-](?:file|path|dir|env|stdin|cmd|command|helper)$", re.IGNORECASE
)


def _is_secret_option(name: str) -> bool:
    """Whether the value given to the long option ``--name`` is a secret."""
    return is_secret_name(name) and _INDIRECT_OPTION.search(name) is None


# -- token shapes -------------------------------------------------------------------
#
# All shapes live in one regex. Python's engine only skips quickly through a string when
# every top-level alternative starts with a literal character: it then tests one character
# class per position and tries a match only where one of those characters occurs. So every
# shape starts with a *rare* literal, its anchor (``_ - : = A B``), and checks what comes
# before with lookbehinds: ``ghp_...`` is found at its ``_``, ``password=...`` at its
# ``=``. ``back`` says how many characters before the anchor belong to the secret.
#
# Lookbehinds are not free (each costs about as much as scanning a few characters), and
# every ``:`` in a JSON document meets them, so shapes that share an anchor share a cheap
# ``guard`` before their costlier checks. Measured on a 200-character ``git status``, these
# choices took the scan from 16 µs (keywords first, case-insensitive) to under 1 µs.


def _spellings(words: Sequence[str]) -> str:
    """An alternation of the lower, UPPER and Capitalized spellings of ``words``.

    Made for lookbehinds, which the engine tries alternative by alternative: literals
    (rather than ``(?i:...)`` or classes) are rejected at their first character, and
    factoring by first character (``a(?:swd|uth)``) spares most of those rejections. This
    makes the checks tried at every ``:`` and ``=`` about three times cheaper.
    """
    groups: dict[str, list[str]] = {}
    for word in words:
        for spelling in dict.fromkeys((word, word.upper(), word.capitalize())):
            groups.setdefault(spelling[0], []).append(re.escape(spelling[1:]))
    return "|".join(
        re.escape(first) + (rests[0] if len(rests) == 1 else f"(?:{'|'.join(rests)})")
        for first, rests in groups.items()
    )


# How an assigned value ends, by how it starts (shared by ``key=value`` and ``--option``).
# Quoted values keep their quotes, so a JSON document stays valid JSON. Bare values that
# are variable references, comparisons, calls or nested JSON are code or structure, not
# secrets.
_VALUE: Final = (
    r"(?!\[REDACTED)(?:"
    r'(?<=\\")(?:[^"\\\r\n]|\\[^"\r\n])+'  # JSON inside a JSON string: up to the next \"
    r'|(?<=")(?:[^"\\\r\n]|\\.)+'  # a JSON string: escapes (\n in a PEM key) included
    r"|(?<=')[^'\r\n]+"
    r"|(?<![\"'])(?![$={\[(])(?![A-Za-z_][\w.]*[(\[])[^\s\"'\\,;&]+"
    r")"
)

# The endings a key must have for ``key=value`` / ``key: value`` to be examined at all
# (the whole key is then checked with is_secret_name). Lookbehinds need a fixed width,
# hence one group per length.
_KEY_ENDINGS: Final = (
    (
        "word",  # password
        "aswd",  # passwd
        "rase",  # passphrase
        "pass",
        "cret",  # secret
        "rets",  # secrets
        "oken",  # token
        "auth",
        "tial",  # credential
        "ials",  # credentials
        "okie",  # cookie
        "ture",  # signature
        "keys",
    ),
    ("key", "dsn", "pwd"),
)
_HEADERS: Final = ("authorization", "cookie")
# What may stand between a key and its separator: nothing, a closing quote or a space
# (``"token": ``, ``password = ``), an escaped quote (``\\"token\\":`` in JSON inside a
# JSON string).
_KEY_TAILS: Final = ("", "[\"' ]", r'\\"')


def _key_guard(sep: str, tail: str) -> str:
    """Lookbehinds true when the key before ``tail`` and ``sep`` ends like an ending or header.

    Only the last two letters are compared: that turns most keys (``modified:``,
    ``"type":``) away for a fraction of the cost of the full endings. A one-class test of
    the last letter comes first, being cheaper still.
    """
    words = [w for group in (*_KEY_ENDINGS, _HEADERS) for w in group]
    last = "".join(sorted({c for w in words for c in (w[-1], w[-1].upper())}))
    pairs = _spellings(sorted({w[-2:] for w in words}))
    return f"(?<=[{last}]{tail}{re.escape(sep)})(?<=(?:{pairs}){tail}{re.escape(sep)})"


def _key_ends_secret(sep: str, tail: str) -> str:
    """Lookbehinds true when the key before ``tail`` and ``sep`` ends like a secret name."""
    return (
        "(?:"
        + "|".join(f"(?<=(?:{_spellings(words)}){tail}{re.escape(sep)})" for words in _KEY_ENDINGS)
        + ")"
    )


#: Decides from a match whether it is a secret: the mark to put in its place, or None.
_Judge = Callable[[re.Match[str]], str | None]


class _Shape(NamedTuple):
    """One alternative of the secrets regex and how its match is replaced."""

    name: str  # the group name the match is known by
    anchor: str  # the literal the match starts with
    pattern: str  # what follows the anchor; ``(?P<keep>...)`` is kept before the mark
    kind: str | None  # the ``[REDACTED:<kind>]`` label; None: ``[REDACTED]``
    back: int = 0  # characters before the anchor (checked by a lookbehind) that go too
    judge: _Judge | None = None  # for shapes found by a name that must be checked
    guard: str = ""  # a cheap check right after the anchor, shared with neighbours

    @property
    def keep(self) -> str | None:
        """The group holding the readable prefix, if there is one."""
        return f"{self.name}__keep" if "(?P<keep>" in self.pattern else None

    def compiled(self) -> str:
        """The alternative as it goes into the combined regex, without anchor and guard.

        The named group that tells which shape matched is an empty one at the end: as the
        last group to close it is ``match.lastgroup``, and the alternative still starts
        with what the engine can reject at once.
        """
        body = self.pattern.replace("(?P<keep>", f"(?P<{self.name}__keep>")
        return f"{body}(?P<{self.name}>)"


def _combine(shapes: Sequence[_Shape]) -> re.Pattern[str]:
    """One regex for all shapes: one alternative per anchor, then per guard, in order."""
    tree: dict[str, dict[str, list[str]]] = {}
    for shape in shapes:
        tree.setdefault(shape.anchor, {}).setdefault(shape.guard, []).append(shape.compiled())
    return re.compile(
        "|".join(
            re.escape(anchor)
            + "(?:"
            + "|".join(f"{guard}(?:{'|'.join(alts)})" for guard, alts in guards.items())
            + ")"
            for anchor, guards in tree.items()
        )
    )


def _judge_assignment(match: re.Match[str]) -> str | None:
    key = _key_before(match.string, match.start())
    if not is_secret_name(key):
        return None
    return redaction_mark("aws") if _AWS_SECRET_KEY.search(key) else REDACTED_MARK


def _judge_option(match: re.Match[str]) -> str | None:
    return REDACTED_MARK if _is_secret_option(match.group("option_name")) else None


# Reads a key backwards from just before its separator: optional space, closing quote
# (possibly escaped), then the key itself.
_KEY_REVERSED: Final = re.compile(r"[ \t]?(?:\"\\|[\"'])?([\w.-]+)")
_AWS_SECRET_KEY: Final = re.compile(r"secret[_-]?access[_-]?key", re.IGNORECASE)


def _key_before(text: str, end: int) -> str:
    """The key that ends just before ``text[end]`` (skipping a closing quote and a space)."""
    found = _KEY_REVERSED.match(text[max(0, end - 256) : end][::-1])
    return found.group(1)[::-1] if found else ""


# Authorization schemes whose credentials are one token: the scheme stays readable and the
# token goes. Any other header value (Digest parameters, cookies) goes to the end of the
# line or quote.
_SCHEMES: Final = _spellings(("bearer", "basic", "token", "bot", "negotiate"))


def _colon_shapes(tail: str, n: int) -> tuple[_Shape, ...]:
    """The shapes found at a ``:`` after a key followed by ``tail``."""
    headers = tuple(
        _Shape(
            f"{header}_{n}",
            ":",
            rf"(?<=(?:{_spellings([header])}){tail}:)"
            rf"(?P<keep>[ \t]*[\"']?(?:(?P<{header}_{n}_scheme>{_SCHEMES})[ \t]+)?)"
            rf"(?!\[REDACTED)(?({header}_{n}_scheme)[^\s\"',;]+"
            # Without a scheme, not "Bearer [REDACTED...]" either: redacting stays idempotent.
            rf"|(?!(?:{_SCHEMES})[ \t])[^\s\"'](?:[^\r\n\"']*[^\s\"'])?)",
            header,
            guard=_key_guard(":", tail),
        )
        for header in _HEADERS
        if not tail.startswith("\\")
    )
    # After a colon a bare JSON literal is data, not a secret, and must stay valid JSON.
    json_literal = r"(?!(?:true|false|null|-?\d+(?:\.\d+)?)(?![^\s,}\]]))"
    assignment = _Shape(
        f"assign_colon_{n}",
        ":",
        _key_ends_secret(":", tail) + r"(?P<keep>[ \t]*(?:\\?[\"'])?)" + json_literal + _VALUE,
        None,
        judge=_judge_assignment,
        guard=_key_guard(":", tail),
    )
    return (*headers, assignment)


_SHAPES: Final = (
    # GitHub: classic tokens ghp_/gho_/ghu_/ghs_/ghr_, fine-grained github_pat_.
    _Shape("github", "_", r"(?<=gh[pousr]_)[A-Za-z0-9]{20,}", "github", back=3),
    _Shape("github_pat", "_", r"(?<=github_)pat_[A-Za-z0-9_]{20,}", "github", back=6),
    # AWS access key ids: AKIA (long-term) and ASIA (temporary) plus 16 characters.
    _Shape("aws", "A", r"(?<![A-Za-z0-9]A)[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])", "aws"),
    # sk-ant-... before sk-...: the first alternative that matches names the secret.
    _Shape(
        "anthropic",
        "-",
        r"(?<=sk-)(?<![A-Za-z0-9_-]sk-)ant-[A-Za-z0-9_-]{20,}",
        "anthropic",
        back=2,
    ),
    _Shape(
        "openai",
        "-",
        r"(?<=sk-)(?<![A-Za-z0-9_-]sk-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        "openai",
        back=2,
    ),
    _Shape("slack", "-", r"(?<=xox[abposr]-)[A-Za-z0-9-]{10,}", "slack", back=4),
    # A PEM private key: the BEGIN line stays, the body up to the END line (or the end of a
    # truncated text) goes. The \\n spellings cover a key inside a JSON string.
    _Shape(
        "private_key",
        "-",
        r"(?P<keep>----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----(?:\r?\n|(?:\\r)?\\n)?)"
        r"[\s\S]*?(?=(?:\r?\n|(?:\\r)?\\n)?-----END[A-Z0-9 ]* PRIVATE KEY|\Z)",
        "private-key",
    ),
    # --token abc / --api-key=abc inside a command line held in one string (sh -c "...").
    # Only names ending like a secret get as far as a Python call.
    _Shape(
        "option",
        "-",
        r"-(?<![^\s\"']--)(?P<keep>(?P<option_name>[A-Za-z][\w.-]*)(?![\w.-])"
        + _key_guard("", "")
        + _key_ends_secret("", "")
        + r"(?:=|[ \t]+(?!-))[\"']?)"
        + _VALUE,
        None,
        judge=_judge_option,
    ),
    _Shape(
        "bearer",
        "B",
        r"(?P<keep>earer[ \t]+)(?=[A-Za-z]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}",
        "bearer",
    ),
    # The password in scheme://user:password@host.
    _Shape(
        "url_password",
        ":",
        r"(?P<keep>//[^/\s:@\"']*:)(?!\[REDACTED)[^/\s@\"']+(?=@)",
        "url-password",
    ),
    # HTTP headers (Authorization, Cookie): the whole value goes, an auth scheme stays
    # readable. Then password=..., TOKEN="...", "api_key": "...", aws_secret_access_key = ...
    *(
        shape
        for n, tail in enumerate(_KEY_TAILS)
        for shape in (
            *_colon_shapes(tail, n),
            _Shape(
                f"assign_equals_{n}",
                "=",
                _key_ends_secret("=", tail)
                + r"(?P<keep>[ \t]*(?:\\?[\"'])?)(?!(?:true|false|null)(?![^\s,;&]))"
                + _VALUE,
                None,
                judge=_judge_assignment,
                guard=_key_guard("=", tail),
            ),
        )
    ),
)

_SECRETS: Final = _combine(_SHAPES)
# Per group name: characters before the anchor that go too, the group kept before the
# mark, and the mark itself or the judge that decides it per match.
_BY_NAME: Final[dict[str, tuple[int, str | None, str | _Judge]]] = {
    s.name: (s.back, s.keep, s.judge or redaction_mark(s.kind)) for s in _SHAPES
}


def redact(text: str) -> str:
    """``text`` with every token-shaped secret replaced by a redaction mark.

    ``ghp_...`` becomes ``[REDACTED:github]``, ``Authorization: Bearer x`` becomes
    ``Authorization: Bearer [REDACTED:authorization]``, ``password=x`` becomes
    ``password=[REDACTED]``. Redacting twice changes nothing more.
    """
    found = _SECRETS.search(text)
    if found is None:
        return text
    out: list[str] = []
    done = 0  # text[:done] is already in out
    while found is not None:
        back, keep, mark = _BY_NAME[cast(str, found.lastgroup)]
        if not isinstance(mark, str):
            judged = mark(found)
            if judged is None:
                # Not a secret name after all; its value may still hold a token shape.
                resume = found.end(keep) if keep is not None else found.start() + 1
                found = _SECRETS.search(text, resume)
                continue
            mark = judged
        start = max(found.start() - back, done)
        out.append(text[done:start])
        if keep is not None:
            out.append(text[start : found.end(keep)])
        out.append(mark)
        done = found.end()
        found = _SECRETS.search(text, done)
    out.append(text[done:])
    return "".join(out)


# Scrubber.__init__ takes a ``redact`` flag that shadows the function.
_redact_text: Final = redact


def contains_secret(s: str) -> bool:
    """Whether ``s`` still holds something :func:`redact` would replace."""
    return redact(s) != s


# -- paths --------------------------------------------------------------------------

# A character that can continue a path component: ``/rootfs`` is not ``{home}fs`` for
# home ``/root``, and ``/var/tmp`` does not hold ``{tmp}``.
_PATH_CHAR: Final = r"[\w.~+@%#$!=-]"
_PATH_CHAR_BEFORE: Final = r"[\w.~+@%#$!-]"  # ``--dir=/tmp/x`` holds ``{tmp}``
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

    __slots__ = ("_collapse_re", "_expand_re", "_placeholders", "_roots")

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
        if self._placeholders:
            # Grouped by first character, so the engine finds candidates with a fast scan
            # for that character (usually just "/"), then tries the spellings longest first.
            by_first: dict[str, list[str]] = {}
            for spelling in sorted(self._placeholders, key=len, reverse=True):
                by_first.setdefault(spelling[0], []).append(re.escape(spelling[1:]))
            alternatives = "|".join(
                f"{re.escape(c)}(?<!{_PATH_CHAR_BEFORE}{re.escape(c)})(?:{'|'.join(rests)})"
                for c, rests in by_first.items()
            )
            # One capturing group: split() hands back the roots found, all in C.
            self._collapse_re: re.Pattern[str] | None = re.compile(
                f"((?:{alternatives}))(?!{_PATH_CHAR})"
            )
            names = "|".join(re.escape(n) for n in self._roots)
            self._expand_re: re.Pattern[str] | None = re.compile(r"\{(" + names + r")\}")
        else:
            self._collapse_re = self._expand_re = None

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
        adds roots to these (or replaces them by name: ``{"repo": ..., "work": ...}``).
        """
        extra: Mapping[str, str | os.PathLike[str]] = {}
        if isinstance(repo, Mapping):
            extra, repo = repo, None
        if repo is None:
            cwd = os.getcwd()
            repo = _git_toplevel(cwd) or cwd
        roots: dict[str, str | os.PathLike[str]] = {
            "repo": os.path.abspath(repo),
            "home": os.path.expanduser("~"),
            "tmp": tempfile.gettempdir(),
        }
        roots.update(extra)
        return cls(roots)

    def collapse(self, text: str) -> str:
        """``text`` with every root path written as its placeholder: ``{repo}/src``.

        A root is found only where it is a whole path: ``/rootfs`` keeps ``/root``.
        """
        pattern = self._collapse_re
        if pattern is None:
            return text
        # split() is the cheap check too: with no root in the text it returns [text].
        parts = pattern.split(text)
        if len(parts) == 1:
            return text
        table = self._placeholders
        parts[1::2] = [table[found] for found in parts[1::2]]
        return "".join(parts)

    def expand(self, text: str) -> str:
        """``text`` with every known placeholder replaced by today's root; others stay."""
        pattern = self._expand_re
        if pattern is None or "{" not in text:
            return text
        parts = pattern.split(text)
        if len(parts) == 1:
            return text
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
_LEAF_TYPES: Final = frozenset({int, float, bool, type(None)})


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
                if (type(v) is str and "{" not in v) or type(v) in _LEAF_TYPES
                else expand_data(v, roots)
            )
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [
            v
            if (type(v) is str and "{" not in v) or type(v) in _LEAF_TYPES
            else expand_data(v, roots)
            for v in obj
        ]
    if isinstance(obj, tuple):
        return tuple(expand_data(v, roots) for v in obj)
    return obj


# -- the scrubber -------------------------------------------------------------------

# Texts up to this length are remembered, up to this many (at most a few MB).
_MEMO_MAX_CHARS: Final = 256
_MEMO_MAX_ENTRIES: Final = 8192


def _redact_all(obj: Any) -> Any:
    """Every string inside ``obj`` redacted; numbers, booleans and None say no secret."""
    if isinstance(obj, str):
        return REDACTED_MARK if obj else obj
    if isinstance(obj, dict):
        return {k: _redact_all(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_redact_all(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_redact_all(v) for v in obj)
    return obj


@final
class Scrubber:
    """What the recorder applies to every payload: redaction, then path placeholders.

    ``roots`` gives the placeholders (None: paths stay as they are). ``redact=False`` turns
    every redaction off. ``extra`` functions run last on every text, after the built-in
    redaction: that is how the ``sessiontape_scrubbers`` hook adds a project's own rules.
    They must be pure functions, as short texts are scrubbed once and then remembered. The
    same scrubber scrubs today's requests on replay, so both sides compare alike.
    """

    __slots__ = ("_collapse", "_last_env", "_memo", "_redact", "_roots", "_steps")

    def __init__(
        self,
        roots: PathRoots | None = None,
        *,
        redact: bool = True,
        extra: Sequence[Callable[[str], str]] = (),
    ) -> None:
        self._roots = roots
        self._redact = redact
        self._collapse: Callable[[str], str] | None = roots.collapse if roots is not None else None
        steps: list[Callable[[str], str]] = []
        if redact:
            steps.append(_redact_text)
        if self._collapse is not None:
            steps.append(self._collapse)
        steps.extend(extra)
        self._steps = tuple(steps)
        # Short texts repeat endlessly (argv words, env values, JSON leaves): remembering
        # them makes a repeat one dict lookup instead of two regex scans. Bounded, and
        # safe across threads since each get or set is atomic; ``extra`` must be pure.
        self._memo: dict[str, str] = {}
        # A program passes the same environment to call after call: the last one and its
        # scrubbed form, swapped as one tuple so that threads never see half of it.
        self._last_env: tuple[dict[str, str], dict[str, str]] | None = None

    @property
    def roots(self) -> PathRoots | None:
        """The path roots this scrubber collapses, if any."""
        return self._roots

    def text(self, s: str) -> str:
        """``s`` with token-shaped secrets redacted, roots collapsed, then ``extra`` applied."""
        short = len(s) <= _MEMO_MAX_CHARS
        if short:
            done = self._memo.get(s)
            if done is not None:
                return done
        out = s
        for step in self._steps:
            out = step(out)
        if short:
            if len(self._memo) >= _MEMO_MAX_ENTRIES:
                self._memo.clear()
            self._memo[s] = out
        return out

    def argv(self, argv: Sequence[str]) -> list[str]:
        """Each argument scrubbed as text; the value of a secret long option is redacted.

        ``--token abc`` gives ``["--token", "[REDACTED]"]`` and ``--api-key=abc`` gives
        ``"--api-key=[REDACTED]"``. Short options (``-p``) are too ambiguous to judge.
        """
        out: list[str] = []
        value_is_secret = False
        for arg in argv:
            if value_is_secret and arg and not arg.startswith("-"):
                out.append(REDACTED_MARK)
                value_is_secret = False
                continue
            value_is_secret = False
            if self._redact and arg.startswith("--") and len(arg) > 2:
                name, eq, value = arg[2:].partition("=")
                if _is_secret_option(name):
                    if not eq:
                        value_is_secret = True
                    elif value:
                        out.append(f"--{name}={REDACTED_MARK}")
                        continue
            out.append(self.text(arg))
        return out

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Values of secret-named variables become ``[REDACTED]``; the rest are scrubbed as text.

        An empty value stays empty: it holds nothing, and saying it was unset helps.
        """
        last = self._last_env
        if last is not None and last[0] == env:
            return dict(last[1])
        text = self.text
        redact = self._redact
        scrubbed = {
            name: REDACTED_MARK if redact and value and is_secret_name(name) else text(value)
            for name, value in env.items()
        }
        self._last_env = (dict(env), scrubbed)
        return dict(scrubbed)

    def data_like(self, obj: Any, recorded: Any) -> Any:
        """``data(obj)``, reusing every part of ``recorded`` that ``obj`` equals.

        ``recorded`` is an earlier ``data()`` result, the request or result on a tape.
        Scrubbing is idempotent (``extra`` functions must be too), so a part of ``obj``
        equal to the matching part of ``recorded`` scrubs to itself; only the parts that
        differ are scrubbed. Replay compares today's request with the recorded one this
        way: a 1 KB prompt that differs in one path costs one short string's scrub.
        """
        if obj == recorded:
            return recorded
        if type(obj) is dict and type(recorded) is dict and obj.keys() == recorded.keys():
            out: dict[Any, Any] = {}
            redact = self._redact
            for key, value in obj.items():
                old = recorded[key]
                if value == old:
                    out[key] = old
                elif redact and isinstance(key, str) and is_secret_name(key):
                    out[key] = _redact_all(value)  # as data() does under a secret key
                else:
                    out[key] = self.data_like(value, old)
            return out
        if type(obj) is list and type(recorded) is list and len(obj) == len(recorded):
            return [
                old if value == old else self.data_like(value, old)
                for value, old in zip(obj, recorded, strict=True)
            ]
        return self.data(obj)

    def data(self, obj: Any) -> Any:
        """JSON-like ``obj`` (dict, list, tuple, str, int, float, bool, None) scrubbed.

        Every string, dict keys included, is scrubbed as text; under a key that looks secret
        (``"password"``, ``"apiKey"``) every string becomes ``[REDACTED]``. Other objects are
        returned as they are: convert them to plain data first.
        """
        if isinstance(obj, str):
            return self.text(obj)
        # Replay scrubs every agent and store request and result: plain text and numbers
        # are handled inline rather than through a recursive call each.
        text = self.text
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            redact = self._redact
            memo = self._memo  # text()'s own memo, looked up here to save the call on a hit
            for key, value in obj.items():
                if isinstance(key, str):
                    if redact and is_secret_name(key):
                        out[text(key)] = _redact_all(value)
                        continue
                    done = memo.get(key) if len(key) <= _MEMO_MAX_CHARS else None
                    key = text(key) if done is None else done
                kind = type(value)
                if kind is str:
                    done = memo.get(value) if len(value) <= _MEMO_MAX_CHARS else None
                    out[key] = text(value) if done is None else done
                elif kind in _LEAF_TYPES:
                    out[key] = value
                else:
                    out[key] = self.data(value)
            return out
        if isinstance(obj, list):
            return [
                text(v) if type(v) is str else v if type(v) in _LEAF_TYPES else self.data(v)
                for v in obj
            ]
        if isinstance(obj, tuple):
            return tuple(self.data(v) for v in obj)
        return obj

    def path(self, p: str) -> str:
        """``p`` with its root collapsed to a placeholder; nothing redacted."""
        return self._collapse(p) if self._collapse is not None else p
