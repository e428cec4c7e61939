"""Regenerate sessiontape's list of vendor token prefixes from gitleaks' rules.

sessiontape redacts a token by its shape wherever it appears. Most vendors publish their
token formats as a fixed prefix and a body (``shpat_`` and 32 hex digits, ``dckr_pat_``
and 27 characters); gitleaks keeps them as rules in ``config/gitleaks.toml``. This script
reads that file (a local copy or a URL), keeps every rule whose regex starts with a
literal prefix followed by a body of known characters, and writes them, with the formats
listed in :data:`PUBLISHED` below (platforms' own documentation, or newer than the copy
read), to ``src/sessiontape/scrub/_ruleset.py`` as data. It prints what it skipped and why.

Usage::

    python scripts/refresh_secret_shapes.py PATH-OR-URL-OF-gitleaks.toml [--commit SHA]
        [--out src/sessiontape/scrub/_ruleset.py] [--check]

``--check`` writes nothing and exits 1 when the file on disk differs from what would be
written. Rules that gitleaks finds by a keyword (``datadog ... = <40 hex>``) have no
prefix and are left to sessiontape's second line of defence, the detector of
high-entropy values in a credential context (RELIABILITY.md, section 5).

The regexes are parsed with the standard library's own regex parser (``re._parser``):
this is a maintenance tool run by hand, not part of the package.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

if sys.version_info >= (3, 11):
    from re import _constants as C
    from re import _parser as P
else:  # Python 3.10 names them sre_constants and sre_parse
    import sre_constants as C
    import sre_parse as P

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "sessiontape" / "scrub" / "_ruleset.py"
RULES_OUT = OUT.parent / "_gitleaks.py"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import secret_rules  # noqa: E402  (beside this script)

#: Rule ids sessiontape's hand-written shapes (``scrub/_shapes.py``) already cover, and
#: the kind of the shape that covers each (its entropy threshold and allowlists apply).
HAND_SHAPED: dict[str, str] = {
    "anthropic-admin-api-key": "anthropic",
    "anthropic-api-key": "anthropic",
    "aws-access-token": "aws",
    "gcp-api-key": "google",
    "github-app-token": "github",
    "github-fine-grained-pat": "github",
    "github-oauth": "github",
    "github-pat": "github",
    "github-refresh-token": "github",
    "gitlab-pat": "gitlab",
    "huggingface-access-token": "huggingface",
    "huggingface-organization-api-token": "huggingface",
    "npm-access-token": "npm",
    "openai-api-key": "openai",
    "private-key": "private-key",
    "pypi-upload-token": "pypi",
    "sendgrid-api-token": "sendgrid",
    "slack-app-token": "slack",
    "slack-bot-token": "slack",
    "slack-config-refresh-token": "slack",
    "slack-legacy-bot-token": "slack",
    "slack-legacy-token": "slack",
    "slack-legacy-workspace-token": "slack",
    "slack-user-token": "slack",
    "stripe-access-token": "stripe",
}

#: Rules the scrubber's hand-written shapes cover whole (``_shapes.py``), beside those whose
#: prefixes they cover: not carried as rules of their own either.
CARRIED_BY_HAND = frozenset(HAND_SHAPED)

#: Vendor names of more than one word in rule ids (the kind a redaction is labelled with).
_VENDORS = ("new-relic", "cisco-meraki", "hashicorp-tf", "intra42", "1password")


class Token(NamedTuple):
    """One vendor token format: ``prefix`` then at least ``min_len`` of ``body``."""

    source: str  # where the format comes from (a gitleaks rule id, or a platform's docs)
    kind: str  # the label of the redaction: [REDACTED:<kind>]
    prefix: str  # the literal the token starts with
    body: str  # the characters of its body, as the inside of a regex class
    min_len: int  # the fewest body characters a token has
    entropy: float = 0.0  # gitleaks': a token carrying no more bits a character is kept
    allow: tuple[int, ...] = ()  # its rule's allowlists (indices into ``_gitleaks``)


#: Formats the platforms publish for secret scanning that the gitleaks copy read may lack
#: (or finds only near a keyword). Kept here, by hand, and written out with the rest.
PUBLISHED: tuple[Token, ...] = (
    Token("docs.docker.com (personal access token)", "dockerhub", "dckr_pat_", "A-Za-z0-9_-", 20),
    Token(
        "docs.docker.com (organization access token)", "dockerhub", "dckr_oat_", "A-Za-z0-9_-", 20
    ),
    Token(
        "developers.google.com (OAuth 2.0 access token)",
        "google-oauth",
        "ya29.",
        "A-Za-z0-9_.-",
        20,
    ),
    Token(
        "AWS STS session token (IQoJb3JpZ2luX2Vj...)",
        "aws-session",
        "IQoJb3JpZ2luX2Vj",
        "A-Za-z0-9+/=",
        40,
    ),
    Token(
        "AWS STS session token (FwoGZXIvYXdz...)", "aws-session", "FwoGZXIvYXdz", "A-Za-z0-9+/=", 40
    ),
    Token("docs.doppler.com (service token)", "doppler", "dp.st.", "A-Za-z0-9_.-", 40),
    Token("docs.doppler.com (service account token)", "doppler", "dp.sa.", "A-Za-z0-9", 40),
    Token("docs.doppler.com (CLI token)", "doppler", "dp.ct.", "A-Za-z0-9", 40),
    Token("docs.newrelic.com (user key)", "new-relic", "NRAK-", "A-Z0-9", 27),
    Token("docs.newrelic.com (insert key)", "new-relic", "NRII-", "A-Za-z0-9_-", 32),
    Token("docs.newrelic.com (browser key)", "new-relic", "NRJS-", "a-f0-9", 19),
    Token("vercel.com (access tokens)", "vercel", "vcp_", "A-Za-z0-9", 24),
    Token("vercel.com (integration tokens)", "vercel", "vci_", "A-Za-z0-9", 24),
    Token("vercel.com (app access tokens)", "vercel", "vca_", "A-Za-z0-9", 24),
    Token("vercel.com (app refresh tokens)", "vercel", "vcr_", "A-Za-z0-9", 24),
    Token("vercel.com (API keys)", "vercel", "vck_", "A-Za-z0-9", 24),
    Token("docs.datadoghq.com (personal access token)", "datadog", "ddpat_", "A-Za-z0-9", 32),
    Token("docs.datadoghq.com (application key)", "datadog", "ddapp_", "A-Za-z0-9", 32),
    Token("atlassian.com (API token)", "atlassian", "ATATT3", "A-Za-z0-9_=-", 40),
    Token("atlassian.com (Connect app token)", "atlassian", "ATCTT3", "A-Za-z0-9_=-", 40),
    Token("shopify.dev (storefront token)", "shopify", "shpua_", "a-fA-F0-9", 32),
)

_WORD = {*range(ord("a"), ord("z") + 1), *range(ord("A"), ord("Z") + 1), *range(48, 58), 95}
_DIGIT = set(range(48, 58))


def _class_chars(items: Sequence[tuple[Any, Any]], nocase: bool) -> set[int] | None:
    """The characters of a parsed character class, or None for what a set cannot hold."""
    chars: set[int] = set()
    for op, av in items:
        if op is C.LITERAL:
            chars.add(av)
        elif op is C.RANGE:
            chars.update(range(av[0], av[1] + 1))
        elif op is C.CATEGORY and av is C.CATEGORY_WORD:
            chars.update(_WORD)
        elif op is C.CATEGORY and av is C.CATEGORY_DIGIT:
            chars.update(_DIGIT)
        else:
            return None
    if nocase:
        chars |= {ord(chr(c).swapcase()) for c in chars if chr(c).isalpha()}
    return {c for c in chars if c < 128}


def _item_chars(op: Any, av: Any, nocase: bool) -> set[int] | None:
    if op is C.LITERAL:
        return _class_chars([(op, av)], nocase)
    if op is C.IN:
        return _class_chars(av, nocase)
    return None


def _body(items: Sequence[tuple[Any, Any]], nocase: bool) -> tuple[set[int], int]:
    """What the items after the prefix are made of: their characters and fewest length.

    Reads items while they are characters, classes or repeats of them (or groups and
    alternations of those), and stops at anything else (a boundary, a lookaround).
    """
    chars: set[int] = set()
    least = 0
    for op, av in items:
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            low, _high, sub = av
            inner, inner_least = _body(list(sub), nocase)
            if not inner:
                break
            chars |= inner
            least += low * inner_least
            continue
        if op is C.SUBPATTERN:
            inner, inner_least = _body(list(av[3]), nocase)
            if not inner:
                break
            chars |= inner
            least += inner_least
            continue
        if op is C.BRANCH:
            parts = [_body(list(alt), nocase) for alt in av[1]]
            if not all(p[0] for p in parts):
                break
            for part_chars, _ in parts:
                chars |= part_chars
            least += min(p[1] for p in parts)
            continue
        found = _item_chars(op, av, nocase)
        if found is None:
            break
        chars |= found
        least += 1
    return chars, least


def _prefixes(
    items: list[tuple[Any, Any]], prefix: str = "", limit: int = 16
) -> list[tuple[str, list[tuple[Any, Any]]]]:
    """Each literal prefix the items can start with, and the items that follow it."""
    for i, (op, av) in enumerate(items):
        if op is C.AT and not prefix:
            continue  # \b, ^
        if op is C.LITERAL:
            prefix += chr(av)
            continue
        if op is C.IN and all(o is C.LITERAL for o, _ in av) and len(av) <= 4:
            out: list[tuple[str, list[tuple[Any, Any]]]] = []
            for _, c in av:
                out += _prefixes(items[i + 1 :], prefix + chr(c), limit)
            return out[:limit]
        if op is C.SUBPATTERN:
            return _prefixes([*av[3], *items[i + 1 :]], prefix, limit)
        if op is C.BRANCH:
            out = []
            for alt in av[1]:
                out += _prefixes([*alt, *items[i + 1 :]], prefix, limit)
            return out[:limit]
        return [(prefix, items[i:])]
    return [(prefix, [])]


def _go_to_python(regex: str) -> tuple[str, bool]:
    """gitleaks' Go regex in Python's syntax, and whether a ``(?i)`` applies to the body."""
    nocase = False
    if "(?i)" in regex[4:]:
        nocase = True
        regex = regex[:4] + regex[4:].replace("(?i)", "")
    if regex.startswith("(?i)"):
        nocase = True
        regex = regex[4:]
    return regex.replace(r"\z", r"\Z"), nocase


def _render(chars: set[int]) -> str:
    """A character set as the inside of a regex class: ranges, then other characters."""
    out: list[str] = []
    ordered = sorted(chars)
    i = 0
    while i < len(ordered):
        j = i
        # A range runs over letters or digits only: ``/0-9`` stays ``/`` and ``0-9``.
        while (
            j + 1 < len(ordered)
            and ordered[j + 1] == ordered[j] + 1
            and chr(ordered[j]).isalnum() == chr(ordered[j + 1]).isalnum()
            and chr(ordered[j]).isdigit() == chr(ordered[j + 1]).isdigit()
        ):
            j += 1
        lo, hi = chr(ordered[i]), chr(ordered[j])
        if j - i >= 2 and lo.isalnum() and hi.isalnum():
            out.append(f"{lo}-{hi}")
        else:
            out.extend(chr(c) for c in range(ordered[i], ordered[j] + 1))
        i = j + 1
    ranges = [p for p in out if len(p) == 3]
    singles = "".join(p for p in out if len(p) == 1)
    # Letters first (A-Z, a-z), digits, then punctuation; a dash goes last.
    ranges.sort(key=lambda r: (not r[0].isupper(), not r[0].islower(), r))
    punct = "".join(sorted(singles.replace("-", ""), key=lambda c: (not c.isalnum(), c)))
    punct = punct.replace("\\", "\\\\").replace("]", "\\]").replace("^", "\\^")
    return "".join(ranges) + punct + ("-" if "-" in singles else "")


def _kind(rule_id: str) -> str:
    for vendor in _VENDORS:
        if rule_id.startswith(vendor + "-"):
            return vendor
    return rule_id.split("-")[0]


def _anchorable(prefix: str) -> bool:
    """Whether the prefix has a character the scrubber can find it by: a separator
    (``_ - . ~``) or an uppercase letter. A prefix of lowercase letters and digits only
    (``dapi``) would make the scrubber stop at every such letter of every text."""
    return any(c in "_-.~" or c.isupper() for c in prefix)


def tokens_of(
    rules: Iterable[dict[str, Any]], allow_of: dict[str, tuple[int, ...]] | None = None
) -> tuple[list[Token], list[str]]:
    """The prefix formats among gitleaks ``rules``, and why each other rule was skipped;
    ``allow_of`` gives each rule's allowlists (see ``secret_rules.allowlists_of``)."""
    found: list[Token] = []
    skipped: list[str] = []
    for rule in rules:
        rule_id = str(rule.get("id", "?"))
        regex = rule.get("regex")
        if rule_id in HAND_SHAPED:
            skipped.append(f"{rule_id}: a hand-written shape covers it")
            continue
        if not isinstance(regex, str):
            skipped.append(f"{rule_id}: no regex (a path rule)")
            continue
        pattern, nocase = _go_to_python(regex)
        try:
            parsed = P.parse(pattern)
        except (re.error, OverflowError) as exc:
            skipped.append(f"{rule_id}: regex not readable here ({exc})")
            continue
        kept = 0
        for prefix, rest in _prefixes(list(parsed)):
            chars, least = _body(rest, nocase)
            # Two letters are enough only for a long body of few characters (``SK`` and
            # 32 hex digits); otherwise a prefix has three characters or more.
            short = len(prefix) == 2 and prefix.isupper() and least >= 32
            if (len(prefix) < 3 and not short) or not _anchorable(prefix):
                continue
            if least < 8 or not chars:
                continue
            token = Token(
                f"gitleaks {rule_id}",
                _kind(rule_id),
                prefix,
                _render(chars),
                least,
                float(rule.get("entropy", 0.0)),
                (allow_of or {}).get(rule_id, ()),
            )
            found.append(token)
            kept += 1
        if not kept:
            skipped.append(f"{rule_id}: no literal prefix of 3 or more with a findable character")
    return found, skipped


