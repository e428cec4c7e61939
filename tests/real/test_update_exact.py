"""Update of a process call whose arguments are not UTF-8: the readable ``argv`` and the
exact bytes (``ProcessCall.exact``) are rewritten together, so the updated tape replays."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import sessiontape
from sessiontape import Change, ProcessCall

from .conftest import PY, Spawns

#: Prints the bytes of its argument, so the recorded answer shows which one it was given.
_ECHO_BYTES = "import os, sys; print(os.fsencode(sys.argv[1]).hex())"


def program(word: bytes) -> str:
    """A stdlib program passing ``word`` (any bytes, as POSIX allows) as an argument."""
    return subprocess.run(
        [PY, "-c", _ECHO_BYTES, os.fsdecode(word)], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"caf\xe9", b"na\xefve"),  # bytes that are not UTF-8 on both sides
        (b"caf\xe9", b"plain"),  # not UTF-8 when recorded, text today
        (b"plain", b"caf\xe9"),  # text when recorded, not UTF-8 today
    ],
    ids=["bytes-to-bytes", "bytes-to-text", "text-to-bytes"],
)
def test_update_rewrites_the_exact_bytes_with_the_argument(
    old: bytes, new: bytes, tmp_path: Path, spawns: Spawns
) -> None:
    cassette = tmp_path / "t.jsonl"
    with sessiontape.record(cassette) as tape, tape.patch_subprocess():
        recorded = program(old)
    assert recorded.strip() == old.hex()

    with spawns.counting(), sessiontape.replay(cassette, update=True) as tape:
        with tape.patch_subprocess():
            replayed = program(new)
        report = tape.finish()
    assert spawns.started == []
    assert replayed == recorded  # the recorded answer, today's request
    assert report.ok, report.render()
    assert report.rewritten_to is not None
    assert {r.change for r in report.rewrites} == {Change.REQUEST}

    [call] = sessiontape.load(cassette).calls
    assert isinstance(call, ProcessCall)
    assert os.fsencode(call.exact_argv()[3]) == new  # the bytes today's code passed
    if new == b"plain":
        assert call.exact is None  # nothing left that is not UTF-8

    updated = cassette.read_bytes()
    with spawns.counting(), sessiontape.replay(cassette, strict=True) as tape:
        with tape.patch_subprocess():
            assert program(new) == recorded
        assert tape.finish().ok  # green without the flag
    assert spawns.started == []
    with sessiontape.replay(cassette, update=True) as tape:
        with tape.patch_subprocess():
            program(new)
        assert tape.finish().rewritten_to is None  # a second update writes nothing
    assert cassette.read_bytes() == updated
