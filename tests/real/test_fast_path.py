"""Replay's fast path: a process with nothing left to do once started, served with no thread.

Such a process (not a conversation, no poll, timeout or signal on the tape) gets its pipes
only when the program touches one, and a ``communicate()`` on pipes nobody touched is
answered from the tape. Each program here returns what it observed of its ``Popen``s; the
real run and the replay must observe the same, with no real process and no thread of ours
started during the replay. The pump path (a thread feeding real pipes) is what a process
takes when its output does not fit in the pipe at once: pinned here at the boundary.
"""

from __future__ import annotations

import fcntl
import io
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from subprocess import DEVNULL, PIPE, STDOUT, Popen
from typing import Any

import pytest

import sessiontape
from sessiontape import MismatchKind, ReplayMismatch
from sessiontape.boundaries._popen import _pump

from .conftest import PY, RoundTrip
from .test_stdlib import p_write_stdin

CRLF = (
    "import sys; sys.stdout.buffer.write(b'a\\r\\nb\\rc\\n'); sys.stderr.buffer.write(b'e\\r\\n')"
)


def echo(code: str) -> list[str]:
    return [PY, "-c", code]


def streams(proc: Popen[Any]) -> list[tuple[str, bool] | None]:
    """The type and closed state of each stream (what a program could look at)."""
    return [
        None if s is None else (type(s).__name__, s.closed)
        for s in (proc.stdin, proc.stdout, proc.stderr)
    ]