def _prefixed_by(tokens: Sequence[Token]) -> Callable[[str], bool]:
    """Whether every match of a gitleaks regex starts with one of ``tokens``' prefixes."""
    prefixes = tuple(t.prefix for t in tokens)

    def prefixed(regex: str) -> bool:
        pattern, _nocase = _go_to_python(regex)
        try:
            found = _prefixes(list(P.parse(pattern)), limit=1 << 16)
        except (re.error, OverflowError):
            return False
        return bool(found) and all(p.startswith(prefixes) for p, _rest in found)

    return prefixed


def merge(tokens: Iterable[Token]) -> list[Token]:
    """One entry per prefix, sorted by prefix: the first source names it, and its body
    admits every body and length the prefix's formats have (``sgp_`` and 40 hex digits
    as well as ``sgp_`` and 57)."""
    by_prefix: dict[str, Token] = {}
    for token in tokens:
        seen = by_prefix.get(token.prefix)
        if seen is None:
            by_prefix[token.prefix] = token
            continue
        chars = {ord(c) for c in _expand_class(seen.body) + _expand_class(token.body)}
        by_prefix[token.prefix] = seen._replace(
            body=_render(chars),
            min_len=min(seen.min_len, token.min_len),
            entropy=min(seen.entropy, token.entropy),
            allow=tuple(sorted({*seen.allow, *token.allow})),
        )
    return sorted(by_prefix.values(), key=lambda t: t.prefix)


