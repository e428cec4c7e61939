"""Scrubbing: secrets redacted and paths made portable before anything reaches disk."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from sessiontape._errors import UsageError
from sessiontape.scrub import (
    REDACTED_MARK,
    SECRET_ENV_NAME,
    PathRoots,
    Scrubber,
    contains_secret,
    expand_data,
    is_secret_name,
    redact,
    redaction_mark,
)

# Fake secrets, assembled so that no scanner mistakes this file for a leak.
GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF"
# Not AWS's documented example key (AKIAIOSFODNN7EXAMPLE): gitleaks' allowlist keeps
# that one, and so does sessiontape.
AKIA = "AKIA" + "Q7ZP3XK2M5VR6TLW"
ASIA = "ASIA" + "Y34FZKBOKMUTVV7A"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
OPENAI = "sk-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCD"
OPENAI_PROJ = "sk-proj-" + "Abc123_def456-ghi789jkl012mno345"
ANTHROPIC = "sk-ant-api03-" + "Abc123_def456-ghi789jkl012mno345pqr678"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n4lgOEePzNm0tRgeLezV6ffAt0gunVTLw\n"

SHA1 = "3f2a9c1e5b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a"
UUID = "550e8400-e29b-41d4-a716-446655440000"


# -- token shapes -------------------------------------------------------------------

TOKEN_CASES = [
    pytest.param(GHP, "[REDACTED:github]", id="github-ghp"),
    *(
        pytest.param(
            f"gh{c}_" + "Zq8rT2vW5yB1dF4hK7mP0sU3xA6cE9gJ2nL5",
            "[REDACTED:github]",
            id=f"github-gh{c}",
        )
        for c in "ousr"
    ),
    pytest.param(GITHUB_PAT, "[REDACTED:github]", id="github-pat"),
    pytest.param(AKIA, "[REDACTED:aws]", id="aws-akia"),
    pytest.param(ASIA, "[REDACTED:aws]", id="aws-asia"),
    pytest.param(OPENAI, "[REDACTED:openai]", id="openai"),
    pytest.param(OPENAI_PROJ, "[REDACTED:openai]", id="openai-proj"),
    pytest.param(ANTHROPIC, "[REDACTED:anthropic]", id="anthropic"),
    pytest.param(SLACK, "[REDACTED:slack]", id="slack"),
    pytest.param(f"Bearer {JWT}", "Bearer [REDACTED:bearer]", id="bearer"),
    pytest.param(
        f"Authorization: Bearer {JWT}",
        "Authorization: Bearer [REDACTED:authorization]",
        id="authorization-bearer",
    ),
    pytest.param(
        "authorization: Basic dXNlcjpwYXNz",
        "authorization: Basic [REDACTED:authorization]",
        id="authorization-basic",
    ),
    pytest.param(
        '"Cookie: session=abc123; theme=dark"',
        '"Cookie: [REDACTED:cookie]"',
        id="cookie-header",
    ),
    pytest.param(
        "https://deploy:s3cr3t@git.example.com/org/repo.git",
        "https://deploy:[REDACTED:url-password]@git.example.com/org/repo.git",
        id="url-password",
    ),
    pytest.param("password=hunter2", "password=[REDACTED]", id="password-assignment"),
    pytest.param("GITHUB_TOKEN=abc123", "GITHUB_TOKEN=[REDACTED]", id="env-assignment"),
    pytest.param('TOKEN="a b c"', 'TOKEN="[REDACTED]"', id="quoted-assignment"),
    pytest.param("token: abc123", "token: [REDACTED]", id="yaml-assignment"),
    pytest.param('"api_key": "abc123"', '"api_key": "[REDACTED]"', id="json-assignment"),
    pytest.param("clientSecret = 'abc123'", "clientSecret = '[REDACTED]'", id="camel-assignment"),
    pytest.param(
        f"aws_secret_access_key = {AWS_SECRET}",
        "aws_secret_access_key = [REDACTED:aws]",
        id="aws-secret-assignment",
    ),
    pytest.param(
        f'"SecretAccessKey": "{AWS_SECRET}"',
        '"SecretAccessKey": "[REDACTED:aws]"',
        id="aws-secret-json",
    ),
    pytest.param("--token abc123", "--token [REDACTED]", id="option-space"),
    pytest.param("--api-key=abc123", "--api-key=[REDACTED]", id="option-equals"),
    pytest.param(
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}-----END RSA PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:private-key]\n-----END RSA PRIVATE KEY-----",
        id="pem",
    ),
]


@pytest.mark.parametrize(("secret", "expected"), TOKEN_CASES)
def test_token_shapes_are_redacted_in_text(secret: str, expected: str) -> None:
    text = f"before {secret} after"
    assert redact(text) == f"before {expected} after"
    assert Scrubber(None).text(text) == f"before {expected} after"


@pytest.mark.parametrize(("secret", "expected"), TOKEN_CASES)
def test_token_shapes_are_redacted_in_argv(secret: str, expected: str) -> None:
    argv = ["tool", "run", secret, "--verbose"]
    assert Scrubber(None).argv(argv) == ["tool", "run", expected, "--verbose"]


@pytest.mark.parametrize(("secret", "expected"), TOKEN_CASES)
def test_token_shapes_are_redacted_in_multiline_stdout(secret: str, expected: str) -> None:
    stdout = "Cloning into 'repo'...\n{}\nremote: done.\nok: 3 files\n"
    assert redact(stdout.format(secret)) == stdout.format(expected)


@pytest.mark.parametrize(("secret", "expected"), TOKEN_CASES)
def test_redaction_is_idempotent_and_leaves_nothing_behind(secret: str, expected: str) -> None:
    assert contains_secret(secret)
    assert not contains_secret(expected)
    assert redact(expected) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Cookie: session=abc; theme=dark\nnext line",
            "Cookie: [REDACTED:cookie]\nnext line",
        ),
        (
            "Authorization: token-v2 a1b2 c3d4\nnext",
            "Authorization: [REDACTED:authorization]\nnext",
        ),
        (
            "Authorization: Bearer abc123 trailing",
            "Authorization: Bearer [REDACTED:authorization] trailing",
        ),
        ("Set-Cookie: id=a3fWa; Secure", "Set-Cookie: [REDACTED:cookie]"),
    ],
)  # fmt: skip
def test_header_values_without_a_scheme_go_to_the_end_of_the_line(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_several_secrets_in_one_text() -> None:
    text = f"a={GHP} b={AKIA} {ANTHROPIC} --token x"
    assert (
        redact(text)
        == "a=[REDACTED:github] b=[REDACTED:aws] [REDACTED:anthropic] --token [REDACTED]"
    )


def test_json_inside_a_json_string() -> None:
    text = '{"msg": "{\\"token\\": \\"abc\\", \\"n\\": 1}"}'
    assert redact(text) == '{"msg": "{\\"token\\": \\"[REDACTED]\\", \\"n\\": 1}"}'


def test_a_secret_behind_a_non_secret_key_is_still_found() -> None:
    assert redact(f"tokens={GHP}") == "tokens=[REDACTED:github]"


def test_redaction_marks() -> None:
    assert REDACTED_MARK == "[REDACTED]"
    assert redaction_mark() == "[REDACTED]"
    assert redaction_mark("github") == "[REDACTED:github]"


# -- what must stay untouched ----------------------------------------------------------

GIT_STATUS = """\
On branch main
Your branch is up to date with 'origin/main'.

