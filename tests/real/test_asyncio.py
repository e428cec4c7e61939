"""asyncio's subprocesses under patch_subprocess(): exec and shell, communicate, wait,
readline, returncode and pid, recorded and replayed with nothing spawned."""

from __future__ import annotations

import asyncio
import sys
from asyncio.subprocess import PIPE
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .conftest import PY, RoundTrip


async def _service() -> list[Any]:
    found: list[Any] = []
    proc = await asyncio.create_subprocess_exec(PY, "-c", "print('exec')", stdout=PIPE)
    out, err = await proc.communicate()
    found.append((out, err, proc.returncode, proc.pid > 0))
    proc = await asyncio.create_subprocess_shell("echo shell; exit 3", stdout=PIPE)
    found.append((await proc.stdout.read(), await proc.wait()))  # type: ignore[union-attr]
    code = "import sys\nfor line in sys.stdin:\n    print(line.strip().upper(), flush=True)"
    proc = await asyncio.create_subprocess_exec(PY, "-c", code, stdin=PIPE, stdout=PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    for word in (b"one", b"two"):
        proc.stdin.write(word + b"\n")
        await proc.stdin.drain()
        found.append(await proc.stdout.readline())
    proc.stdin.close()
    found.append(await proc.wait())
    proc = await asyncio.create_subprocess_exec(
        PY, "-c", "import sys; sys.stdout.write(sys.stdin.read()[::-1])", stdin=PIPE, stdout=PIPE
    )
    found.append(await proc.communicate(b"olleh"))
    results = await asyncio.gather(
        *(asyncio.create_subprocess_exec(PY, "-c", f"print({i})", stdout=PIPE) for i in range(3))
    )
    found.append(sorted([(await p.communicate())[0] for p in results]))
    return found


def service(d: Path) -> Any:
    return asyncio.run(_service())


def test_asyncio_subprocesses_replay(round_trip: Callable[..., RoundTrip]) -> None:
    done = round_trip(service)
    assert done.replayed == done.recorded
    assert done.recorded[0][0] == b"exec\n"
    assert done.recorded[1] == (b"shell\n", 3)
    assert len(done.processes) == done.spawned_on_record == 7
    assert done.report.ok, done.report.render()
    assert done.report.consumed == 7
    assert done.spawned_on_replay == 0


def test_asyncio_pid_is_the_replayed_one(round_trip: Callable[..., RoundTrip]) -> None:
    async def pid() -> int:
        proc = await asyncio.create_subprocess_exec(PY, "-c", "pass")
        await proc.wait()
        return proc.pid

    done = round_trip(lambda d: asyncio.run(pid()))
    assert done.replayed == 2**22 + done.processes[0].seq
    assert done.report.ok
    assert sys.platform != "win32"
