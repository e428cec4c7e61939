"""pytest --replay URL through the cache, --sessiontape-shard, and receipts merge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessiontape.fleet import Durations, Shard, split

from .conftest import CORPUS, HOOK, cli

pytest_plugins = ["pytester"]

GARDENER = sorted(p.name for p in CORPUS.glob("*.jsonl"))


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(HOOK)
    return pytester


def pushed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The gardener corpus in a file:// store."""
    store = tmp_path / "store"
    store.mkdir()
    assert cli("push", str(CORPUS), store.as_uri()) == 0
    capsys.readouterr()
    return store.as_uri()


def passed(result: pytest.RunResult) -> list[str]:
    return sorted(
        line.split()[1].rsplit("/", 1)[-1] for line in result.outlines if line.startswith("PASSED ")
    )


def test_replay_from_a_store_url_through_the_cache(
    project: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = pushed(tmp_path, capsys)
    cache = tmp_path / "cache"
    args = ("-p", "no:randomly", "-rA", "--replay", url, "--sessiontape-cache", str(cache))
    first = project.runpytest_subprocess(*args)
    first.assert_outcomes(passed=len(GARDENER))
    assert passed(first) == [f"{name}::{name[:-6]}" for name in GARDENER]
    first.stdout.fnmatch_lines([f"PASSED {url}/gardener-happy.jsonl::gardener-happy"])
    first.stdout.fnmatch_lines([f"replay: {url} (5 tapes in the store)", "cache *: 5 downloaded*"])
    copies = sorted(p.name for p in cache.rglob("*.jsonl") if ".versions" not in p.parts)
    assert copies == GARDENER

    second = project.runpytest_subprocess(*args)
    second.assert_outcomes(passed=len(GARDENER))
    second.stdout.fnmatch_lines(["cache *: 0 downloaded (0 bytes), 5 reused"])


def test_replay_from_a_url_over_xdist(
    project: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = pushed(tmp_path, capsys)
    result = project.runpytest_subprocess(
        "-p", "no:randomly", "-n", "2", "--replay", url,
        "--sessiontape-cache", str(tmp_path / "cache"),
    )  # fmt: skip
    result.assert_outcomes(passed=len(GARDENER))


def test_four_shards_cover_the_corpus_once_and_download_only_their_share(
    project: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = pushed(tmp_path, capsys)
    seen: list[str] = []
    for index in range(1, 5):
        cache = tmp_path / f"cache-{index}"  # a cold CI machine per shard
        result = project.runpytest_subprocess(
            "-p", "no:randomly", "-rA", "--replay", url, "--sessiontape-cache", str(cache),
            "--sessiontape-shard", f"{index}/4",
        )  # fmt: skip
        mine = passed(result)
        result.stdout.fnmatch_lines([f"shard {index}/4: {len(mine)} of 5 tapes*"])
        downloaded = [p for p in cache.rglob("*.jsonl") if ".versions" not in p.parts]
        assert len(downloaded) == len(mine)
        seen += mine
    assert sorted(seen) == [f"{name}::{name[:-6]}" for name in GARDENER]


#: Counts how often pytest offered each file to the collectors, and writes the counts.
COUNTING = """
import collections, json, os

offered = collections.Counter()


def pytest_collect_file(file_path, parent):
    offered[file_path.name] += 1


def pytest_collection_finish(session):
    with open(os.environ["OFFERED"], "w") as fh:
        json.dump(offered, fh)
"""


@pytest.mark.parametrize("source", ["folder", "store"])
def test_a_shard_collects_its_folder_once_not_once_per_tape(
    project: pytest.Pytester,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    source: str,
) -> None:
    """pytest collects the folder of every path argument again: a shard of thousands of
    tapes must reach it as its folder (the rest of it left out), not as thousands of files."""
    folder = tmp_path / "many"
    (folder / "sub").mkdir(parents=True)
    for i in range(24):
        shutil.copy(CORPUS / GARDENER[i % len(GARDENER)], folder / f"sub/tape-{i:02d}.jsonl")
    (folder / "notes.jsonl").write_text('{"not": "a cassette"}\n')
    # A test module beside the tapes is no tape of the shard: not collected by it.
    (folder / "sub" / "test_beside.py").write_text("def test_beside():\n    pass\n")
    replay = str(folder)
    if source == "store":
        replay = (tmp_path / "store").as_uri()
        assert cli("push", str(folder), replay) == 0
        capsys.readouterr()
    project.makepyfile(counting=COUNTING)
    offered = tmp_path / "offered.json"
    monkeypatch.setenv("OFFERED", str(offered))
    result = project.runpytest_subprocess(
        "-p", "no:randomly", "-p", "counting", "--collect-only", "-q", "--replay", replay,
        "--sessiontape-cache", str(tmp_path / "cache"), "--sessiontape-shard", "2/3",
    )  # fmt: skip
    result.stdout.fnmatch_lines(["8 tests collected*"])
    counts = json.loads(offered.read_text())
    # Only the shard's own tapes reach the collectors, each once.
    assert len([name for name in counts if name.startswith("tape-")]) == 8
    assert set(counts.values()) == {1}


def test_a_shard_without_replay_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--sessiontape-shard", "1/2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--sessiontape-shard splits the cassettes of --replay*"])


@pytest.mark.parametrize("value", ["0/4", "5/4", "2", "a/b", "1/0"])
def test_a_bad_shard_is_refused(project: pytest.Pytester, value: str) -> None:
    result = project.runpytest("--replay", str(CORPUS), "--sessiontape-shard", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{value!r} is not a shard; write i/N*"])


def test_shards_are_balanced_by_the_durations_of_a_receipt(tmp_path: Path) -> None:
    # 40 tapes of very different lengths, as a receipt reports them.
    seconds = [0.1 * (1 + (i * 37) % 23) for i in range(40)]
    receipt = tmp_path / "receipt.json"
    receipt.write_text(
        json.dumps(
            [
                {
                    "run_id": f"run-{i}",
                    "cassette": f"/x/t{i}.jsonl",
                    "replay_duration_ns": int(s * 1e9),
                }
                for i, s in enumerate(seconds)
            ]
        )
    )
    durations = Durations.from_receipts([receipt])
    tapes = [(f"t{i}.jsonl", f"run-{i}") for i in range(40)]
    shards = [split(tapes, Shard(i, 4), durations) for i in range(1, 5)]
    members = [set(s.names) for s in shards]
    assert set().union(*members) == {name for name, _ in tapes}
    assert sum(len(m) for m in members) == 40
    totals = [sum(durations.of(n, f"run-{n[1:-6]}") for n in m) for m in members]
    mean = sum(seconds) / 4
    assert all(abs(total - mean) <= 0.1 * mean for total in totals), totals
    # Every job computes the same split, and says what each shard should take.
    assert all(s.loads == shards[0].loads for s in shards)
    assert list(shards[0].loads) == pytest.approx(totals)
    # A tape no receipt knows counts the median.
    assert Durations.from_receipts([receipt]).of("new.jsonl", "run-new") == pytest.approx(
        sorted(seconds)[19] / 2 + sorted(seconds)[20] / 2
    )


def test_receipts_of_shards_merge_into_the_receipt_of_one_run(
    project: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serial = tmp_path / "serial.json"
    project.runpytest_subprocess(
        "-p", "no:randomly", "--replay", str(CORPUS), "--sessiontape-report", str(serial)
    ).assert_outcomes(passed=5)
    parts = []
    for index in (1, 2):
        part = tmp_path / f"shard-{index}.json"
        project.runpytest_subprocess(
            "-p", "no:randomly", "--replay", str(CORPUS), "--sessiontape-shard", f"{index}/2",
            "--sessiontape-report", str(part),
        )  # fmt: skip
        parts.append(str(part))
    merged = tmp_path / "merged.json"
    assert cli("receipts", "merge", *parts, "-o", str(merged)) == 0
    assert "merged 2 receipts into" in capsys.readouterr().out

    def essentials(path: Path) -> list[tuple[str, str, bool, int]]:
        return [
            (r["nodeid"], r["run_id"], r["ok"], r["consumed"]) for r in json.loads(path.read_text())
        ]

    assert essentials(merged) == essentials(serial)
    assert cli("report", str(CORPUS / "gardener-happy.jsonl"), "--receipt", str(merged),
               "-o", str(tmp_path / "page.html")) == 0  # fmt: skip


def test_merge_refuses_to_write_over_an_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    receipt = tmp_path / "a.json"
    receipt.write_text("[]")
    assert cli("receipts", "merge", str(receipt), "-o", str(receipt)) == 2
    assert "is one of the receipts being merged" in capsys.readouterr().err
    assert receipt.read_text() == "[]"


@pytest.mark.parametrize("flag", ["--sessiontape-update", "--sessiontape-live=process"])
def test_update_and_live_refuse_a_store_url(
    project: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    # A store's tapes are read through the cache: rewriting the cached copy would change
    # no tape anyone keeps. The run stops before anything is downloaded or written.
    url = pushed(tmp_path, capsys)
    store = Path(url.removeprefix("file://"))
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    cache = tmp_path / "cache"
    result = project.runpytest("--replay", url, "--sessiontape-cache", str(cache), flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    name = flag.split("=")[0]
    result.stderr.fnmatch_lines(
        [f"*{name} rewrites tapes in place, and {url} is a store*sessiontape pull {url} tapes/*"]
    )
    assert not cache.exists()
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