Changes not staged for commit:
  (use "git add <file>..." to update what will be committed)
  modified:   src/app/worker.py
  modified:   tests/test_worker.py
"""

GIT_LOG = f"""\
commit {SHA1}
Merge: 1a2b3c4 5d6e7f8
Author: Alice Example <alice@example.com>
Date:   Mon May 6 12:00:00 2024 +0200

    Merge branch 'feature/token-refresh' into main (keyboard shortcuts, monkey patch)
"""

CLAUDE_JSON = (
    '{"type":"result","subtype":"success","is_error":false,"duration_ms":1234,'
    f'"result":"Done.","session_id":"{UUID}","total_cost_usd":0.0123,'
    '"usage":{"input_tokens":12,"output_tokens":40,"cache_read_input_tokens":0}}'
)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(GIT_STATUS, id="git-status"),
        pytest.param(GIT_LOG, id="git-log"),
        pytest.param(CLAUDE_JSON, id="claude-json"),
        pytest.param(SHA1, id="sha1"),
        pytest.param(f"HEAD is now at {SHA1[:7]} fix", id="short-sha"),
        pytest.param(UUID, id="uuid"),
        pytest.param("To https://github.com/org/repo.git\n   1a2b3c4..5d6e7f8  main -> main"),
        pytest.param("git@github.com:org/repo.git"),
        pytest.param("task-abcdefghijklmnopqrstuvwxyz0123 and risk-assessment-2024-05-06"),
        pytest.param("The ASIAN market; AKIA is short"),
        pytest.param("Bearer authentication is required"),
        pytest.param('{"token_type": "bearer", "expires_in": 3600}'),
        pytest.param('{"key": "task-1", "tokens": 3, "max_tokens": 4096, "token_limit": 8}'),
        pytest.param('{"password": null, "token": true, "secret": 12}', id="json-literals"),
        pytest.param("monkey=3 keyboard=us PWD=/work OLDPWD=/ version: 2"),
        pytest.param("api_key = os.environ['API_KEY']", id="code"),
        pytest.param("password=$DB_PASSWORD token=${TOKEN}", id="variable-references"),
        pytest.param("git merge --no-ff --password-file /run/pw --with-token main"),
        pytest.param("tool --verbose-mode high --monkey 3 --author me"),
        pytest.param("passed: 3, bypass=1, author: me"),
        pytest.param(""),
    ],
)
def test_non_secrets_are_untouched(text: str) -> None:
    assert redact(text) == text
    assert not contains_secret(text)


# -- private keys ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}-----END OPENSSH PRIVATE KEY-----\n",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n[REDACTED:private-key]\n"
            "-----END OPENSSH PRIVATE KEY-----\n",
            id="openssh",
        ),
        pytest.param(
            f"-----BEGIN PRIVATE KEY-----\r\n{PEM_BODY}-----END PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\r\n[REDACTED:private-key]\n-----END PRIVATE KEY-----",
            id="pkcs8-crlf",
        ),
        pytest.param(
            f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}",
            "-----BEGIN EC PRIVATE KEY-----\n[REDACTED:private-key]",
            id="truncated",
        ),
        pytest.param(
            '{"data": "-----BEGIN PRIVATE KEY-----\\nMIIEv\\nQ==\\n-----END PRIVATE KEY-----\\n"}',
            '{"data": "-----BEGIN PRIVATE KEY-----\\n[REDACTED:private-key]\\n'
            '-----END PRIVATE KEY-----\\n"}',
            id="inside-json",
        ),
        pytest.param(
            '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEv\\n-----END PRIVATE KEY-----\\n",'
            ' "client_email": "bot@example.com"}',
            # A PEM key is left to the private-key shape even under a secret name.
            '{"private_key": "-----BEGIN PRIVATE KEY-----\\n[REDACTED:private-key]\\n'
            '-----END PRIVATE KEY-----\\n", "client_email": "bot@example.com"}',
            id="json-secret-key",
        ),
        pytest.param(
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
            id="certificate-stays",
        ),
    ],
)
def test_pem_private_keys(text: str, expected: str) -> None:
    assert redact(text) == expected


# -- argv ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["gh", "--token", "abc"], ["gh", "--token", REDACTED_MARK]),
        (["tool", "--api-key=abc", "x"], ["tool", "--api-key=[REDACTED]", "x"]),
        (
            ["t", "--client-secret", "s", "--name", "n"],
            ["t", "--client-secret", "[REDACTED]", "--name", "n"],
        ),
        (["tool", "--password"], ["tool", "--password"]),
        (["tool", "--token", "--verbose"], ["tool", "--token", "--verbose"]),
        (["tool", "--token", ""], ["tool", "--token", ""]),
        (["tool", "--token="], ["tool", "--token="]),
        (
            ["docker", "login", "--password-stdin", "r.io"],
            ["docker", "login", "--password-stdin", "r.io"],
        ),
        (["tool", "--token-file", "/run/t"], ["tool", "--token-file", "/run/t"]),
        (["tool", "--no-auth", "file"], ["tool", "--no-auth", "file"]),
        (["gh", "auth", "login", "--with-token"], ["gh", "auth", "login", "--with-token"]),
        (["mysql", "-p", "secret"], ["mysql", "-p", "secret"]),
        (["git", "log", "--author", "alice"], ["git", "log", "--author", "alice"]),
        (["sh", "-c", "deploy --token abc && ok"], ["sh", "-c", "deploy --token [REDACTED] && ok"]),
    ],
)
def test_argv_secret_options(argv: list[str], expected: list[str]) -> None:
    assert Scrubber(None).argv(argv) == expected


def test_argv_collapses_paths_and_keeps_its_input() -> None:
    argv = ["git", "-C", "/srv/app/src", "status"]
    scrubber = Scrubber(PathRoots({"repo": "/srv/app"}))
    assert scrubber.argv(argv) == ["git", "-C", "{repo}/src", "status"]
    assert argv == ["git", "-C", "/srv/app/src", "status"]


def test_argv_without_redaction() -> None:
    argv = ["gh", "--token", "abc", "--api-key=k", GHP]
    assert Scrubber(None, redact=False).argv(argv) == argv


# -- environment and secret names ------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "SSH_KEY", "GITHUB_TOKEN",
        "GH_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "APIKEY", "DB_PASSWORD", "PGPASSWORD",
        "MYSQL_PWD", "DB_PASS", "PASS", "SMTP_PASSWD", "PASSPHRASE", "AWS_SESSION_TOKEN",
        "SESSION_ID", "HTTP_COOKIE", "GOOGLE_APPLICATION_CREDENTIALS", "PRIVATE_KEY",
        "WEBHOOK_SIGNATURE", "SENTRY_DSN", "AUTH", "OAUTH_TOKEN", "AUTHORIZATION",
        "CLIENT_SECRET", "apiKey", "accessToken", "clientSecret", "password", "x-api-key",
        "authToken", "GHTOKEN", "token", "session",
    ],
)  # fmt: skip
def test_secret_names(name: str) -> None:
    assert SECRET_ENV_NAME.search(name) is not None
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH", "HOME", "PWD", "OLDPWD", "LANG", "TERM", "TMPDIR", "KEYBOARD", "MONKEY",
        "HOTKEY", "TOKENIZERS_PARALLELISM", "input_tokens", "max_tokens", "token_count",
        "token_type", "GIT_AUTHOR_NAME", "AUTHOR", "SSH_AUTH_SOCK", "XAUTHORITY",
        "XDG_SESSION_TYPE", "DBUS_SESSION_BUS_ADDRESS", "GIT_ASKPASS", "BYPASS", "PASSAGE",
        "key", "keys", "sort_key", "cacheKey", "primary_key",
    ],
)  # fmt: skip
def test_non_secret_names(name: str) -> None:
    assert SECRET_ENV_NAME.search(name) is None
    assert not is_secret_name(name)


def test_env_redacts_by_name_and_scrubs_the_rest() -> None:
    scrubber = Scrubber(PathRoots({"home": "/home/alice"}))
    env = {
        "PATH": "/home/alice/.local/bin:/usr/bin",
        "GITHUB_TOKEN": "abc",
        "MY_PASSWORD": "hunter2",
        "EMPTY_TOKEN": "",
        "NOTE": f"uses {GHP}",
        "LANG": "C.UTF-8",
    }
    assert scrubber.env(env) == {
        "PATH": "{home}/.local/bin:/usr/bin",
        "GITHUB_TOKEN": "[REDACTED]",
        "MY_PASSWORD": "[REDACTED]",
        "EMPTY_TOKEN": "",
        "NOTE": "uses [REDACTED:github]",
        "LANG": "C.UTF-8",
    }


def test_env_results_are_fresh_and_follow_changes() -> None:
    scrubber = Scrubber(None)
    env = {"A": "1", "API_KEY": "k"}
    first = scrubber.env(env)
    first["A"] = "changed"
    assert scrubber.env(env) == {"A": "1", "API_KEY": "[REDACTED]"}
    env["A"] = "2"
    assert scrubber.env(env) == {"A": "2", "API_KEY": "[REDACTED]"}


def test_env_without_redaction_still_collapses() -> None:
    scrubber = Scrubber(PathRoots({"home": "/home/alice"}), redact=False)
    assert scrubber.env({"API_KEY": "k", "HOME": "/home/alice"}) == {
        "API_KEY": "k",
        "HOME": "{home}",
    }


# -- path roots ------------------------------------------------------------------------


@pytest.fixture
def roots() -> PathRoots:
    return PathRoots({"repo": "/srv/app", "home": "/home/alice", "tmp": "/tmp"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/srv/app", "{repo}"),
        ("/srv/app/", "{repo}/"),
        ("/srv/app/src/main.py", "{repo}/src/main.py"),
        ("cd /srv/app && ls /home/alice/.cache", "cd {repo} && ls {home}/.cache"),
        ("PATH=/home/alice/bin:/usr/bin", "PATH={home}/bin:/usr/bin"),
        ("--dir=/tmp/x", "--dir={tmp}/x"),
        ("'/srv/app' \"/tmp\" (/tmp) [/tmp]", "'{repo}' \"{tmp}\" ({tmp}) [{tmp}]"),
        ("file:///srv/app/x", "file://{repo}/x"),
        ("/srv/app/a.py:12: error", "{repo}/a.py:12: error"),
        ("/srv/application/x", "/srv/application/x"),
        ("/srv/app.bak /srv/app-old /srv/app_2", "/srv/app.bak /srv/app-old /srv/app_2"),
        ("/srv/app~ /srv/app@2 /srv/app+x", "/srv/app~ /srv/app@2 /srv/app+x"),
        ("/var/tmp/x /data/srv/app", "/var/tmp/x /data/srv/app"),
        ("no paths here", "no paths here"),
        ("", ""),
    ],
)  # fmt: skip
def test_collapse(roots: PathRoots, text: str, expected: str) -> None:
    assert roots.collapse(text) == expected


def test_collapse_is_bounded_by_path_components() -> None:
    roots = PathRoots({"home": "/root"})
    assert roots.collapse("/rootfs/etc /root/x /root") == "/rootfs/etc {home}/x {home}"


def test_longest_root_wins_whatever_the_order() -> None:
    roots = PathRoots({"tmp": "/tmp", "repo": "/tmp/x/repo"})
    assert roots.collapse("/tmp/x/repo/src /tmp/x/other /tmp/x/repository") == (
        "{repo}/src {tmp}/x/other {tmp}/x/repository"
    )


def test_expand(roots: PathRoots) -> None:
    assert roots.expand("{repo}/src:{home}:{tmp}/x") == "/srv/app/src:/home/alice:/tmp/x"
    assert roots.expand("{unknown}/x {repo") == "{unknown}/x {repo"
    assert roots.expand("no braces") == "no braces"


@pytest.mark.parametrize(
    "text",
    ["/srv/app/src/a.py", "x=/home/alice/.config y=/tmp/f", "/srv/apple", "plain", "{other}/x"],
)
def test_collapse_expand_round_trip(roots: PathRoots, text: str) -> None:
    assert roots.expand(roots.collapse(text)) == text


def test_expand_uses_todays_roots(roots: PathRoots) -> None:
    today = PathRoots({"repo": "/new/repo"})
    assert today.expand(roots.collapse("/srv/app/src")) == "/new/repo/src"


def test_symlinked_root_matches_both_spellings(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    roots = PathRoots({"work": str(link)})
    assert roots.collapse(f"{link}/a {real}/b") == "{work}/a {work}/b"
    assert roots.expand("{work}/b") == f"{link}/b"
    assert roots.as_dict() == {"work": str(link)}


def test_empty_and_slash_roots_are_ignored() -> None:
    roots = PathRoots({"home": "", "root": "/", "also": "//"})
    assert roots.as_dict() == {}
    assert roots.collapse("/etc/hosts") == "/etc/hosts"
    assert roots.expand("{home}/x") == "{home}/x"
    assert PathRoots({}).collapse("/x") == "/x"


def test_roots_are_normalised() -> None:
    roots = PathRoots({"repo": "/srv/app/", "data": "/srv/../data"})
    assert roots.as_dict() == {"repo": "/srv/app", "data": "/data"}


def test_windows_roots_match_both_separators() -> None:
    roots = PathRoots({"home": "C:\\Users\\al"})
    assert roots.collapse("C:\\Users\\al\\x C:/Users/al/y") == "{home}\\x {home}/y"
    assert PathRoots({"drive": "C:\\"}).as_dict() == {}


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"repo": "relative/dir"}, "relative path"),
        ({"my root": "/srv"}, "cannot be a placeholder"),
        ({"": "/srv"}, "cannot be a placeholder"),
    ],
)
def test_bad_roots_are_refused(mapping: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        PathRoots(mapping)


@pytest.fixture
def home_and_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    home = tmp_path / "home"
    temp = tmp_path / "temp"
    home.mkdir()
    temp.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return str(home), str(temp)


def test_default_roots_with_a_given_repo(home_and_tmp: tuple[str, str]) -> None:
    home, temp = home_and_tmp
    assert PathRoots.default("/srv/app").as_dict() == {
        "repo": "/srv/app",
        "home": home,
        "tmp": temp,
    }


@pytest.mark.parametrize("git_is_a_file", [False, True])
def test_default_repo_is_the_git_checkout_around_cwd(
    tmp_path: Path, home_and_tmp: tuple[str, str], monkeypatch: pytest.MonkeyPatch,
    git_is_a_file: bool,
) -> None:  # fmt: skip
    project = tmp_path / "project"
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    if git_is_a_file:  # a worktree: .git is a file pointing at the main checkout
        (project / ".git").write_text("gitdir: /elsewhere\n")
    else:
        (project / ".git").mkdir()
    monkeypatch.chdir(deep)
    assert PathRoots.default().as_dict()["repo"] == str(project)


def test_default_repo_without_git_is_cwd(
    tmp_path: Path, home_and_tmp: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    if any((parent / ".git").exists() for parent in plain.parents):
        pytest.skip("the temporary directory lies inside a git checkout")
    assert PathRoots.default().as_dict()["repo"] == os.getcwd()


def test_default_roots_with_extra_roots(home_and_tmp: tuple[str, str]) -> None:
    _, temp = home_and_tmp
    roots = PathRoots.default({"repo": "/srv/app", "work": "/srv/work", "home": ""})
    assert roots.as_dict() == {"repo": "/srv/app", "tmp": temp, "work": "/srv/work"}


def test_roots_equality() -> None:
    assert PathRoots({"a": "/x/"}) == PathRoots({"a": "/x"})
    assert PathRoots({"a": "/x"}) != PathRoots({"a": "/y"})
    assert repr(PathRoots({"a": "/x"})) == "PathRoots({'a': '/x'})"


# -- the scrubber ----------------------------------------------------------------------


def test_text_redacts_then_collapses_then_runs_extra() -> None:
    seen: list[str] = []

    def spy(s: str) -> str:
        seen.append(s)
        return s.replace("db.internal", "[REDACTED:host]")

    scrubber = Scrubber(PathRoots({"repo": "/srv/app"}), extra=[spy])
    text = f"push {GHP} from /srv/app to db.internal"
    assert scrubber.text(text) == "push [REDACTED:github] from {repo} to [REDACTED:host]"
    assert seen == ["push [REDACTED:github] from {repo} to db.internal"]
    # Asking again gives the same answer.
    assert scrubber.text(text) == "push [REDACTED:github] from {repo} to [REDACTED:host]"


def test_text_without_redaction_or_roots() -> None:
    assert Scrubber(None, redact=False).text(f"x {GHP} /srv/app") == f"x {GHP} /srv/app"
    assert Scrubber(None).roots is None


def test_long_texts_are_scrubbed_too() -> None:
    line = "worker-2 ran git status in /srv/app\n"
    text = line * 500 + f"token={GHP}\n"
    expected = "worker-2 ran git status in {repo}\n" * 500 + "token=[REDACTED]\n"
    assert Scrubber(PathRoots({"repo": "/srv/app"})).text(text) == expected


def test_path_collapses_without_redacting() -> None:
    scrubber = Scrubber(PathRoots({"repo": "/srv/app"}))
    assert scrubber.path("/srv/app/password=x") == "{repo}/password=x"
    assert Scrubber(None).path("/srv/app") == "/srv/app"


def test_data_recursion() -> None:
    scrubber = Scrubber(PathRoots({"repo": "/srv/app"}))
    marker = object()
    data = {
        "path": "/srv/app/src",
        "password": "hunter2",
        "nested": [{"apiKey": "k", "n": 1}, ("/srv/app", None, True, 1.5)],
        "/srv/app/x": "ok",
        "credentials": {"user": "bob", "ids": [1, "a"], "active": True, "note": None},
        "token_count": 5,
        "note": f"see {GHP}",
        3: "/srv/app",
        "empty_token": "",
        "object": marker,
    }
    assert scrubber.data(data) == {
        "path": "{repo}/src",
        "password": "[REDACTED]",
        "nested": [{"apiKey": "[REDACTED]", "n": 1}, ("{repo}", None, True, 1.5)],
        "{repo}/x": "ok",
        "credentials": {
            "user": REDACTED_MARK,
            "ids": [1, REDACTED_MARK],
            "active": True,
            "note": None,
        },
        "token_count": 5,
        "note": "see [REDACTED:github]",
        3: "{repo}",
        "empty_token": "",
        "object": marker,
    }
    assert data["password"] == "hunter2"


@pytest.mark.parametrize("leaf", [None, True, 0, 1.5, "plain"])
def test_data_leaves(leaf: object) -> None:
    assert Scrubber(None).data(leaf) == leaf


def test_data_without_redaction_keeps_secret_keys() -> None:
    scrubber = Scrubber(PathRoots({"repo": "/srv/app"}), redact=False)
    assert scrubber.data({"password": "/srv/app/pw"}) == {"password": "{repo}/pw"}


def test_expand_data() -> None:
    roots = PathRoots({"repo": "/new/repo"})
    data = {"{repo}/a": ["{repo}", ("{repo}/b", 1)], "n": None, "x": "{other}"}
    assert expand_data(data, roots) == {
        "/new/repo/a": ["/new/repo", ("/new/repo/b", 1)],
        "n": None,
        "x": "{other}",
    }


def test_scrub_then_expand_data_round_trip() -> None:
    roots = PathRoots({"repo": "/srv/app", "home": "/home/alice"})
    data = {"cwd": "/srv/app", "files": ["/home/alice/a", "/srv/app/b"], "n": 2}
    assert expand_data(Scrubber(roots).data(data), roots) == data


def test_data_like_gives_what_data_gives() -> None:
    """Scrubbing guided by a recorded value must equal scrubbing from scratch."""
    roots = PathRoots({"repo": "/srv/app"})
    scrub = Scrubber(roots)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    recorded_source = {
        "prompt": "edit /srv/app/src/a.py please " + "x" * 500,
        "worktree": "/srv/app/wt/1",
        "api_key": "old-secret",
        "items": [1, "/srv/app/b", {"token": token}],
        "n": 3,
    }
    recorded = scrub.data(recorded_source)
    variants = [
        recorded_source,
        {**recorded_source, "worktree": "/srv/app/wt/2"},
        {**recorded_source, "api_key": "new-secret"},
        {**recorded_source, "items": [1, "/srv/app/c", {"token": token + "X"}]},
        {**recorded_source, "items": [1]},
        {**recorded_source, "extra": "/srv/app/x"},
        {**recorded_source, "prompt": f"use {token}"},
        ["not", "a", "dict"],
        "plain /srv/app/x",
    ]
    for today in variants:
        assert scrub.data_like(today, recorded) == scrub.data(today), today
    # The recorded value itself is returned when nothing differs (no work done).
    assert scrub.data_like(recorded, recorded) is recorded


# -- the rules compile on first use, from any thread ----------------------------------------

_FIRST_USE = r"""
import sys, threading
from sessiontape.scrub import Scrubber

