"""Payloads on tape: the recording levels and how stdin/stdout/stderr are stored and served.

A payload is kept as plain text, as exact bytes (base64) or as a digest only, depending on
the level and its size; :class:`PayloadCodec` turns values into those forms and back.
"""

from __future__ import annotations

import base64
import enum
import hashlib
from collections.abc import Callable
from typing import Final

import msgspec

from .._errors import UsageError
from ._entries import Blob, ExactBytes, Payload
from ._sidecar import Sidecar

__all__ = [
    "DEFAULT_MAX_INLINE_BYTES",
    "Level",
    "PayloadCodec",
    "argv_form",
    "digest",
    "env_form",
    "exact_bytes",
    "exact_form",
    "is_text",
]

DEFAULT_MAX_INLINE_BYTES: Final = 64 * 1024


class Level(str, enum.Enum):
    """How much a recording keeps.

    ``minimal`` keeps metadata and timing only, ``standard`` adds sha256 digests of every
    payload, ``full`` keeps payloads themselves: only ``full`` tapes replay.
    """

    MINIMAL = "minimal"
    STANDARD = "standard"
    FULL = "full"

    @classmethod
    def parse(cls, value: str | Level) -> Level:
        """``Level`` from its name, with an error listing the valid ones."""
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(repr(m.value) for m in cls)
            raise UsageError(f"unknown recording level {value!r}; use one of {valid}.") from None


def digest(raw: bytes) -> str:
    """``"sha256:<hex>"`` of ``raw``, the form a :class:`Blob` stores."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


# -- argv and environment values that are not UTF-8 -------------------------------------
#
# POSIX allows any bytes in argv and the environment; Python hands them to the program as
# strs with surrogate escapes (``os.fsdecode``), which JSON cannot hold. Such a value is
# stored readable in its field (each byte that is not UTF-8 written ``\xNN``) and exactly,
# as base64, beside it (``ProcessCall.argv_b64``, ``env_b64``, ``env_names_b64``).


def is_text(value: str) -> bool:
    """Whether ``value`` is valid Unicode text (JSON holds it as it is)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def exact_form(value: str) -> tuple[str, str | None]:
    """``value`` as a cassette holds it: ``(value, None)`` for text; else its readable
    form and the base64 of its exact bytes.

    A lone surrogate that no bytes decode to (not a surrogate escape) has no exact bytes:
    it is kept readable only (no process can be given it: the spawn refuses it).
    """
    if is_text(value):
        return value, None
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("ascii", "replace"), None
    return raw.decode("utf-8", "backslashreplace"), base64.b64encode(raw).decode("ascii")


def argv_form(argv: list[str]) -> tuple[list[str], dict[int, str] | None]:
    """``argv`` as a cassette holds it, and the exact bytes of the arguments that are not
    UTF-8 by index (``None`` when there are none). Every recorded call asks: an all-ASCII
    argv, the common case, is told by one join and one scan at C speed."""
    if "".join(argv).isascii() or all(is_text(arg) for arg in argv):
        return argv, None
    readable: list[str] = []
    exact: dict[int, str] = {}
    for index, arg in enumerate(argv):
        shown, b64 = exact_form(arg)
        readable.append(shown)
        if b64 is not None:
            exact[index] = b64
    return readable, exact or None


def env_form(
    env: dict[str, str | None],
) -> tuple[dict[str, str | None], dict[str, str] | None, dict[str, str] | None]:
    """``env`` as a cassette holds it, the exact bytes of the values that are not UTF-8,
    and those of the names that are not, both by the name as the first holds it."""
    if ("".join(env).isascii() and "".join(filter(None, env.values())).isascii()) or all(
        is_text(k) and (v is None or is_text(v)) for k, v in env.items()
    ):
        return env, None, None
    readable: dict[str, str | None] = {}
    values: dict[str, str] = {}
    names: dict[str, str] = {}
    for key, value in env.items():
        name, name_b64 = exact_form(key)
        if name_b64 is not None:
            names[name] = name_b64
        if value is None:
            readable[name] = None
            continue
        shown, b64 = exact_form(value)
        readable[name] = shown
        if b64 is not None:
            values[name] = b64
    return readable, values or None, names or None


def exact_bytes(
    argv: list[str], env: dict[str, str | None] | None
) -> tuple[list[str], dict[str, str | None] | None, ExactBytes | None]:
    """A process call's ``argv`` and ``env`` as a cassette holds them, and the exact bytes
    of their values that are not UTF-8 (``None`` when all are text: one scan)."""
    argv, argv_b64 = argv_form(argv)
    env_b64 = names_b64 = None
    if env is not None:
        env, env_b64, names_b64 = env_form(env)
    if argv_b64 is None and env_b64 is None and names_b64 is None:
        return argv, env, None
    return argv, env, ExactBytes(argv=argv_b64, env=env_b64, env_names=names_b64)


#: What level ``standard`` stores for an empty payload: its digest.
_EMPTY_DIGEST: Final = Blob(size=0, sha256=digest(b""), truncated=True)

#: Level ``standard`` remembers the digests of the outputs it saw (a status, a diff read
#: again), up to this many characters or bytes of them in all, then starts afresh.
_DIGEST_MEMO_BUDGET: Final = 2 * 1024 * 1024