@pytest.fixture
def threads_started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads the replay side starts (none on the fast path)."""
    started: list[str] = []
    real = _pump.internal_thread

    def counted(target: Callable[[], None], name: str) -> threading.Thread:
        started.append(name)
        return real(target, name)

    monkeypatch.setattr(_pump, "internal_thread", counted)
    return started


def _ours() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("sessiontape-")]


def check(done: RoundTrip, threads: list[str]) -> None:
    assert done.replayed == done.recorded
    assert done.report.ok, done.report.render()
    assert done.spawned_on_replay == 0
    assert threads == []
    assert _ours() == []


# -- communicate() answered from the tape ------------------------------------------------


def p_text_newlines(d: Path) -> Any:
    done = subprocess.run(echo(CRLF), capture_output=True, text=True)
    one = subprocess.run(echo(CRLF), stdout=PIPE, universal_newlines=True)  # noqa: UP021
    return done.stdout, done.stderr, one.stdout


def p_binary_newlines(d: Path) -> Any:
    return subprocess.run(echo(CRLF), capture_output=True).stdout


def p_encoding_errors(d: Path) -> Any:
    code = "import sys; sys.stdout.buffer.write(b'caf\\xe9 \\xff\\xfe\\r\\n')"
    latin = subprocess.run(echo(code), capture_output=True, encoding="latin-1").stdout
    replaced = subprocess.run(echo(code), stdout=PIPE, encoding="utf-8", errors="replace").stdout
    return latin, replaced


def p_locale_encoding(d: Path) -> Any:
    # "locale" is what Python 3.10 itself passes for text=True: the files resolve it.
    code = "import sys; print(sys.stdin.read()[::-1])"
    done = subprocess.run(echo(code), input="abc", capture_output=True, encoding="locale")
    return done.stdout, done.stderr


def p_streams_after_communicate(d: Path) -> Any:
    code = "import sys; print('out'); print('err', file=sys.stderr)"
    seen = []
    for kwargs in (
        {"stdout": PIPE, "stderr": PIPE},
        {"stdout": PIPE, "stderr": PIPE, "text": True},
        {"stdout": PIPE},
        {"stdout": PIPE, "bufsize": 0},
        {"stdin": PIPE, "stdout": PIPE, "stderr": STDOUT, "text": True, "bufsize": 1},
        {"stdout": PIPE, "stderr": DEVNULL, "stdin": DEVNULL},
    ):
        proc = Popen(echo(code), **kwargs)
        first = proc.communicate()
        try:
            again: Any = proc.communicate()  # CPython's own answer to a second call
        except ValueError as exc:
            again = type(exc).__name__
        seen.append((first, again, streams(proc), proc.returncode, proc.poll()))
    return seen


def p_communicate_with_timeout(d: Path) -> Any:
    proc = Popen(echo("print('in time')"), stdout=PIPE, text=True)
    out = proc.communicate(timeout=30)
    done = subprocess.run(echo("print(1)"), capture_output=True, timeout=30)
    return out, streams(proc), done.stdout, done.stderr, done.returncode


def p_input(d: Path) -> Any:
    code = "import sys; data = sys.stdin.read(); print(len(data), data[::-1])"
    text = subprocess.run(echo(code), input="stressed", capture_output=True, text=True).stdout
    binary = subprocess.check_output(echo(code), input=b"\x00\x01 bytes")
    proc = Popen(echo(code), stdin=PIPE, stdout=PIPE)
    return text, binary, proc.communicate(b"via communicate"), streams(proc)


def p_check_true(d: Path) -> Any:
    try:
        subprocess.run(echo("import sys; print('o'); sys.exit(5)"), capture_output=True,
                       text=True, check=True)  # fmt: skip
    except subprocess.CalledProcessError as exc:
        return type(exc), exc.returncode, exc.cmd, exc.output, exc.stderr
    raise AssertionError("no error")


def p_attributes(d: Path) -> Any:
    with Popen(echo("print('x')"), stdout=PIPE) as proc:
        before = (proc.returncode, proc.args, isinstance(proc, Popen), proc.pid > 0)
        out = proc.communicate()
    return before, out, proc.returncode, proc.wait(), proc.poll()


FAST: dict[str, Callable[[Path], Any]] = {
    "text_newlines": p_text_newlines,
    "binary_newlines": p_binary_newlines,
    "encoding_errors": p_encoding_errors,
    "locale_encoding": p_locale_encoding,
    "streams_after_communicate": p_streams_after_communicate,
    "communicate_with_timeout": p_communicate_with_timeout,
    "input": p_input,
    "check_true": p_check_true,
    "attributes": p_attributes,
}


@pytest.mark.parametrize("name", list(FAST))
def test_communicate_is_answered_from_the_tape_as_cpython_answers_it(
    name: str, round_trip: Callable[..., RoundTrip], threads_started: list[str]
) -> None:
    check(round_trip(FAST[name]), threads_started)


def test_communicate_on_untouched_pipes_makes_no_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "nopipe.jsonl"
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        for _ in range(2):
            recorded = subprocess.run(echo(CRLF), capture_output=True, text=True).stdout
    made: list[object] = []
    real_pipe = os.pipe
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            # The first call makes the closed file objects of each kind, once per process
            # (Wiring.closed_files): counted only after it, so the test does not depend on
            # whether another test in the same process ran one first.
            subprocess.run(echo(CRLF), capture_output=True, text=True)
            monkeypatch.setattr("os.pipe", lambda: made.append(1) or real_pipe())
            replayed = subprocess.run(echo(CRLF), capture_output=True, text=True).stdout
            monkeypatch.undo()
        assert tape.finish().ok
    assert replayed == recorded == "a\nb\nc\n"
    assert made == []


# -- pipes made when touched ---------------------------------------------------------------


def p_read_then_wait(d: Path) -> Any:
    proc = Popen(echo("print('a' * 100)"), stdout=PIPE)
    assert proc.stdout is not None
    kind = type(proc.stdout).__name__
    data = proc.stdout.read()
    return kind, data, proc.wait(), streams(proc)


def p_iterate_text_lines(d: Path) -> Any:
    with Popen(echo(CRLF), stdout=PIPE, stderr=PIPE, text=True, encoding="utf-8") as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        lines = list(proc.stdout)
        err = proc.stderr.read()
        encoding = proc.stdout.encoding
    return lines, err, encoding, proc.returncode, streams(proc)


def p_select_then_read(d: Path) -> Any:
    import select

    proc = Popen(echo("print('ready')"), stdout=PIPE, bufsize=0)
    assert proc.stdout is not None
    readable, _, _ = select.select([proc.stdout], [], [], 30)
    out = proc.stdout.read()
    proc.stdout.close()
    return bool(readable), type(proc.stdout).__name__, out, proc.wait()


def p_wait_then_read(d: Path) -> Any:
    proc = Popen(echo("print('kept')"), stdout=PIPE, text=True)
    code = proc.wait()
    assert proc.stdout is not None
    return code, proc.stdout.read()


TOUCHED: dict[str, Callable[[Path], Any]] = {
    "read_then_wait": p_read_then_wait,
    "iterate_text_lines": p_iterate_text_lines,
    "select_then_read": p_select_then_read,
    "wait_then_read": p_wait_then_read,
}


@pytest.mark.parametrize("name", list(TOUCHED))
def test_touched_pipes_are_made_and_filled_without_a_thread(
    name: str, round_trip: Callable[..., RoundTrip], threads_started: list[str]
) -> None:
    check(round_trip(TOUCHED[name]), threads_started)


def test_stdin_written_by_the_program_goes_through_the_pump(
    round_trip: Callable[..., RoundTrip], threads_started: list[str]
) -> None:
    # The pump holds the output back until the program has written what the tape says.
    done = round_trip(p_write_stdin)
    assert done.replayed == done.recorded == (b"SHOUT\n", 0)
    assert done.report.ok
    assert len(threads_started) == 1
    assert _ours() == []


_REAL_GET_HANDLES = Popen._get_handles  # type: ignore[attr-defined]


class _OwnHandles(Popen):  # type: ignore[type-arg]
    """A subclass that makes its pipes itself, with CPython's method taken before the patch."""

    def _get_handles(self, stdin: Any, stdout: Any, stderr: Any) -> Any:
        return _REAL_GET_HANDLES(self, stdin, stdout, stderr)


