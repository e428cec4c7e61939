"""gitleaks' rules as kinds of the secret corpus: each rule's own true examples, planted
in every place a recording writes.

A maker picks one of the rule's true examples (the secret in the context gitleaks' own
examples give it: ``datadog_api_token = "..."``, ``<telegramToken> ... </telegramToken>``,
a bare ``<14>.atlasv1.<60>``) and returns it with the secrets gitleaks finds in it, the
cores that must never reach disk. Kinds are named ``gitleaks <rule id>``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import cache

from scrub._gitleaks import examples, gitleaks_secrets

Maker = Callable[[random.Random], tuple[str, list[str]]]

#: Cores shorter than this are not looked for on disk (a 4-character secret of a test
#: example would be found in unrelated bytes by chance).
SHORTEST_CORE = 8


def _maker(rule_id: str, texts: list[tuple[str, list[str]]]) -> Maker:
    def make(rng: random.Random) -> tuple[str, list[str]]:
        return rng.choice(texts)

    return make


@cache
def gitleaks_kinds() -> dict[str, Maker]:
    """A maker for every rule with a true example whose secret can be looked for."""
    kinds: dict[str, Maker] = {}
    for rule_id, rule in sorted(examples()["rules"].items()):
        texts = []
        for text in rule["true"]:
            cores = [s for s in gitleaks_secrets(rule_id, text) if len(s) >= SHORTEST_CORE]
            # One line: a place such as a directory name or an argv word holds one.
            if cores and "\n" not in text and "\x00" not in text and len(text) < 200:
                texts.append((text, cores))
        if texts:
            kinds[f"gitleaks {rule_id}"] = _maker(rule_id, texts)
    return kinds


def sample(kinds: dict[str, Maker], every: int) -> dict[str, Maker]:
    """Every ``every``-th kind, in name order (the suite's share; the reliability run
    plants them all)."""
    return {name: kinds[name] for name in sorted(kinds)[::every]}
