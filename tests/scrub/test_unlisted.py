"""Secrets of shapes nobody listed (issue 20, section 2), and what must not be taken for one.

The findings first, each where the issue found it: a Docker Hub token in every place the
scrubber covers, a Google OAuth access token in a directory name, an AWS session token
inside the entrypoint string, bare hex credentials after ``Bearer`` and ``sessionid=``.
Then the shape-free detector (random values in a credential context) and the false
positives it must not make on an ordinary session. Secrets are assembled at run time.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest

from sessiontape.scrub import PathRoots, Scrubber, redact

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def docker_token(rng: random.Random) -> tuple[str, str]:
    body = pick(rng, B64URL, 27)
    return "dckr" + "_pat_" + body, body


def test_a_docker_hub_token_is_redacted_in_every_place_the_scrubber_covers() -> None:
    rng = random.Random(1)
    s = Scrubber()
    token, body = docker_token(rng)
    seen = [
        s.text(token),
        s.text(f"docker login -u ci -p {token}"),
        s.secrets(f"RuntimeError: login failed for {token}"),
        " ".join(s.argv(["docker", "login", "--password-stdin", token])),
        " ".join(s.argv(["sh", "-c", f"echo {token} | docker login --password-stdin"])),
        json.dumps(s.env({"NOTE": token, "DOCKER_CONFIG": f"/tmp/{token}"})),
        json.dumps(s.data({"result": {"answer": f"use {token}"}, "args": [token]})),
        json.dumps(s.data({"config": {"registry": {"note": token}}})),
        s.text(f"/home/ci/work/{token}/src"),
        s.text(f"python -m app --note {token}"),
    ]
    assert all(body not in out for out in seen), seen
    # Known by its shape everywhere, after -p too (the shape names what the detector finds).
    assert all("[REDACTED:dockerhub]" in out for out in seen)


def test_a_google_oauth_token_in_a_directory_name(tmp_path: Path) -> None:
    rng = random.Random(2)
    body = pick(rng, B64URL, 140)
    cwd = tmp_path / ("ya29" + ".a0" + body) / "repo"
    s = Scrubber(PathRoots({"tmp": tmp_path}))
    out = s.text(str(cwd))
    assert body not in out
    assert out.endswith("[REDACTED:google-oauth]/repo")


def test_an_aws_session_token_inside_the_entrypoint_string() -> None:
    rng = random.Random(3)
    body = pick(rng, ALNUM + "+/", 320) + "=="
    entry = f"app --region eu-west-1 --note {'IQoJb3JpZ2lu' + 'X2VjE' + body} --dry-run"
    out = Scrubber().text(entry)
    assert body not in out
    assert out == "app --region eu-west-1 --note [REDACTED:aws-session] --dry-run"


@pytest.mark.parametrize(
    "template",
    [
        "Bearer {}",
        "bearer {}",
        "BEARER {}",
        "curl -H 'authorization: bearer {}' https://api.example.com",
        "sessionid={}",
        "Cookie: sessionid={}; Path=/",
        "Set-Cookie: PHPSESSID={}; HttpOnly",
        '{{"sessionid": "{}"}}',
    ],
)
def test_bare_hex_credentials_after_bearer_and_sessionid(template: str) -> None:
    value = pick(random.Random(template), HEX, 32)
    out = redact(template.format(value))
    assert value not in out
    assert redact(out) == out


@pytest.mark.parametrize(
    "template",
    [
        "api key {}",
        "API key: {}",
        "the apiKey is {}",
        "secret key {}",
        "my token {}",
        "Token {}",
        "password is {}",
        "PASSWORD {}",
        "mysql -uroot -p{} appdb",
        "mysql -u root -p {} appdb",
        "redis-cli -h cache -a {} ping",
        "sshpass -p {} ssh host",
        "git clone https://{}@git.example.com/o/r.git",
        "ACME_CREDENTIALS={}",
    ],
)
@pytest.mark.parametrize("alphabet", [ALNUM, HEX, ALNUM + "+/", B64URL])
def test_random_values_in_a_credential_context(template: str, alphabet: str) -> None:
    rng = random.Random(template + alphabet)
    for n in (16, 24, 40):
        value = "zqx" + "_live_" + pick(rng, alphabet, n) if n == 24 else pick(rng, alphabet, n)
        out = redact(template.format(value))
        assert value not in out, out
        assert redact(out) == out


def test_short_options_and_credential_words_in_argv() -> None:
    rng = random.Random(5)
    password, token = pick(rng, ALNUM, 16), pick(rng, HEX, 40)
    s = Scrubber()
    assert s.argv(["mysql", "-p", password, "db"]) == [
        "mysql", "-p", "[REDACTED:high-entropy]", "db"
    ]  # fmt: skip
    assert s.argv(["redis-cli", "-a", password]) == ["redis-cli", "-a", "[REDACTED:high-entropy]"]
    assert s.argv(["curl", "-H", "Authorization:", "Bearer", token]) == [
        "curl", "-H", "Authorization:", "Bearer", "[REDACTED]"
    ]  # fmt: skip
    assert s.argv([f"-p{password}"]) == ["-p[REDACTED:high-entropy]"]
    # What the same options mean elsewhere stays.
    for argv in (
        ["mkdir", "-p", "build/output"],
        ["ssh", "-p", "2222", "host"],
        ["docker", "run", "-p", "8080:80", "nginx"],
        ["git", "commit", "-a", "-m", "fix the retry loop"],
        ["ls", "-a", "/tmp/work_dir"],
        ["cp", "-a", "src_dir", "dst_dir"],
        ["uname", "-a"],
        ["claude", "-p", "work on t1", "--output-format", "stream-json"],
    ):
        assert s.argv(argv) == argv


def test_an_ordinary_session_has_nothing_redacted() -> None:
    # The same texts go through a real recording in tests/safety/test_secrets_corpus.py.
    from safety._ordinary import ordinary_texts

    for seed in range(20):
        for text in ordinary_texts(random.Random(seed)):
            assert redact(text) == text


@pytest.mark.parametrize(
    "value",
    [
        "zqx_live_4fQ9xK2mPz7LwR3v",
        "3f2a9c1e8b7d4e2f9a1b2c3d4e5f6a7b",
        "S3cr3tPw9xQ2mZ7v",
        "kX9/qL2+vB7mR4tY",
    ],
)
def test_random_values_look_random(value: str) -> None:
    from sessiontape.scrub._context import looks_random

    assert looks_random(value)


@pytest.mark.parametrize(
    "value",
    [
        "hunter2",  # too short to tell
        "3f2a9c1e-8b7d-4e2f-9a1b-2c3d4e5f6a7b",  # a UUID
        "1234567890123",  # a number
        "/usr/local/bin/python3",  # a path
        "src/app/core_module.py",
        "reset_successfully_completed",  # an identifier
        "AuthenticationFailedError",
        "claude-sonnet-4-5",
        "v1.2.3-rc.4",
        "${API_TOKEN}",  # a variable
        "deadbeefdeadbeef",  # hex of low entropy
        "[REDACTED:github]",
    ],
)
def test_words_paths_numbers_and_placeholders_do_not(value: str) -> None:
    from sessiontape.scrub._context import looks_random

    assert not looks_random(value)
