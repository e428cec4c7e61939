"""The scrubber: redaction then path placeholders, applied to every recorded value.

The recorder passes every payload through a :class:`Scrubber` before anything reaches
disk; replay passes today's requests through the same one, so both sides compare alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, final

from ._context import CONTEXT_MARK, is_placeholder, looks_random
from ._names import REDACTED_MARK, is_secret_config_key, is_secret_name, is_secret_option
from ._roots import LEAF_TYPES, PathRoots
from ._rules import keyword_secret, names_a_keyword

# Scrubber.__init__ takes a ``redact`` flag that would shadow the function.
from ._shapes import redact as redact_text

__all__ = ["Scrubber"]

# Texts up to this length are remembered, up to this many (at most a few MB).
_MEMO_MAX_CHARS: Final = 256
_MEMO_MAX_ENTRIES: Final = 8192
# Longer texts are remembered by content up to this length, and until the texts remembered
# hold this many characters in all (inputs and results: a few MB), when they are forgotten.
_LONG_MAX_CHARS: Final = 64 * 1024
_LONG_BUDGET_CHARS: Final = 2 * 1024 * 1024
# Results of this many recent scrubs (dicts and lists of data, texts too long to be
# remembered by content) are known by identity, so that the write path's final pass over
# an entry (scrub_entry) finds the values the boundary already scrubbed done at the cost
# of a dict lookup.
_RECENT_MAX: Final = 64
# An object's identity as a dict key: its address, as ``id`` gives it, but without the
# ``builtins.id`` audit event ``id`` raises. A recording adds an audit hook (to see
# processes started outside the interception, ``boundaries/_unseen.py``), which made each
# ``id`` call a call of Python code. ``object.__hash__`` is the address rotated, one to one;
# a hit is confirmed with ``is`` in any case.
_identity: Final = object.__hash__
# What a long option's name looks like (``--api-key``, ``--tls.key``).
_OPTION_NAME: Final = re.compile(r"[A-Za-z][\w.-]*\Z")


def _redact_all(obj: Any) -> Any:
    """Every string inside ``obj`` redacted (a placeholder, ``xxxx`` or ``<TOKEN>``, kept);
    numbers, booleans and None say no secret."""
    if isinstance(obj, str):
        return REDACTED_MARK if obj and not is_placeholder(obj) else obj
    if isinstance(obj, dict):
        return {k: _redact_all(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_redact_all(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_redact_all(v) for v in obj)
    return obj


# What the word after an argv word is: not a secret, a secret (after ``--token``), a
# secret if it reads as random (after ``-p``, ``-a``, ``Bearer``, ``token``), or a secret
# if a keyword rule takes it for one under this word's name (``--datadog``, ``TELEGRAM``).
_PLAIN: Final = 0
_SECRET: Final = 1
_IF_RANDOM: Final = 2
_IF_KEYWORD: Final = 3
# Words whose next word is a secret when it reads as random: short options taking a
# password (mysql -p, redis-cli -a, sshpass -p) and credential words.
_BEFORE_RANDOM: Final = frozenset(
    {"-p", "-a"} | {s for w in ("bearer", "token", "password", "key") for s in (w, w.title())}
)


# Authorization schemes, kept readable before the credential they announce.
_SCHEMES: Final = frozenset({"Bearer", "bearer", "Basic", "basic", "Token", "token"})


def _argv_word(text: Callable[[str], str], redact: bool, arg: str) -> tuple[str, int]:
    """One argv word scrubbed, and what the word after it is (``_PLAIN``, ...)."""
    if redact:
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg[2:].partition("=")
            # Only an option name is judged by its name: ``-----BEGIN ...`` is text.
            if _OPTION_NAME.match(name) is not None and is_secret_option(name):
                if not eq:
                    return text(arg), _SECRET
                if value:
                    return f"--{name}={REDACTED_MARK}", _PLAIN
        elif is_secret_config_key(arg):
            return text(arg), _SECRET
        elif arg in _BEFORE_RANDOM:
            return text(arg), _IF_RANDOM
        if 2 < len(arg) <= 64 and _NAME_WORD.match(arg) and names_a_keyword(arg):
            return text(arg), _IF_KEYWORD
    return text(arg), _PLAIN


# An argv word that may name the value after it (``--datadog-key``, ``TELEGRAM_BOT``).
_NAME_WORD: Final = re.compile(r"-{0,2}[A-Za-z][\w.-]*\Z")


def _value_after(
    arg: str, after: int, name: str, text: Callable[[str], str]
) -> tuple[str, int] | None:
    """What an argv word after a secret option or word (``name``) becomes, and what the
    word after it is; None when it is an ordinary word."""
    if after == _IF_KEYWORD:
        # A token a shape names keeps that name (scrubbed as any word); a value only a
        # keyword rule knows goes whole, named by that rule.
        mark = keyword_secret(name.lstrip("-"), arg) if text(arg) == arg else None
        return None if mark is None else (mark, _PLAIN)
    if is_placeholder(arg):
        return None
    if after == _SECRET:
        # Authorization: Bearer TOKEN: the scheme stays, the token goes.
        return (arg, _SECRET) if arg in _SCHEMES else (REDACTED_MARK, _PLAIN)
    return (CONTEXT_MARK, _PLAIN) if looks_random(arg) else None


def _named(redact: bool, name: str, value: str, text: Callable[[str], str]) -> str:
    """``value`` stored under ``name`` (an environment variable, a JSON key) scrubbed:
    redacted whole when the name says it is a secret, by its own name (``API_KEY``) or by
    a keyword rule's (``DATADOG=<40 alphanumerics>``); scrubbed as text else."""
    if redact and value and not is_placeholder(value):
        if is_secret_name(name):
            return REDACTED_MARK
        done = text(value)
        # A token a shape names (``AKIA...``) keeps that name; a value only a keyword
        # rule knows goes whole, named by that rule.
        if done == value and names_a_keyword(name):
            return keyword_secret(name, value) or done
        return done
    return text(value)


