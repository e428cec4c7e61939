"""One corpus over two hosts: pytest-xdist over execnet socket gateways on loopback.

Each "host" is an execnet socket server started by the test in a folder of its own that
holds the project (its conftest.py) but not the corpus: every host pulls the tapes it is
given from the store into its own cache, and nothing is rsynced.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import CORPUS, HOOK, cli, free_port

pytest_plugins = ["pytester"]

execnet = pytest.importorskip("execnet")
SOCKETSERVER = Path(execnet.__file__).parent / "script" / "socketserver.py"


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[list[tuple[int, Path]]]:
    started: list[tuple[subprocess.Popen[bytes], int, Path]] = []
    try:
        for name in ("host-a", "host-b"):
            folder = tmp_path / name
            folder.mkdir()
            (folder / "conftest.py").write_text(HOOK, encoding="utf-8")
            (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
            port = free_port()
            process = subprocess.Popen(
                [sys.executable, str(SOCKETSERVER), f"127.0.0.1:{port}"],
                cwd=folder,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            started.append((process, port, folder))
        for _, port, _ in started:
            _wait_listening(port)
        yield [(port, folder) for _, port, folder in started]
    finally:
        for process, _, _ in started:
            process.kill()
            process.wait(timeout=30)


def _wait_listening(port: int) -> None:
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"the socket server on port {port} did not start")


def essentials(path: Path) -> list[tuple[str, str, bool, int, int]]:
    return [
        (r["nodeid"], r["run_id"], r["ok"], r["consumed"], r["unconsumed"])
        for r in json.loads(path.read_text(encoding="utf-8"))
    ]


def test_a_corpus_over_two_socket_hosts_matches_a_serial_run(
    hosts: list[tuple[int, Path]],
    pytester: pytest.Pytester,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    assert cli("push", str(CORPUS), store.as_uri()) == 0
    capsys.readouterr()
    pytester.makeconftest(HOOK)

    serial = tmp_path / "serial.json"
    pytester.runpytest_subprocess(
        "-p", "no:randomly", "--replay", store.as_uri(), "--sessiontape-report", str(serial)
    ).assert_outcomes(passed=5)

    spread = tmp_path / "spread.json"
    gateways = [arg for port, _ in hosts for arg in ("--tx", f"socket=127.0.0.1:{port}")]
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "xdist", "-d", *gateways,
        "--replay", store.as_uri(), "--sessiontape-report", str(spread),
    )  # fmt: skip
    result.assert_outcomes(passed=5)
    assert essentials(spread) == essentials(serial)
    # Both hosts pulled their tapes from the store into their own caches.
    for _, folder in hosts:
        copies = [
            p
            for p in (folder / ".sessiontape-cache").rglob("*.jsonl")
            if ".versions" not in p.parts
        ]
        assert copies, f"{folder.name} replayed nothing from its own cache"