def _expand_class(body: str) -> str:
    """The characters of a class's inside as :func:`_render` writes it (``A-Fa-f0-9_``)."""
    out: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append(body[i + 1])
            i += 2
        elif i + 2 < len(body) and body[i + 1] == "-":
            out.extend(chr(c) for c in range(ord(body[i]), ord(body[i + 2]) + 1))
            i += 3
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def render_module(tokens: Sequence[Token], origin: str) -> str:
    """The ``_ruleset.py`` module holding ``tokens``."""
    lines = [
        '"""Vendor token formats: a prefix, then a body of known characters (data only).',
        "",
        "Generated by ``scripts/refresh_secret_shapes.py`` from gitleaks' rules and the",
        "formats platforms publish for secret scanning; edit the script's ``PUBLISHED`` list",
        "and run it again rather than this file. ``scrub/_vendor.py`` turns each entry into a",
        "shape of the scrubber's one regex.",
        "",
        f"Read: {origin}.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        '__all__ = ["VENDOR_TOKENS"]',
        "",
        "#: (source, kind, prefix, body characters as a regex class's inside, fewest body chars,",
        "#: entropy at or below which a token is a placeholder and kept: gitleaks' threshold,",
        "#: its rule's allowlists: indices into ``_gitleaks.ALLOWLISTS``)",
        "VENDOR_TOKENS: Final[tuple[tuple[str, str, str, str, int, float, tuple[int, ...]], "
        "...]] = (",
    ]
    for t in tokens:
        # As ``ruff format`` writes it: on one line if it fits, else one field a line.
        fields = [
            *(json.dumps(f) for f in (t.source, t.kind, t.prefix, t.body)),
            str(t.min_len),
            repr(t.entropy),
            secret_rules.literal(t.allow),
        ]
        line = f"    ({', '.join(fields)}),"
        if len(line) <= 100:
            lines.append(line)
        else:
            lines += ["    (", *(f"        {f}," for f in fields), "    ),"]
    lines.append(")")
    return "\n".join(lines) + "\n"


