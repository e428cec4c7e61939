"""Why a recorded call failed, as one of a few classes: auth, rate_limit, timeout...

A failed call is read as it stands in the tape: a process call's spawn error, timeout,
exit code and output; a method call's recorded exception (its qualified type name and
message: the tape keeps no other attribute of it, and nothing read from a tape is ever
imported, so the class is decided from text). The rules, first match wins:

1. A process that could not start (``spawn_error``) is ``spawn``; one that timed out is
   ``timeout``.
2. The exception's type name (its last dotted part, case-insensitive): a name with
   ``timeout`` or ``timedout`` in it (``TimeoutError``, ``TimeoutExpired``,
   ``APITimeoutError``, ``ReadTimeout``) is ``timeout``; ``RateLimit``,
   ``TooManyRequests``, ``Throttl`` or ``Quota`` is ``rate_limit``; ``Authentication``,
   ``Unauthorized``, ``PermissionDenied``, ``Forbidden`` or ``Auth`` is ``auth``;
   ``BadRequest``, ``UnprocessableEntity``, ``Validation`` or ``InvalidRequest`` is
   ``validation``; ``InternalServer``, ``ServiceUnavailable``, ``Overloaded``,
   ``BadGateway`` or ``ServerError`` is ``server``.
3. An HTTP status code in the message (or, for a process, in its stderr and stdout),
   written the way clients write them: ``Error code: 429``, ``status 503``,
   ``status_code=401``, ``HTTP 500``, ``HTTP/1.1 404``. 401, 403 and 407 are ``auth``;
   429 is ``rate_limit``; 408 and 504 are ``timeout``; any other 4xx is
   ``validation``; any 5xx is ``server``.
4. Words in the message (or output): ``rate limit``, ``too many requests`` ->
   ``rate_limit``; ``timed out``, ``timeout``, ``deadline exceeded`` -> ``timeout``;
   ``unauthorized``, ``invalid api key``, ``authentication`` -> ``auth``.
5. A process that exited non-zero: exit 124 (``timeout(1)``) is ``timeout``, 126 and
   127 (the shell found no program, or could not run it) are ``spawn``, any other is
   ``exit``.
6. Anything else that failed is ``other``.

Projects add their own rules with the ``sessiontape_classify_error`` hook (the CLI
consults it before these rules); it returns one of :data:`ERROR_CLASSES` or ``None``.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any, Final

import msgspec

from ..cassette import AgentTurn, Blob, Call, ErrorInfo, ProcessCall, StoreMutation, stored

__all__ = [
    "ERROR_CLASSES",
    "Classifier",
    "classify_error",
    "failed",
]

#: Every error class, in the order the viewer and ``stats`` list them.
ERROR_CLASSES: Final = (
    "auth",
    "rate_limit",
    "timeout",
    "validation",
    "server",
    "spawn",
    "exit",
    "other",
)

#: A project's rule (the ``sessiontape_classify_error`` hook): a class or ``None``.
Classifier = Callable[[Any], "str | None"]

_TYPE_RULES: Final = (
    ("timeout", ("timeout", "timedout")),
    ("rate_limit", ("ratelimit", "toomanyrequests", "throttl", "quota")),
    ("auth", ("authentication", "unauthorized", "permissiondenied", "forbidden", "auth")),
    ("validation", ("badrequest", "unprocessableentity", "validation", "invalidrequest")),
    ("server", ("internalserver", "serviceunavailable", "overloaded", "badgateway", "servererror")),
)

#: A status code as clients print it: ``Error code: 429``, ``status 503``, ``HTTP/1.1 404``.
_STATUS: Final = re.compile(
    r"(?:error[ _]code|status(?:[ _]code)?|http(?:/\d(?:\.\d)?)?)\s*[:=]?\s*([1-5]\d\d)\b",
    re.IGNORECASE,
)

_WORD_RULES: Final = (
    ("rate_limit", re.compile(r"rate[ _-]?limit|too many requests", re.IGNORECASE)),
    ("timeout", re.compile(r"timed out|timeout|deadline exceeded", re.IGNORECASE)),
    ("auth", re.compile(r"unauthori[sz]ed|invalid api key|authentication", re.IGNORECASE)),
)

#: How much of a process's output is searched for a status code or a word.
_OUTPUT_SCAN: Final = 4096


def failed(entry: Any) -> bool:
    """Whether a recorded call failed: it raised, could not start, timed out or exited
    non-zero. Any other entry did not."""
    if isinstance(entry, ProcessCall):
        return entry.returncode != 0 or entry.timed_out or entry.spawn_error is not None
    if isinstance(entry, (AgentTurn, StoreMutation, Call)):
        return entry.error is not None
    return False


def _by_status(code: int) -> str | None:
    if code in (401, 403, 407):
        return "auth"
    if code == 429:
        return "rate_limit"
    if code in (408, 504):
        return "timeout"
    if 400 <= code < 500:
        return "validation"
    if code >= 500:
        return "server"
    return None


def _by_type(name: str) -> str | None:
    short = name.rsplit(".", 1)[-1].lower()
    for error_class, parts in _TYPE_RULES:
        if any(part in short for part in parts):
            return error_class
    return None


def _by_text(text: str) -> str | None:
    for match in _STATUS.finditer(text):
        found = _by_status(int(match[1]))
        if found is not None:
            return found
    for error_class, pattern in _WORD_RULES:
        if pattern.search(text):
            return error_class
    return None


def _text(payload: Any) -> str:
    """The start of a recorded output as text (a digest-only payload has none, and
    stored bytes that do not decode are left unread: the class never fails a command)."""
    try:
        value = stored(payload)
    except (msgspec.DecodeError, ValueError):
        return ""
    if isinstance(value, str):
        return value[:_OUTPUT_SCAN]
    if isinstance(value, Blob) and value.b64 is not None:
        try:
            raw = base64.b64decode(value.b64[: _OUTPUT_SCAN // 3 * 4])
        except ValueError:
            return ""
        return raw.decode("utf-8", "replace")
    return ""


def _process(entry: ProcessCall) -> str:
    if entry.spawn_error is not None:
        return "spawn"
    if entry.timed_out:
        return "timeout"
    found = _by_text(_text(entry.stderr)) or _by_text(_text(entry.stdout))
    if found is not None:
        return found
    if entry.returncode == 124:
        return "timeout"
    if entry.returncode in (126, 127):
        return "spawn"
    return "exit"


def _error(info: ErrorInfo) -> str:
    return _by_type(info.type) or _by_text(info.message) or "other"


def classify_error(entry: Any, custom: Classifier | None = None) -> str | None:
    """The error class of a recorded call, or ``None`` when it did not fail.

    ``custom`` (the project's ``sessiontape_classify_error`` hook) is asked first; an
    answer that is not one of :data:`ERROR_CLASSES` is ignored.
    """
    if not failed(entry):
        return None
    if custom is not None:
        answer = custom(entry)
        if answer in ERROR_CLASSES:
            return str(answer)
    if isinstance(entry, ProcessCall):
        return _process(entry)
    error: ErrorInfo = entry.error
    return _error(error)
