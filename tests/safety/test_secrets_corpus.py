"""No secret on disk at default settings: every shape of the corpus, planted in every place.

Each secret shape is planted, fresh, in each place a recording writes (see ``_planting``),
through the real API and a real subprocess; the raw bytes of the cassette, and of what
``show``, ``export`` and ``report`` make of it, must hold none of them.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

import sessiontape
from sessiontape.cli import main

from ._gitleaks_kinds import gitleaks_kinds, sample
from ._ordinary import altered, record_ordinary
from ._planting import PLACES, record_planted
from ._secrets import LISTED_LATER, SHAPES, UNLISTED, leaked

#: Every shape planted: the listed ones, those the issue found on disk (now listed), and
#: secrets no list names (found by their context: the shape-free detector).
CORPUS = {**SHAPES, **LISTED_LATER, **UNLISTED}
#: gitleaks' rules, each by its own true examples: one in four here, every one in
#: ``nox -s reliability``.
GITLEAKS = sample(gitleaks_kinds(), 4)


def leaks_of(data: bytes, planted: dict[str, list[str]]) -> list[str]:
    """The places whose planted secret is in ``data``."""
    return [place for place, cores in planted.items() if leaked(data, cores)]


@pytest.mark.parametrize("kind", sorted({**CORPUS, **GITLEAKS}))
def test_no_shape_reaches_the_disk_from_any_place(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make = {**CORPUS, **GITLEAKS}[kind]
    path, planted = record_planted(tmp_path, make, seed=zlib.crc32(kind.encode()))
    assert sorted(planted) == sorted(PLACES)
    rec = sessiontape.load(path)
    assert rec.error is not None  # every place was written
    assert rec.end is not None
    assert leaks_of(path.read_bytes(), planted) == []

    out = tmp_path / "out"
    out.mkdir()
    assert main(["show", str(path), "--limit", "1000"]) == 0
    assert main(["export", str(path), "-o", str(out / "otlp.json")]) == 0
    assert main(["report", str(path), "-o", str(out / "report.html")]) == 0
    shown = capsys.readouterr().out.encode()
    assert leaks_of(shown, planted) == []
    assert leaks_of((out / "otlp.json").read_bytes(), planted) == []
    assert leaks_of((out / "report.html").read_bytes(), planted) == []
    # And the tape passes the check committed tapes go through.
    assert main(["scrub", "--check", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: no secrets found.\n"


def test_the_corpus_is_large_enough() -> None:
    assert len(gitleaks_kinds()) >= 200
    assert len(GITLEAKS) >= 50
    assert len(SHAPES) >= 30
    assert len(LISTED_LATER) >= 14
    assert len(UNLISTED) >= 15
    assert len(PLACES) >= 20


@pytest.mark.writes_invalid_tapes
def test_the_leak_check_can_fail(tmp_path: Path) -> None:
    # The same session recorded with redaction off leaks in every place.
    import random

    text, cores = SHAPES["github classic (ghp_)"](random.Random(1))
    path = tmp_path / "raw.jsonl"
    with sessiontape.record(path, redact=False, config={"note": text}) as tape:
        tape.finish(outcome={"summary": text})
    assert leaks_of(path.read_bytes(), {"config": cores}) == ["config"]


def test_an_ordinary_session_is_recorded_as_it_is(tmp_path: Path) -> None:
    # The false positives: git shas, UUIDs, paths, URLs, base64 outputs, credential words
    # in prose and -p/-a options are no secrets, and none of them is redacted.
    for seed in range(3):
        directory = tmp_path / str(seed)
        directory.mkdir()
        path, texts = record_ordinary(directory, seed)
        data = path.read_bytes()
        assert altered(data, texts) == []
        assert b"[REDACTED" not in data
