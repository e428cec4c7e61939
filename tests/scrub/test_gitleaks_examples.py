"""gitleaks' own examples through sessiontape's scrubber: every true one redacted, every
false one kept.

gitleaks keeps, beside each rule of its default configuration, the texts the rule must
find and those it must not (``data/gitleaks_examples.json``, written from its sources by
``scripts/refresh_gitleaks_examples.py``; MIT, see ``data/GITLEAKS-LICENSE``). Each rule's
regex is there too, in Python's syntax: the test finds the secret of each true example
the way gitleaks does (a plain reading of its semantics, written here independently of the
scrubber: regex, secret group, entropy, allowlists) and checks that the scrubber leaves
none of it in the text. A false example must come out unchanged, unless another of
gitleaks' rules finds a secret in it (a Cloudflare global key is a false example of the
Cloudflare API key rule), or sessiontape deliberately redacts more than gitleaks there
(:data:`STRICTER`, each with its reason).
"""

from __future__ import annotations

import re

import pytest

from sessiontape.scrub import Scrubber, redact

from ._gitleaks import examples as _examples
from ._gitleaks import gitleaks_secrets


def _rules_with_examples() -> list[str]:
    return sorted(r for r, ex in _examples()["rules"].items() if ex["true"] or ex["false"])


def _left(secret: str, scrubbed: str, original: str) -> bool:
    """Whether ``secret`` survived scrubbing: still in the text (a very short one: the
    text unchanged)."""
    return secret in scrubbed if len(secret) >= 6 else scrubbed == original


#: Why sessiontape redacts more than gitleaks, by the mark it leaves. gitleaks is a
#: scanner and keeps false alarms few; sessiontape is a recorder and keeps leaks fewer.
WHY: dict[str, str] = {
    "name": "a value under a secret name (KEY, TOKEN, SECRET, PASSWORD, SIGNATURE, ...) "
    "is redacted whatever it holds, unless it is a placeholder (RELIABILITY.md, 5)",
    "format": "a token of a vendor's prefix and alphabet is redacted whatever its length "
    "and what follows it; gitleaks also asks for an exact length and ending",
    "high-entropy": "a random-looking value right after a credential word is redacted",
    "authorization": "an Authorization header's value is redacted whatever it holds",
    "private-key": "a PEM private key's body is redacted whatever it holds (a truncated key too)",
}

#: The false examples of these rules that sessiontape redacts on purpose, though no
#: gitleaks rule reports them, by the marks they get (see :data:`WHY`).
STRICTER: dict[str, frozenset[str]] = {
    "anthropic-admin-api-key": frozenset({"format"}),
    "anthropic-api-key": frozenset({"format"}),
    "aws-access-token": frozenset({"name"}),
    "azure-ad-client-secret": frozenset({"name"}),
    "curl-auth-header": frozenset({"authorization"}),
    "easypost-api-token": frozenset({"format"}),
    "easypost-test-api-token": frozenset({"format"}),
    "flyio-access-token": frozenset({"name"}),
    "generic-api-key": frozenset({"name", "high-entropy"}),
    "infracost-api-token": frozenset({"format"}),
    "mailchimp-api-key": frozenset({"name"}),
    "octopus-deploy-api-key": frozenset({"format"}),
    "openshift-user-token": frozenset({"name"}),
    "private-key": frozenset({"private-key"}),
    "sentry-org-token": frozenset({"format"}),
    "sentry-user-token": frozenset({"format"}),
    "slack-bot-token": frozenset({"format"}),
    "slack-config-access-token": frozenset({"format"}),
    "slack-legacy-bot-token": frozenset({"format"}),
    "slack-legacy-token": frozenset({"format"}),
    "slack-user-token": frozenset({"format"}),
    "sourcegraph-access-token": frozenset({"format"}),
    "stripe-access-token": frozenset({"high-entropy"}),
    "sumologic-access-token": frozenset({"name"}),
    "telegram-bot-api-token": frozenset({"name"}),
    "vault-service-token": frozenset({"name"}),
}

_MARK = re.compile(r"\[REDACTED(?::([a-z0-9-]+))?\]")


def _why(scrubbed: str) -> set[str]:
    """Which of :data:`WHY` the marks in ``scrubbed`` stand for."""
    out = set()
    for kind in _MARK.findall(scrubbed):
        out.add("name" if not kind else kind if kind in WHY else "format")
    return out


