"""Request matching: normalised request dicts, noise masks and the comparison itself.

A request matches its recorded twin after normalisation: today's request goes through the
same scrubbing as at record time (secrets redacted, paths under today's roots written as
placeholders), then noise masks blank the fields that legitimately differ between runs.

:func:`compare` is the one comparison of a request with its recording, for every path a
request takes: a runner's call, a method call, and the parts of a process's request that
the program writes after the call was matched (its stdin, chunk by chunk), which are
compared where they sit in the request (``path``: ``("input",)``, ``("chunks", 3,
"data")``), so that a mask names them as the report does.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from .._errors import UsageError
from ..cassette import BOUNDARY_PROCESS
from ..report import FieldDiff, diff_values_counted, subcommand

__all__ = ["MASKED", "Matcher", "Noise", "Path", "compare", "matches", "path_text", "same_call"]

#: What a masked field reads as on both sides.
MASKED: Final = "<masked>"

_SEGMENT = re.compile(
    r"""\.?(?:(?P<key>[A-Za-z_][\w-]*|\*)|\[(?P<index>-?\d+|\*)\]|\["(?P<quoted>[^"]*)"\])"""
)

#: Regex substitutions worth turning on by name: ``Noise(patterns=["uuid", "tmpdir"])``.
PRESETS: Final[dict[str, tuple[str, str]]] = {
    "uuid": (
        r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
        "<uuid>",
    ),
    "tmpdir": (r"(?:/private)?/(?:tmp|var/folders)/[\w.-]+(?:/[\w.-]+)*", "<tmpdir>"),
    "timestamp": (
        r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?\b",
        "<timestamp>",
    ),
    "sha": (r"\b[0-9a-f]{40}\b", "<sha>"),
    "hex": (r"\b0x[0-9a-fA-F]+\b", "<hex>"),
}


def _parse_mask(mask: str) -> tuple[str, tuple[str | int, ...]]:
    """``"process.argv[3]"`` -> ``("process", ("argv", 3))``."""
    head, dot, rest = mask.partition(".")
    bracket = head.find("[")
    if bracket > 0:
        head, rest = head[:bracket], head[bracket:] + (dot + rest if dot else "")
    if not head or not re.fullmatch(r"[\w-]+", head):
        raise UsageError(
            f"noise mask {mask!r} must start with a boundary name, e.g. 'process.argv[3]', "
            "'process.env.HOME' or 'agent.args[0].prompt'."
        )
    parts: list[str | int] = []
    pos = 0
    while pos < len(rest):
        m = _SEGMENT.match(rest, pos)
        if m is None or m.end() == pos:
            raise UsageError(
                f"noise mask {mask!r}: cannot read the path at {rest[pos:]!r}; write keys "
                "with dots, indexes as [3], any key or index as * or [*]."
            )
        if m.group("key") is not None:
            parts.append(m.group("key"))
        elif m.group("index") is not None:
            index = m.group("index")
            parts.append("*" if index == "*" else int(index))
        else:
            parts.append(m.group("quoted"))
        pos = m.end()
    if not parts:
        raise UsageError(f"noise mask {mask!r} names a whole boundary; name a field in it.")
    # ``agent.request`` is the first positional argument, the request an adapter receives.
    if parts[0] == "request":
        parts[0:1] = ["args", 0]
    return head, tuple(parts)