def read_config(where: str) -> dict[str, Any]:
    """gitleaks' TOML config from a path or an http(s) URL."""
    if re.match(r"https?://", where):
        with urllib.request.urlopen(where, timeout=30) as response:
            data: bytes = response.read()
        return tomllib.loads(data.decode("utf-8"))
    return tomllib.loads(Path(where).read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("config", help="gitleaks.toml: a local path or an http(s) URL")
    parser.add_argument("--commit", help="the gitleaks commit the config was taken at")
    parser.add_argument("--out", type=Path, default=OUT, help="the module to write")
    parser.add_argument(
        "--rules-out", type=Path, default=None, help="the rules module to write (beside --out)"
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    config = read_config(args.config)
    rules = config.get("rules")
    if not isinstance(rules, list):
        print(f"{args.config}: no [[rules]] tables: is this gitleaks' config?", file=sys.stderr)
        return 2
    allowlists, allow_of = secret_rules.allowlists_of(rules)
    found, skipped = tokens_of(rules, allow_of)
    tokens = merge([*PUBLISHED, *found])
    origin = "gitleaks config/gitleaks.toml" + (f" at commit {args.commit}" if args.commit else "")
    text = render_module(tokens, origin)
    carried = secret_rules.carry(
        rules, set(CARRIED_BY_HAND), _kind, _prefixed_by(tokens), allowlists, allow_of
    )
    hand = [
        (rule_id, HAND_SHAPED[rule_id], float(rule.get("entropy", 0.0)), allow_of.get(rule_id, ()))
        for rule in rules
        if (rule_id := str(rule.get("id"))) in HAND_SHAPED
    ]
    global_allow = secret_rules._allowlist(config.get("allowlist", {}))
    rules_text = secret_rules.render(carried, hand, global_allow, origin)
    for reason in skipped:
        print(f"no prefix format: {reason}", file=sys.stderr)
    for reason in carried.skipped:
        print(f"not carried {reason}", file=sys.stderr)
    print(
        f"{len(found)} prefix formats from {len(rules)} gitleaks rules, {len(PUBLISHED)} "
        f"published, {len(tokens)} prefixes in all; {len(carried.keyword_rules)} keyword "
        f"rules and {len(carried.body_rules)} body rules carried",
        file=sys.stderr,
    )
    rules_out = args.rules_out or args.out.parent / RULES_OUT.name
    outputs = ((args.out, text), (rules_out, rules_text))
    if args.check:
        stale = [p for p, t in outputs if not p.exists() or p.read_text(encoding="utf-8") != t]
        for path in stale:
            print(f"{path} is out of date: run without --check", file=sys.stderr)
        return 1 if stale else 0
    for path, content in outputs:
        path.write_text(content, encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
