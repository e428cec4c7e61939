"""Against a real S3 protocol endpoint on loopback (moto's server), through s3fs: push,
pull, list, replay and corpus --minimize from an s3:// url, as a CI job configured by
environment would."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from .conftest import CORPUS, HOOK, SECRET_KEY, run_cli

pytest_plugins = ["pytester"]


@pytest.fixture
def url() -> str:
    """A folder of its own in the bucket (moto keeps one state for the whole process)."""
    return f"s3://tapes/corpus-{uuid.uuid4().hex[:8]}"


def test_push_pull_list_over_s3(s3: dict[str, str], url: str, corpus: Path, tmp_path: Path) -> None:
    first = run_cli(s3, "push", str(corpus), url, "--json")
    assert first.returncode == 0, first.stderr
    figures = json.loads(first.stdout)
    assert (figures["uploaded"], figures["blobs_uploaded"]) == (6, 1)

    again = run_cli(s3, "push", str(corpus), url, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["uploaded"] == 0

    pulled = tmp_path / "pulled"
    result = run_cli(s3, "pull", url, str(pulled))
    assert result.returncode == 0, result.stderr
    for original in corpus.rglob("*"):
        if original.is_file():
            copy = pulled / original.relative_to(corpus)
            assert copy.read_bytes() == original.read_bytes(), copy

    listed = run_cli({**s3, "SESSIONTAPE_CACHE": str(tmp_path / "cache")}, "list", url, "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 6
    for output in (first, again, result, listed):
        assert SECRET_KEY not in output.stdout + output.stderr


def test_replay_a_shard_from_s3(
    s3: dict[str, str],
    url: str,
    pytester: pytest.Pytester,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert run_cli(s3, "push", str(CORPUS), url).returncode == 0
    for name, value in s3.items():
        monkeypatch.setenv(name, value)
    pytester.makeconftest(HOOK)
    cache = tmp_path / "cache"
    receipt = tmp_path / "receipt.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--replay", url, "--sessiontape-cache", str(cache),
        "--sessiontape-shard", "1/4", "--sessiontape-report", str(receipt),
    )  # fmt: skip
    reports = json.loads(receipt.read_text())
    assert reports, "shard 1 of 4 replayed nothing"
    result.assert_outcomes(passed=len(reports))
    assert all(r["nodeid"].startswith(f"{url}/") for r in reports)
    downloaded = [p for p in cache.rglob("*.jsonl") if ".versions" not in p.parts]
    assert len(downloaded) == len(reports) < 5  # its own share, no more
    everything = receipt.read_text() + "\n".join(result.outlines + result.errlines)
    everything += "".join(p.read_text() for p in cache.rglob("*") if p.is_file())
    assert SECRET_KEY not in everything


def test_corpus_minimize_over_s3(s3: dict[str, str], url: str, tmp_path: Path) -> None:
    assert run_cli(s3, "push", str(CORPUS), url).returncode == 0
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(HOOK, encoding="utf-8")
    env = {**s3, "SESSIONTAPE_CACHE": str(tmp_path / "cache")}
    args = ("--minimize", "--json", "-n", "2")
    remote = run_cli(env, "corpus", url, *args, cwd=project)
    assert remote.returncode == 0, remote.stderr
    local = run_cli(env, "corpus", str(CORPUS), *args, cwd=project)
    assert local.returncode == 0, local.stderr
    result = json.loads(remote.stdout)
    assert result == json.loads(local.stdout)
    assert result["tapes"] == 5
    assert result["keep"] == ["gardener-full.jsonl"]

    refused = run_cli(env, "corpus", url, "--minimize", "--move-to", str(tmp_path / "moved"))
    assert refused.returncode == 2
    assert "never deletes or moves anything in a store" in refused.stderr
    assert not (tmp_path / "moved").exists()
    listed = run_cli(env, "list", url, "--json")
    assert len(json.loads(listed.stdout)) == 5  # the store still holds every tape
    for output in (remote, refused, listed):
        assert SECRET_KEY not in output.stdout + output.stderr
