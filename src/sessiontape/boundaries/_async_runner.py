"""The process boundary for asyncio code: an async runner, recorded and replayed.

``tape.async_process_runner()`` is the asyncio twin of ``tape.process_runner()``: its
``run`` is awaited. Recording wraps the application's async runner (by default
:class:`AsyncSubprocessRunner`, asyncio's own subprocesses); replay returns a fake whose
``run`` is a coroutine answering from the tape. The entries are the same ``process``
entries, so a session may mix both runners.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .._context import parent_var
from .._time import REAL
from ._process import IN_PROCESS_CALL, ProcessReplay, env_delta, record_outcome
from ._protocols import RecordSide
from ._runner import ProcessResult, check_argv

__all__ = [
    "AsyncProcessRunner",
    "AsyncRecordingRunner",
    "AsyncReplayRunner",
    "AsyncSubprocessRunner",
]


@runtime_checkable
class AsyncProcessRunner(Protocol):
    """What the async process boundary wraps: anything with an awaitable ``run`` like this."""

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        """Run ``argv`` to completion and return its result."""
        ...


class AsyncSubprocessRunner:
    """The real async runner: :func:`asyncio.create_subprocess_exec` and ``communicate``.

    A timeout kills the process and raises :class:`subprocess.TimeoutExpired`, as
    :func:`subprocess.run` does.
    """

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        """Run ``argv`` to completion, capturing stdout and stderr."""
        check_argv(argv, "runner.run")
        started = REAL.perf_counter_ns()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        data = input.encode() if isinstance(input, str) else input
        try:
            out, err = await asyncio.wait_for(proc.communicate(data), timeout)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise subprocess.TimeoutExpired(list(argv), timeout or 0.0) from None
        code = proc.returncode if proc.returncode is not None else 0
        if text:
            return ProcessResult(argv, code, out.decode(), err.decode(),
                                 REAL.perf_counter_ns() - started)  # fmt: skip
        return ProcessResult(argv, code, out, err, REAL.perf_counter_ns() - started)


class AsyncRecordingRunner:
    """An :class:`AsyncProcessRunner` that records every call of the runner it wraps."""

    def __init__(self, rec: RecordSide, inner: AsyncProcessRunner) -> None:
        self._rec = rec
        self.inner = inner

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        """Await ``argv`` through the inner runner and record the call."""
        check_argv(argv, "runner.run")
        rec = self._rec
        kwargs: dict[str, Any] = {
            "cwd": cwd, "env": env, "input": input, "timeout": timeout, "text": text,
        }  # fmt: skip
        if not rec.active:
            return await self.inner.run(argv, **kwargs)
        opened = rec.open()
        call = {**kwargs, "env": env_delta(env)}
        token = parent_var.set(opened[0])
        flag = IN_PROCESS_CALL.set(True)
        try:
            result = await self.inner.run(argv, **kwargs)
        except Exception as exc:
            record_outcome(rec, opened, argv, call, None, exc)
            raise
        finally:
            IN_PROCESS_CALL.reset(flag)
            parent_var.reset(token)
        record_outcome(rec, opened, argv, call, result, None)
        return result


class AsyncReplayRunner:
    """The async FIFO fake runner: ``run`` is a coroutine answering from the tape."""

    def __init__(self, server: ProcessReplay) -> None:
        self._server = server

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = False,
    ) -> ProcessResult:
        """Answer ``argv`` with its recorded result."""
        return self._server.run(argv, cwd, env, input, text)