def _changed_false_examples(rule_id: str) -> list[tuple[str, str]]:
    """The false examples of ``rule_id`` no gitleaks rule reports that scrubbing changes."""
    out = []
    for text in _examples()["rules"][rule_id]["false"]:
        scrubbed = redact(text)
        if scrubbed != text and not _reported_elsewhere(text):
            out.append((text, scrubbed))
    return out


@pytest.mark.parametrize("rule_id", _rules_with_examples())
def test_every_true_example_of_a_rule_is_redacted(rule_id: str) -> None:
    rule = _examples()["rules"][rule_id]
    leaks = []
    for text in rule["true"]:
        secrets = gitleaks_secrets(rule_id, text)
        assert secrets, f"{rule_id}: gitleaks' own rule finds nothing in {text!r}"
        scrubbed = redact(text)
        leaks += [(text, s) for s in secrets if _left(s, scrubbed, text)]
    assert leaks == []


def _reported_elsewhere(text: str) -> list[str]:
    return [s for r in _examples()["rules"] for s in gitleaks_secrets(r, text)]


@pytest.mark.parametrize("rule_id", _rules_with_examples())
def test_every_false_example_of_a_rule_is_kept(rule_id: str) -> None:
    rule = _examples()["rules"][rule_id]
    for text in rule["false"]:
        assert gitleaks_secrets(rule_id, text) == [], f"{rule_id} reports {text!r}"
        others = _reported_elsewhere(text)
        # Another rule's secret (a Cloudflare global key is a false example of the
        # Cloudflare API key rule): that one goes, as gitleaks reports it.
        assert [s for s in others if _left(s, redact(text), text)] == []
    allowed = STRICTER.get(rule_id, frozenset())
    assert [(t, s) for t, s in _changed_false_examples(rule_id) if not _why(s) <= allowed] == []


def test_every_stricter_choice_is_still_needed() -> None:
    # An entry no false example needs any more is removed, not left to excuse a later one.
    for rule_id, allowed in STRICTER.items():
        seen = set().union(*(_why(s) for _t, s in _changed_false_examples(rule_id)))
        assert seen == allowed, rule_id


def test_the_examples_cover_every_rule_of_the_config_that_has_examples() -> None:
    rules = _examples()["rules"]
    assert len(rules) >= 200
    true = sum(len(r["true"]) for r in rules.values())
    false = sum(len(r["false"]) for r in rules.values())
    assert true >= 6000
    assert false >= 300
    # What the refresh script could not read is listed, never silently lost.
    dropped = {rule_id for rule_id, r in rules.items() if r["dropped"]}
    assert dropped <= {"freemius-secret-key", "hashicorp-tf-password", "kubernetes-secret-yaml",
                       "nuget-config-password", "pkcs12-file"}  # fmt: skip


def test_true_examples_are_redacted_as_values_of_their_names_too() -> None:
    # Keyword rules apply with their keyword's context: an environment variable, a JSON
    # key, the argv word before a value.
    scrubber = Scrubber()
    token = "98974733:Axhq5i_vqg2j-jt9sak9rfvad9rvil8jdn4"
    datadog = "4ogscdvjfq9o8yfiolliz9hmepb9yi8q3om0e28f"
    assert scrubber.env({"TELEGRAM_BOT": token, "DATADOG": datadog}) == {
        "TELEGRAM_BOT": "[REDACTED:telegram]",
        "DATADOG": "[REDACTED:datadog]",
    }
    assert scrubber.data({"datadog": datadog, "note": "fine"}) == {
        "datadog": "[REDACTED:datadog]",
        "note": "fine",
    }
    assert scrubber.argv(["deploy", "--datadog", datadog, "--telegram", token]) == [
        "deploy",
        "--datadog",
        "[REDACTED:datadog]",
        "--telegram",
        "[REDACTED:telegram]",
    ]
    # A body distinctive alone is found anywhere, with no keyword near it.
    assert redact(f"bot {token} started") == "bot [REDACTED:telegram] started"


def test_placeholders_are_kept_whatever_finds_them() -> None:
    assert redact("ghp_" + "x" * 36) == "ghp_" + "x" * 36
    assert redact("API_KEY=xxxxxxxxxxxxxxxx") == "API_KEY=xxxxxxxxxxxxxxxx"
    assert redact('token: "<YOUR_TOKEN>"') == 'token: "<YOUR_TOKEN>"'
    assert Scrubber().env({"API_KEY": "********", "PASSWORD": "hunter2"}) == {
        "API_KEY": "********",
        "PASSWORD": "[REDACTED]",
    }
