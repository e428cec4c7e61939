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
from collections.abc import Sequence
from typing import Final, cast

from ._assign import VALUE, assignment_shapes, key_before, key_ends_secret, key_guard
from ._context import (
    CONTEXT_MARK,
    RANDOM_VALUE,
    ContextWord,
    context_tail,
    context_words,
    looks_random,
    starts_a_word,
)
from ._names import REDACTED_MARK, is_known_not_secret, is_secret_option, redaction_mark
from ._rules import HAND_RULES_BY_KIND, redact_rules, token_judge
from ._shape import Judge, Shape, combine
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


def _judge_option(match: re.Match[str]) -> str | None:
    return REDACTED_MARK if is_secret_option(match.group("option_name")) else None


def _judge_random(group: str) -> Judge:
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
    Shape(
        "github",
        "_",
        r"(?<=gh[pousr]_)[A-Za-z0-9]{20,}",
        "github",
        back=3,
        guard=_UNDERSCORE_GUARD,
        token=True,
    ),
    Shape(
        "github_pat",
        "_",
        r"(?<=github_)pat_[A-Za-z0-9_]{20,}",
        "github",
        back=6,
        guard=_UNDERSCORE_GUARD,
        token=True,
    ),
    # Stripe secret and restricted keys: sk_live_, rk_live_, sk_test_, ..._prod_.
    Shape(
        "stripe",
        "_",
        r"(?<=[sr]k_)(?<![A-Za-z0-9][sr]k_)(?:live|test|prod)_[A-Za-z0-9]{10,}",
        "stripe",
        back=2,
        guard=_UNDERSCORE_GUARD,
        token=True,
    ),
    # Hugging Face user (hf_) and organisation (api_org_) tokens: 34 letters.
    Shape(
        "huggingface",
        "_",
        r"(?<=hf_)(?<![A-Za-z0-9]hf_)[A-Za-z]{34}(?![A-Za-z0-9])",
        "huggingface",
        back=2,
        guard=_UNDERSCORE_GUARD,
        token=True,
    ),
    Shape(
        "huggingface_org",
        "_",
        r"(?<=api_org_)[A-Za-z]{34}(?![A-Za-z0-9])",
        "huggingface",
        back=7,
        guard=_UNDERSCORE_GUARD,
        token=True,
    ),
    # npm access tokens: npm_ and 36 letters or digits.
    Shape(
        "npm",
        "_",
        r"(?<=npm_)(?<![A-Za-z0-9]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])",
        "npm",
        back=3,
        guard=_UNDERSCORE_GUARD,
        token=True,
    ),
    # The 40-character AWS secret access key right after its name, as in
    # ``aws configure set aws_secret_access_key KEY`` or ``("aws_secret_access_key", "KEY")``
    # (``name = KEY`` and ``"SecretAccessKey": "KEY"`` are assignments, found below).
    Shape(
        "aws_secret",
        "_",
        r"(?<=[sS][eE][cC][rR][eE][tT]_)(?P<keep>[aA][cC][cC][eE][sS][sS]_[kK][eE][yY]"
        r"[\"']?[ \t,:=]{1,4}[\"']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        "aws",
        guard=_UNDERSCORE_GUARD,
    ),
    # AWS access key ids (AKIA long-term, ASIA temporary, ABIA, ACCA, A3T*) and Google API
    # keys (AIza and 35 characters).
    Shape(
        "aws",
        "A",
        r"(?<![A-Za-z0-9]A)(?:[KSB]IA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])",
        "aws",
        token=True,
    ),
    Shape(
        "google",
        "A",
        r"(?<![A-Za-z0-9_-]A)Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
        "google",
        token=True,
    ),
    # A JSON Web Token: header.payload.signature, each base64url, the payload a JSON object
    # (so it starts eyJ). Found at the J of the payload's eyJ, an uppercase J after ".ey";
    # the header (algorithm and type) stays.
    Shape(
        "jwt",
        "J",
        r"(?<=[A-Za-z0-9_-]{16}\.eyJ)[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]*",
        "jwt",
        back=2,
    ),
    # SendGrid API keys: SG.<22>.<43>.
    Shape(
        "sendgrid",
        "G",
        r"(?=\.)(?<=SG)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        "sendgrid",
        back=1,
        token=True,
    ),
    # sk-ant-... before sk-...: the first alternative that matches names the secret.
    Shape(
        "anthropic",
        "-",
        r"(?<=sk-)(?<![A-Za-z0-9_-]sk-)ant-[A-Za-z0-9_-]{20,}",
        "anthropic",
        back=2,
        guard=_DASH_GUARD,
        token=True,
    ),
    Shape(
        "openai",
        "-",
        r"(?<=sk-)(?<![A-Za-z0-9_-]sk-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        "openai",
        back=2,
        guard=_DASH_GUARD,
        token=True,
    ),
    Shape(
        "slack",
        "-",
        r"(?<=xox[abposre]-)[A-Za-z0-9-]{10,}",
        "slack",
        back=4,
        guard=_DASH_GUARD,
        token=True,
    ),
    Shape(
        "slack_app",
        "-",
        r"(?<=xapp-)[0-9]-[A-Za-z0-9-]{10,}",
        "slack",
        back=4,
        guard=_DASH_GUARD,
        token=True,
    ),
    # PyPI upload tokens (pypi.org and test.pypi.org macaroons start AgE).
    Shape(
        "pypi",
        "-",
        r"(?<=pypi-)AgE[A-Za-z0-9_-]{50,}",
        "pypi",
        back=4,
        guard=_DASH_GUARD,
        token=True,
    ),
    # GitLab personal access tokens.
    Shape(
        "gitlab",
        "-",
        r"(?<=glpat-)[A-Za-z0-9_-]{20,}",
        "gitlab",
        back=5,
        guard=_DASH_GUARD,
        token=True,
    ),
    # A PEM private key: the BEGIN line stays, the body up to the END line (or the end of a
    # truncated text) goes. The \\n spellings cover a key inside a JSON string.
    Shape(
        "private_key",
        "-",
        r"(?P<keep>----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----(?:\r?\n|(?:\\r)?\\n)?)"
        r"[\s\S]*?(?=(?:\r?\n|(?:\\r)?\\n)?-----END[A-Z0-9 ]* PRIVATE KEY|\Z)",
        "private-key",
    ),
    # Slack incoming webhooks: the path after /services/ is the secret.
    Shape(
        "slack_webhook",
        ":",
        r"(?<=[sp]:)(?P<keep>//hooks\.slack\.com/(?:services|workflows|triggers)/)"
        r"[A-Za-z0-9+/_-]{20,}",
        "slack-webhook",
        guard=_URL_GUARD,
    ),
    # --token abc / --api-key=abc inside a command line held in one string (sh -c "...").
    # Only names ending like a secret get as far as a Python call.
    Shape(
        "option",
        "-",
        r"-(?<![^\s\"']--)(?P<keep>(?P<option_name>[A-Za-z][\w.-]*)(?![\w.-])"
        + key_guard("", "")
        + key_ends_secret("", "")
        + r"(?:=|[ \t]+(?!-))[\"']?)"
        + VALUE,
        None,
        judge=_judge_option,
    ),
    # A short option taking a password, glued or not: mysql -pSECRET, redis-cli -a SECRET.
    # Ambiguous (-p is also a port, a parent, a path), so the value must read as random.
    Shape(
        "short_option",
        "-",
        r"(?<![^\s\"'=]-)[pa](?P<keep>[ \t]*)(?P<short_option_value>" + RANDOM_VALUE + ")",
        None,
        judge=_judge_random("short_option_value"),
    ),
    Shape(
        "bearer",
        "B",
        r"(?P<keep>earer[ \t]+)(?=[A-Za-z]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}",
        "bearer",
    ),
    # The password in scheme://user:password@host.
    Shape(
        "url_password",
        ":",
        r"(?P<keep>//[^/\s:@\"'\[]*:)(?!\[REDACTED)[^/\s@\"']+(?=@)",
        "url-password",
        guard=_URL_GUARD,
    ),
    # A token as the user of a URL (https://TOKEN@host), when it reads as random.
    Shape(
        "url_user",
        ":",
        r"(?P<keep>//)(?P<url_user_value>[^/\s:@\"'\[]{10,512})(?=@)",
        None,
        judge=_judge_random("url_user_value"),
        guard=_URL_GUARD,
    ),
    *assignment_shapes(),
)


