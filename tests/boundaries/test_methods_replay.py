"""The replay side of method boundaries: the fast comparisons a replayed call goes through.

A call that is the recorded one (exactly, or with today's paths where the tape has
placeholders) is taken from the head of its queue without building a request; a store
result is compared as JSON text first. Each shortcut must give the answer the long way
would: these tests pin the cases where the shortcut says "no" and the long way decides.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

import sessiontape
from sessiontape.boundaries._today import same_args, same_today
from sessiontape.scrub import PathRoots, encodes_as, to_data

ROOTS = PathRoots({"repo": "/srv/app"})


@pytest.mark.parametrize(
    ("recorded", "today", "same"),
    [
        ({"wt": "{repo}/wt", "n": 1}, {"wt": "/srv/app/wt", "n": 1}, True),
        ([{"files": ["{repo}/a", "b"]}], [{"files": ["/srv/app/a", "b"]}], True),
        ({"wt": "{repo}/wt", "n": 1}, {"wt": "/srv/app/wt", "n": 2}, False),
        ({"wt": "{repo}/wt"}, {"wt": "/elsewhere/wt"}, False),
        ({"wt": "{repo}/wt"}, {"other": "/srv/app/wt"}, False),  # a key on one side only
        ({"wt": "{repo}/wt"}, {"wt": "/srv/app/wt", "n": 1}, False),
        ({"wt": "{repo}/wt"}, {"wt": ["/srv/app/wt"]}, False),  # another type
        (["{repo}/a"], ["/srv/app/a", "x"], False),
        ({"n": "plain"}, {"n": "other"}, False),  # no placeholder: nothing to expand
        ({"n": 1}, {"n": 1.5}, False),
    ],
)
def test_same_today_walks_only_what_differs(recorded: Any, today: Any, same: bool) -> None:
    assert recorded != today
    assert same_today(recorded, today, ROOTS.expand) is same


@pytest.mark.parametrize(
    ("recorded", "args", "same"),
    [
        (["{repo}/a", 1], ("/srv/app/a", 1), True),
        ([{"wt": "{repo}/wt"}, "x"], ({"wt": "/srv/app/wt"}, "x"), True),
        ([], (), True),
        (["a"], ("a", "b"), False),  # another count
        (["{repo}/a"], ("/elsewhere/a",), False),
        ([["{repo}/a"]], (("/srv/app/a",),), False),  # a tuple inside is not the list
        ({"0": "a"}, ("a",), False),  # not the list a tape holds: the long way decides
    ],
)
def test_same_args_compares_a_call_tuple_with_the_recorded_list(
    recorded: Any, args: tuple[Any, ...], same: bool
) -> None:
    assert same_args(recorded, args, ROOTS.expand) is same
    # What same_today says of the list the tape would be compared with.
    if type(recorded) is list:
        assert same_today(recorded, list(args), ROOTS.expand) is same


class _Failing:
    """A client whose second call fails: the tape keeps the error, replay raises it."""

    def __init__(self) -> None:
        self.calls = 0

    def fetch(self, where: str, *, page: int) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 2:
            raise LookupError(f"no page {page} under {where}")
        return {"where": where, "page": page}


def test_a_call_at_its_queue_head_is_served_its_result_or_error_at_its_end_time(
    tmp_path: Path,
) -> None:
    then, now = tmp_path / "then", tmp_path / "now"
    path = tmp_path / "api.jsonl"
    with sessiontape.record(path, roots={"repo": str(then)}) as tape:
        api = tape.boundary("api", _Failing(), methods=["fetch"])
        assert api.fetch(str(then / "docs"), page=1) == {"where": str(then / "docs"), "page": 1}
        with pytest.raises(LookupError):
            api.fetch(str(then / "docs"), page=2)
    first, second = sessiontape.load(path).entries_for("api")
    with sessiontape.replay(path, roots={"repo": str(now)}) as tape:
        api = tape.boundary("api", methods=["fetch"])
        # The recorded result, in today's paths; the clock at the end of the call.
        assert api.fetch(str(now / "docs"), page=1) == {"where": str(now / "docs"), "page": 1}
        assert time.time_ns() == first.ts_ns + first.duration_ns
        with pytest.raises(LookupError, match="no page 2 under"):
            api.fetch(str(now / "docs"), page=2)
        assert time.time_ns() == second.ts_ns + second.duration_ns
        report = tape.finish()
    assert report.ok, report.render()
    assert report.consumed == 2


@dataclasses.dataclass
class Row:
    id: str
    tags: frozenset[str]


def test_encodes_as_compares_json_texts_and_says_no_when_unsure() -> None:
    assert encodes_as({"a": 1, "b": [2]}, b'{"a":1,"b":[2]}')
    # The text a recording writes for a value is its to_data() form, encoded.
    row = Row("T1", frozenset({"b", "a"}))
    assert encodes_as(row, msgspec.json.encode(to_data(row)))
    # Equal data in another key order, or no JSON form at all: not known to be equal.
    assert not encodes_as({"b": [2], "a": 1}, b'{"a":1,"b":[2]}')
    assert not encodes_as(object(), b"null")
    assert not encodes_as({"a": 1}, b'{"a":2}')


class Store:
    """A store whose results are dicts; ``flip`` builds them in the other key order."""

    def __init__(self, flip: bool = False) -> None:
        self.flip = flip
        self.done: list[str] = []

    def complete(self, task: str) -> dict[str, Any]:
        self.done.append(task)
        if self.flip:
            return {"status": "done", "id": task}
        return {"id": task, "status": "done"}


def test_a_store_result_in_another_key_order_is_still_the_recorded_one(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    with sessiontape.record(path) as tape:
        store = tape.store(Store(), mutations=["complete"], name="backlog")
        store.complete("T1")
    with sessiontape.replay(path) as tape:
        store = tape.store(Store(flip=True), mutations=["complete"], name="backlog")
        assert store.complete("T1") == {"status": "done", "id": "T1"}
    assert tape.report.ok, tape.report.render()


def test_a_store_result_that_differs_is_a_store_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    with sessiontape.record(path) as tape:
        store = tape.store(Store(), mutations=["complete"], name="backlog")
        store.complete("T1")

    class Changed(Store):
        def complete(self, task: str) -> dict[str, Any]:
            return {"id": task, "status": "failed"}

    with sessiontape.replay(path) as tape:
        store = tape.store(Changed(), mutations=["complete"], name="backlog")
        store.complete("T1")
    (mismatch,) = tape.report.mismatches
    assert mismatch.kind is sessiontape.MismatchKind.STORE_MISMATCH
    assert [(d.path, d.expected, d.actual) for d in mismatch.diffs] == [
        ("result.status", "done", "failed")
    ]
