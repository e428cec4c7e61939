"""The calls of a task: what each worker did while it held it.

A task is found by its id in the calls' argv, arguments and results (the claim that
returned it, the completion that named it), as a whole word, so ``t1`` is not found in
``t10``. ``slice --task`` keeps a task's calls; ``shrink`` removes tasks one at a time.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from typing import Any, Final

from ..cassette import CallEntry, ProcessCall, Recording

__all__ = ["task_windows", "task_windows_of"]


def _strings(value: Any) -> Iterator[str]:
    """Every string and integer (as text) inside JSON-like ``value``, dict keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        yield str(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


_WORD: Final = re.compile(r"\w+")
_WORD_CHAR: Final = re.compile(r"\w")


def task_windows(recording: Recording, task: str) -> dict[str, tuple[int, int]]:
    """Per worker, the seqs of its first and last call mentioning ``task``."""
    return task_windows_of(recording, {task}).get(task, {})


def task_windows_of(
    recording: Recording, tasks: Collection[str]
) -> dict[str, dict[str, tuple[int, int]]]:
    """:func:`task_windows` for many tasks in one pass over the tape.

    A task id is found as a whole word (not inside a longer word): where a run of word
    characters starts, the text of each id length is looked up among the ids.
    """
    by_length: dict[int, set[str]] = {}
    slow: list[tuple[str, re.Pattern[str]]] = []
    for task in tasks:
        if task and _WORD_CHAR.match(task):
            by_length.setdefault(len(task), set()).add(task)
        else:  # an id that does not start with a word character: matched the slow way
            slow.append((task, re.compile(rf"(?<!\w){re.escape(task)}(?!\w)")))
    lengths = sorted(by_length.items())
    windows: dict[str, dict[str, tuple[int, int]]] = {}
    for call in recording.calls:
        found: set[str] = set()
        for text in _texts(call):
            for word in _WORD.finditer(text):
                start = word.start()
                for length, ids in lengths:
                    end = start + length
                    candidate = text[start:end]
                    if candidate in ids and not (end < len(text) and _WORD_CHAR.match(text, end)):
                        found.add(candidate)
            found.update(task for task, pattern in slow if pattern.search(text))
        for task in found:
            per_worker = windows.setdefault(task, {})
            first, _ = per_worker.get(call.worker, (call.seq, call.seq))
            per_worker[call.worker] = (first, call.seq)
    return windows


def _texts(call: CallEntry) -> Iterator[str]:
    if isinstance(call, ProcessCall):
        yield from _strings(call.argv)
    else:
        for value in (call.args, call.kwargs, call.result):
            yield from _strings(value)
