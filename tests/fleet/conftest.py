"""A corpus of real tapes, stores to push it to, and a project that replays it.

The corpus is the shipped gardener corpus (``cassettes/``: real git, a SQLite backlog,
agent turns, three workers) plus one tape of a real subprocess whose output is kept in
the sidecar (level ``full``, a small inline limit), so every store test carries sidecars.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import sessiontape
from sessiontape.cli import main

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "cassettes"

#: The project's own hook, as a user's conftest.py would hold it.
HOOK = "from sessiontape.examples.gardener import replay_hook as sessiontape_replay\n"

#: A store's made-up credentials: must never reach a tape, a receipt or the output.
SECRET_KEY = "fleetTestSecretKey/ZyXwVuTsRq0987654321"


def cli(*args: str) -> int:
    return main(list(args))


def record_sidecar_tape(path: Path) -> Path:
    """A real process whose 5,000-byte output goes to the sidecar."""
    with sessiontape.record(path, level="full", max_inline_bytes=1024) as tape:
        runner = tape.process_runner()
        with sessiontape.worker("w1"):
            out = runner.run([sys.executable, "-c", "print('x' * 5000)"], text=True).stdout
        tape.finish({"length": len(out)})
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """The gardener corpus and a sidecar tape, in a folder with a subfolder."""
    folder = tmp_path / "corpus"
    (folder / "extra").mkdir(parents=True)
    for tape in sorted(CORPUS.glob("*.jsonl")):
        shutil.copy(tape, folder / tape.name)
    record_sidecar_tape(folder / "extra" / "big-output.jsonl")
    assert list((folder / "extra").glob("*.blobs/*")), "the sidecar tape has no sidecar"
    return folder


@pytest.fixture(params=["memory", "file"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty store: fsspec's in-memory one, or a folder through ``file://``."""
    if request.param == "memory":
        import fsspec

        root = f"memory://fleet-{uuid.uuid4().hex}"
        yield root
        memory = fsspec.filesystem("memory")
        if memory.exists(root.removeprefix("memory://")):
            memory.rm(root.removeprefix("memory://"), recursive=True)
    else:
        folder = tmp_path / "store"
        folder.mkdir()
        yield folder.as_uri()


@contextlib.contextmanager
def moto_s3() -> Iterator[tuple[dict[str, str], Callable[[], None]]]:
    """A real S3 protocol endpoint on loopback (moto's server) with a bucket ``tapes``,
    the environment that points the s3:// backend at it, as a user's CI would set it, and
    the server (a test may stop it: a store that is down)."""
    pytest.importorskip("s3fs", reason="the s3 extra (s3fs) is not installed")
    server_module = pytest.importorskip("moto.server", reason="moto[server] is not installed")
    # Port 0: the system picks a free port as the server binds it (a port picked before
    # could be taken by then, and start() would wait for ever for a server that failed).
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    port = server.get_host_and_port()[1]
    env = {
        "FSSPEC_S3_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "fleettestaccesskey",
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            server.stop()

    try:
        import boto3

        boto3.client(
            "s3",
            endpoint_url=env["FSSPEC_S3_ENDPOINT_URL"],
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        ).create_bucket(Bucket="tapes")
        yield env, stop
    finally:
        stop()


@pytest.fixture
def s3() -> Iterator[dict[str, str]]:
    """The environment of a running moto S3 server (see :func:`moto_s3`)."""
    with moto_s3() as (env, _):
        yield env


def run_cli(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The ``sessiontape`` command in a fresh process, with ``env`` added."""
    return subprocess.run(
        [sys.executable, "-m", "sessiontape", *args],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