class PayloadCodec:
    """Turns stdin/stdout/stderr into :data:`Payload` values and back.

    ``scrub`` is applied to text before it is stored (redaction, path placeholders);
    ``expand`` to stored text when it is served again (placeholders to today's roots).
    ``sidecar`` is where level ``full`` keeps payloads over ``max_inline_bytes`` (without
    one they are kept as a digest only); a replay's codec reads them back from it.
    """

    __slots__ = (
        "_digested",
        "_digests",
        "expand",
        "level",
        "max_inline_bytes",
        "scrub",
        "sidecar",
    )

    def __init__(
        self,
        level: Level,
        max_inline_bytes: int = DEFAULT_MAX_INLINE_BYTES,
        scrub: Callable[[str], str] | None = None,
        expand: Callable[[str], str] | None = None,
        sidecar: Sidecar | None = None,
    ) -> None:
        if max_inline_bytes < 0:
            raise UsageError(f"max_inline_bytes must be >= 0, got {max_inline_bytes!r}.")
        self.level = level
        self.max_inline_bytes = max_inline_bytes
        self.scrub = scrub
        self.expand = expand
        self.sidecar = sidecar
        # Level standard's digests by the output they digest (see _DIGEST_MEMO_BUDGET):
        # an output the program saw before costs a lookup, not a hash of its bytes.
        self._digests: dict[str | bytes, Blob] = {}
        self._digested = 0

    def encode(self, value: str | bytes | None) -> Payload:
        """The payload to store for ``value`` (a large one is written to the sidecar)."""
        # Three per recorded process call, most of them nothing or empty: answered here.
        if value is None or self.level is Level.MINIMAL:
            return None
        if not value:
            return "" if self.level is Level.FULL else _EMPTY_DIGEST
        return self._encode(value, write=True)

    def _encode(self, value: str | bytes | None, *, write: bool) -> Payload:
        if value is None or self.level is Level.MINIMAL:
            return None
        if self.level is Level.STANDARD:
            return self._digest_of(value)
        if isinstance(value, str):
            if self.level is Level.FULL and len(value) <= self.max_inline_bytes // 4:
                # Fast path: even at 4 bytes a character this fits inline.
                return self.scrub(value) if self.scrub is not None else value
            raw = value.encode("utf-8", "surrogateescape")
            text: str | None = value
        else:
            raw = bytes(value)
            text = None
        if text is None:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        if text is not None and self.scrub is not None:
            text = self.scrub(text)
            raw = text.encode("utf-8", "surrogateescape")
        if len(raw) > self.max_inline_bytes:
            return self._spill(raw, write=write)
        if text is None:
            return Blob(size=len(raw), sha256=digest(raw), b64=base64.b64encode(raw).decode())
        return text

    def _digest_of(self, value: str | bytes) -> Blob:
        """What level ``standard`` stores for ``value``: its size and digest."""
        key = value if isinstance(value, (str, bytes)) else bytes(value)
        blob = self._digests.get(key)
        if blob is None:
            raw = key.encode("utf-8", "surrogateescape") if isinstance(key, str) else key
            blob = Blob(size=len(raw), sha256=digest(raw), truncated=True)
            if self._digested > _DIGEST_MEMO_BUDGET:
                self._digests.clear()
                self._digested = 0
            self._digests[key] = blob
            self._digested += len(key)
        return blob

    def _spill(self, raw: bytes, *, write: bool) -> Blob:
        """A payload too large to keep inline: in the sidecar, or as its digest only."""
        sidecar = self.sidecar
        if sidecar is None:
            return Blob(size=len(raw), sha256=digest(raw), truncated=True)
        if not write:
            return Blob(size=len(raw), sha256=digest(raw), sidecar=True, gzip=sidecar.compress)
        try:
            sha256, gz = sidecar.put(raw)
        except OSError:
            # Recording is never the critical path: keep the digest and go on.
            return Blob(size=len(raw), sha256=digest(raw), truncated=True)
        return Blob(size=len(raw), sha256=sha256, sidecar=True, gzip=gz)

    def decode(self, payload: Payload, *, text: bool) -> str | bytes | None:
        """The value to serve for a stored payload (``None`` if it was not captured).

        Raises ``LookupError`` for a truncated payload (callers turn that into a
        :class:`~sessiontape.TruncatedPayloadError` naming the seq) and
        ``FileNotFoundError`` for a sidecar payload whose file is missing.
        """
        if payload is None:
            return None
        if isinstance(payload, str):
            served = self.expand(payload) if self.expand is not None else payload
            return served if text else served.encode("utf-8", "surrogateescape")
        if payload.sidecar and not payload.truncated:
            if self.sidecar is None:
                raise FileNotFoundError(payload.sha256)
            raw = self.sidecar.get(payload.sha256, gz=payload.gzip)
            try:
                stored_text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return raw.decode("utf-8", "replace") if text else raw
            return self.decode(stored_text, text=text)
        if payload.truncated or payload.b64 is None:
            raise LookupError(payload.sha256)
        raw = base64.b64decode(payload.b64)
        return raw.decode("utf-8", "replace") if text else raw

    def comparable(self, value: str | bytes | None, stored: Payload) -> Payload:
        """``value`` in the stored form of ``stored``, so the two can be compared.

        Nothing is written: a large value is compared by the digest it would be stored
        under.
        """
        if value is None:
            return None
        if isinstance(stored, Blob) and stored.truncated:
            raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
            return Blob(size=len(raw), sha256=digest(raw), truncated=True)
        found = self._encode(value, write=False)
        if isinstance(stored, Blob) and isinstance(found, Blob) and found.sidecar:
            return msgspec.structs.replace(found, gzip=stored.gzip)
        return found