class Noise:
    """Fields and patterns to ignore when comparing requests.

    ``masks`` are field paths, the same paths the report prints (``process.argv[3]``,
    ``process.env.HOME``, ``agent.args[0].prompt``; ``*`` matches any key or index;
    ``agent.request`` means the first argument). ``patterns`` are regex substitutions
    applied to every string in a request, given as ``(regex, replacement)`` pairs or by
    preset name (``"uuid"``, ``"tmpdir"``, ``"timestamp"``, ``"sha"``, ``"hex"``).
    """

    __slots__ = ("_masks", "_patterns", "masks", "patterns")

    def __init__(
        self,
        masks: Iterable[str] = (),
        patterns: Iterable[str | tuple[str, str]] = (),
    ) -> None:
        self.masks: tuple[str, ...] = tuple(masks)
        self.patterns: tuple[str | tuple[str, str], ...] = tuple(patterns)
        by_boundary: dict[str, list[tuple[str | int, ...]]] = {}
        for mask in self.masks:
            boundary, path = _parse_mask(mask)
            by_boundary.setdefault(boundary, []).append(path)
        self._masks = by_boundary
        compiled: list[tuple[re.Pattern[str], str]] = []
        for pattern in self.patterns:
            if isinstance(pattern, str):
                if pattern not in PRESETS:
                    known = ", ".join(sorted(PRESETS))
                    raise UsageError(
                        f"unknown noise preset {pattern!r}; use one of {known}, or give a "
                        "(regex, replacement) pair."
                    )
                regex, repl = PRESETS[pattern]
            else:
                regex, repl = pattern
            try:
                compiled.append((re.compile(regex), repl))
            except re.error as exc:
                raise UsageError(f"noise pattern {regex!r} is not a valid regex: {exc}.") from None
        self._patterns = compiled

    @classmethod
    def coerce(cls, value: Noise | Iterable[str] | Mapping[str, Any] | None) -> Noise:
        """A :class:`Noise` from a Noise, a list of masks, or ``{"masks":..., "patterns":...}``."""
        if value is None:
            return cls()
        if isinstance(value, Noise):
            return value
        if isinstance(value, Mapping):
            return _parsed(tuple(value.get("masks", ())), tuple(value.get("patterns", ())))
        if isinstance(value, str):
            return _parsed((value,), ())
        return _parsed(tuple(value), ())

    def __bool__(self) -> bool:
        return bool(self._masks or self._patterns)

    def __or__(self, other: Noise) -> Noise:
        if not other.masks and not other.patterns:
            return self
        if not self.masks and not self.patterns:
            return other
        return _parsed(self.masks + other.masks, self.patterns + other.patterns)

    def __repr__(self) -> str:
        return f"Noise(masks={list(self.masks)!r}, patterns={list(self.patterns)!r})"

    def applies_to(self, boundary: str) -> bool:
        """Whether any mask or pattern could change a request of ``boundary``."""
        return bool(self._patterns) or boundary in self._masks

    def apply(self, boundary: str, request: Any, path: Path = ()) -> Any:
        """A copy of ``request`` with patterns substituted and masked fields blanked.

        ``request`` is the part of a request found at ``path`` (the whole request by
        default): a mask naming that part, or a field above it, blanks it whole; a mask
        naming a field inside it blanks that field.
        """
        out: Any = dict(request) if not path else request
        if self._patterns:
            out = _substitute(out, self._patterns)
        for mask in self._masks.get(boundary, ()):
            rest = _below(mask, path)
            if rest is not None:
                out = _mask(out, rest)
        return out

    def findings(self, recorded: str, today: str) -> list[tuple[str, str]]:
        """The texts the patterns match in ``recorded`` and in ``today`` that differ, paired
        in order: ``[("id 59c4d3cb", "id 70f1a216")]``. A pattern matching a different
        number of times on the two sides pairs nothing."""
        pairs: list[tuple[str, str]] = []
        for regex, _ in self._patterns:
            then = [m.group(0) for m in regex.finditer(recorded)]
            if not then:
                continue
            now = [m.group(0) for m in regex.finditer(today)]
            if len(then) == len(now):
                pairs.extend((a, b) for a, b in zip(then, now, strict=True) if a != b)
        return pairs

    def keep_recorded(self, boundary: str, recorded: Any, today: Any) -> Any:
        """``today``'s value with its noise taken from ``recorded``: every masked field,
        and every text equal to the recorded one once the patterns are applied.

        What update mode writes: masked noise is not a change, so it keeps its recorded
        form and the tape's diff shows only what the code changed.
        """
        if self._patterns:
            today = _keep_patterned(recorded, today, self._patterns)
        for path in self._masks.get(boundary, ()):
            today = _restore(recorded, today, path)
        return today


def _keep_patterned(
    recorded: Any, today: Any, patterns: Sequence[tuple[re.Pattern[str], str]]
) -> Any:
    if isinstance(today, str) and isinstance(recorded, str):
        same = _substitute(recorded, patterns) == _substitute(today, patterns)
        return recorded if same else today
    if isinstance(today, Mapping) and isinstance(recorded, Mapping):
        return {
            k: _keep_patterned(recorded[k], v, patterns) if k in recorded else v
            for k, v in today.items()
        }
    if isinstance(today, (list, tuple)) and isinstance(recorded, (list, tuple)):
        return [
            _keep_patterned(recorded[i], v, patterns) if i < len(recorded) else v
            for i, v in enumerate(today)
        ]
    return today


def _restore(recorded: Any, today: Any, path: tuple[str | int, ...]) -> Any:
    """``today`` with the value at the mask ``path`` taken from ``recorded``."""
    if not path:
        return recorded
    head, rest = path[0], path[1:]
    if isinstance(today, Mapping) and isinstance(recorded, Mapping):
        keys = list(today) if head == "*" else [head]
        copy = dict(today)
        for key in keys:
            if key in recorded and key in today:
                copy[key] = _restore(recorded[key], today[key], rest)
        return copy
    if isinstance(today, (list, tuple)) and isinstance(recorded, (list, tuple)):
        size = min(len(today), len(recorded))
        indexes = range(size) if head == "*" else [head]
        copy_list = list(today)
        for index in indexes:
            if isinstance(index, int) and -size <= index < size:
                copy_list[index] = _restore(recorded[index], today[index], rest)
        return copy_list
    return today


@functools.lru_cache(maxsize=256)
def _parsed(masks: tuple[str, ...], patterns: tuple[str | tuple[str, str], ...]) -> Noise:
    """A :class:`Noise`, parsed once per set of masks and patterns: a corpus replays every
    tape with the same project-wide noise (a Noise is never changed once made)."""
    return Noise(masks, patterns)


#: Where a part sits in a request: keys and indexes (``("chunks", 3, "data")``).
Path = tuple[str | int, ...]


