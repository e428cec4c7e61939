"""scripts/refresh_secret_shapes.py: gitleaks' rules to the vendor formats kept as data."""

from __future__ import annotations

import importlib.util
import random
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "data" / "gitleaks_fixture.toml"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "refresh_secret_shapes", ROOT / "scripts" / "refresh_secret_shapes.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_prefix_rules_become_formats_and_the_rest_are_skipped_with_a_reason(
    script: ModuleType,
) -> None:
    found, skipped = script.tokens_of(script.read_config(str(FIXTURE))["rules"])
    formats = {(t.prefix, t.body, t.min_len, t.kind) for t in found}
    assert formats == {
        ("acme_live_", "a-f0-9", 32, "acme"),
        ("wdg.", "A-Za-z0-9", 40, "widget"),
        ("wdt.", "A-Za-z0-9", 40, "widget"),
        ("ZORP-", "A-Za-f0-9_", 29, "zorp"),
    }
    reasons = "\n".join(skipped)
    assert "github-pat: a hand-written shape covers it" in reasons
    assert "pkcs12-file: no regex" in reasons
    for rule in ("lowercase-only", "keyword-rule", "short-body"):
        assert f"{rule}: no literal prefix" in reasons


def test_the_module_written_is_data_the_scrubber_reads(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "_ruleset.py"
    assert script.main([str(FIXTURE), "--commit", "f" * 40, "--out", str(out)]) == 0
    text = out.read_text()
    assert f"at commit {'f' * 40}" in text
    namespace: dict[str, object] = {}
    exec(compile(text, str(out), "exec"), namespace)  # our own output, in a test
    tokens = namespace["VENDOR_TOKENS"]
    assert isinstance(tokens, tuple)
    prefixes = [t[2] for t in tokens]
    assert prefixes == sorted(prefixes)
    assert {"acme_live_", "ZORP-", "dckr_pat_", "ya29."} <= set(prefixes)  # and PUBLISHED
    # --check: the file just written is up to date; an edited one is not.
    assert script.main([str(FIXTURE), "--commit", "f" * 40, "--out", str(out), "--check"]) == 0
    out.write_text(text.replace("acme_live_", "acme_test_"))
    assert script.main([str(FIXTURE), "--commit", "f" * 40, "--out", str(out), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err


def test_a_file_that_is_not_a_gitleaks_config_is_refused(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "other.toml"
    bad.write_text('title = "something else"\n')
    assert script.main([str(bad), "--out", str(tmp_path / "x.py")]) == 2
    assert "no [[rules]] tables" in capsys.readouterr().err
    assert not (tmp_path / "x.py").exists()


def _sample(prefix: str, body: str, least: int, rng: random.Random) -> str:
    chars = [chr(c) for c in range(33, 127) if re.fullmatch(f"[{body}]", chr(c))]
    return prefix + "".join(rng.choice(chars) for _ in range(least + 4))


def test_every_format_kept_as_data_is_redacted_wherever_it_sits() -> None:
    from sessiontape.scrub import redact
    from sessiontape.scrub._ruleset import VENDOR_TOKENS

    rng = random.Random(20)
    assert len(VENDOR_TOKENS) >= 90
    for _source, kind, prefix, body, least, *_rule in VENDOR_TOKENS:
        token = _sample(prefix, body, least, rng)
        body_part = token[len(prefix) :]
        for text in (token, f"x {token} y", f'{{"t": "{token}"}}', f"/tmp/{token}/w", f"a={token}"):
            out = redact(text)
            assert body_part not in out, (kind, prefix, text, out)
            assert redact(out) == out, (prefix, out)
