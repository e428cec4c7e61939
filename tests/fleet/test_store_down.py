"""A store that is down: ``pytest --replay s3://...`` replays from a warm cache.

The gardener corpus is pushed to a real S3 endpoint (moto's server) and replayed once
through the cache, which keeps the store's listing. Then the server is stopped: the same
run passes from the cache with one ``StoreWarning`` naming the store's error and the
listing's age; ``--sessiontape-offline`` passes without a warning and without even
loading a network client; a tape missing from the cache, and a store the cache never
listed, are errors naming them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import CORPUS, HOOK, SECRET_KEY, moto_s3, run_cli

pytest_plugins = ["pytester"]

TAPES = len(list(CORPUS.glob("*.jsonl")))

#: Beside the replay hook: which network clients the run loaded, written at its end.
LOADED = """
import json, sys


def pytest_sessionfinish(session):
    clients = sorted(
        m for m in sys.modules if m.split(".")[0] in ("fsspec", "s3fs", "botocore", "aiobotocore")
    )
    with open("loaded.json", "w") as fh:
        json.dump(clients, fh)
"""


class DownStore:
    """A store that was pushed to, read once into a cache, and is now down."""

    def __init__(self, url: str, cache: Path, pytester: pytest.Pytester) -> None:
        self.url = url
        self.cache = cache
        self.pytester = pytester

    def replay(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest_subprocess(
            "-p", "no:randomly", "-rA", "--replay", self.url,
            "--sessiontape-cache", str(self.cache), *args,
        )  # fmt: skip

    def loaded(self) -> list[str]:
        clients: list[str] = json.loads((self.pytester.path / "loaded.json").read_text())
        return clients


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """The corpus pushed to moto's S3 server and replayed once through a cache, then the
    server stopped: the store's URL, the warm cache and the environment that points at
    the stopped server."""
    project = tmp_path_factory.mktemp("warm")
    (project / "conftest.py").write_text(HOOK, encoding="utf-8")
    with moto_s3() as (env, stop):
        url = f"s3://tapes/corpus-{uuid.uuid4().hex[:8]}"
        assert run_cli(env, "push", str(CORPUS), url).returncode == 0
        warmed = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:randomly", "-q", "--replay", url,
             "--sessiontape-cache", "cache"],
            cwd=project, env={**os.environ, **env}, capture_output=True, text=True,
            timeout=600, check=False,
        )  # fmt: skip
        assert warmed.returncode == 0, warmed.stdout + warmed.stderr
        assert f"{TAPES} passed" in warmed.stdout
        stop()
        yield url, project / "cache", env


@pytest.fixture
def store(
    warm: tuple[str, Path, dict[str, str]],
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
) -> DownStore:
    url, cache, env = warm
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # One attempt, not botocore's retries with back-off, at the store that is down.
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    pytester.makeconftest(HOOK + LOADED)
    shutil.copytree(cache, pytester.path / "cache")
    return DownStore(url, pytester.path / "cache", pytester)


def _output(result: pytest.RunResult) -> str:
    return "\n".join(result.outlines + result.errlines)


def test_a_store_that_is_down_replays_from_the_cache_with_one_warning(store: DownStore) -> None:
    result = store.replay()
    result.assert_outcomes(passed=TAPES, warnings=1)
    output = _output(result)
    (warning,) = [line for line in result.outlines if "StoreWarning: sessiontape:" in line]
    failure = f"{store.url}: cannot read .sessiontape/manifest.json: EndpointConnectionError"
    assert failure in warning
    assert "Replaying its tapes from the cache" in warning
    assert " ago (" in warning  # the listing's age
    assert "--sessiontape-offline" in warning
    assert f"replay: {store.url} ({TAPES} tapes, the store cannot be read: " in output
    assert f"cache {store.cache}: 0 downloaded (0 bytes), {TAPES} reused" in output
    assert SECRET_KEY not in output


def test_offline_never_touches_the_network(store: DownStore) -> None:
    result = store.replay("--sessiontape-offline")
    result.assert_outcomes(passed=TAPES)
    output = _output(result)
    assert "StoreWarning" not in output
    assert f"replay: {store.url} ({TAPES} tapes, offline: the cache's listing of " in output
    assert store.loaded() == []


def test_under_xdist_the_warning_is_given_once(store: DownStore) -> None:
    result = store.replay("-n", "2")
    result.assert_outcomes(passed=TAPES, warnings=1)


@pytest.mark.parametrize("offline", [False, True], ids=["down", "offline"])
def test_a_tape_missing_from_the_cache_is_an_error_naming_it(
    store: DownStore, offline: bool
) -> None:
    (copy,) = (p for p in store.cache.rglob("gardener-happy.jsonl") if ".versions" not in p.parts)
    copy.unlink()
    result = store.replay(*(["--sessiontape-offline"] if offline else []))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = _output(result)
    assert f"{store.url}/gardener-happy.jsonl: its copy is not in the cache " in output
    assert "Replay it once with the store reachable" in output


def test_offline_without_a_listing_is_an_error_naming_the_store(store: DownStore) -> None:
    result = store.replay("--sessiontape-offline", "--sessiontape-cache", str(store.cache / "x"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"{store.url}: the cache {store.cache / 'x'} holds no listing of this store to "
        "replay from, and the store is not read (--sessiontape-offline was given)."
    ) in " ".join(_output(result).split())
