"""gitleaks' rules, every one, as data sessiontape's scrubber applies (``scrub/_gitleaks.py``).

``refresh_secret_shapes.py`` imports this module. The prefix rules it already turns into
vendor formats (``_ruleset.py``); here every other rule is carried, in one of two forms:

* **keyword rules**, gitleaks' ``GenerateSemiGenericRegex``: an identifier (``datadog``,
  ``telegr``), up to 20 word characters, an assignment operator, then the secret
  (``DATADOG_KEY = <40 alphanumerics>``). Kept as the identifiers' regex and the secret's,
  so that the scrubber can apply them wherever a name stands before a value: an
  environment variable, a JSON key, an argv word, or text around the value.
* **body rules**: a regex the secret alone matches (``\\b(A3-...)\\b``,
  ``<14>.atlasv1.<60>``), kept whole with the literal the scrubber finds it by. A keyword
  rule whose secret has a distinctive literal of its own (``<digits>:A<34>``,
  ``<32 hex>-us<digits>``) is carried in this form too, so that it is found without its
  keyword.

gitleaks' regexes are Go's (RE2); they are translated to Python's syntax here, once:
flags set in the middle of a pattern become scoped groups, ``\\z`` becomes ``\\Z``, POSIX
classes are spelled out. The scrubber compiles them with ``re.ASCII``, as Go's classes
are ASCII. A rule neither form fits is listed with the reason.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

if sys.version_info >= (3, 11):
    from re import _constants as C
    from re import _parser as P
else:  # Python 3.10 names them sre_constants and sre_parse
    import sre_constants as C
    import sre_parse as P

# -- Go (RE2) to Python -------------------------------------------------------------------

_POSIX = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9a-fA-F",
    "space": r"\t\n\v\f\r ",
    "word": r"\w",
    "punct": r"!-/:-@\[-`{-~",
}
_FLAGS = re.compile(r"\(\?([a-zA-Z-]+)\)")


def go_to_python(regex: str, *, embedded: bool = False) -> str:
    """A Go regex in Python's syntax (same meaning under ``re.ASCII``).

    Go applies ``(?i)`` from where it stands to the end of the group around it; Python
    allows global flags only at the very start, so a later one becomes a scoped group
    that closes where that group closes. ``embedded``: the result goes inside a larger
    pattern, so even a flag at its start is scoped.
    """
    out: list[str] = []
    # Per open group, the flags set inside it so far: each is a scoped group to close at
    # the group's end and at each ``|`` of it (and to open again after the ``|``).
    scoped: list[list[str]] = [[]]
    i, n = 0, len(regex)
    while i < n:
        c = regex[i]
        if c == "\\":
            out.append(regex[i : i + 2])
            i += 2
        elif c == "[":
            j = i + 1
            if j < n and regex[j] == "^":
                j += 1
            if j < n and regex[j] == "]":
                j += 1
            while regex[j] != "]":
                if regex[j] == "\\":
                    j += 2
                elif regex.startswith("[:", j):
                    j = regex.index(":]", j) + 2
                else:
                    j += 1
            body = regex[i + 1 : j]
            body = re.sub(r"\[:(\w+):\]", lambda m: _POSIX[m.group(1)], body)
            # Python warns about "[[" as a possible set operation; Go has none.
            body = body.replace("[", r"\[") if not body.startswith("^[") else body
            out.append("[" + body + "]")
            i = j + 1
        elif (m := _FLAGS.match(regex, i)) is not None:
            if not embedded and not "".join(out):
                out.append(m.group())
            else:
                out.append(f"(?{m.group(1)}:")
                scoped[-1].append(m.group(1))
            i = m.end()
        elif c == "(":
            out.append("(")
            scoped.append([])
            i += 1
        elif c == "|":
            flags = scoped[-1]
            out.append(")" * len(flags) + "|" + "".join(f"(?{f}:" for f in flags))
            i += 1
        elif c == ")":
            out.append(")" * len(scoped.pop()) + ")")
            i += 1
        else:
            out.append(c)
            i += 1
    out.append(")" * len(scoped.pop()))
    return "".join(out).replace(r"\z", r"\Z")


def split_top(regex: str) -> list[str]:
    """The top-level alternatives of ``regex`` (a ``|`` outside groups and classes); a
    regex that is one group of alternatives, ``(?i)(?:A|B)``, gives ``(?i)A`` and
    ``(?i)B``."""
    flags = _FLAGS.match(regex)
    lead = flags.group() if flags else ""
    body = regex[len(lead) :]
    if body.startswith("(?:") and _group_end(body, 0) == len(body) - 1:
        inner = split_top(body[3:-1])
        if len(inner) > 1:
            return [lead + part for part in inner]
    return _split(regex)


def _group_end(regex: str, start: int) -> int:
    """The index of the ``)`` closing the group opened at ``regex[start]``."""
    depth, i = 0, start
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i += 1
            if regex[i] == "^":
                i += 1
            if regex[i] == "]":
                i += 1
            while regex[i] != "]":
                i += 2 if regex[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def expand_branch(regex: str) -> list[str]:
    """``regex`` with its first group of alternatives replaced by each alternative in
    turn (``\\b((?:EAAA|sq0atp-)x)`` gives ``\\b((?:EAAA)x)`` and ``\\b((?:sq0atp-)x)``);
    ``[regex]`` when it has none."""
    i = 0
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(regex, i) + 1
            continue
        if c == "(":
            end = _group_end(regex, i)
            head = 3 if regex.startswith("(?:", i) else 1 if regex[i + 1] != "?" else 0
            if regex[i : end + 1] == _SECRET_TAIL[1:]:
                head = 0  # how a secret ends, not what it is
            if head:
                parts = _split(regex[i + head : end])
                if len(parts) > 1:
                    opener = regex[i : i + head]
                    return [regex[:i] + opener + part + regex[end:] for part in parts]
        i += 1
    return [regex]


def _class_end(regex: str, start: int) -> int:
    """The index of the ``]`` closing the class opened at ``regex[start]``."""
    i = start + 1
    if regex[i] == "^":
        i += 1
    if regex[i] == "]":
        i += 1
    while regex[i] != "]":
        i += 2 if regex[i] == "\\" else 1
    return i


def _split(regex: str) -> list[str]:
    parts: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i += 1
            if regex[i] == "^":
                i += 1
            if regex[i] == "]":
                i += 1
            while regex[i] != "]":
                i += 2 if regex[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(regex[start:i])
            start = i + 1
        i += 1
    parts.append(regex[start:])
    return parts


# -- gitleaks' rule shapes ----------------------------------------------------------------

# GenerateSemiGenericRegex (cmd/generate/config/utils/generate.go), both spellings.
_IDENT_TAIL = r""")(?:[ \t\w.-]{0,20})[\s'"]{0,3}"""
_OPERATOR = r"(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)"
_SECRET_HEAD = r"""[\x60'"\s=]{0,5}("""
_SECRET_TAIL = r""")(?:[\x60'"\s;]|\\[nr]|$)"""
_HEADS = (
    (r"(?i)[\w.-]{0,50}?(?:", _IDENT_TAIL + _OPERATOR + _SECRET_HEAD, True),
    (r"[\w.-]{0,50}?(?i:[\w.-]{0,50}?(?:", _IDENT_TAIL + ")" + _OPERATOR + _SECRET_HEAD, False),
)


class KeywordRule(NamedTuple):
    """A secret after an identifier and an operator (gitleaks' semi-generic rules)."""

    rule: str
    kind: str
    identifiers: str  # Python regex, case-insensitive
    secret: str  # Python regex
    nocase: bool  # whether the secret is matched case-insensitively
    entropy: float
    keywords: tuple[str, ...]
    allow: tuple[int, ...]  # indices into the allowlists


class BodyRule(NamedTuple):
    """A secret its own regex finds (the secret is its ``group``, 0 for the whole match)."""

    rule: str
    kind: str
    regex: str  # Python regex
    group: int
    at: str  # the character (a regex) the scrubber finds it by
    behind: str  # a fixed-width regex that must stand just before that character
    ahead: str  # a regex that must follow it
    before: int  # the most characters a match has before that character
    entropy: float
    random: bool  # the secret must also read as random (found without its keyword)
    allow: tuple[int, ...]


class Allowlist(NamedTuple):
    """What a rule does not report (gitleaks ``[[rules.allowlists]]``, without paths)."""

    target: str  # "secret", "match" or "line"
    every: bool  # true: every condition must hold (gitleaks' AND)
    regexes: tuple[str, ...]
    stopwords: tuple[str, ...]


def semi_generic(alternative: str) -> tuple[str, str, bool] | None:
    """(identifiers, secret, secret is case-insensitive) of a semi-generic alternative."""
    for head, middle, nocase in _HEADS:
        if alternative.startswith(head) and alternative.endswith(_SECRET_TAIL):
            cut = alternative.find(middle, len(head))
            if cut < 0:
                continue
            identifiers = alternative[len(head) : cut]
            secret = alternative[cut + len(middle) : -len(_SECRET_TAIL)]
            return (
                go_to_python(identifiers, embedded=True),
                go_to_python(secret, embedded=True),
                nocase,
            )
    return None


# How rare a character is in ordinary output, rarest first: the scrubber's second pass
# stops at every character a rule is found by, so each rule is found by its rarest one.
_RARITY = (
    "~|%@^$#!&*+;?`<>{}[]()=:,/._-QJZXKVBPGWYFMCULDHRSNIOATE0987654321qjzxkvbpgwyfmculdhrsnioate"
)


class Anchor(NamedTuple):
    """Where a body rule is found: a character (or class), what must stand before and
    after it (fixed-width regexes), and the most characters of a match before it."""

    at: str  # a regex for one character
    behind: str  # a fixed-width regex that must end just before it
    ahead: str  # a regex that must follow it
    before: int
    rank: int  # the anchor's rarity: lower is rarer


def _class_text(items: Sequence[tuple[Any, Any]]) -> str | None:
    """An ``IN`` item as the regex class it was written as (None: not renderable)."""
    out = []
    negate = False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            out.append(re.escape(chr(av)))
        elif op is C.RANGE:
            out.append(f"{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}")
        elif op is C.CATEGORY:
            out.append(
                {C.CATEGORY_DIGIT: r"\d", C.CATEGORY_WORD: r"\w", C.CATEGORY_SPACE: r"\s"}.get(
                    av, ""
                )
            )
            if not out[-1]:
                return None
        else:
            return None
    return "[" + ("^" if negate else "") + "".join(out) + "]"


def _one(op: Any, av: Any, nocase: bool) -> tuple[str, set[str]] | None:
    """A single-character item as regex text and the characters it stands for."""
    if op is C.LITERAL:
        c = chr(av)
        if nocase and c.isalpha():
            return f"[{c.lower()}{c.upper()}]", {c.lower(), c.upper()}
        return re.escape(c), {c}
    if op is C.IN:
        text = _class_text(av)
        if text is None:
            return None
        chars = {chr(v) for o, v in av if o is C.LITERAL}
        if all(o is C.LITERAL for o, _ in av) and len(chars) <= 3:
            if nocase:
                chars |= {c.swapcase() for c in chars}
                text = "[" + "".join(sorted(re.escape(c) for c in chars)) + "]"
            return text, chars
        # A class of many characters: never an anchor.
        return (f"(?i:{text})" if nocase else text), set()
    return None


def _flat(parsed: Any) -> list[tuple[Any, Any, bool]] | None:
    """The top-level items of a parsed regex, groups without alternatives opened, each
    with whether it matches in any case; None when a group cannot be opened."""
    out: list[tuple[Any, Any, bool]] = []

    def walk(items: Sequence[tuple[Any, Any]], nocase: bool) -> None:
        for op, av in items:
            if op is C.SUBPATTERN:
                add, remove = av[1], av[2]
                inner = (nocase or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE
                walk(list(av[3]), inner)
            else:
                out.append((op, av, nocase))

    walk(list(parsed), bool(parsed.state.flags & re.IGNORECASE))
    return out


def _width(items: Sequence[tuple[Any, Any, bool]], state: Any) -> tuple[int, int]:
    lo = hi = 0
    for op, av, _nocase in items:
        w = P.SubPattern(state, [(op, av)]).getwidth()
        lo += w[0]
        hi = min(hi + w[1], 1 << 20)
    return lo, hi


def _repeat_of_one(op: Any, av: Any, nocase: bool) -> tuple[str, int] | None:
    """A repeat of one character or class: its text and fewest count."""
    if op in (C.MAX_REPEAT, C.MIN_REPEAT) and len(av[2]) == 1:
        sub = av[2][0]
        one = _one(sub[0], sub[1], nocase)
        if one is not None:
            return one[0], av[0]
    return None


def find_anchor(regex: str) -> Anchor | None:
    """The rarest required character of ``regex`` with the items around it as guards."""
    try:
        parsed = P.parse(regex, re.ASCII)
    except (re.error, OverflowError):
        return None
    items = _flat(parsed)
    if not items:
        return None
    best: Anchor | None = None
    for i, (op, av, nocase) in enumerate(items):
        one = _one(op, av, nocase)
        if one is None or not one[1]:
            continue
        rank = min((_RARITY.find(c) if c in _RARITY else len(_RARITY)) for c in one[1])
        # After it: up to 12 characters of what follows (literals, classes, repeats).
        ahead, budget = "", 12
        for op2, av2, nc2 in items[i + 1 :]:
            if budget <= 0:
                break
            single = _one(op2, av2, nc2)
            if single is not None:
                ahead += single[0]
                budget -= 1
                continue
            rep = _repeat_of_one(op2, av2, nc2)
            if rep is None or rep[1] == 0:
                break
            count = min(rep[1], budget)
            ahead += f"{rep[0]}{{{count}}}"
            budget -= count
            if count < rep[1] or av2[1] != av2[0]:
                break  # the repeat goes on (or varies): what follows is not fixed
        # Before it: up to 8 characters of fixed width right before.
        behind, budget = "", 8
        for op2, av2, nc2 in reversed(items[:i]):
            if budget <= 0 or op2 is C.AT:
                break
            single = _one(op2, av2, nc2)
            if single is not None:
                behind = single[0] + behind
                budget -= 1
                continue
            rep = _repeat_of_one(op2, av2, nc2)
            if rep is None or rep[1] == 0:
                break
            count = min(rep[1], budget)
            behind = f"{rep[0]}{{{count}}}" + behind
            budget -= count
            break  # a repeat's start is not fixed: nothing before it is at a fixed place
        before = _width(items[:i], parsed.state)[1]
        if before > 400:
            continue
        guard = _selectivity(behind) + _selectivity(ahead)
        candidate = Anchor(one[0], behind, ahead, before, rank * 100 - min(guard, 99))
        if best is None or candidate.rank < best.rank:
            best = candidate
    return best


def _selectivity(guard: str) -> int:
    """How much a guard turns away: a literal character (or one letter in either case,
    ``[kK]``) counts 4, a character of a larger class 1."""
    score = 0
    for one, count in re.findall(r"(\[[^\]]*\]|\(\?i:\[[^\]]*\]\)|\\.|.)(?:\{(\d+)\})?", guard):
        n = int(count) if count else 1
        inner = one[one.find("[") + 1 : one.rfind("]")] if "[" in one else ""
        literal = not inner or (len(inner) == 2 and inner[0].lower() == inner[1].lower())
        score += (4 if literal else 1) * n
    return score


def distinctive(secret: str) -> bool:
    """Whether a keyword rule's secret is told apart by its own shape: it holds a literal
    of 3 characters or more with punctuation or a capital in it, or of 2 characters
    with no lowercase letter in a secret of 30 or more (``<digits>:A<34>``)."""
    try:
        parsed = P.parse(secret, re.ASCII)
    except (re.error, OverflowError):
        return False
    items = _flat(parsed) or []
    runs: list[tuple[str, bool]] = []
    run, run_nocase = "", False
    for op, av, nocase in items:
        if op is C.LITERAL:
            run += chr(av)
            run_nocase = run_nocase or (nocase and chr(av).isalpha())
            continue
        if run:
            runs.append((run, run_nocase))
        run, run_nocase = "", False
    if run:
        runs.append((run, run_nocase))
    low = int(parsed.getwidth()[0])
    for text, nocase in runs:
        rare = any(not c.isalnum() or (c.isupper() and not nocase) for c in text)
        if len(text) >= 3 and rare:
            return True
        if len(text) == 2 and rare and low >= 30 and not any(c.islower() for c in text):
            return True
    return False


#: The boundaries gitleaks' GenerateUniqueTokenRegex puts around a secret.
def unique_token(secret: str, nocase: bool) -> str:
    inner = f"(?i:{secret})" if nocase else secret
    return r"\b(" + inner + _SECRET_TAIL


class Carried(NamedTuple):
    keyword_rules: list[KeywordRule]
    body_rules: list[BodyRule]
    allowlists: list[Allowlist]
    skipped: list[str]


def _allowlist(table: dict[str, Any]) -> Allowlist | None:
    if table.get("paths") and (
        table.get("condition", "OR").upper() == "AND"
        or not (table.get("regexes") or table.get("stopwords"))
    ):
        return None  # decided by a file's path, which a recording does not have
    regexes = tuple(go_to_python(r) for r in table.get("regexes", ()))
    stopwords = tuple(str(w).lower() for w in table.get("stopwords", ()))
    if not regexes and not stopwords:
        return None
    every = str(table.get("condition", "OR")).upper() == "AND"
    return Allowlist(str(table.get("regexTarget", "secret")), every, regexes, stopwords)


def allowlists_of(
    rules: Iterable[dict[str, Any]],
) -> tuple[list[Allowlist], dict[str, tuple[int, ...]]]:
    """Every rule's allowlists (those not decided by a file's path), in one list, and
    the indices of each rule's in it."""
    allowlists: list[Allowlist] = []
    allow_of: dict[str, tuple[int, ...]] = {}
    for rule in rules:
        lists = [a for a in (_allowlist(t) for t in rule.get("allowlists", ())) if a]
        if lists:
            allow_of[str(rule.get("id"))] = tuple(
                range(len(allowlists), len(allowlists) + len(lists))
            )
            allowlists.extend(lists)
    return allowlists, allow_of


def carry(
    rules: Iterable[dict[str, Any]],
    covered: set[str],
    kind_of: Callable[[str], str],
    prefixed: Callable[[str], bool],
    allowlists: list[Allowlist],
    allow_of: dict[str, tuple[int, ...]],
) -> Carried:
    """Every rule not in ``covered`` (hand-written shapes) in the form the scrubber applies.

    An alternative ``prefixed`` says starts with a vendor format of ``_ruleset.py`` is
    found by that format already and is not carried twice.
    """
    keyword_rules: list[KeywordRule] = []
    body_rules: list[BodyRule] = []
    skipped: list[str] = []
    for rule in rules:
        rule_id = str(rule.get("id", "?"))
        regex = rule.get("regex")
        if rule_id in covered:
            continue
        if not isinstance(regex, str) or not regex:
            skipped.append(f"{rule_id}: no regex (a path rule): nothing in a recording to find")
            continue
        allow = allow_of.get(rule_id, ())
        entropy = float(rule.get("entropy", 0.0))
        keywords = tuple(str(k).lower() for k in rule.get("keywords", ()))
        kind = kind_of(rule_id)
        group = int(rule.get("secretGroup", 0))
        for alternative in split_top(regex):
            semi = semi_generic(alternative)
            if semi is not None:
                identifiers, secret, nocase = semi
                keyword_rules.append(
                    KeywordRule(
                        rule_id, kind, identifiers, secret, nocase, entropy, keywords, allow
                    )
                )
                # A vendor format's prefix finds it already (``NRAK-``, ``tfp_``).
                if prefixed(secret):
                    continue
                if distinctive(f"(?i:{secret})" if nocase else secret):
                    body = unique_token(secret, nocase)
                    anchor = find_anchor(body)
                    if anchor is not None:
                        body_rules.append(
                            BodyRule(rule_id, kind, body, 1, *anchor[:4], entropy, True, allow)
                        )
                continue
            for variant in _variants(alternative):
                if prefixed(variant):
                    continue
                python = _path_bounded(go_to_python(variant))
                anchor = find_anchor(python)
                if anchor is None and keywords:
                    # Nothing in it to find it by (``[a-f0-9]{40}``): found, as gitleaks
                    # finds it, near one of the rule's keywords (``sourcegraph: <hex>``).
                    names = "|".join(re.escape(k) for k in keywords)
                    secret = go_to_python(variant, embedded=True)
                    keyword_rules.append(
                        KeywordRule(rule_id, kind, names, secret, False, entropy, keywords, allow)
                    )
                    continue
                if anchor is None:
                    skipped.append(f"{rule_id}: nothing to find it by in {variant[:70]!r}")
                    continue
                body_rules.append(
                    BodyRule(rule_id, kind, python, group, *anchor[:4], entropy, False, allow)
                )
    return Carried(keyword_rules, body_rules, allowlists, skipped)


def _path_bounded(regex: str) -> str:
    """``regex`` with ``/`` among the characters its secret may stand between, when it
    names them (``(?:^|[\\'"\\s>=:(,)])...(?:$|[\\'"\\s<),])``, azure-ad-client-secret): a
    secret in a directory name (``/work/<secret>/repo``) is found as anywhere else."""
    regex = re.sub(r"^\(\?:\^\|\[", "(?:^|[/", regex)
    return re.sub(r"\(\?:\$\|\[([^\]]*)\]\)$", r"(?:$|[/\1])", regex)


def _variants(alternative: str) -> list[str]:
    """``alternative`` itself when a character finds it, else one regex per alternative
    of its first group of alternatives (each expanded the same way)."""
    if find_anchor(go_to_python(alternative)) is not None:
        return [alternative]
    parts = expand_branch(alternative)
    if len(parts) == 1:
        return parts
    return [v for part in parts for v in _variants(part)]


# -- the module written --------------------------------------------------------------------


def render(
    carried: Carried,
    hand: Sequence[tuple[str, str, float, tuple[int, ...]]],
    global_allow: Allowlist | None,
    origin: str,
) -> str:
    """The ``_gitleaks.py`` module: every carried rule as data."""
    lines = [
        "# ruff: noqa: E501  (gitleaks' regexes and word lists are long, and kept whole)",
        '"""gitleaks\' rules that no vendor prefix finds, as data (generated; do not edit).',
        "",
        "Generated by ``scripts/refresh_secret_shapes.py`` (``scripts/secret_rules.py``) from",
        "gitleaks' default configuration, translated from Go's regex syntax to Python's.",
        "``scrub/_rules.py`` applies them. gitleaks is MIT-licensed, Copyright (c) 2019",
        "Zachary Rice; its licence is in ``tests/scrub/data/GITLEAKS-LICENSE``.",
        "",
        f"Read: {origin}.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        '__all__ = ["ALLOWLISTS", "BODY_RULES", "GLOBAL_ALLOWLIST", "HAND_RULES", "KEYWORD_RULES"]',
        "",
        "#: (rule id, kind, identifiers regex, secret regex, secret in any case, entropy above",
        "#: which it is a secret, gitleaks' keywords, indices of its allowlists)",
        "KEYWORD_RULES: Final[",
        "    tuple[tuple[str, str, str, str, bool, float, tuple[str, ...], tuple[int, ...]], ...]",
        "] = (",
    ]
    lines += [line for r in carried.keyword_rules for line in formatted(tuple(r), "    ")]
    lines += [
        ")",
        "",
        "#: (rule id, kind, regex, secret group, the character it is found by, what stands",
        "#: before and after that character, the most characters before it, entropy, whether",
        "#: the secret must read as random too, indices of its allowlists)",
        "BODY_RULES: Final[",
        "    tuple[tuple[str, str, str, int, str, str, str, int, float, bool, tuple[int, ...]], "
        "...]",
        "] = (",
    ]
    lines += [line for r in carried.body_rules for line in formatted(tuple(r), "    ")]
    lines += [
        ")",
        "",
        "#: (target: secret, match or line; every condition must hold; regexes; stop words)",
        "ALLOWLISTS: Final[tuple[tuple[str, bool, tuple[str, ...], tuple[str, ...]], ...]] = (",
    ]
    lines += [line for a in carried.allowlists for line in formatted(tuple(a), "    ")]
    lines += [
        ")",
        "",
        "#: The rules the scrubber's hand-written shapes find: (rule id, the shape's kind,",
        "#: entropy at or below which a token is a placeholder and kept, its allowlists)",
        "HAND_RULES: Final[tuple[tuple[str, str, float, tuple[int, ...]], ...]] = (",
    ]
    lines += [line for h in hand for line in formatted(tuple(h), "    ")]
    lines += [")", ""]
    g = global_allow or Allowlist("secret", False, (), ())
    lines += [
        "#: gitleaks' global allowlist (its path rules left out)",
        "GLOBAL_ALLOWLIST: Final[tuple[str, bool, tuple[str, ...], tuple[str, ...]]] = (",
        *(line for element in g for line in formatted(element, "    ")),
        ")",
    ]
    return "\n".join(lines) + "\n"


def literal(value: Any) -> str:
    """A Python literal for ``value`` (tuples, strings, numbers, booleans)."""
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, str) and value.isascii() and value.isprintable():
        # As ruff format writes it: double quotes, unless single ones escape less.
        quote = '"' if value.count('"') <= value.count("'") else "'"
        body = value.replace("\\", "\\\\").replace(quote, "\\" + quote)
        return quote + body + quote
    return repr(value)


def formatted(value: Any, indent: str, width: int = 100) -> list[str]:
    """``value`` as ``ruff format`` writes it as an element of a tuple at ``indent``: on
    one line when it fits, else one element a line (a string too long stays whole)."""
    one = literal(value)
    if not isinstance(value, tuple) or len(indent) + len(one) + 1 <= width:
        return [f"{indent}{one},"]
    lines = [f"{indent}("]
    for element in value:
        lines += formatted(element, indent + "    ", width)
    lines.append(f"{indent}),")
    return lines