def _below(mask: tuple[str | int, ...], path: Path) -> tuple[str | int, ...] | None:
    """What of ``mask`` applies inside the part at ``path``: ``()`` when it names the part
    or a field above it (the part is masked whole), ``None`` when it names another field."""
    for i, part in enumerate(path):
        if i == len(mask):
            return ()
        segment = mask[i]
        if segment != "*" and segment != part:
            return None
    return mask[len(path) :]


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


def path_text(path: Path) -> str:
    """``("chunks", 3, "data")`` as the report writes it: ``chunks[3].data``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def _substitute(value: Any, patterns: Sequence[tuple[re.Pattern[str], str]]) -> Any:
    if isinstance(value, str):
        for regex, repl in patterns:
            value = regex.sub(repl, value)
        return value
    if isinstance(value, Mapping):
        return {k: _substitute(v, patterns) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_substitute(v, patterns) for v in value]
    return value


def _mask(value: Any, path: tuple[str | int, ...]) -> Any:
    if not path:
        return MASKED
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping):
        if head == "*":
            return {k: _mask(v, rest) for k, v in value.items()}
        if isinstance(head, str) and head in value:
            copy = dict(value)
            copy[head] = _mask(value[head], rest)
            return copy
        return value
    if isinstance(value, (list, tuple)):
        if head == "*":
            return [_mask(v, rest) for v in value]
        if isinstance(head, int) and -len(value) <= head < len(value):
            copy_list = list(value)
            copy_list[head] = _mask(value[head], rest)
            return copy_list
    return value


Matcher = Callable[[str, Mapping[str, Any], Mapping[str, Any]], "bool | None"]


def _differing(
    boundary: str, expected: Any, actual: Any, noise: Noise, matcher: Matcher | None, path: Path
) -> tuple[Any, Any] | None:
    """``None`` when the requests (or their parts at ``path``) match: equal as they are,
    equal once noise is applied, or (whole requests only) accepted by a custom matcher;
    otherwise the two as compared, noise applied."""
    if expected == actual:
        return None
    if noise.applies_to(boundary):
        expected = noise.apply(boundary, expected, path)
        actual = noise.apply(boundary, actual, path)
        if expected == actual:
            return None
    # A secret is redacted on both sides, whatever rule labelled it: a token the program
    # read from a replayed output (``[REDACTED:github]``) and sends again is the one
    # recorded in its later request under another rule (``[REDACTED:authorization]``).
    expected, actual = _one_mark(expected), _one_mark(actual)
    if expected == actual:
        return None
    if matcher is not None and not path and matcher(boundary, expected, actual) is True:
        return None
    return expected, actual


#: Every redaction mark, labelled or not (``[REDACTED]``, ``[REDACTED:github]``).
_MARKS: Final = ((re.compile(r"\[REDACTED(?::[\w-]+)?\]"), "[REDACTED]"),)


def _one_mark(value: Any) -> Any:
    """``value`` with every redaction mark written the same way."""
    return _substitute(value, _MARKS)


def matches(
    boundary: str,
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    *,
    noise: Noise,
    matcher: Matcher | None = None,
) -> bool:
    """Whether :func:`compare` would find no diffs, without building them. (A field diff
    never makes two requests match that are not equal: :func:`compare` reports requests
    equal field by field yet unequal as rejected.) The lookahead asks this of many
    entries."""
    return _differing(boundary, expected, actual, noise, matcher, ()) is None


def compare(
    boundary: str,
    expected: Any,
    actual: Any,
    *,
    noise: Noise,
    matcher: Matcher | None = None,
    path: Path = (),
) -> tuple[list[FieldDiff], int]:
    """Field diffs between a recorded and an actual request, and their total count.

    An empty list means they match: equal as they are, equal once noise is applied, or
    accepted by a custom matcher. With ``path``, the two are the part of a request found
    there (see :meth:`Noise.apply`), and the diffs' paths start with it; the custom
    matcher is asked about whole requests only.
    """
    differing = _differing(boundary, expected, actual, noise, matcher, path)
    if differing is None:
        return [], 0
    expected, actual = differing
    diffs, total = diff_values_counted(expected, actual, path_text(path))
    if not diffs:
        # Equal field by field yet rejected by the custom matcher.
        diffs = [FieldDiff(path=path_text(path), expected=_plain(expected),
                           actual=_plain(actual),
                           detail="rejected by a sessiontape_match hook")]  # fmt: skip
        total = 1
    return diffs, total


def same_call(boundary: str, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """Whether request ``actual`` is the recorded request ``expected`` made with other
    arguments (rather than another call): the same method, or for a process the same
    program, first argument and subcommand.

    The subcommand is the first plain word after the options, when arguments follow it
    (``report.subcommand``): ``git -C {work} status --short`` is not ``git -C {work}
    commit -m x`` with other arguments, though their first two arguments agree.
    """
    if boundary == BOUNDARY_PROCESS:
        old, new = list(expected["argv"]), list(actual["argv"])
        if old[:2] != new[:2]:
            return False
        before, now = subcommand(old), subcommand(new)
        return before is None or now is None or before == now
    return bool(expected["method"] == actual["method"])
