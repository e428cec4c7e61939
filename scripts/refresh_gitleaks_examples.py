"""Regenerate the true and false examples of gitleaks' rules, for sessiontape's secrets test.

gitleaks keeps, beside each rule of its default configuration, the examples the rule must
find and the ones it must not (``cmd/generate/config/rules/*.go``: ``tps`` and ``fps``
handed to ``utils.Validate``). This script reads those Go sources from a checkout of
gitleaks and writes the examples as data, ``tests/scrub/data/gitleaks_examples.json``,
with gitleaks' licence beside it (``tests/scrub/data/GITLEAKS-LICENSE``);
``tests/scrub/test_gitleaks_examples.py`` runs every example through the scrubber.

The examples are Go expressions, so the script evaluates the small part of Go they use:
string literals, ``+``, ``[]string{...}``, ``map[string]string{...}``, ``append``,
``fmt.Sprintf`` with ``%s``, variables, and gitleaks' generator helpers
(``utils.GenerateSampleSecrets`` and the rest, ``secrets.NewSecret``: a random string
matching a regex, drawn here from a seeded generator so that the output is stable). An
expression it cannot evaluate drops that example, and the script says which and why.

Usage::

    python scripts/refresh_gitleaks_examples.py PATH-TO-GITLEAKS-CHECKOUT [--commit SHA]
        [--out tests/scrub/data/gitleaks_examples.json] [--check]

This is a maintenance tool run by hand, not part of the package.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import itertools
import json
import random
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    from re import _constants as C
    from re import _parser as P
else:  # Python 3.10 names them sre_constants and sre_parse
    import sre_constants as C
    import sre_parse as P

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "scrub" / "data" / "gitleaks_examples.json"
LICENSE_OUT = OUT.parent / "GITLEAKS-LICENSE"
RULES_DIR = Path("cmd") / "generate" / "config" / "rules"
GENERATE_GO = Path("cmd") / "generate" / "config" / "utils" / "generate.go"
CONFIG = Path("config") / "gitleaks.toml"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from secret_rules import go_to_python  # noqa: E402  (beside this script)

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


class Unsupported(Exception):
    """A Go construct this evaluator does not handle: the example is dropped."""


# -- Go tokens ----------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<comment>//[^\n]*|/\*.*?\*/)
    | (?P<raw>`[^`]*`)
    | (?P<string>"(?:[^"\\\n]|\\.)*")
    | (?P<rune>'(?:[^'\\\n]|\\.)+')
    | (?P<number>\d+(?:\.\d+)?)
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>\.\.\.|:=|\+=|==|!=|&&|\|\||[-+*/%&|^<>=!(){}\[\],;:.])
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b"}
_ESCAPES |= {"f": "\f", "v": "\v"}


def _unquote(literal: str) -> str:
    """A Go interpreted string literal's value."""
    body, out, i = literal[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        kind = body[i + 1]
        if kind in _ESCAPES:
            out.append(_ESCAPES[kind])
            i += 2
        elif kind == "x":
            out.append(chr(int(body[i + 2 : i + 4], 16)))
            i += 4
        elif kind == "u":
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif kind == "U":
            out.append(chr(int(body[i + 2 : i + 10], 16)))
            i += 10
        elif kind.isdigit():
            out.append(chr(int(body[i + 1 : i + 4], 8)))
            i += 4
        else:
            raise Unsupported(f"string escape \\{kind}")
    return "".join(out)


@dataclass(frozen=True)
class Tok:
    kind: str  # "str", "num", "name", "op"
    text: str
    value: Any = None


def tokens(source: str) -> list[Tok]:
    """Go source as tokens, comments and blanks dropped."""
    out: list[Tok] = []
    pos = 0
    while pos < len(source):
        m = _TOKEN.match(source, pos)
        if m is None:
            raise Unsupported(f"unreadable Go at {source[pos : pos + 20]!r}")
        pos = m.end()
        kind = m.lastgroup
        text = m.group()
        if kind in ("space", "comment"):
            continue
        if kind == "raw":
            out.append(Tok("str", text, text[1:-1].replace("\r", "")))
        elif kind == "string":
            out.append(Tok("str", text, _unquote(text)))
        elif kind == "rune":
            out.append(Tok("str", text, _unquote('"' + text[1:-1] + '"')))
        elif kind == "number":
            out.append(Tok("num", text, float(text) if "." in text else int(text)))
        else:
            out.append(Tok(kind or "op", text))
    return out


# -- random strings matching a regex (secrets.NewSecret) ----------------------------------


def _translate(regex: str) -> str:
    """A Go regex in Python's syntax, for generation only."""
    regex = regex.replace(r"\z", r"\Z")
    # Python allows global flags only at the start; generation ignores flags anyway.
    return re.sub(r"\(\?[a-zA-Z]+\)", "", regex)


_PRINTABLE = [chr(c) for c in range(33, 127)]
_WORD = [c for c in _PRINTABLE if c.isalnum() or c == "_"]
_DIGITS = [str(d) for d in range(10)]
_SPACES = [" ", "\t"]


def _category(category: Any) -> list[str]:
    if category is C.CATEGORY_DIGIT:
        return _DIGITS
    if category is C.CATEGORY_WORD:
        return _WORD
    if category is C.CATEGORY_SPACE:
        return _SPACES
    if category is C.CATEGORY_NOT_DIGIT:
        return [c for c in _PRINTABLE if not c.isdigit()]
    if category is C.CATEGORY_NOT_WORD:
        return [c for c in _PRINTABLE if c not in _WORD]
    if category is C.CATEGORY_NOT_SPACE:
        return _PRINTABLE
    raise Unsupported(f"regex category {category}")


def _class(items: Sequence[tuple[Any, Any]]) -> list[str]:
    chars: set[str] = set()
    negate = False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            chars.add(chr(av))
        elif op is C.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        elif op is C.CATEGORY:
            chars.update(_category(av))
        else:
            raise Unsupported(f"regex class item {op}")
    if negate:
        return [c for c in _PRINTABLE if c not in chars]
    return sorted(chars)


def _generate(items: Sequence[tuple[Any, Any]], rng: random.Random, groups: dict[int, str]) -> str:
    """One string the parsed ``items`` match; unbounded repeats run at most once more than
    their minimum, as gitleaks' generator (reggen with limit 1) does."""
    out: list[str] = []
    for op, av in items:
        if op is C.LITERAL:
            out.append(chr(av))
        elif op is C.NOT_LITERAL:
            out.append(rng.choice([c for c in _WORD if c != chr(av)]))
        elif op is C.ANY:
            out.append(rng.choice(_WORD))
        elif op is C.IN:
            out.append(rng.choice(_class(av)))
        elif op is C.CATEGORY:
            out.append(rng.choice(_category(av)))
        elif op is C.BRANCH:
            out.append(_generate(rng.choice(av[1]), rng, groups))
        elif op is C.SUBPATTERN:
            text = _generate(av[3], rng, groups)
            if av[0] is not None:
                groups[av[0]] = text
            out.append(text)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            low, high, sub = av
            high = low + 1 if high is C.MAXREPEAT else high
            out.extend(_generate(sub, rng, groups) for _ in range(rng.randint(low, high)))
        elif op is C.GROUPREF:
            out.append(groups.get(av, ""))
        elif op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            continue
        else:
            raise Unsupported(f"regex item {op}")
    return "".join(out)


def new_secret(regex: str, rng: random.Random) -> str:
    """``secrets.NewSecret(regex)``: a random string the regex matches."""
    try:
        parsed = P.parse(_translate(regex))
    except (re.error, OverflowError) as exc:
        raise Unsupported(f"regex {regex!r}: {exc}") from exc
    return _generate(list(parsed), rng, {})


# -- gitleaks' generator helpers ----------------------------------------------------------


def sample_templates(generate_go: str) -> list[str]:
    """The templates of ``utils.GenerateSampleSecrets``, read from ``generate.go`` (the map
    literal's values, commented ones left out), in the order written."""
    start = generate_go.index("func GenerateSampleSecrets")
    body = generate_go[start : generate_go.index("replacer :=", start)]
    toks = tokens(body)
    templates: list[str] = []
    for i, tok in enumerate(toks):
        # "name": "template" pairs: a string, a colon, a string.
        if tok.kind == "str" and i >= 2 and toks[i - 1].text == ":" and toks[i - 2].kind == "str":
            templates.append(tok.value)
    if not templates:
        raise SystemExit(f"{GENERATE_GO}: no sample templates found: has gitleaks changed it?")
    return templates


def _fill(template: str, identifier: str, secret: str) -> str:
    return (
        template.replace("{i}", identifier)
        .replace("{I}", identifier.upper())
        .replace("{s}", secret)
    )


def _sprintf(fmt: str, *args: Any) -> str:
    parts = re.split(r"(%[sdvq%])", fmt)
    out: list[str] = []
    rest = list(args)
    for part in parts:
        if part == "%%":
            out.append("%")
        elif part in ("%s", "%d", "%v"):
            out.append(str(rest.pop(0)))
        elif part == "%q":
            out.append(json.dumps(str(rest.pop(0))))
        else:
            out.append(part)
    return "".join(out)


def _jwt_base64_values() -> list[str]:
    """jwt.go's ``generateTestValues``, which loops over a map: written out here. Its
    headers are read from the source by the caller; see :func:`_jwt_headers`."""
    raise Unsupported("generateTestValues (evaluated separately)")


@dataclass
class Evaluator:
    """Evaluates the Go expressions of one rule function."""

    templates: list[str]
    rng: random.Random
    env: dict[str, Any] = field(default_factory=dict)
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def sizes(fmt: str) -> Callable[[Any], str]:
            return lambda size: fmt.replace("SIZE", str(size))

        self.functions.update(
            {
                "utils.Numeric": sizes("[0-9]{SIZE}"),
                "utils.Hex": sizes("[a-f0-9]{SIZE}"),
                "utils.AlphaNumeric": sizes("[a-z0-9]{SIZE}"),
                "utils.AlphaNumericExtendedShort": sizes("[a-z0-9_-]{SIZE}"),
                "utils.AlphaNumericExtended": sizes(r"[a-z0-9=_\-]{SIZE}"),
                "utils.AlphaNumericExtendedLong": sizes(r"[a-z0-9\/=_\+\-]{SIZE}"),
                "utils.Hex8_4_4_4_12": lambda: (
                    "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                ),
                "secrets.NewSecret": lambda regex: new_secret(regex, self.rng),
                "newPlausibleSecret": self._plausible,
                "utils.GenerateSampleSecret": lambda i, s: f'{i}_api_token = "{s}"',
                "utils.GenerateSampleSecrets": lambda i, s: [
                    _fill(t, i, s) for t in self.templates
                ],
                "fmt.Sprintf": _sprintf,
                "base64.StdEncoding.EncodeToString": lambda s: base64.b64encode(
                    s.encode()
                ).decode(),
                "strings.ToUpper": lambda s: s.upper(),
                "strings.ToLower": lambda s: s.lower(),
                "strings.Repeat": lambda s, n: s * n,
                "append": lambda first, *rest: [*(first or []), *rest],
                "len": len,
                "string": str,
            }
        )

    def _plausible(self, regex: str) -> str:
        """generic.go's ``newPlausibleSecret``: a secret with a digit from 1 to 9 (its
        stop-word retry is not needed for a test of redaction: any such value is secret)."""
        for _ in range(1000):
            secret = new_secret(regex, self.rng)
            if re.search("[1-9]", secret):
                return secret
        raise Unsupported(f"no plausible secret for {regex!r}")

    # Expressions: a recursive descent over the tokens, evaluating as it goes.

    def expression(self, toks: list[Tok], i: int) -> tuple[Any, int]:
        value, i = self.operand(toks, i)
        while i < len(toks) and toks[i].text == "+":
            right, i = self.operand(toks, i + 1)
            value = value + right
        return value, i

    def operand(self, toks: list[Tok], i: int) -> tuple[Any, int]:
        tok = toks[i]
        if tok.kind in ("str", "num"):
            return tok.value, i + 1
        if tok.text == "(":
            value, i = self.expression(toks, i + 1)
            return value, self.expect(toks, i, ")")
        if tok.text == "[" and toks[i + 1].text == "]":
            if toks[i + 2].kind == "name" and toks[i + 3].text == "(":
                # []byte(...): a conversion, the same text here
                value, j = self.expression(toks, i + 4)
                return value, self.expect(toks, j, ")")
            # []T{...}
            j = i + 2
            while toks[j].text != "{":
                j += 1
            items, j = self.elements(toks, j + 1)
            return items, j
        if tok.text == "map":
            j = i
            while toks[j].text != "{":
                j += 1
            return self.map_literal(toks, j + 1)
        if tok.kind == "name":
            name, j = tok.text, i + 1
            while j + 1 < len(toks) and toks[j].text == "." and toks[j + 1].kind == "name":
                name += "." + toks[j + 1].text
                j += 2
            if j < len(toks) and toks[j].text == "(":
                args, j = self.arguments(toks, j + 1)
                return self.call(name, args), j
            if j < len(toks) and toks[j].text == "{":
                raise Unsupported(f"composite literal {name}{{...}}")
            if name in self.env:
                return self.env[name], j
            if name in ("nil", "true", "false"):
                return {"nil": None, "true": True, "false": False}[name], j
            raise Unsupported(f"unknown name {name}")
        raise Unsupported(f"unexpected {tok.text!r}")

    def arguments(self, toks: list[Tok], i: int) -> tuple[list[Any], int]:
        args: list[Any] = []
        while toks[i].text != ")":
            value, i = self.expression(toks, i)
            if toks[i].text == "...":
                args.extend(value or [])
                i += 1
            else:
                args.append(value)
            if toks[i].text == ",":
                i += 1
        return args, i + 1

    def elements(self, toks: list[Tok], i: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        while toks[i].text != "}":
            value, i = self.expression(toks, i)
            items.append(value)
            if toks[i].text == ",":
                i += 1
        return items, i + 1

    def map_literal(self, toks: list[Tok], i: int) -> tuple[dict[str, Any], int]:
        items: dict[str, Any] = {}
        while toks[i].text != "}":
            key, i = self.expression(toks, i)
            i = self.expect(toks, i, ":")
            value, i = self.expression(toks, i)
            items[str(key)] = value
            if toks[i].text == ",":
                i += 1
        return items, i + 1

    def call(self, name: str, args: list[Any]) -> Any:
        function = self.functions.get(name)
        if function is None:
            raise Unsupported(f"call of {name}")
        return function(*args)

    @staticmethod
    def expect(toks: list[Tok], i: int, text: str) -> int:
        if toks[i].text != text:
            raise Unsupported(f"expected {text!r}, found {toks[i].text!r}")
        return i + 1


# -- rule functions -------------------------------------------------------------------------


@dataclass
class Examples:
    rule_id: str
    true: list[str] = field(default_factory=list)
    false: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _functions(toks: list[Tok]) -> Iterator[tuple[str, list[Tok]]]:
    """Each top-level ``func Name(...) ... { body }`` as its name and body tokens."""
    i = 0
    while i < len(toks):
        if toks[i].text == "func" and toks[i + 1].kind == "name":
            name = toks[i + 1].text
            j = i + 2
            while toks[j].text != "{":
                j += 1
            depth, k = 0, j
            while True:
                if toks[k].text == "{":
                    depth += 1
                elif toks[k].text == "}":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            yield name, toks[j + 1 : k]
            i = k + 1
        else:
            i += 1


def _statements(body: list[Tok]) -> Iterator[list[Tok]]:
    """The body's statements: split at the ends of lines that Go would end them at is
    not known here, so statements are split at names followed by ``:=`` or ``=`` at
    bracket depth 0, and at ``return``."""
    starts = [0]
    depth = 0
    for i, tok in enumerate(body):
        if tok.text in "([{":
            depth += 1
        elif tok.text in ")]}":
            depth -= 1
        elif depth == 0 and i > 0 and tok.text in (":=", "="):
            j = i - 1
            while j > 0 and body[j - 1].text == ",":
                j -= 2
            if j > starts[-1]:
                starts.append(j)
        elif depth == 0 and tok.text in ("return", "var") and i > starts[-1]:
            starts.append(i)
    starts.append(len(body))
    for a, b in itertools.pairwise(starts):
        yield body[a:b]


def _rule_id(body: list[Tok]) -> str | None:
    for i, tok in enumerate(body):
        if tok.text == "RuleID" and body[i + 1].text == ":" and body[i + 2].kind == "str":
            return str(body[i + 2].value)
    return None


def evaluate_function(body: list[Tok], evaluator: Evaluator) -> Examples | None:
    """The examples a rule function hands to ``utils.Validate`` (None: not a rule)."""
    rule_id = _rule_id(body)
    if rule_id is None:
        return None
    found = Examples(rule_id)
    evaluator.env["r"] = None  # the rule itself, which Validate is handed first
    for statement in _statements(body):
        head = statement[0].text
        try:
            if head == "var":
                _var_block(statement[1:], evaluator)
            elif head == "return":
                _validate(statement[1:], evaluator, found)
            elif len(statement) > 2 and statement[1].text in (":=", "="):
                if statement[0].text == "r":
                    continue  # the rule itself: config.Rule{...}
                value, _ = evaluator.expression(statement, 2)
                evaluator.env[statement[0].text] = value
            elif any(t.text == "utils.Validate" for t in statement):
                _validate(statement, evaluator, found)
        except (Unsupported, IndexError, KeyError, TypeError, ValueError) as exc:
            # Only a statement that makes examples loses any: a helper value (a regex the
            # rule is built from) is not needed here.
            target = statement[0].text
            if target in ("tps", "fps", "return") or any(t.text == "Validate" for t in statement):
                text = " ".join(t.text for t in statement)[:120]
                found.dropped.append(f"{text}: {exc}")
    return found


def _var_block(toks: list[Tok], evaluator: Evaluator) -> None:
    if toks and toks[0].text == "(":
        toks = toks[1:-1]
    i = 0
    while i < len(toks):
        name = toks[i].text
        i = Evaluator.expect(toks, i + 1, "=")
        value, i = evaluator.expression(toks, i)
        evaluator.env[name] = value
        while i < len(toks) and toks[i].text in (";", ","):
            i += 1


def _validate(toks: list[Tok], evaluator: Evaluator, found: Examples) -> None:
    """``utils.Validate(r, tps, fps)`` or ``utils.ValidateWithPaths(r, tps, fps)``."""
    for i, tok in enumerate(toks):
        if tok.text == "utils" and toks[i + 2].text in ("Validate", "ValidateWithPaths"):
            with_paths = toks[i + 2].text == "ValidateWithPaths"
            args, _ = evaluator.arguments(toks, i + 4)
            true, false = args[1], args[2]
            if with_paths:
                # Examples told apart by their file's path: only those whose verdict does
                # not depend on the path are examples of the text (sessiontape has none).
                found.dropped.extend(f"{path}: depends on the file's path" for path in false)
                true = list(true.values()) if true else []
                false = []
            found.true.extend(str(t) for t in true or [])
            found.false.extend(str(f) for f in false or [])
            return
    # ``return &r``: a rule gitleaks keeps no examples for.


def _jwt_headers(source: str) -> list[str]:
    """jwt.go's ``generateTestValues``: its headers, each base64-encoded four ways."""
    start = source.index("func generateTestValues")
    toks = tokens(source[start:])
    suffix = next(t.value for t in toks if t.kind == "str" and str(t.value).startswith(".eyJ"))
    i = next(i for i, t in enumerate(toks) if t.text == "headers") + 2
    while toks[i].text != "{":
        i += 1
    examples: list[str] = []
    i += 1
    while toks[i].text != "}":
        key = str(toks[i].value)
        i += 3  # key : {
        values: list[str] = []
        while toks[i].text != "}":
            if toks[i].kind == "str":
                values.append(str(toks[i].value))
            i += 1
        i += 1
        if toks[i].text == ",":
            i += 1
        for value in values:
            header = f'{{"{key}":{value}}}'.encode()
            jwt = base64.urlsafe_b64encode(header).rstrip(b"=").decode() + suffix
            raw = jwt.encode()
            examples += [
                base64.b64encode(raw).decode(),
                base64.b64encode(raw).decode().rstrip("="),
                base64.urlsafe_b64encode(raw).decode(),
                base64.urlsafe_b64encode(raw).decode().rstrip("="),
            ]
    return examples


def _package_vars(toks: list[Tok], evaluator: Evaluator) -> None:
    """The file's top-level ``var`` declarations, evaluated into ``evaluator.env`` (Go
    shares them across the package's files)."""
    depth = 0
    i = 0
    while i < len(toks):
        text = toks[i].text
        if text in "([{":
            depth += 1
        elif text in ")]}":
            depth -= 1
        elif text == "var" and depth == 0:
            end = i + 1
            if toks[end].text == "(":
                level = 0
                while True:
                    level += {"(": 1, ")": -1}.get(toks[end].text, 0)
                    if level == 0:
                        break
                    end += 1
                with contextlib.suppress(Unsupported, IndexError):
                    _var_block(toks[i + 1 : end + 1], evaluator)
                i = end + 1
                continue
            with contextlib.suppress(Unsupported, IndexError):
                value, end = evaluator.expression(toks, i + 3)
                evaluator.env[toks[i + 1].text] = value
                i = end
                continue
        i += 1


def read_examples(checkout: Path) -> dict[str, Examples]:
    """Every rule's examples from the gitleaks checkout at ``checkout``."""
    templates = sample_templates((checkout / GENERATE_GO).read_text(encoding="utf-8"))
    rules: dict[str, Examples] = {}
    sources = {
        p: p.read_text(encoding="utf-8") for p in sorted((checkout / RULES_DIR).glob("*.go"))
    }
    package = Evaluator(templates, random.Random(0))
    for source in sources.values():
        _package_vars(tokens(source), package)
    for path, source in sources.items():
        toks = tokens(source)
        for name, body in _functions(toks):
            seed = int(hashlib.sha256(f"{path.name}:{name}".encode()).hexdigest()[:16], 16)
            evaluator = Evaluator(templates, random.Random(seed), dict(package.env))
            if path.name == "jwt.go":
                evaluator.functions["generateTestValues"] = lambda s=source: _jwt_headers(s)
            found = evaluate_function(body, evaluator)
            if found is None:
                continue
            if found.rule_id in rules:
                raise SystemExit(f"{path}: rule {found.rule_id} defined twice")
            rules[found.rule_id] = found
    return rules


def _allowlist(table: dict[str, Any]) -> dict[str, Any] | None:
    """A gitleaks allowlist as the test reads it (None: it is decided by a file's path)."""
    if table.get("paths") and not (table.get("regexes") or table.get("stopwords")):
        return None
    if table.get("paths") and str(table.get("condition", "OR")).upper() == "AND":
        return None
    return {
        "target": table.get("regexTarget", "secret"),
        "every": str(table.get("condition", "OR")).upper() == "AND",
        "regexes": [go_to_python(r) for r in table.get("regexes", ())],
        "stopwords": [str(w).lower() for w in table.get("stopwords", ())],
    }


def render(rules: dict[str, Examples], config: dict[str, Any], origin: str) -> str:
    """The JSON file: each rule of the config (its regex in Python's syntax, secret group,
    entropy and allowlists) with its examples, and the global allowlist."""
    defined = {str(r.get("id")): r for r in config.get("rules", ())}
    out: dict[str, Any] = {}
    for rule_id, ex in sorted(rules.items()):
        rule = defined.get(rule_id)
        if rule is None or not rule.get("regex"):
            continue  # not in the default config (or a path rule): nothing to test
        out[rule_id] = {
            "regex": go_to_python(str(rule["regex"])),
            "secret_group": int(rule.get("secretGroup", 0)),
            "entropy": float(rule.get("entropy", 0.0)),
            "keywords": [str(k).lower() for k in rule.get("keywords", ())],
            "allowlists": [a for a in map(_allowlist, rule.get("allowlists", ())) if a],
            "true": ex.true,
            "false": ex.false,
            "dropped": ex.dropped,
        }
    data = {
        "source": origin,
        "licence": "MIT, Copyright (c) 2019 Zachary Rice: see GITLEAKS-LICENSE beside this file",
        "generated_by": "scripts/refresh_gitleaks_examples.py",
        "global_allowlist": _allowlist(config.get("allowlist", {})),
        "rules": out,
    }
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("checkout", type=Path, help="a checkout of github.com/gitleaks/gitleaks")
    parser.add_argument("--commit", help="the gitleaks commit the checkout is at")
    parser.add_argument("--out", type=Path, default=OUT, help="the JSON file to write")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    if not (args.checkout / RULES_DIR).is_dir():
        print(f"{args.checkout}: no {RULES_DIR}: is this a gitleaks checkout?", file=sys.stderr)
        return 2
    rules = read_examples(args.checkout)
    config = tomllib.loads((args.checkout / CONFIG).read_text(encoding="utf-8"))
    origin = "gitleaks cmd/generate/config/rules and config/gitleaks.toml" + (
        f" at commit {args.commit}" if args.commit else ""
    )
    text = render(rules, config, origin)
    true = sum(len(r.true) for r in rules.values())
    false = sum(len(r.false) for r in rules.values())
    dropped = [(r.rule_id, d) for r in rules.values() for d in r.dropped]
    for rule_id, reason in dropped:
        print(f"dropped {rule_id}: {reason}", file=sys.stderr)
    print(
        f"{len(rules)} rules: {true} true and {false} false examples, {len(dropped)} dropped",
        file=sys.stderr,
    )
    licence = (args.checkout / "LICENSE").read_text(encoding="utf-8")
    if args.check:
        stale = not args.out.exists() or args.out.read_text(encoding="utf-8") != text
        if stale:
            print(f"{args.out} is out of date: run without --check", file=sys.stderr)
        return 1 if stale else 0
    args.out.write_text(text, encoding="utf-8")
    (args.out.parent / "GITLEAKS-LICENSE").write_text(licence, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
