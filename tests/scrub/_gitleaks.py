"""gitleaks' examples and its way of finding a secret, read plainly, for the tests.

``data/gitleaks_examples.json`` (``scripts/refresh_gitleaks_examples.py``; MIT, see
``data/GITLEAKS-LICENSE``) holds each rule of gitleaks' default configuration, its regex in
Python's syntax, and the true and false examples gitleaks keeps beside it.
:func:`gitleaks_secrets` finds secrets as gitleaks' ``detect`` does (keywords, regex,
secret group, entropy, allowlists), written here independently of the scrubber, so that
the scrubber is checked against it rather than against itself.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["examples", "gitleaks_secrets"]

DATA = Path(__file__).parent / "data" / "gitleaks_examples.json"


@cache
def examples() -> dict[str, Any]:
    """The examples file, read once."""
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def _entropy(text: str) -> float:
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


def _allows(allow: dict[str, Any], secret: str, match: str, line: str) -> bool:
    target = {"secret": secret, "match": match, "line": line}[allow["target"]]
    checks = []
    if allow["regexes"]:
        checks.append(any(re.search(r, target, re.ASCII) for r in allow["regexes"]))
    if allow["stopwords"]:
        checks.append(any(w in secret.lower() for w in allow["stopwords"]))
    return all(checks) if allow["every"] else any(checks)


def gitleaks_secrets(rule_id: str, text: str) -> list[str]:
    """The secrets gitleaks' rule ``rule_id`` reports in ``text`` (detect/detect.go)."""
    rule = examples()["rules"][rule_id]
    lowered = text.lower()
    if rule["keywords"] and not any(k in lowered for k in rule["keywords"]):
        return []  # gitleaks runs a rule only on a text holding one of its keywords
    pattern = re.compile(rule["regex"], re.ASCII)
    found = []
    for match in pattern.finditer(text):
        whole = match.group().strip("\n")
        again = pattern.search(whole)
        secret = whole
        if again is not None and again.groups():
            if rule["secret_group"]:
                secret = again.group(rule["secret_group"]) or ""
            else:
                secret = next((g for g in again.groups() if g), whole)
        if rule["entropy"] and _entropy(secret) <= rule["entropy"]:
            continue
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        line = text[start : end if end >= 0 else len(text)]
        lists = [examples()["global_allowlist"], *rule["allowlists"]]
        if any(a and _allows(a, secret, whole, line) for a in lists):
            continue
        found.append(secret)
    return found
