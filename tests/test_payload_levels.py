"""Level ``standard`` keeps outputs as their size and digest, remembered for repeats."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import Blob, ProcessResult
from sessiontape.cassette import Level, PayloadCodec, _payload


class Outputs:
    """A runner answering with the given stdouts in turn."""

    def __init__(self, outputs: list[str | bytes]) -> None:
        self._outputs = iter(outputs)

    def run(self, argv: list[str], **kwargs: Any) -> ProcessResult:
        out = next(self._outputs)
        return ProcessResult(argv, 0, out, "" if isinstance(out, str) else b"")

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_standard_stores_each_output_as_its_digest_repeats_included(tmp_path: Path) -> None:
    status = "On branch main\n" + "M src/app.py\n" * 50
    outputs: list[str | bytes] = [status, "other\n", status, b"\xff\xfe binary", "é\n"]
    path = tmp_path / "standard.jsonl"
    with sessiontape.record(path, level="standard") as tape:
        runner = tape.process_runner(Outputs(outputs))
        for _ in outputs:
            runner.run(["git", "status"])
        tape.finish()
    stored = [call.stdout for call in sessiontape.load(path).calls]
    expected = [o.encode() if isinstance(o, str) else o for o in outputs]
    assert stored == [Blob(size=len(e), sha256=_sha(e), truncated=True) for e in expected]
    # The output's text appears nowhere in the tape: only its digest.
    assert b"On branch" not in path.read_bytes()


def test_the_digest_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_payload, "_DIGEST_MEMO_BUDGET", 100)
    codec = PayloadCodec(Level.STANDARD)
    texts = [f"{i:03d}" * 20 for i in range(10)]  # 60 characters each
    for text in texts * 2:
        blob = codec.encode(text)
        assert blob == Blob(size=60, sha256=_sha(text.encode()), truncated=True)
        # Never more than the budget and one output remembered.
        assert sum(map(len, codec._digests)) <= 100 + 60
