"""Redaction in one function on the write path, the new shapes, and ``scrub --check``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sessiontape
from sessiontape.cassette import ErrorInfo, ProcessCall
from sessiontape.cli import main
from sessiontape.scrub import PathRoots, Scrubber, redact, scrub_entry

from ._secrets import SHAPES, leaked, pick

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sk" + "_live_" + "a1B2" * 6, "[REDACTED:stripe]"),
        ("key rk" + "_test_" + "a1B2" * 6, "key [REDACTED:stripe]"),
        ("h" + "f_" + "abcdEFGH" * 4 + "ij", "[REDACTED:huggingface]"),
        ("np" + "m_" + "a1B2" * 9, "[REDACTED:npm]"),
        # Random bodies: a placeholder (x * 60) or a published example (...EXAMPLE) is
        # kept, as gitleaks keeps it (tests/scrub/test_gitleaks_examples.py).
        ("AI" + "za" + "Sy" + "Q3v_8KpL2-Xm9Rt4Wz7Hb1Ny6Jc0Fd5Gs", "[REDACTED:google]"),
        ("AB" + "IA" + "Q7ZP3XK2M5VR6TLW", "[REDACTED:aws]"),
        (
            "py" + "pi-AgEIcHlwaS5vcmc" + "Zq8rT2vW5yB1dF4hK7mP0sU3xA6cE9gJ2nL5" * 2,
            "[REDACTED:pypi]",
        ),
        ("gl" + "pat-" + "a1B2c3D4e5F6g7H8i9J0", "[REDACTED:gitlab]"),
        (
            "S" + "G." + "Zq8rT2vW5yB1dF4hK7mP0s" + "." + "U3xA6cE9gJ2nL5" * 3 + "Q",
            "[REDACTED:sendgrid]",
        ),
        ("xa" + "pp-1-" + "A0123456-123-abc", "[REDACTED:slack]"),
        (
            "https://hooks." + "slack.com/services/T000/B000/" + "x" * 24,
            "https://hooks.slack.com/services/[REDACTED:slack-webhook]",
        ),
        (
            "token eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
            "token eyJhbGciOiJIUzI1NiJ9.[REDACTED:jwt]",
        ),
        (
            "aws configure set aws_secret_access_key "
            + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"
            + "0" * 10,
            "aws configure set aws_secret_access_key [REDACTED:aws]",
        ),
        (
            "kubectl create secret generic tls --from-literal=tls.key=-----BEGIN RSA PRIVATE "
            "KEY-----\nMIIEow\nAKCAQE==\n-----END RSA PRIVATE KEY-----",
            "kubectl create secret generic tls --from-literal=tls.key=-----BEGIN RSA PRIVATE "
            "KEY-----\n[REDACTED:private-key]\n-----END RSA PRIVATE KEY-----",
        ),
    ],
)
def test_new_shapes(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ask_live_events", "sk_live_x", "hf_token", "npm_config_cache=/tmp/x", "AIzaShort",
        "pypi-AgE", "version 1.2.3 of eyJ", "xapp-1", "SG.short", "v2.eyJunk",
        "see https://hooks.slack.com/", "aws_secret_access_key is read from the file",
    ],
)  # fmt: skip
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["aws", "configure", "set", "aws_secret_access_key", "wJal" + "rXUtn"],
            ["aws", "configure", "set", "aws_secret_access_key", "[REDACTED]"],
        ),
        (["git", "config", "user.pass", "pw"], ["git", "config", "user.pass", "[REDACTED]"]),
        (["gh", "secret", "set", "X"], None),
        (["cat", "secrets.json", "out"], None),
        (["git", "config", "credential.helper", "store"], None),
    ],
)  # fmt: skip
def test_argv_secret_config_keys(argv: list[str], expected: list[str] | None) -> None:
    assert Scrubber(None).argv(argv) == (argv if expected is None else expected)


def test_every_entry_is_scrubbed_on_the_write_path(tmp_path: Path) -> None:
    # A boundary that writes its entry unscrubbed still leaves no secret on disk.
    rng = random.Random(5)
    text, cores = SHAPES["stripe live secret (sk_live_)"](rng)
    path = tmp_path / "raw.jsonl"
    with sessiontape.record(path) as tape:
        recorder = tape._recorder  # type: ignore[attr-defined]
        opened = recorder.open()
        recorder.write(
            ProcessCall(
                seq=opened[0], ts_ns=opened[1], mono_ns=opened[2], argv=["x", text],
                cwd=f"/srv/{text}", env={"NOTE": text}, stdout=text, stderr=text, input=text,
                spawn_error=ErrorInfo(type="OSError", message=text, traceback=text),
            )
        )  # fmt: skip
    data = path.read_bytes()
    assert not leaked(data, cores)
    (call,) = sessiontape.load(path).entries_for("process")
    assert call.spawn_error == ErrorInfo(
        type="OSError", message="[REDACTED:stripe]", traceback="[REDACTED:stripe]"
    )


def test_error_messages_keep_their_paths(tmp_path: Path) -> None:
    # Replay raises recorded errors again: a path in their message stays the path it was.
    scrubber = Scrubber(PathRoots({"tmp": str(tmp_path)}))
    info = ErrorInfo(type="FileNotFoundError", message=f"[Errno 2] No such file: '{tmp_path}/x'")
    entry = ProcessCall(seq=1, ts_ns=1, mono_ns=1, argv=["x"], spawn_error=info, cwd=str(tmp_path))
    scrubbed = scrub_entry(entry, scrubber)
    assert isinstance(scrubbed, ProcessCall)
    assert scrubbed.spawn_error == info
    assert scrubbed.cwd == "{tmp}"


texts = st.text(alphabet=st.sampled_from(list(ALNUM + " _-.:=/@\"'\n{}")), max_size=120)
secret_texts = st.builds(
    lambda kind, seed, before, after: before + SHAPES[kind](random.Random(seed))[0] + after,
    st.sampled_from(sorted(SHAPES)),
    st.integers(0, 10**6),
    texts,
    texts,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(texts, secret_texts))
def test_scrubbing_is_idempotent(text: str) -> None:
    scrubber = Scrubber(PathRoots({"tmp": "/tmp", "repo": "/srv/app"}))
    once = scrubber.text(text)
    assert scrubber.text(once) == once
    assert Scrubber(PathRoots({"tmp": "/tmp", "repo": "/srv/app"})).text(once) == once
    assert redact(redact(text)) == redact(text)
    argv = scrubber.argv(["cmd", *text.split(" ")])
    assert scrubber.argv(argv) == argv


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(SHAPES)), st.integers(0, 10**6), texts, texts)
def test_every_shape_is_found_whatever_surrounds_it(
    kind: str, seed: int, before: str, after: str
) -> None:
    text, cores = SHAPES[kind](random.Random(seed))
    # Surrounded by a word break, as a secret in text is.
    assert not leaked(redact(f"{before} {text}\n{after}").encode(), cores)


def write_leaky(path: Path) -> list[str]:
    """A tape recorded without redaction, holding two secrets; returns them."""
    rng = random.Random(7)
    token = "gh" + "p_" + pick(rng, ALNUM, 36)
    key = "AK" + "IA" + pick(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    with sessiontape.record(path, redact=False, config={"note": token}) as tape:
        tape.finish(outcome={"key": key, "ok": True})
    return [token, key]


def test_scrub_check_lists_where_secrets_are_but_never_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leaky, clean = tmp_path / "leaky.jsonl", tmp_path / "clean.jsonl"
    secrets = write_leaky(leaky)
    with sessiontape.record(clean) as tape:
        tape.finish(outcome={"ok": True})
    before = leaky.read_bytes()
    assert main(["scrub", "--check", str(clean), str(leaky)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"{clean}: no secrets found.",
        f"{leaky}:1: seq 0: config.note holds a secret (github).",
        f"{leaky}:2: seq 1: outcome.key holds a secret (aws).",
        f"{leaky}: 2 secrets in 2 entries. Run 'sessiontape scrub --in-place {leaky}', and "
        "rotate the secrets.",
    ]
    assert not any(secret in out for secret in secrets)
    assert leaky.read_bytes() == before  # --check changes nothing
    assert main(["scrub", "--in-place", str(leaky)]) == 0
    assert main(["scrub", "--check", str(leaky)]) == 0


@pytest.mark.writes_invalid_tapes
def test_scrub_check_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a cassette\n")
    assert main(["scrub", "--check", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"sessiontape: error: {bad}:1: ")
    assert main(["scrub", "--check", str(bad), "--roots", "a=/x"]) == 2
    assert "--roots rewrites paths; it has no meaning with --check." in capsys.readouterr().err
    one, two = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    write_leaky(one)
    write_leaky(two)
    assert main(["scrub", "--in-place", str(one), str(two)]) == 2
    assert capsys.readouterr().err == (
        "sessiontape: error: -o/--in-place scrub one cassette at a time, got 2; give one "
        "PATH, or use --check to look at several.\n"
    )


@pytest.mark.writes_invalid_tapes
def test_validate_reports_secrets_by_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leaky = tmp_path / "leaky.jsonl"
    write_leaky(leaky)
    assert main(["validate", str(leaky)]) == 1
    out = capsys.readouterr().out
    assert f"{leaky}: seq 0: error: config.note holds a secret (github)." in out
    assert json.dumps(out)  # printable


# -- what the application says during a replay ----------------------------------------------

_GH: str = "ghp_" + "R3pl4yT0k3n" * 3 + "abc"


def test_a_replays_report_holds_no_secret_from_todays_run(tmp_path: Path) -> None:
    # A receipt (pytest --sessiontape-report) writes the report to disk: the requests the
    # tape cannot answer, and the exceptions they end workers with, are scrubbed there too.
    # A zoo shrink found the token of a `git remote add` URL in a candidate's receipt.
    import subprocess
    import sys
    import threading

    import msgspec

    def program(tape: sessiontape.Tape, extra: bool) -> None:
        def work() -> None:
            with sessiontape.worker("w1"), tape.patch_subprocess():
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                if extra:
                    url = f"https://x-access-token:{_GH}@github.com/acme/x.git"
                    subprocess.run(["git", "remote", "add", "origin", url], check=True)

        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        tape.finish(outcome="done")

    cassette = tmp_path / "t.jsonl"
    with sessiontape.record(cassette) as recording:
        program(recording, extra=False)
    with sessiontape.replay(cassette) as replaying:
        program(replaying, extra=True)
    report = replaying.report
    assert report is not None
    assert not report.ok
    kinds = [m.kind.value for m in report.mismatches]
    assert "application_error" in kinds, report.render()
    core = _GH[4:]
    assert core not in msgspec.json.encode(report).decode()
    assert core not in report.render()
