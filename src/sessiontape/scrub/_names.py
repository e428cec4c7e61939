"""Secret *names*: the variables, options and keys whose values are secrets.

A name is split into words by ``_``, ``-``, ``.``, digits and camelCase humps, so that
``API_KEY``, ``api-key`` and ``apiKey`` all hold the word KEY while ``KEYBOARD`` and
``MONKEY`` do not. A value found by its name becomes :data:`REDACTED_MARK`.
"""

from __future__ import annotations

import functools
import re
from typing import Final

__all__ = [
    "REDACTED_MARK",
    "SECRET_ENV_NAME",
    "is_known_not_secret",
    "is_secret_config_key",
    "is_secret_name",
    "is_secret_option",
    "redaction_mark",
]

#: What a value found by its secret *name* (env var, option, dict key, assignment) becomes.
#: Token-shaped secrets become ``[REDACTED:<kind>]`` (see :func:`redaction_mark`); both
#: start with ``"[REDACTED"``.
REDACTED_MARK: Final = "[REDACTED]"


def redaction_mark(kind: str | None = None) -> str:
    """The text a redacted secret is replaced with: ``[REDACTED]`` or ``[REDACTED:<kind>]``."""
    return REDACTED_MARK if kind is None else f"[REDACTED:{kind}]"


# MONKEY is deliberately *not* secret: glued words are only recognised for the usual
# prefixes (APIKEY, ACCESSKEY, ...). Words that are unmistakable wherever they occur
# (PASSWORD, SECRET, CREDENTIAL, ...) match inside glued names too.

_WORD_START: Final = r"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))"
_WORD_END: Final = r"(?:(?![A-Za-z])|(?<=[a-z])(?=[A-Z]))"

_SECRET_WORDS: Final = (
    # Unmistakable wherever they occur: DBPASSWORD, clientSecret, GOOGLE_CREDENTIALS.
    r"(?i:password|passwd|passphrase|secret|credential|cookie|private|signature)"
    # TOKEN must end a word (TOKENIZERS_PARALLELISM and input_tokens are not secret) but
    # may be glued behind another word (GHTOKEN, AUTHTOKEN, accessToken).
    rf"|(?i:token){_WORD_END}"
    # KEY is a word of its own or glued behind a usual prefix; KEYBOARD, MONKEY are not.
    rf"|(?:{_WORD_START}|(?i:api|access|auth|app|client|license|master|signing|encryption"
    rf"|ssh|gpg|pgp))(?i:keys?){_WORD_END}"
    # Short words only as words of their own: BYPASS, AUTHOR, PWDX are not secret. PWD alone
    # is the working directory and is excluded below.
    rf"|{_WORD_START}(?i:pass|pwd|o?auth(?:orization)?|session(?:id)?|dsn){_WORD_END}"
    # Session cookies by their usual names: PHPSESSID, JSESSIONID, sessid.
    rf"|{_WORD_START}(?i:(?:php|j)?sess(?:ion)?id){_WORD_END}"
)

# Whole names that hold a secret word yet are well known not to be secret: the shell's
# working directory, desktop-session plumbing, identifiers called "key", token counts, and
# the names gitleaks' generic rule lets go (its allowlist): keys of indexes and schemas,
# public keys and tokens, a key's id, name, length or size, key-press events, CSRF tokens.
_KNOWN_NOT_SECRET: Final = (
    r"(?i:issuerkeyhash|keyvaulttostoresecrets"
    r"|.*?(?:sort|cache|primary|foreign|partition|routing|lookup|idempotency|dedupe?|group"
    r"|hash|range|shard|object|row|hot|bucket|idx|natural|pub|public|schema|sequence)"
    r"[_.-]?keys?"
    # Not key_id: an access key's id (AWS_ACCESS_KEY_ID) is half a credential.
    r"|.*?key[_.-]?(?:alias|board|code|frame|length|mesh|name|pair|press(?:ed)?|ring"
    r"|selector|signature|size|stone|storetype|word|up|down|left|right)(?:[_.-]?(?:event|s))?"
    r"|.*?key[_.-]?vault[_.-]?(?:id|name)"
    r"|.*?secrets?[_.-]?(?:length|name|size|id)s?"
    r"|.*?credentials?[_.-]?ids?"
    r"|.*?(?:csrf|public)[_.-]?tokens?"
    r"|.*?tokens?[_.-]?(?:count|counts|usage|limit|limits|budget|type|estimate)s?)"
)
_NOT_SECRET_NAMES: Final = (
    r"(?i:pwd|key|keys|ssh_auth_sock|gpg_agent_info|desktop_session|session_manager"
    rf"|xdg_session_[a-z_]+|dbus_session_bus_address)|{_KNOWN_NOT_SECRET}"
)

#: Matches environment variable names (and dict keys, option names) that hold secrets:
#: TOKEN, KEY, SECRET, PASSWORD, PASSWD, PASS, AUTH, COOKIE, CREDENTIAL, SESSION, PRIVATE,
#: SIGNATURE, DSN as words of the name, in any case. Use ``SECRET_ENV_NAME.search(name)``.
SECRET_ENV_NAME: Final[re.Pattern[str]] = re.compile(
    rf"^(?!(?:{_NOT_SECRET_NAMES})\Z).*?(?:{_SECRET_WORDS})", re.DOTALL
)


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a variable, option or key called ``name`` holds a secret (see ``SECRET_ENV_NAME``).

    Cached: environments and JSON documents repeat the same few hundred names.
    """
    return SECRET_ENV_NAME.search(name) is not None


# Options whose value names where a secret lives rather than holding it, or that are flags
# taking no value at all: ``--password-file PATH``, ``--password-stdin``, ``--no-auth``,
# ``gh auth login --with-token``.
_INDIRECT_OPTION: Final = re.compile(
    r"^(?:no|with|without)-|[._-](?:file|path|dir|env|stdin|cmd|command|helper)$", re.IGNORECASE
)
# A configuration key given as a word of its own on a command line, the secret its next
# word: ``aws configure set aws_secret_access_key KEY``, ``git config user.password PW``.
# Only keys of two or more words count (``secret`` alone is a subcommand: ``gh secret``),
# and never a path or a file name (``secrets.json``, ``tls.key``: the word after is not it).
_CONFIG_KEY: Final = re.compile(
    r"(?![\w.:-]*\.(?:json|ya?ml|txt|pem|key|crt|cer|env|ini|toml|cfg|conf|p12|pfx|gpg|asc)\Z)"
    r"[A-Za-z_][\w.:-]*[._:-][\w.:-]*\Z",
    re.IGNORECASE,
)


_NOT_SECRET: Final = re.compile(rf"{_KNOWN_NOT_SECRET}\Z", re.DOTALL)


def is_known_not_secret(name: str) -> bool:
    """Whether ``name``, a name of several words, holds a secret word yet is known not to
    name a secret (``primaryKey``, ``key_length``, ``publicToken``): for the judges that
    find a value by the word before it (``key`` alone is still a credential word there)."""
    return _NOT_SECRET.match(name) is not None


def is_secret_option(name: str) -> bool:
    """Whether the value given to the long option ``--name`` is a secret."""
    return is_secret_name(name) and _INDIRECT_OPTION.search(name) is None


def is_secret_config_key(word: str) -> bool:
    """Whether the command-line word after ``word`` is a secret: ``word`` is a
    configuration key of several words naming a secret (``aws_secret_access_key``)."""
    return _CONFIG_KEY.match(word) is not None and is_secret_option(word)