def test_pipes_made_in_spite_of_the_patch_are_fed_by_the_pump(
    round_trip: Callable[..., RoundTrip],
) -> None:
    def program(d: Path) -> Any:
        proc = _OwnHandles(echo("print('own')"), stdout=PIPE, stderr=PIPE, text=True)
        return proc.communicate(), proc.returncode, streams(proc)

    done = round_trip(program)
    closed = ("TextIOWrapper", True)
    assert done.replayed == done.recorded == (("own\n", ""), 0, [None, closed, closed])
    assert done.report.ok
    assert _ours() == []


def _pipe_size() -> int:
    read, write = os.pipe()
    try:
        return int(fcntl.fcntl(write, fcntl.F_GETPIPE_SZ))
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="Linux asks a pipe its size")
@pytest.mark.parametrize(("extra", "threads"), [(0, 0), (1, 1)])
def test_output_that_fits_the_pipe_is_written_at_once_and_more_by_the_pump(
    extra: int, threads: int, round_trip: Callable[..., RoundTrip], threads_started: list[str]
) -> None:
    size = _pipe_size() + extra

    def program(d: Path) -> Any:
        proc = Popen(echo(f"import sys; sys.stdout.write('z' * {size})"), stdout=PIPE)
        assert proc.stdout is not None
        data = proc.stdout.read()
        run = subprocess.run(echo(f"print('y' * {size})"), capture_output=True).stdout
        return len(data), data[-3:], proc.wait(), len(run)

    done = round_trip(program)
    assert done.replayed == done.recorded == (size, b"zzz", 0, size + 1)
    assert done.report.ok
    assert len(threads_started) == threads  # communicate() never needs one
    assert _ours() == []


# -- what the program wrote to stdin -------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "what"),
    [(b"two", "other bytes"), (b"on", "closed stdin before"), (b"one and more", "more")],
)
def test_input_differing_from_the_tape_is_named_by_seq_without_a_thread(
    tmp_path: Path, threads_started: list[str], given: bytes, what: str
) -> None:
    path = tmp_path / "input.jsonl"
    code = "import sys; print(sys.stdin.read().upper())"
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        subprocess.run(echo("print(0)"), capture_output=True)
        subprocess.run(echo(code), input=b"one", capture_output=True)
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            subprocess.run(echo("print(0)"), capture_output=True)
            done = subprocess.run(echo(code), input=given, capture_output=True)
        report = tape.finish()
    assert done.stdout == b"ONE\n"  # the recorded answer, as for any mismatch
    (mismatch,) = report.mismatches
    assert mismatch.kind is MismatchKind.ARGUMENT_MISMATCH
    assert mismatch.seq == 2
    assert "at seq 2" in mismatch.message
    assert what in mismatch.message
    assert (mismatch.expected, mismatch.actual) == ("one", given.decode())
    assert threads_started == []


def test_input_differing_in_strict_mode_raises_from_communicate(tmp_path: Path) -> None:
    path = tmp_path / "strict.jsonl"
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        subprocess.run(echo("import sys; sys.stdin.read()"), input="yes", text=True)
    with sessiontape.replay(path, strict=True) as tape:
        with tape.patch_subprocess(), pytest.raises(ReplayMismatch, match="seq 1"):
            subprocess.run(echo("import sys; sys.stdin.read()"), input="no", text=True)
        assert _ours() == []


# -- the end of the block and the class ----------------------------------------------------


def test_pipes_not_touched_in_the_block_are_there_after_it(tmp_path: Path) -> None:
    path = tmp_path / "after.jsonl"
    with sessiontape.record(path) as tape:
        with tape.patch_subprocess():
            proc = Popen(echo("print('later')"), stdout=PIPE, text=True)
            proc.wait()
        recorded = proc.stdout.read() if proc.stdout else None
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            proc = Popen(echo("print('later')"), stdout=PIPE, text=True)
            proc.wait()
        assert "stdout" not in vars(Popen)  # the patch is gone, its descriptors with it
        assert isinstance(vars(proc)["stdout"], io.TextIOWrapper)
        assert proc.stdout is not None
        assert proc.stdout.read() == recorded == "later\n"
        proc.stdout.close()
        assert tape.finish().ok


def test_a_stream_is_there_for_object_getattribute(tmp_path: Path) -> None:
    # psutil.Popen reaches the Popen it wraps with object.__getattribute__.
    path = tmp_path / "raw.jsonl"
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        subprocess.run(echo("print('raw')"), stdout=PIPE)
    with sessiontape.replay(path) as tape:
        with tape.patch_subprocess():
            proc = Popen(echo("print('raw')"), stdout=PIPE)
            stdout = object.__getattribute__(proc, "stdout")
            assert stdout.read() == b"raw\n"
            proc.communicate()
            with pytest.raises(AttributeError):
                _ = Popen.stdout  # type: ignore[attr-defined]  # as without the patch
        assert tape.finish().ok
