"""Secret *shapes*: tokens recognisable wherever they appear, and :func:`redact`.

Token-shaped secrets (GitHub, AWS, OpenAI, Anthropic, Slack, bearer tokens, private keys,
``password=...`` assignments) become ``[REDACTED:<kind>]``; a value assigned to a secret
name becomes ``[REDACTED]``. The vendor formats kept as data (``_ruleset``, made shapes by
``_vendor``) join them, and so does the second line of defence (``_context``): a random
value after a credential word, ``-p``/``-a`` or as a URL's user, ``[REDACTED:high-entropy]``.
Everything here runs on every recorded string, so all shapes live in one compiled regex
and the common case, a string holding nothing to scrub, leaves after one failed search.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple, cast

from ._context import (
    CONTEXT_MARK,
    RANDOM_VALUE,
    ContextWord,
    context_tail,
    context_words,
    looks_random,
    starts_a_word,
)
from ._names import REDACTED_MARK, is_secret_name, is_secret_option, redaction_mark
from ._vendor import vendor_shapes

__all__ = ["contains_secret", "redact"]

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
    # A PEM key given as a value (``tls.key=-----BEGIN ...``) is left to the private-key
    # shape, which takes its whole body: the value rule would stop at its first space.
    r"(?!\[REDACTED|-----BEGIN)(?:"
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
        "onid",  # sessionid
        "ssid",  # PHPSESSID
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
    # When the judge says no: go on after ``keep`` (an option's name is done with) or at
    # the next character (a credential word's separator may be an assignment's).
    resume_after_keep: bool = True

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
    return REDACTED_MARK if is_secret_option(match.group("option_name")) else None


def _judge_random(group: str) -> _Judge:
    """A judge that redacts the match when its ``group`` reads as a random secret."""

    def judge(match: re.Match[str]) -> str | None:
        if not looks_random(match.group(group)) or _shape_inside(match):
            return None
        return CONTEXT_MARK

    return judge


def _shape_inside(match: re.Match[str]) -> bool:
    """Whether another shape redacts something that starts inside ``match`` (after its
    first character): then that one redacts it, as ``[REDACTED:aws]`` or by its name
    rather than as a random value (``aws_secret_access_key KEY``, ``"SecretAccessKey":
    "KEY"``, ``api key dckr_pat_...``)."""
    text, end = match.string, match.end()
    inner = _SECRETS.search(text, match.start() + 1, end)
    while inner is not None:  # each start, overlapping ones too
        mark = _BY_NAME[cast(str, inner.lastgroup)][2]
        if isinstance(mark, str) or mark(inner) is not None:
            return True
        inner = _SECRETS.search(text, inner.start() + 1, end)
    return False


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


# Guards shared by the token shapes found at ``_`` and ``-``: the letter before the anchor
# must be one a prefix ends with (gh[pousr]_, github_, sk_, rk_, hf_, api_org_, npm_,
# secret_; sk-, xox?-, xapp-, pypi-, glpat-), so most snake_case and hyphenated words
# are turned away by one character test.
_UNDERSCORE_GUARD: Final = r"(?<=[bfgkmoprstuT]_)"
_DASH_GUARD: Final = r"(?<=[abeikoprst]-)"
# Shapes of URLs, found at the colon of ``scheme://``.
_URL_GUARD: Final = "(?=//)"

_SHAPES: Final = (
    # Each shape follows a rule of gitleaks (config/gitleaks.toml) or detect-secrets
    # (detect_secrets/plugins); RELIABILITY.md lists which. The regexes are our own.
    # GitHub: classic tokens ghp_/gho_/ghu_/ghs_/ghr_, fine-grained github_pat_.
    _Shape(
        "github",
        "_",
        r"(?<=gh[pousr]_)[A-Za-z0-9]{20,}",
        "github",
        back=3,
        guard=_UNDERSCORE_GUARD,
    ),
    _Shape(
        "github_pat",
        "_",
        r"(?<=github_)pat_[A-Za-z0-9_]{20,}",
        "github",
        back=6,
        guard=_UNDERSCORE_GUARD,
    ),
    # Stripe secret and restricted keys: sk_live_, rk_live_, sk_test_, ..._prod_.
    _Shape(
        "stripe",
        "_",
        r"(?<=[sr]k_)(?<![A-Za-z0-9][sr]k_)(?:live|test|prod)_[A-Za-z0-9]{10,}",
        "stripe",
        back=2,
        guard=_UNDERSCORE_GUARD,
    ),
    # Hugging Face user (hf_) and organisation (api_org_) tokens: 34 letters.
    _Shape(
        "huggingface",
        "_",
        r"(?<=hf_)(?<![A-Za-z0-9]hf_)[A-Za-z]{34}(?![A-Za-z0-9])",
        "huggingface",
        back=2,
        guard=_UNDERSCORE_GUARD,
    ),
    _Shape(
        "huggingface_org",
        "_",
        r"(?<=api_org_)[A-Za-z]{34}(?![A-Za-z0-9])",
        "huggingface",
        back=7,
        guard=_UNDERSCORE_GUARD,
    ),
    # npm access tokens: npm_ and 36 letters or digits.
    _Shape(
        "npm",
        "_",
        r"(?<=npm_)(?<![A-Za-z0-9]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])",
        "npm",
        back=3,
        guard=_UNDERSCORE_GUARD,
    ),
    # The 40-character AWS secret access key right after its name, as in
    # ``aws configure set aws_secret_access_key KEY`` or ``("aws_secret_access_key", "KEY")``
    # (``name = KEY`` and ``"SecretAccessKey": "KEY"`` are assignments, found below).
    _Shape(
        "aws_secret",
        "_",
        r"(?<=[sS][eE][cC][rR][eE][tT]_)(?P<keep>[aA][cC][cC][eE][sS][sS]_[kK][eE][yY]"
        r"[\"']?[ \t,:=]{1,4}[\"']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        "aws",
        guard=_UNDERSCORE_GUARD,
    ),
    # AWS access key ids (AKIA long-term, ASIA temporary, ABIA, ACCA, A3T*) and Google API
    # keys (AIza and 35 characters).
    _Shape(
        "aws",
        "A",
        r"(?<![A-Za-z0-9]A)(?:[KSB]IA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])",
        "aws",
    ),
    _Shape("google", "A", r"(?<![A-Za-z0-9_-]A)Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])", "google"),
    # A JSON Web Token: header.payload.signature, each base64url, the payload a JSON object
    # (so it starts eyJ). Found at the J of the payload's eyJ, an uppercase J after ".ey";
    # the header (algorithm and type) stays.
    _Shape(
        "jwt",
        "J",
        r"(?<=[A-Za-z0-9_-]{16}\.eyJ)[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]*",
        "jwt",
        back=2,
    ),
    # SendGrid API keys: SG.<22>.<43>.
    _Shape(
        "sendgrid",
        "G",
        r"(?=\.)(?<=SG)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        "sendgrid",
        back=1,
    ),
    # sk-ant-... before sk-...: the first alternative that matches names the secret.
    _Shape(
        "anthropic",
        "-",
        r"(?<=sk-)(?<![A-Za-z0-9_-]sk-)ant-[A-Za-z0-9_-]{20,}",
        "anthropic",
        back=2,
        guard=_DASH_GUARD,
    ),
    _Shape(
        "openai",
        "-",
        r"(?<=sk-)(?<![A-Za-z0-9_-]sk-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        "openai",
        back=2,
        guard=_DASH_GUARD,
    ),
    _Shape(
        "slack",
        "-",
        r"(?<=xox[abposre]-)[A-Za-z0-9-]{10,}",
        "slack",
        back=4,
        guard=_DASH_GUARD,
    ),
    _Shape(
        "slack_app",
        "-",
        r"(?<=xapp-)[0-9]-[A-Za-z0-9-]{10,}",
        "slack",
        back=4,
        guard=_DASH_GUARD,
    ),
    # PyPI upload tokens (pypi.org and test.pypi.org macaroons start AgE).
    _Shape("pypi", "-", r"(?<=pypi-)AgE[A-Za-z0-9_-]{50,}", "pypi", back=4, guard=_DASH_GUARD),
    # GitLab personal access tokens.
    _Shape("gitlab", "-", r"(?<=glpat-)[A-Za-z0-9_-]{20,}", "gitlab", back=5, guard=_DASH_GUARD),
    # A PEM private key: the BEGIN line stays, the body up to the END line (or the end of a
    # truncated text) goes. The \\n spellings cover a key inside a JSON string.
    _Shape(
        "private_key",
        "-",
        r"(?P<keep>----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----(?:\r?\n|(?:\\r)?\\n)?)"
        r"[\s\S]*?(?=(?:\r?\n|(?:\\r)?\\n)?-----END[A-Z0-9 ]* PRIVATE KEY|\Z)",
        "private-key",
    ),
    # Slack incoming webhooks: the path after /services/ is the secret.
    _Shape(
        "slack_webhook",
        ":",
        r"(?<=[sp]:)(?P<keep>//hooks\.slack\.com/(?:services|workflows|triggers)/)"
        r"[A-Za-z0-9+/_-]{20,}",
        "slack-webhook",
        guard=_URL_GUARD,
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
    # A short option taking a password, glued or not: mysql -pSECRET, redis-cli -a SECRET.
    # Ambiguous (-p is also a port, a parent, a path), so the value must read as random.
    _Shape(
        "short_option",
        "-",
        r"(?<![^\s\"'=]-)[pa](?P<keep>[ \t]*)(?P<short_option_value>" + RANDOM_VALUE + ")",
        None,
        judge=_judge_random("short_option_value"),
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
        r"(?P<keep>//[^/\s:@\"'\[]*:)(?!\[REDACTED)[^/\s@\"']+(?=@)",
        "url-password",
        guard=_URL_GUARD,
    ),
    # A token as the user of a URL (https://TOKEN@host), when it reads as random.
    _Shape(
        "url_user",
        ":",
        r"(?P<keep>//)(?P<url_user_value>[^/\s:@\"'\[]{10,512})(?=@)",
        None,
        judge=_judge_random("url_user_value"),
        guard=_URL_GUARD,
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


def _judge_context(words: Sequence[ContextWord], name: str) -> _Judge:
    """A judge for the credential words found at one anchor: the word that matched (told
    by its empty group) starts a word, its value reads as random, and no shape that names
    its secret starts inside."""

    def judge(match: re.Match[str]) -> str | None:
        if not looks_random(match.group(f"{name}_value")):
            return None
        word = next(w for i, w in enumerate(words) if match.group(f"{name}_w{i}") is not None)
        if not starts_a_word(match.string, match.start() - word.before, word.word):
            return None
        return None if _shape_inside(match) else CONTEXT_MARK

    return judge


def _context_shapes() -> tuple[_Shape, ...]:
    """The second line of defence (``_context``): a random value after a credential word.

    One alternative per anchor letter, its words told apart by an empty group each, so
    that the rest of the name, the separator and the value are written once per letter.
    """
    by_anchor: dict[str, list[ContextWord]] = {}
    for word in context_words():
        by_anchor.setdefault(word.anchor, []).append(word)
    shapes = []
    for n, (anchor, words) in enumerate(by_anchor.items()):
        name = f"context_{n}"
        alternatives = "|".join(f"{w.pattern}(?P<{name}_w{i}>)" for i, w in enumerate(words))
        shapes.append(
            _Shape(
                name,
                anchor,
                f"(?:{alternatives})" + context_tail(f"{name}_value"),
                None,
                judge=_judge_context(words, name),
                resume_after_keep=False,
            )
        )
    return tuple(shapes)


_CONTEXT_SHAPES: Final = _context_shapes()

# The vendor formats kept as data (``_ruleset``), after the shapes above: at one position
# the first alternative that matches names the secret.
_SHAPES_ALL: Final = (
    *_SHAPES,
    *_CONTEXT_SHAPES,
    *(
        _Shape(v.name, v.anchor, v.pattern, v.kind, back=v.back, guard=v.guard)
        for v in vendor_shapes()
    ),
)
_SECRETS: Final = _combine(_SHAPES_ALL)
# Per group name: characters before the anchor that go too, the group kept before the
# mark, and the mark itself or the judge that decides it per match.
_BY_NAME: Final[dict[str, tuple[int, str | None, str | _Judge, bool]]] = {
    s.name: (s.back, s.keep, s.judge or redaction_mark(s.kind), s.resume_after_keep)
    for s in _SHAPES_ALL
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
        back, keep, mark, after_keep = _BY_NAME[cast(str, found.lastgroup)]
        if not isinstance(mark, str):
            judged = mark(found)
            if judged is None:
                # Not a secret name after all; its value may still hold a token shape.
                resume = found.end(keep) if keep is not None and after_keep else found.start() + 1
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


def contains_secret(s: str) -> bool:
    """Whether ``s`` still holds something :func:`redact` would replace."""
    return redact(s) != s