texts = sys.argv[1:]
barrier = threading.Barrier(16)
results, errors = [], []

def scrub():
    barrier.wait()
    try:
        results.append([Scrubber(None).text(t) for t in texts])
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")

threads = [threading.Thread(target=scrub) for _ in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
once = [Scrubber(None).text(t) for t in texts]
assert not errors, errors
assert all(r == once for r in results), "a thread scrubbed otherwise than one thread alone"
"""


def test_sixteen_threads_meeting_the_secret_rules_first_scrub_alike() -> None:
    # The keyword and body rules compile when first met. Two threads meeting a body rule
    # at once once compiled the text of the other's compiled pattern (re.error:
    # "unterminated character set"), and a worker of the zoo's threads program died of it.
    import subprocess
    import sys

    texts = [
        f"git config http.extraHeader 'AUTHORIZATION: bearer {'ghp_' + 'x7Kq2' * 7}a'",
        *(f"before {secret} after" for secret, _ in (c.values for c in TOKEN_CASES)),
        "export password=Zq8vN3pLx2Wm9Rt4 api_key: 'k3Jd9LmQ2vX8pW4nT6sY'",
    ]
    for _ in range(20):  # each a fresh interpreter: the rules compile once per process
        done = subprocess.run(
            [sys.executable, "-c", _FIRST_USE, *texts], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
