"""The secret corpus: fake secrets of every shape sessiontape redacts, made at run time.

Every secret is assembled from pieces and random characters when a test runs, so this
file holds no string a secret scanner would flag. ``SHAPES`` maps a kind to a maker that
returns ``(text, cores)``: the text to plant (the secret in its usual context: a header,
an assignment, a URL) and the parts that must never reach disk.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

Maker = Callable[[random.Random], tuple[str, list[str]]]

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
B64URL = ALNUM + "-_"


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    """``n`` random characters of ``alphabet``."""
    return "".join(rng.choice(alphabet) for _ in range(n))


def _token(prefix: str, alphabet: str, n: int) -> Maker:
    def make(rng: random.Random) -> tuple[str, list[str]]:
        body = pick(rng, alphabet, n)
        return prefix + body, [body]

    return make


def _github_fine_grained(rng: random.Random) -> tuple[str, list[str]]:
    body = pick(rng, ALNUM, 22) + "_" + pick(rng, ALNUM, 59)
    return "github" + "_pat_" + body, [body]


def _aws_secret(rng: random.Random) -> str:
    return pick(rng, ALNUM, 17) + "/" + pick(rng, ALNUM, 11) + "+" + pick(rng, ALNUM, 10)


def _aws_assignment(rng: random.Random) -> tuple[str, list[str]]:
    key = _aws_secret(rng)
    return f"aws_secret_access_key = {key}", [key]


def _aws_credentials_file(rng: random.Random) -> tuple[str, list[str]]:
    key_id = "AK" + "IA" + pick(rng, UPPER, 16)
    key = _aws_secret(rng)
    text = f"[default]\naws_access_key_id = {key_id}\naws_secret_access_key = {key}\n"
    return text, [key_id[4:], key]


def _aws_next_to_name(rng: random.Random) -> tuple[str, list[str]]:
    key = _aws_secret(rng)
    return f"aws configure set aws_secret_access_key {key}", [key]


def _slack(prefix: str) -> Maker:
    def make(rng: random.Random) -> tuple[str, list[str]]:
        body = f"{pick(rng, string.digits, 12)}-{pick(rng, string.digits, 13)}-"
        body += pick(rng, ALNUM, 24)
        return prefix + body, [body]

    return make


def _slack_webhook(rng: random.Random) -> tuple[str, list[str]]:
    path = f"T{pick(rng, UPPER, 8)}/B{pick(rng, UPPER, 10)}/{pick(rng, ALNUM, 24)}"
    return "https://hooks." + "slack.com/services/" + path, [path]


def _openai_legacy(rng: random.Random) -> tuple[str, list[str]]:
    body = pick(rng, ALNUM, 20) + "T3Blbk" + "FJ" + pick(rng, ALNUM, 20)
    return "sk" + "-" + body, [body]


def _openai_project(rng: random.Random) -> tuple[str, list[str]]:
    body = pick(rng, B64URL, 58) + "T3Blbk" + "FJ" + pick(rng, B64URL, 58)
    return "sk" + "-proj-" + body, [body]


def _anthropic(rng: random.Random) -> tuple[str, list[str]]:
    body = pick(rng, B64URL, 93) + "AA"
    return "sk" + "-ant-api03-" + body, [body]


def _sendgrid(rng: random.Random) -> tuple[str, list[str]]:
    first, second = pick(rng, B64URL, 22), pick(rng, B64URL, 43)
    return "S" + f"G.{first}.{second}", [first, second]


def _b64url(data: str) -> str:
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


def _jwt_parts(rng: random.Random) -> tuple[str, str]:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}))
    payload = _b64url(json.dumps({"sub": pick(rng, ALNUM, 12), "exp": 1900000000}))
    signature = pick(rng, B64URL, 43)
    return header, f"{payload}.{signature}"


def _jwt(rng: random.Random) -> tuple[str, list[str]]:
    header, rest = _jwt_parts(rng)
    return f"{header}.{rest}", [rest]


def _bearer_jwt(rng: random.Random) -> tuple[str, list[str]]:
    header, rest = _jwt_parts(rng)
    return f"Authorization: Bearer {header}.{rest}", [rest]


def _pem(label: str) -> Maker:
    def make(rng: random.Random) -> tuple[str, list[str]]:
        lines = [pick(rng, ALNUM, 64) for _ in range(3)] + [pick(rng, ALNUM, 20) + "=="]
        text = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"
        return text, lines

    return make


def _pem_from_literal(rng: random.Random) -> tuple[str, list[str]]:
    text, lines = _pem("RSA PRIVATE KEY")(rng)
    return f"--from-literal=tls.key={text}", lines


def _header(scheme: str, body_alphabet: str, n: int) -> Maker:
    def make(rng: random.Random) -> tuple[str, list[str]]:
        body = pick(rng, body_alphabet, n)
        return f"Authorization: {scheme} {body}", [body]

    return make


def _basic(rng: random.Random) -> tuple[str, list[str]]:
    password = pick(rng, ALNUM, 16)
    token = base64.b64encode(f"deploy:{password}".encode()).decode()
    return f"Authorization: Basic {token}", [token]


def _url(template: str) -> Maker:
    def make(rng: random.Random) -> tuple[str, list[str]]:
        password = pick(rng, ALNUM, 18)
        return template.format(password), [password]

    return make


def _named(template: str) -> Maker:
    def make(rng: random.Random) -> tuple[str, list[str]]:
        value = pick(rng, ALNUM, 32)
        return template.format(value), [value]

    return make


#: Every shape, by kind. Sources: gitleaks config/gitleaks.toml rule ids, detect-secrets
#: plugins (RELIABILITY.md has the table).
SHAPES: dict[str, Maker] = {
    "github classic (ghp_)": _token("gh" + "p_", ALNUM, 36),
    "github oauth (gho_)": _token("gh" + "o_", ALNUM, 36),
    "github user-to-server (ghu_)": _token("gh" + "u_", ALNUM, 36),
    "github server-to-server (ghs_)": _token("gh" + "s_", ALNUM, 36),
    "github refresh (ghr_)": _token("gh" + "r_", ALNUM, 36),
    "github fine-grained (github_pat_)": _github_fine_grained,
    "aws access key id (AKIA)": _token("AK" + "IA", UPPER, 16),
    "aws temporary key id (ASIA)": _token("AS" + "IA", UPPER, 16),
    "aws secret access key (assignment)": _aws_assignment,
    "aws secret access key (~/.aws/credentials)": _aws_credentials_file,
    "aws secret access key (next to its name)": _aws_next_to_name,
    "google api key (AIza)": _token("AI" + "za", B64URL, 35),
    "stripe live secret (sk_live_)": _token("sk" + "_live_", ALNUM, 24),
    "stripe restricted (rk_live_)": _token("rk" + "_live_", ALNUM, 24),
    "stripe test secret (sk_test_)": _token("sk" + "_test_", ALNUM, 24),
    "slack bot (xoxb-)": _slack("xo" + "xb-"),
    "slack user (xoxp-)": _slack("xo" + "xp-"),
    "slack webhook url": _slack_webhook,
    "openai legacy (sk-)": _openai_legacy,
    "openai project (sk-proj-)": _openai_project,
    "anthropic (sk-ant-)": _anthropic,
    "hugging face (hf_)": _token("h" + "f_", string.ascii_letters, 34),
    "npm (npm_)": _token("np" + "m_", ALNUM, 36),
    "pypi upload token": _token("py" + "pi-AgEIcHlwaS5vcmc", B64URL, 70),
    "gitlab (glpat-)": _token("gl" + "pat-", B64URL, 20),
    "sendgrid (SG.)": _sendgrid,
    "jwt": _jwt,
    "jwt as bearer header": _bearer_jwt,
    "pem rsa private key": _pem("RSA PRIVATE KEY"),
    "pem ec private key": _pem("EC PRIVATE KEY"),
    "pem openssh private key": _pem("OPENSSH PRIVATE KEY"),
    "pem pkcs8 private key": _pem("PRIVATE KEY"),
    "pem key as --from-literal=tls.key=": _pem_from_literal,
    "bearer header (opaque token)": _header("Bearer", ALNUM, 32),
    "basic auth header": _basic,
    "postgres dsn password": _url("postgres://app:{}@db.internal:5432/prod"),
    "mongodb+srv password": _url("mongodb+srv://admin:{}@cluster0.example.net/db"),
    "redis url password": _url("redis://:{}@cache.internal:6379/0"),
    "secret name, env style (DB_PASSWORD=)": _named("DB_PASS" + "WORD={}"),
    "secret name, json key (client_secret)": _named('{{"client_sec' + 'ret": "{}"}}'),
    "secret name, yaml key (api_key:)": _named("api_k" + "ey: {}"),
}


def _aws_session_token(rng: random.Random) -> tuple[str, list[str]]:
    body = pick(rng, ALNUM + "+/", 180) + "=="  # under 255: it also names a directory
    return "IQoJb3JpZ2lu" + "X2VjE" + body, [body]


def _telegram(rng: random.Random) -> tuple[str, list[str]]:
    body = "AA" + pick(rng, B64URL, 33)
    return f"bot token {pick(rng, string.digits, 10)}:{body}", [body]


#: Formats the issue found on disk, now listed: vendor prefixes that platforms publish
#: (RELIABILITY.md, section 5, has where each comes from).
LISTED_LATER: dict[str, Maker] = {
    "docker hub (dckr_pat_)": _token("dck" + "r_pat_", B64URL, 27),
    "google oauth access token (ya29.)": _token("ya" + "29.a0", B64URL, 120),
    "aws session token (IQoJb3JpZ2luX2Vj)": _aws_session_token,
    "shopify (shpat_)": _token("shp" + "at_", "0123456789abcdef", 32),
    "shopify shared secret (shpss_)": _token("shp" + "ss_", "0123456789abcdef", 32),
    "gitlab runner (glrt-)": _token("gl" + "rt-", B64URL, 20),
    "hashicorp vault (hvs.)": _token("hv" + "s.", B64URL, 95),
    "doppler (dp.pt.)": _token("dp" + ".pt.", ALNUM, 43),
    "new relic (NRAK-)": _token("NR" + "AK-", UPPER, 27),
    "grafana cloud (glc_)": _token("gl" + "c_", ALNUM, 40),
    "heroku (HRKU-AA)": _token("HR" + "KU-AA", B64URL, 58),
    "atlassian (ATATT3)": _token("ATA" + "TT3", B64URL + "=", 186),
    "vercel (vcp_)": _token("vc" + "p_", ALNUM, 24),
    "digitalocean (dop_v1_)": _token("do" + "p_v1_", "0123456789abcdef", 64),
    "telegram bot token": _telegram,
}


def _context(template: str, alphabet: str, n: int) -> Maker:
    """A random value of ``n`` characters of ``alphabet`` where a credential goes."""

    def make(rng: random.Random) -> tuple[str, list[str]]:
        value = pick(rng, alphabet, n)
        return template.format(value), [value]

    return make


def _unknown_vendor(template: str) -> Maker:
    """A token of a vendor prefix no list names, in a credential context."""

    def make(rng: random.Random) -> tuple[str, list[str]]:
        body = pick(rng, ALNUM, 32)
        return template.format("zqx" + "_live_" + body), [body]

    return make


HEX = "0123456789abcdef"
B64 = ALNUM + "+/"

#: Secrets no list names: unknown vendor prefixes and random values, found only by the
#: context they sit in (a credential word, a short option, a URL's user part).
UNLISTED: dict[str, Maker] = {
    "unknown vendor after 'api key'": _unknown_vendor("api key {}"),
    "unknown vendor after 'token:'": _unknown_vendor("token: {}"),
    "unknown vendor in an env assignment": _unknown_vendor("export ACME_API_KEY={}"),
    "random base64 after 'Bearer'": _context("Bearer {}", B64, 40),
    "random hex after 'Bearer'": _context("Bearer {}", HEX, 40),
    "random hex after 'Bearer' in prose": _context("the header was Bearer {} then", HEX, 32),
    "random hex after 'sessionid='": _context("Cookie sent: sessionid={}; Path=/", HEX, 32),
    "random hex in a cookie jar line": _context("sessionid={}", HEX, 32),
    "random base64 after 'password is'": _context("the password is {}", B64, 20),
    "random value after 'secret key'": _context("secret key {}", ALNUM, 40),
    "random value after 'mysql -p'": _context("mysql -uroot -p{} appdb", ALNUM, 16),
    "random value after 'mysql -p '": _context("mysql -u root -p {} appdb", ALNUM, 16),
    "random value after 'redis-cli -a'": _context("redis-cli -h cache -a {} ping", ALNUM, 24),
    "random value as a URL's user": _context("git clone https://{}@git.example.com/o", ALNUM, 32),
    "random value after '--token='": _context("deploy --token={}", B64URL, 30),
    "random value after 'X-Api-Key:'": _context("X-Api-Key: {}", ALNUM, 32),
    "random value after 'PASSWORD'": _context("PASSWORD {}", ALNUM, 18),
    "random value after 'apiKey'": _context('const apiKey = "{}";', ALNUM, 32),
}


def forms(core: str) -> list[bytes]:
    """How ``core`` could appear in a file: as is, JSON-escaped, with escaped slashes."""
    found = {core, json.dumps(core)[1:-1], core.replace("/", "\\/")}
    return [f.encode() for f in found]


def leaked(data: bytes, cores: list[str]) -> bool:
    """Whether any core of a planted secret is in ``data``."""
    return any(form in data for core in cores for form in forms(core))