@final
class Scrubber:
    """What the recorder applies to every payload: redaction, then path placeholders.

    ``roots`` gives the placeholders (None: paths stay as they are). ``redact=False`` turns
    every redaction off. ``extra`` functions run last on every text, after the built-in
    redaction: that is how the ``sessiontape_scrubbers`` hook adds a project's own rules.
    They must be pure functions, as a text is scrubbed once and then remembered. The
    same scrubber scrubs today's requests on replay, so both sides compare alike.
    """

    __slots__ = (
        "_argv_memo",
        "_collapse",
        "_extra",
        "_keys",
        "_last_env",
        "_long",
        "_long_chars",
        "_memo",
        "_recent",
        "_redact",
        "_roots",
        "_secret_memo",
        "_steps",
        "_words",
    )

    def __init__(
        self,
        roots: PathRoots | None = None,
        *,
        redact: bool = True,
        extra: Sequence[Callable[[str], str]] = (),
    ) -> None:
        self._roots = roots
        self._redact = redact
        self._collapse: Callable[[str], str] | None = roots.collapse if roots is not None else None
        steps: list[Callable[[str], str]] = []
        if redact:
            steps.append(redact_text)
        if self._collapse is not None:
            steps.append(self._collapse)
        steps.extend(extra)
        self._steps = tuple(steps)
        self._extra = tuple(extra)
        # Short texts repeat endlessly (argv words, env values, JSON leaves): remembering
        # them makes a repeat one dict lookup instead of two regex scans. Bounded, and
        # safe across threads since each get or set is atomic; ``extra`` must be pure.
        self._memo: dict[str, str] = {}
        self._long: dict[str, str] = {}
        self._long_chars = 0
        self._argv_memo: dict[tuple[str, ...], list[str]] = {}
        # Each argv word scrubbed, and whether the word after it is a secret (``--token``).
        self._words: dict[str, tuple[str, int]] = {}
        # Dict keys that are not secret names, scrubbed (JSON documents repeat their keys).
        self._keys: dict[str, str] = {}
        # A program passes the same environment to call after call: the last one and its
        # scrubbed form, swapped as one tuple so that threads never see half of it.
        self._last_env: tuple[dict[str, str | None], dict[str, str | None]] | None = None
        self._secret_memo: dict[str, str] = {}
        self._recent: dict[int, object] = {}

    @property
    def roots(self) -> PathRoots | None:
        """The path roots this scrubber collapses, if any."""
        return self._roots

    def text(self, s: str) -> str:
        """``s`` with token-shaped secrets redacted, roots collapsed, then ``extra`` applied."""
        if len(s) <= _MEMO_MAX_CHARS:
            done = self._memo.get(s)
            if done is not None:
                return done
            out = s
            for step in self._steps:
                out = step(out)
            memo = self._memo
            if len(memo) >= _MEMO_MAX_ENTRIES:
                memo.clear()
            memo[s] = out
            memo[out] = out  # scrubbing is idempotent: the result scrubs to itself
            return out
        # Outputs repeat too (a status, a diff read again), and the write path's final pass
        # meets again the text the codec scrubbed: a long text is found by content for a
        # hash of it (0.2 us per KB if new, then kept in the str) where scanning it costs 1
        # to 10 us per KB. A result is remembered as its own result (scrubbing is
        # idempotent), so the final pass finds it at once, the same object.
        done = self._long.get(s)
        if done is not None:
            return done
        if len(s) > _LONG_MAX_CHARS and self.scrubbed(s):
            return s  # a text too long to remember that this scrubber just produced
        done = s
        for step in self._steps:
            done = step(done)
        if len(s) <= _LONG_MAX_CHARS:
            long = self._long
            if self._long_chars > _LONG_BUDGET_CHARS:
                long.clear()
                self._long_chars = 0
            long[s] = done
            long[done] = done
            self._long_chars += len(s) + len(done)
        else:
            self._remember(done)
        return done

    def secrets(self, s: str) -> str:
        """``s`` with secrets redacted (and ``extra`` applied), paths left as they are.

        For recorded exception messages and tracebacks: replay raises them again and
        compares them with today's, so a path in them must stay the path it was.
        """
        done = self._secret_memo.get(s)
        if done is not None:
            return done
        out = redact_text(s) if self._redact else s
        for step in self._extra:
            out = step(out)
        memo = self._secret_memo
        if len(memo) >= _MEMO_MAX_ENTRIES:
            memo.clear()
        if len(s) <= _MEMO_MAX_CHARS:
            memo[s] = out
            memo[out] = out
        return out

    def _remember(self, obj: object) -> None:
        """Know ``obj`` (a result of this scrubber) by identity for a while."""
        recent = self._recent
        if len(recent) >= _RECENT_MAX:
            recent.clear()
        recent[_identity(obj)] = obj

    def scrubbed(self, obj: object) -> bool:
        """Whether ``obj`` is one of the results this scrubber just returned: a dict or list
        of :meth:`data`, a text too long for :meth:`text` to remember by content."""
        return self._recent.get(_identity(obj)) is obj

    def argv(self, argv: Sequence[str]) -> list[str]:
        """Each argument scrubbed as text; the value of a secret long option is redacted.

        ``--token abc`` gives ``["--token", "[REDACTED]"]`` and ``--api-key=abc`` gives
        ``"--api-key=[REDACTED]"``; so does the word after a secret configuration key of
        several words (``aws configure set aws_secret_access_key KEY``). After ``-p``,
        ``-a``, ``Bearer`` or ``token``, a word that reads as random is redacted.

        Each argv's scrubbed form is remembered (bounded: a repeat costs a dict lookup)
        and shared between the repeats; callers do not change it.
        """
        key = tuple(argv)
        done = self._argv_memo.get(key)
        if done is not None:
            return done
        out: list[str] = []
        value_is_secret = _PLAIN
        words = self._words
        previous = ""
        for arg in argv:
            after = value_is_secret and arg and not arg.startswith("-")
            found = after and _value_after(arg, value_is_secret, previous, self.text)
            previous = arg
            if found:
                out.append(found[0])
                value_is_secret = found[1]
                continue
            word = words.get(arg)
            if word is None:
                word = _argv_word(self.text, self._redact, arg)
                if len(arg) <= _MEMO_MAX_CHARS:
                    if len(words) >= _MEMO_MAX_ENTRIES:
                        words.clear()
                    words[arg] = word
            out.append(word[0])
            value_is_secret = word[1]
        memo = self._argv_memo
        if len(memo) >= _MEMO_MAX_ENTRIES:
            memo.clear()
        if sum(map(len, key)) <= _MEMO_MAX_CHARS * 4:
            memo[key] = out
            memo[tuple(out)] = out  # idempotent: the result scrubs to itself
        return out

    def env(self, env: Mapping[str, str | None]) -> dict[str, str | None]:
        """Values of secret-named variables become ``[REDACTED]``; the rest are scrubbed as text.

        An empty value stays empty: it holds nothing, and saying it was unset helps. In an
        environment recorded as a delta, ``None`` marks a variable removed and stays.
        """
        last = self._last_env
        if last is not None and (last[0] == env or last[1] == env):
            # The same environment again, or its scrubbed form (scrubbing is idempotent).
            return dict(last[1])
        text = self.text
        scrubbed: dict[str, str | None] = {
            name: value if value is None else _named(self._redact, name, value, text)
            for name, value in env.items()
        }
        self._last_env = (dict(env), scrubbed)
        return dict(scrubbed)

    def data_like(self, obj: Any, recorded: Any) -> Any:
        """``data(obj)``, reusing every part of ``recorded`` that ``obj`` equals.

        ``recorded`` is an earlier ``data()`` result, the request or result on a tape.
        Scrubbing is idempotent (``extra`` functions must be too), so a part of ``obj``
        equal to the matching part of ``recorded`` scrubs to itself; only the parts that
        differ are scrubbed. Replay compares today's request with the recorded one this
        way: a 1 KB prompt that differs in one path costs one short string's scrub.
        """
        if obj == recorded:
            return recorded
        if type(obj) is dict and type(recorded) is dict and obj.keys() == recorded.keys():
            out: dict[Any, Any] = {}
            redact = self._redact
            for key, value in obj.items():
                old = recorded[key]
                if value == old:
                    out[key] = old
                elif redact and isinstance(key, str) and is_secret_name(key):
                    out[key] = _redact_all(value)  # as data() does under a secret key
                else:
                    out[key] = self.data_like(value, old)
            return out
        if type(obj) is list and type(recorded) is list and len(obj) == len(recorded):
            return [
                old if value == old else self.data_like(value, old)
                for value, old in zip(obj, recorded, strict=True)
            ]
        return self.data(obj)

    def data(self, obj: Any) -> Any:
        """JSON-like ``obj`` (dict, list, tuple, str, int, float, bool, None) scrubbed.

        Every string, dict keys included, is scrubbed as text; under a key that looks secret
        (``"password"``, ``"apiKey"``) every string becomes ``[REDACTED]``. Other objects are
        returned as they are: convert them to plain data first.
        """
        if isinstance(obj, (dict, list)):
            if self.scrubbed(obj):
                return obj
            out = self._data(obj)
            self._remember(out)
            return out
        return self._data(obj)

    def _data(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        # Every agent and store request and result goes through here, on record and on
        # replay: plain text and numbers are handled inline rather than through a
        # recursive call each, and text's memo is looked up here to save the call on a hit.
        text = self.text
        memo = self._memo
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            keys = self._keys
            for key, value in obj.items():
                scrubbed_key = keys.get(key)
                if scrubbed_key is None:
                    if not isinstance(key, str):
                        scrubbed_key = key
                    elif self._redact and is_secret_name(key):
                        out[text(key)] = _redact_all(value)
                        continue
                    elif self._redact and type(value) is str and names_a_keyword(key):
                        # Never remembered: its value is judged by its name every time.
                        out[text(key)] = _named(True, key, value, text)
                        continue
                    else:
                        scrubbed_key = text(key)
                        if len(key) <= _MEMO_MAX_CHARS:
                            if len(keys) >= _MEMO_MAX_ENTRIES:
                                keys.clear()
                            keys[key] = scrubbed_key
                kind = type(value)
                if kind is str:
                    done = memo.get(value)
                    out[scrubbed_key] = text(value) if done is None else done
                elif kind in LEAF_TYPES:
                    out[scrubbed_key] = value
                else:
                    out[scrubbed_key] = self._data(value)
            return out
        if isinstance(obj, list):
            return [
                (done if (done := memo.get(v)) is not None else text(v))
                if type(v) is str
                else v
                if type(v) in LEAF_TYPES
                else self._data(v)
                for v in obj
            ]
        if isinstance(obj, tuple):
            return tuple(self._data(v) for v in obj)
        return obj

    def path(self, p: str) -> str:
        """``p`` with its root collapsed to a placeholder; nothing redacted."""
        return self._collapse(p) if self._collapse is not None else p
