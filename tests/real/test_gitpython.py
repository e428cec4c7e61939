"""GitPython, imported at the top of the module as real code does, under patch_subprocess().

Its command layer (``git.Git``) replays with no repository on disk; the ``Repo`` API, which
also reads ``.git`` files directly, replays where the repository exists. Every git process
GitPython starts is recorded, the persistent ``cat-file --batch``/``--batch-check``
conversations included.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git
import pytest

import sessiontape

from .conftest import RoundTrip, Spawns

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

DATES = {"GIT_AUTHOR_DATE": "2024-01-01T00:00:00", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00"}


def command_layer(d: Path) -> Any:
    work = d / "repo"
    work.mkdir()
    (work / "a.txt").write_text("one\n")
    g = git.Git(str(work))
    g.update_environment(**DATES)
    g.init("-b", "main")
    g.config("user.name", "Tape")
    g.config("user.email", "tape@example.invalid")
    g.add("a.txt")
    g.commit("-m", "first")
    g.branch("feature")
    g.checkout("feature")
    (work / "b.txt").write_text("two\n")
    g.add("b.txt")
    g.commit("-m", "second")
    g.checkout("main")
    g.merge("feature", "--no-ff", "-m", "merge feature")
    g.tag("v1")
    status = g.status("--porcelain")
    revs = g.rev_list("HEAD").split()
    with (work / "a.txt").open("rb") as stream:
        blob = g.hash_object("-w", "--stdin", istream=stream)
    header = g.get_object_header(revs[0])
    data = g.get_object_data(blob)
    again = g.get_object_header(revs[-1])
    first = g.get_object_data(revs[-1])
    log = g.log("--format=%H %s")
    g.clear_cache()  # ends the persistent cat-file processes
    return status, revs, blob, header, data, again, first, log


def test_the_command_layer_replays_with_no_repository(
    round_trip: Callable[..., RoundTrip],
) -> None:
    done = round_trip(command_layer)
    assert done.replayed == done.recorded
    assert not (done.replayed_in / "repo" / ".git").exists()
    argvs = [" ".join(p.argv[1:3]) for p in done.processes]
    assert "cat-file --batch-check" in argvs
    assert "cat-file --batch" in argvs
    conversations = [p for p in done.processes if p.chunks]
    assert len(conversations) == 2
    assert len(done.processes) == done.spawned_on_record == 18
    assert done.report.ok, done.report.render()
    assert done.report.consumed == done.report.loaded == 18
    assert done.spawned_on_replay == 0


def _make_repo(d: Path) -> None:
    """A repository with some history, made with real git before anything is recorded."""
    work = d / "repo"
    work.mkdir()
    g = git.Git(str(work))
    g.update_environment(**DATES)
    g.init("-b", "main")
    g.config("user.name", "Tape")
    g.config("user.email", "tape@example.invalid")
    (work / "a.txt").write_text("one\n")
    g.add("a.txt")
    g.commit("-m", "first")
    g.checkout("-b", "feature")
    (work / "b.txt").write_text("two\n")
    g.add("b.txt")
    g.commit("-m", "second")
    g.checkout("main")
    g.merge("feature", "--no-ff", "-m", "merge feature")
    g.clear_cache()


def repo_api(d: Path) -> Any:
    repo = git.Repo(d / "repo")
    repo.git.update_environment(**DATES)
    repo.git.tag("v1")
    (d / "repo" / "untracked.txt").write_text("new\n")
    with (d / "repo" / "a.txt").open("rb") as stream:
        blob = repo.git.hash_object("--stdin", istream=stream)
    found = (
        blob,
        repo.head.commit.message,
        repo.head.commit.parents[1].message,
        [c.message for c in repo.iter_commits("main")],
        sorted(h.name for h in repo.heads),
        [t.name for t in repo.tags],
        repo.is_dirty(),
        repo.untracked_files,
        repo.git.status("--porcelain"),
        repo.git.rev_list("--count", "HEAD"),
        repo.git.log("--format=%s"),
    )
    repo.close()
    return found


def test_every_process_of_the_repo_api_is_recorded_and_replays_where_the_repo_exists(
    tmp_path: Path, spawns: Spawns
) -> None:
    _make_repo(tmp_path)
    cassette = tmp_path / "repo.jsonl"
    with (
        spawns.counting() as recorded_spawns,
        sessiontape.record(cassette) as tape,
        tape.patch_subprocess(),
    ):
        recorded = repo_api(tmp_path)
    spawned = len(recorded_spawns.started)
    processes = sessiontape.load(cassette).entries_for("process")
    assert len(processes) == spawned > 8
    kinds = {" ".join(p.argv[1:3]) for p in processes}
    assert {"cat-file --batch-check", "cat-file --batch"} <= kinds
    assert {"tag v1", "hash-object --stdin", "status --porcelain"} <= kinds
    replay_spawns = Spawns()
    with replay_spawns.counting(), sessiontape.replay(cassette) as tape:
        with tape.patch_subprocess():
            replayed = repo_api(tmp_path)
        report = tape.finish()
    assert replayed == recorded
    assert report.ok, report.render()
    assert report.consumed == report.loaded == spawned
    assert replay_spawns.started == []
