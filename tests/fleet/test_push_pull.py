"""push, pull and list against fsspec stores: memory:// and file:// (S3: test_s3.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessiontape.fleet import MANIFEST, TapeStore

from .conftest import cli


def files_under(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def push_figures(capsys: pytest.CaptureFixture[str], source: Path, url: str) -> dict[str, object]:
    assert cli("push", str(source), url, "--json") == 0
    figures: dict[str, object] = json.loads(capsys.readouterr().out)
    return figures


def test_push_then_pull_gives_the_same_files(
    corpus: Path, store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = push_figures(capsys, corpus, store_url)
    assert first["tapes"] == 6
    assert first["uploaded"] == 6
    assert first["blobs_uploaded"] == 1
    store = TapeStore(store_url)
    names = [tape.name for tape in store.tapes()]
    assert names == sorted(
        files_under(corpus).keys() - {n for n in files_under(corpus) if ".blobs/" in n}
    )
    assert json.loads(store.fs.cat_file(store.path(MANIFEST)))["tapes"]["extra/big-output.jsonl"][
        "run_id"
    ]

    pulled = tmp_path / "pulled"
    assert cli("pull", store_url, str(pulled)) == 0
    assert "pulled 6 tapes" in capsys.readouterr().out
    assert files_under(pulled) == files_under(corpus)


def test_a_second_push_uploads_nothing(
    corpus: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    push_figures(capsys, corpus, store_url)
    again = push_figures(capsys, corpus, store_url)
    assert (again["uploaded"], again["unchanged"], again["blobs_uploaded"]) == (0, 6, 0)
    assert again["bytes_uploaded"] == 0


def test_a_changed_tape_alone_is_pushed_again(
    corpus: Path, store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    push_figures(capsys, corpus, store_url)
    changed = corpus / "gardener-happy.jsonl"
    changed.write_bytes(changed.read_bytes().replace(b'"happy"', b'"happy2"', 1))
    again = push_figures(capsys, corpus, store_url)
    assert (again["uploaded"], again["unchanged"]) == (1, 5)
    pulled = tmp_path / "pulled"
    assert cli("pull", store_url, str(pulled)) == 0
    assert (pulled / "gardener-happy.jsonl").read_bytes() == changed.read_bytes()


def test_an_interrupted_push_resumes(
    corpus: Path,
    store_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    uploads: list[str] = []
    real_upload = TapeStore.upload

    def upload_then_stop(self: TapeStore, source: Path, name: str) -> None:
        if len(uploads) == 3:
            raise KeyboardInterrupt
        real_upload(self, source, name)
        uploads.append(name)

    monkeypatch.setattr(TapeStore, "upload", upload_then_stop)
    assert cli("push", str(corpus), store_url) == 130
    monkeypatch.setattr(TapeStore, "upload", real_upload)
    capsys.readouterr()
    tapes_sent = [name for name in uploads if ".blobs/" not in name]
    resumed = push_figures(capsys, corpus, store_url)
    assert resumed["unchanged"] == len(tapes_sent)
    assert resumed["uploaded"] == 6 - len(tapes_sent)


@pytest.mark.writes_invalid_tapes
def test_push_refuses_a_tape_holding_a_secret(
    corpus: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    leaky = corpus / "gardener-review.jsonl"
    # A token pasted into a recorded output by hand: the recorder would have redacted it.
    text = leaky.read_text(encoding="utf-8")
    assert '"stdout":"' in text
    leaky.write_text(text.replace('"stdout":"', f'"stdout":"{token} ', 1), encoding="utf-8")
    assert cli("push", str(corpus), store_url) == 1
    captured = capsys.readouterr()
    assert "gardener-review.jsonl" in captured.err
    assert "nothing was uploaded" in captured.err
    assert token not in captured.out + captured.err
    assert TapeStore(store_url).tapes() == []


def test_pull_never_overwrites_a_local_file_that_differs(
    corpus: Path, store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    push_figures(capsys, corpus, store_url)
    pulled = tmp_path / "pulled"
    pulled.mkdir()
    mine = pulled / "gardener-full.jsonl"
    mine.write_text("my own notes, not a tape\n", encoding="utf-8")
    shutil.copy(corpus / "gardener-happy.jsonl", pulled / "gardener-happy.jsonl")
    assert cli("pull", store_url, str(pulled)) == 1
    captured = capsys.readouterr()
    assert f"{mine}: differs from the store's tape" in captured.err
    assert "1 already there" in captured.out
    assert mine.read_text(encoding="utf-8") == "my own notes, not a tape\n"
    assert (pulled / "gardener-conflict.jsonl").read_bytes() == (
        corpus / "gardener-conflict.jsonl"
    ).read_bytes()


def test_list_reads_a_store(
    corpus: Path, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("SESSIONTAPE_CACHE", str(tmp_path / "cache"))
    push_figures(capsys, corpus, store_url)
    assert cli("list", store_url, "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == [
        "extra/big-output.jsonl",
        "gardener-conflict.jsonl",
        "gardener-crash.jsonl",
        "gardener-full.jsonl",
        "gardener-happy.jsonl",
        "gardener-review.jsonl",
    ]
    assert all(r["entries"] > 2 for r in rows)


def test_a_store_url_needs_a_known_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("list", "nosuchscheme://bucket/tapes") == 2
    err = capsys.readouterr().err
    assert "nosuchscheme://bucket/tapes" in err
    assert "check the URL's scheme" in err
