"""``pytest cassettes/`` goes past files that are not cassettes, whatever they hold."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import Project, Run


def test_stray_files_in_a_corpus_are_not_collected(project: Project, run: Run) -> None:
    project.record("corpus/a.jsonl")
    corpus = project.path / "corpus"
    corpus.joinpath("binary.jsonl").write_bytes(b"\xff\xfe\x00\x89PNG\r\n" * 100)
    corpus.joinpath("latin1.jsonl").write_bytes(b'{"kind": "caf\xe9"}\n')
    corpus.joinpath("deep.jsonl").write_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    corpus.joinpath("dir.jsonl").mkdir()
    os.mkfifo(corpus / "fifo.jsonl")  # reading it would wait forever for a writer
    result = run("corpus", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["corpus/a.jsonl::a PASSED*"])