def _judge_context(words: Sequence[ContextWord], name: str) -> Judge:
    """A judge for the credential words found at one anchor: the word that matched (told
    by its empty group) starts a word, its value reads as random, and no shape that names
    its secret starts inside."""

    def judge(match: re.Match[str]) -> str | None:
        if not looks_random(match.group(f"{name}_value")):
            return None
        word = next(w for i, w in enumerate(words) if match.group(f"{name}_w{i}") is not None)
        if not starts_a_word(match.string, match.start() - word.before, word.word):
            return None
        # ``primaryKey=...``, ``"credentialId": ...``: a name known not to hold a secret.
        if is_known_not_secret(key_before(match.string, match.start(f"{name}__keep"))):
            return None
        return None if _shape_inside(match) else CONTEXT_MARK

    return judge


def _context_shapes() -> tuple[Shape, ...]:
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
            Shape(
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
        Shape(
            v.name,
            v.anchor,
            v.pattern,
            v.kind,
            back=v.back,
            guard=v.guard,
            rule=(v.entropy, v.allow),
        )
        for v in vendor_shapes()
    ),
)
_SECRETS: Final = combine(_SHAPES_ALL)
# Per group name: characters before the anchor that go too, the group kept before the
# mark, and the mark itself or the judge that decides it per match.
_BY_NAME: Final[dict[str, tuple[int, str | None, str | Judge, bool]]] = {
    s.name: (
        s.back,
        s.keep,
        s.judge
        or (
            token_judge(
                str(s.kind), s.back, s.rule or HAND_RULES_BY_KIND.get(str(s.kind), (0.0, ()))
            )
            if s.token or s.rule
            else redaction_mark(s.kind)
        ),
        s.resume_after_keep,
    )
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
        return redact_rules(text)
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
    return redact_rules("".join(out))


def contains_secret(s: str) -> bool:
    """Whether ``s`` still holds something :func:`redact` would replace."""
    return redact(s) != s
