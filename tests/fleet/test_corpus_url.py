"""``sessiontape corpus URL`` (and ``--minimize``) over memory:// and file:// stores
(S3: test_s3.py): read through the local cache, the same answer as the folder, and the
store left exactly as it was; ``--move-to`` is refused for a store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessiontape.fleet import MANIFEST, TapeStore

from .conftest import CORPUS, HOOK, cli


@pytest.fixture
def repeating(tmp_path: Path) -> Path:
    """The gardener corpus and a copy of one of its tapes in a subfolder: the copy covers
    nothing the others do not."""
    folder = tmp_path / "repeating"
    (folder / "copies").mkdir(parents=True)
    for tape in sorted(CORPUS.glob("*.jsonl")):
        shutil.copy(tape, folder / tape.name)
    shutil.copy(CORPUS / "gardener-happy.jsonl", folder / "copies" / "happy-again.jsonl")
    return folder


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory holds the project's replay hook; the command's cache is
    a folder of the test's own."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "conftest.py").write_text(HOOK, encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.setenv("SESSIONTAPE_CACHE", str(tmp_path / "cache"))
    return root


@pytest.fixture
def pushed(repeating: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> str:
    """The store, holding the repeating corpus."""
    assert cli("push", str(repeating), store_url) == 0
    capsys.readouterr()
    return store_url


def store_state(url: str) -> dict[str, bytes]:
    """Every object under the store's root (tapes, sidecars, manifest), with its bytes."""
    store = TapeStore(url)
    objects = {path: store.fs.cat_file(path) for path in store.fs.find(store.root)}
    assert any(path.endswith(MANIFEST) for path in objects)
    return objects


def corpus_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert cli("corpus", *args, "--minimize", "--json", "-n", "2") == 0
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_corpus_of_a_store_matches_the_corpus_of_its_folder(
    repeating: Path, pushed: str, project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_url = pushed
    before = store_state(store_url)

    remote = corpus_json(capsys, store_url)
    local = corpus_json(capsys, str(repeating))

    assert remote == local
    assert remote["tapes"] == 6
    assert remote["failing"] == {}
    # The full scenario covers every shape the others have (the copy in a subfolder too).
    assert remote["keep"] == ["gardener-full.jsonl"]
    assert "copies/happy-again.jsonl" in str(remote["redundant"])
    assert remote["moved"] == []
    # Replayed from the cache's copies; the store is exactly as it was.
    cached = sorted(
        p.relative_to(next((tmp_path / "cache").iterdir())).as_posix()
        for p in (tmp_path / "cache").rglob("*.jsonl")
        if ".versions" not in p.parts
    )
    assert cached == sorted(p.relative_to(repeating).as_posix() for p in repeating.rglob("*.jsonl"))
    assert store_state(store_url) == before


def test_move_to_is_refused_for_a_store(
    pushed: str, project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_url = pushed
    before = store_state(store_url)
    moved = tmp_path / "moved"
    assert cli("corpus", store_url, "--minimize", "--move-to", str(moved)) == 2
    err = capsys.readouterr().err
    assert f"{store_url} is a store" in err
    assert "never deletes or moves anything in a store" in err
    assert "sessiontape pull URL DIR" in err  # what to do instead
    # Refused before anything was read, replayed or written.
    assert not moved.exists()
    assert not (tmp_path / "cache").exists()
    assert store_state(store_url) == before


def test_move_to_a_store_is_refused(
    repeating: Path, store_url: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("corpus", str(repeating), "--minimize", "--move-to", store_url) == 2
    assert "give a local folder" in capsys.readouterr().err
    assert sorted(p.name for p in repeating.rglob("*.jsonl")) == sorted(
        [*(p.name for p in CORPUS.glob("*.jsonl")), "happy-again.jsonl"]
    )
