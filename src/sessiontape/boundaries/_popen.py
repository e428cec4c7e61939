"""``patch_subprocess()``: the process boundary for code that takes no injected runner.

Recording, ``subprocess.Popen`` is replaced by a subclass that records each process when
it completes; on replay, by a stand-in answering from the tape without spawning anything.
Both go through the process boundary's :func:`record_process` and :class:`ProcessReplay`,
so a patched call and a runner call are the same entry.
"""

from __future__ import annotations

import io
import os
import subprocess
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from .._errors import UsageError
from ..replayer import rebuild_error
from ..scrub import error_info
from ._process import IN_PROCESS_CALL, ProcessReplay, record_process
from ._protocols import RecordSide

__all__ = ["patched_popen", "recording_popen_class", "replaying_popen_class"]

_REAL_POPEN: Final = subprocess.Popen
_patch_lock = threading.Lock()


@contextmanager
def patched_popen(replacement: type[Any]) -> Iterator[None]:
    """Install ``replacement`` as :class:`subprocess.Popen` for the block."""
    with _patch_lock:
        if subprocess.Popen is not _REAL_POPEN:
            raise UsageError(
                "subprocess.Popen is already patched (a tape.patch_subprocess() block is "
                "active, or another library patched it); nest no patch_subprocess() blocks."
            )
        subprocess.Popen = replacement  # type: ignore[misc]
    try:
        yield
    finally:
        with _patch_lock:
            subprocess.Popen = _REAL_POPEN  # type: ignore[misc]


def _popen_text(kwargs: Mapping[str, Any]) -> bool:
    return bool(
        kwargs.get("text")
        or kwargs.get("universal_newlines")
        or kwargs.get("encoding")
        or kwargs.get("errors")
    )


def _popen_argv(args: Any, kwargs: Mapping[str, Any]) -> list[str]:
    if isinstance(args, (str, bytes, os.PathLike)):
        argv = [os.fsdecode(args)]
        if kwargs.get("shell"):
            argv = ["/bin/sh", "-c", argv[0]]
        return argv
    return [os.fsdecode(a) for a in args]


# -- record side ----------------------------------------------------------------------


def recording_popen_class(rec: RecordSide) -> type[Any]:
    """A ``subprocess.Popen`` subclass recording each process to ``rec``."""

    class RecordingPopen(_REAL_POPEN):  # type: ignore[misc,valid-type]
        """``subprocess.Popen`` that records the call when it completes."""

        def __init__(self, args: Any, *pargs: Any, **kwargs: Any) -> None:
            self._st_record = rec.active and not IN_PROCESS_CALL.get()
            self._st_text = _popen_text(kwargs)
            self._st_call: dict[str, Any] = {
                "cwd": kwargs.get("cwd"),
                "env": kwargs.get("env"),
                "text": self._st_text,
                "timeout": None,
                "input": None,
            }
            self._st_argv = _popen_argv(args, kwargs)
            self._st_opened = rec.open() if self._st_record else None
            try:
                super().__init__(args, *pargs, **kwargs)
            except Exception as exc:
                if self._st_opened is not None:
                    record_process(
                        rec, self._st_opened, self._st_argv,
                        spawn_error=error_info(exc, with_traceback=False), **self._st_call,
                    )  # fmt: skip
                raise

        def _st_done(self, stdout: Any, stderr: Any, *, timed_out: bool = False) -> None:
            opened, self._st_opened = self._st_opened, None
            if opened is not None:
                record_process(
                    rec, opened, self._st_argv,
                    returncode=None if timed_out else self.returncode,
                    stdout=stdout, stderr=stderr, timed_out=timed_out, **self._st_call,
                )  # fmt: skip

        def communicate(self, input: Any = None, timeout: float | None = None) -> Any:
            if self._st_opened is not None:
                self._st_call["input"] = input
                self._st_call["timeout"] = timeout
            try:
                out, err = super().communicate(input, timeout)
            except subprocess.TimeoutExpired as exc:
                self._st_done(exc.stdout, exc.stderr, timed_out=True)
                raise
            self._st_done(out, err)
            return out, err

        def wait(self, timeout: float | None = None) -> int:
            code: int = super().wait(timeout)
            if self._st_opened is not None and self.stdout is None and self.stderr is None:
                self._st_done(None, None)
            return code

    return RecordingPopen


# -- replay side ----------------------------------------------------------------------


def replaying_popen_class(server: ProcessReplay) -> type[Any]:
    """A ``subprocess.Popen`` stand-in answering from the tape; nothing is spawned."""
    engine = server.engine

    class ReplayPopen:
        """A ``subprocess.Popen`` stand-in answering from the tape; nothing is spawned."""

        def __init__(self, args: Any, *pargs: Any, **kwargs: Any) -> None:
            self.args = args
            self.pid = 0
            self._text = _popen_text(kwargs)
            self._argv = _popen_argv(args, kwargs)
            self._pipes = {
                "stdout": kwargs.get("stdout") == subprocess.PIPE,
                "stderr": kwargs.get("stderr") == subprocess.PIPE,
            }
            self.returncode: int | None = None
            self.stdin = None
            self.stdout: Any = None
            self.stderr: Any = None
            entry = server.serve(
                self._argv, cwd=kwargs.get("cwd"), env=kwargs.get("env"), input=None
            )
            self._entry = entry
            if entry.spawn_error is not None:
                engine.served(entry)
                raise rebuild_error(entry.spawn_error)
            self._out = server.output(entry, "stdout", self._text)
            self._err = server.output(entry, "stderr", self._text)
            if self._pipes["stdout"]:
                self.stdout = self._stream(self._out)
            if self._pipes["stderr"]:
                self.stderr = self._stream(self._err)
            self._answered = False

        def _stream(self, value: Any) -> Any:
            if self._text:
                return io.StringIO(value or "")
            return io.BytesIO(value or b"")

        def _answer(self) -> None:
            if not self._answered:
                self._answered = True
                engine.served(self._entry)
                if self._entry.timed_out:
                    raise subprocess.TimeoutExpired(
                        self._argv, self._entry.timeout or 0.0, self._out, self._err
                    )
                self.returncode = self._entry.returncode

        def communicate(self, input: Any = None, timeout: float | None = None) -> Any:
            self._answer()
            out = self._out if self._pipes["stdout"] else None
            err = self._err if self._pipes["stderr"] else None
            return out, err

        def wait(self, timeout: float | None = None) -> int:
            if self._entry.timed_out and self._answered:
                self.returncode = -9
            self._answer()
            return self.returncode if self.returncode is not None else 0

        def poll(self) -> int | None:
            return self.returncode

        def kill(self) -> None:
            if self.returncode is None:
                self.returncode = -9

        terminate = kill

        def send_signal(self, sig: int) -> None:
            self.kill()

        def __enter__(self) -> ReplayPopen:
            return self

        def __exit__(self, *exc: object) -> None:
            for pipe in (self.stdout, self.stderr):
                if pipe is not None:
                    pipe.close()

    return ReplayPopen
