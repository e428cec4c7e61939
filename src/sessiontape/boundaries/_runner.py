"""The process boundary's interface: the runner protocol, its result type, the real runner."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import IO, Any, Protocol, runtime_checkable

from .._errors import UsageError
from .._time import REAL

__all__ = [
    "ProcessResult",
    "ProcessRunner",
    "ProcessStream",
    "SubprocessRunner",
    "check_argv",
]


def check_argv(argv: object, call: str) -> None:
    """Refuse a command given as one string: it would run as a list of its characters."""
    if isinstance(argv, (str, bytes)):
        raise UsageError(
            f"{call}({argv!r}) got one string, not a list of arguments; pass a list such as "
            f"['git', 'status'] (shlex.split({argv!r}) makes one), or ['sh', '-c', {argv!r}] "
            "to run it through a shell."
        )


class ProcessResult:
    """What a process call returns: mirrors :class:`subprocess.CompletedProcess`.

    ``stdout`` and ``stderr`` are ``str`` when the call asked for ``text=True`` and ``bytes``
    otherwise.
    """

    __slots__ = ("argv", "duration_ns", "returncode", "stderr", "stdout")

    def __init__(
        self,
        argv: Sequence[str],
        returncode: int,
        stdout: str | bytes = b"",
        stderr: str | bytes = b"",
        duration_ns: int = 0,
    ) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.duration_ns = duration_ns

    @property
    def args(self) -> list[str]:
        """The argv, under the name :class:`subprocess.CompletedProcess` uses."""
        return self.argv

    def check_returncode(self) -> None:
        """Raise :class:`subprocess.CalledProcessError` if the process failed."""
        if self.returncode:
            raise subprocess.CalledProcessError(
                self.returncode, self.argv, self.stdout, self.stderr
            )

    def __repr__(self) -> str:
        return (
            f"ProcessResult(argv={self.argv!r}, returncode={self.returncode!r}, "
            f"stdout={self.stdout!r}, stderr={self.stderr!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProcessResult):
            return NotImplemented
        return (self.argv, self.returncode, self.stdout, self.stderr) == (
            other.argv,
            other.returncode,
            other.stdout,
            other.stderr,
        )

    __hash__ = None  # type: ignore[assignment]


@runtime_checkable
class ProcessRunner(Protocol):
    """What the process boundary wraps: anything with ``run`` and ``stream`` like this."""

    def run(
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

    def stream(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = True,
    ) -> ProcessStream:
        """Start ``argv`` and return a stream of its stdout lines."""
        ...


class ProcessStream:
    """A running process whose stdout is consumed line by line.

    Use it as a context manager and iterate it; after the last line, ``returncode`` and
    ``stderr`` are set. ``close()`` (or leaving the ``with`` block) waits for the process.
    Subclasses (the recording and replaying streams) override ``_lines`` and ``_finish``.
    """

    def __init__(self, argv: Sequence[str], *, text: bool = True) -> None:
        self.argv = list(argv)
        self.text = text
        self.returncode: int | None = None
        self.stderr: str | bytes = "" if text else b""
        self._closed = False

    def __iter__(self) -> Iterator[Any]:
        return self._lines()

    def _lines(self) -> Iterator[Any]:
        return iter(())

    def _finish(self) -> None:
        """Wait for the process; set ``returncode`` and ``stderr``."""

    def close(self) -> int | None:
        """Wait for the process to end and return its return code (idempotent)."""
        if not self._closed:
            self._closed = True
            self._finish()
        return self.returncode

    def wait(self) -> int | None:
        """Alias of :meth:`close`, the name :class:`subprocess.Popen` uses."""
        return self.close()

    def __enter__(self) -> ProcessStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _PopenStream(ProcessStream):
    """A :class:`ProcessStream` over a real :class:`subprocess.Popen`."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        input: str | bytes | None,
        timeout: float | None,
        text: bool,
    ) -> None:
        super().__init__(argv, text=text)
        self._deadline = None if timeout is None else REAL.monotonic() + timeout
        self._timeout = timeout
        self._proc: subprocess.Popen[Any] = subprocess.Popen(
            self.argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=text,
        )
        self._stderr_chunks: list[Any] = []
        self._stderr_thread = threading.Thread(
            target=self._drain, args=(self._proc.stderr,), daemon=True
        )
        self._stderr_thread.start()
        if input is not None:
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write(input)
                self._proc.stdin.close()
            except BrokenPipeError:
                pass

    def _drain(self, pipe: IO[Any] | None) -> None:
        if pipe is not None:
            self._stderr_chunks.append(pipe.read())

    def _lines(self) -> Iterator[Any]:
        assert self._proc.stdout is not None
        yield from self._proc.stdout

    def _finish(self) -> None:
        remaining = None
        if self._deadline is not None:
            remaining = max(0.0, self._deadline - REAL.monotonic())
        try:
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self.returncode = self._proc.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
            raise subprocess.TimeoutExpired(self.argv, self._timeout or 0.0) from None
        finally:
            self._stderr_thread.join()
        empty: str | bytes = "" if self.text else b""
        self.stderr = empty.join(self._stderr_chunks)


class SubprocessRunner:
    """The real runner: :func:`subprocess.run` behind the :class:`ProcessRunner` interface.

    A timeout raises :class:`subprocess.TimeoutExpired`; a missing program raises
    :class:`FileNotFoundError`, exactly as :func:`subprocess.run` does.
    """

    def run(
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
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            input=input,
            timeout=timeout,
            text=text,
            capture_output=True,
            check=False,
        )
        return ProcessResult(
            argv,
            done.returncode,
            done.stdout,
            done.stderr,
            REAL.perf_counter_ns() - started,
        )

    def stream(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float | None = None,
        text: bool = True,
    ) -> ProcessStream:
        """Start ``argv``; iterate the returned stream for its stdout lines."""
        check_argv(argv, "runner.stream")
        return _PopenStream(argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text)
