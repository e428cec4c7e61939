"""One corpus over two hosts: pytest-xdist over execnet socket gateways on loopback.

Each "host" is an execnet socket server started by the test in a folder of its own that
holds the project (its conftest.py) but not the corpus: every host pulls the tapes it is
given from the store into its own cache, and nothing is rsynced.
"""

from __future__ import annotations

import json
import re
import select
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import CORPUS, HOOK, cli

pytest_plugins = ["pytester"]

execnet = pytest.importorskip("execnet")
SOCKETSERVER = Path(execnet.__file__).parent / "script" / "socketserver.py"


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[list[tuple[int, Path]]]:
    started: list[tuple[subprocess.Popen[str], threading.Thread]] = []
    listening: list[tuple[int, Path]] = []
    try:
        for name in ("host-a", "host-b"):
            folder = tmp_path / name
            folder.mkdir()
            (folder / "conftest.py").write_text(HOOK, encoding="utf-8")
            (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
            # Port 0: the system picks a free port as the server binds it (a port picked
            # before could be taken by then), and the server says which.
            process = subprocess.Popen(
                [sys.executable, "-u", str(SOCKETSERVER), "127.0.0.1:0"],
                cwd=folder,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            port = _listening_port(process)
            assert process.stdout is not None
            # What it says from then on is read, so that a full pipe never stops it.
            drain = threading.Thread(target=process.stdout.read, daemon=True)
            drain.start()
            started.append((process, drain))
            listening.append((port, folder))
        yield listening
    finally:
        for process, drain in started:
            process.kill()
            process.wait(timeout=30)
            drain.join(30)


def _listening_port(process: subprocess.Popen[str]) -> int:
    """The port the socket server listens on, from the line it prints once it does
    (``... Entering Accept loop ('127.0.0.1', PORT)``): the test waits for that line
    itself, or for the server's end (a minute only a hang reaches)."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 60)
    line = process.stdout.readline() if ready else ""
    found = re.search(r"Entering Accept loop \('127\.0\.0\.1', (\d+)\)", line)
    if found is None:
        process.kill()
        rest = process.communicate(timeout=30)[0]
        raise AssertionError(f"the socket server did not start listening: {line}{rest}")
    return int(found.group(1))


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
