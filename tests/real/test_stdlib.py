"""The standard library's ways of running a process, recorded and replayed unchanged.

Each pattern is a small real program. It runs under recording in one directory and under
replay in another; the replay must give the same results, spawn nothing, serve every
recorded process and report ok.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from subprocess import PIPE, STDOUT, Popen
from typing import Any

import pytest

from .conftest import PY, RoundTrip

Program = Callable[[Path], Any]


def echo(code: str) -> list[str]:
    return [PY, "-c", code]


def p_run_capture(d: Path) -> Any:
    done = subprocess.run(echo("print('hello')"), capture_output=True, text=True)
    return done.args, done.returncode, done.stdout, done.stderr


def p_run_no_capture(d: Path) -> Any:
    return subprocess.run(echo("import sys; sys.exit(3)")).returncode


def p_check_output(d: Path) -> Any:
    return subprocess.check_output(echo("print('out')"))


def p_call(d: Path) -> Any:
    return subprocess.call(echo("import sys; sys.exit(4)"))


def p_check_call(d: Path) -> Any:
    return subprocess.check_call(echo("pass"))


def p_getoutput(d: Path) -> Any:
    return subprocess.getoutput("echo getoutput")


def p_getstatusoutput(d: Path) -> Any:
    return subprocess.getstatusoutput("echo oops >&2; exit 2")


def p_communicate(d: Path) -> Any:
    proc = Popen(echo("import sys; print('o'); print('e', file=sys.stderr)"),
                 stdout=PIPE, stderr=PIPE)  # fmt: skip
    return proc.communicate(), proc.returncode, proc.pid > 0


def p_read_then_wait(d: Path) -> Any:
    proc = Popen(echo("print('a' * 100)"), stdout=PIPE)
    assert proc.stdout is not None
    data = proc.stdout.read()
    return data, proc.wait()


def p_iterate_lines(d: Path) -> Any:
    proc = Popen(echo("for i in range(5): print(i)"), stdout=PIPE, text=True)
    assert proc.stdout is not None
    lines = list(proc.stdout)
    return lines, proc.wait()


def p_poll_loop(d: Path) -> Any:
    proc = Popen(echo("import time; time.sleep(0.2); print('done')"), stdout=PIPE)
    polls = 0
    while proc.poll() is None:
        polls += 1
        time.sleep(0.01)
    assert proc.stdout is not None
    # Replay finds the process running exactly as often as the recording did.
    return proc.returncode, proc.stdout.read(), polls


def p_write_stdin(d: Path) -> Any:
    proc = Popen(echo("import sys; print(sys.stdin.read().upper())"), stdin=PIPE, stdout=PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b"shout")
    proc.stdin.close()
    return proc.stdout.read(), proc.wait()


def p_with_popen(d: Path) -> Any:
    with Popen(echo("print('ctx')"), stdout=PIPE, text=True) as proc:
        assert proc.stdout is not None
        out = proc.stdout.read()
    return out, proc.returncode


def p_shell(d: Path) -> Any:
    done = subprocess.run("echo $((6 * 7))", shell=True, capture_output=True, text=True)
    return done.args, done.stdout


def p_stderr_to_stdout(d: Path) -> Any:
    code = "import sys; print('1', flush=True); print('2', file=sys.stderr, flush=True)"
    return subprocess.run(echo(code), stdout=PIPE, stderr=STDOUT).stdout


def p_devnull(d: Path) -> Any:
    done = subprocess.run(echo("print('gone')"), stdout=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL, stderr=PIPE)  # fmt: skip
    return done.stdout, done.stderr, done.returncode


def p_cwd(d: Path) -> Any:
    return subprocess.run(echo("import os; print(os.getcwd())"), cwd=d, capture_output=True,
                          text=True).stdout.strip() == str(d)  # fmt: skip


def p_env_delta(d: Path) -> Any:
    env = {**os.environ, "SESSIONTAPE_X": "1"}
    env.pop("SESSIONTAPE_GONE", None)
    code = "import os; print(os.environ['SESSIONTAPE_X'])"
    return subprocess.run(echo(code), env=env, capture_output=True, text=True).stdout


#: What the process run() times out on prints its line first: a shell's builtin echo, there
#: within milliseconds even on a loaded machine (a Python child takes up to 0.7 s to print
#: its first line with both cores busy), well before the timeout.
TIMED_OUT = ["sh", "-c", "echo started; exec sleep 30"]


def p_timeout(d: Path) -> Any:
    try:
        subprocess.run(TIMED_OUT, capture_output=True, timeout=2)
    except subprocess.TimeoutExpired as exc:
        return type(exc), exc.cmd, exc.timeout, exc.output, exc.stderr
    raise AssertionError("no timeout")


def p_shell_timeout(d: Path) -> Any:
    try:
        subprocess.run("sleep 30", shell=True, timeout=0.3)
    except subprocess.TimeoutExpired as exc:
        # Python reports the time left when it gave up waiting: about the whole timeout.
        return exc.cmd, round(exc.timeout, 1), exc.output
    raise AssertionError("no timeout")


def p_check_fails(d: Path) -> Any:
    try:
        subprocess.run(echo("import sys; print('no'); sys.exit(9)"), check=True,
                       capture_output=True)  # fmt: skip
    except subprocess.CalledProcessError as exc:
        return type(exc), exc.returncode, exc.cmd, exc.output, exc.stderr
    raise AssertionError("no error")


def p_missing_program(d: Path) -> Any:
    try:
        subprocess.run(["sessiontape-no-such-program", "--flag"])
    except FileNotFoundError as exc:
        return type(exc), exc.errno, exc.filename, exc.strerror
    raise AssertionError("no error")


def p_input(d: Path) -> Any:
    code = "import sys; print(sys.stdin.read()[::-1])"
    return subprocess.run(echo(code), input="stressed", capture_output=True, text=True).stdout


def p_encoding(d: Path) -> Any:
    code = "import sys; sys.stdout.buffer.write('caf\\u00e9 \\xff'.encode('latin-1'))"
    done = subprocess.run(echo(code), capture_output=True, encoding="utf-8", errors="replace")
    return done.stdout


def p_universal_newlines(d: Path) -> Any:
    code = "import sys; sys.stdout.buffer.write(b'a\\r\\nb\\r\\n')"
    return subprocess.run(echo(code), stdout=PIPE, text=True).stdout


def p_binary(d: Path) -> Any:
    code = "import sys; sys.stdout.buffer.write(bytes(range(256)))"
    return subprocess.check_output(echo(code))


def p_conversation(d: Path) -> Any:
    code = "import sys\nfor line in sys.stdin:\n    print(line.strip()[::-1], flush=True)"
    proc = Popen(echo(code), stdin=PIPE, stdout=PIPE, text=True, bufsize=1)
    assert proc.stdin is not None
    assert proc.stdout is not None
    answers = []
    for word in ("abc", "hello", "sessiontape"):
        proc.stdin.write(word + "\n")
        proc.stdin.flush()
        answers.append(proc.stdout.readline())
    proc.stdin.close()
    return answers, proc.wait()


def p_terminate(d: Path) -> Any:
    proc = Popen(echo("import time; print('up', flush=True); time.sleep(30)"), stdout=PIPE)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.terminate()
    return first, proc.wait(), proc.poll()


def p_large_output(d: Path) -> Any:
    out = subprocess.run(echo("print('x' * 300_000)"), capture_output=True).stdout
    return len(out), out[:10], out[-3:]


def p_communicate_timeout_then_kill(d: Path) -> Any:
    proc = Popen(echo("import time; print('partial', flush=True); time.sleep(30)"), stdout=PIPE)
    try:
        proc.communicate(timeout=0.4)
    except subprocess.TimeoutExpired as exc:
        caught = (exc.cmd == proc.args, exc.timeout, exc.output)
    proc.kill()
    out, _ = proc.communicate()
    return caught, out, proc.returncode


PATTERNS: dict[str, tuple[Program, int]] = {
    "run_capture": (p_run_capture, 1),
    "run_no_capture": (p_run_no_capture, 1),
    "check_output": (p_check_output, 1),
    "call": (p_call, 1),
    "check_call": (p_check_call, 1),
    "getoutput": (p_getoutput, 1),
    "getstatusoutput": (p_getstatusoutput, 1),
    "popen_communicate": (p_communicate, 1),
    "read_stdout_then_wait": (p_read_then_wait, 1),
    "iterate_lines": (p_iterate_lines, 1),
    "poll_loop": (p_poll_loop, 1),
    "write_stdin": (p_write_stdin, 1),
    "with_popen": (p_with_popen, 1),
    "shell_true": (p_shell, 1),
    "stderr_to_stdout": (p_stderr_to_stdout, 1),
    "devnull": (p_devnull, 1),
    "cwd": (p_cwd, 1),
    "env_delta": (p_env_delta, 1),
    "timeout": (p_timeout, 1),
    "shell_timeout": (p_shell_timeout, 1),
    "check_true_failing": (p_check_fails, 1),
    "missing_program": (p_missing_program, 1),
    "input": (p_input, 1),
    "encoding_errors": (p_encoding, 1),
    "universal_newlines": (p_universal_newlines, 1),
    "binary_output": (p_binary, 1),
    "conversation": (p_conversation, 1),
    "terminate": (p_terminate, 1),
    "large_output": (p_large_output, 1),
    "communicate_timeout_then_kill": (p_communicate_timeout_then_kill, 1),
}


@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_replays_unchanged(name: str, round_trip: Callable[..., RoundTrip]) -> None:
    program, processes = PATTERNS[name]
    done = round_trip(program)
    assert done.replayed == done.recorded
    assert len(done.processes) == processes == done.spawned_on_record
    assert done.report.mismatches == []
    assert done.report.ok
    assert done.report.consumed == done.report.loaded == processes
    assert done.spawned_on_replay == 0


def test_every_pattern_in_one_session(round_trip: Callable[..., RoundTrip]) -> None:
    def everything(d: Path) -> list[Any]:
        return [program(d) for program, _ in PATTERNS.values()]

    done = round_trip(everything)
    assert done.replayed == done.recorded
    assert len(done.processes) == done.spawned_on_record == len(PATTERNS)
    assert done.report.ok, done.report.render()
    assert done.spawned_on_replay == 0


def test_replayed_popen_is_a_popen_with_a_safe_pid(round_trip: Callable[..., RoundTrip]) -> None:
    def program(d: Path) -> Any:
        proc = subprocess.Popen(echo("print('p')"), stdout=PIPE)
        proc.communicate()
        return isinstance(proc, subprocess.Popen), proc.pid

    done = round_trip(program)
    is_popen, pid = done.replayed
    assert is_popen is True
    assert pid == 2**22 + done.processes[0].seq
    with pytest.raises(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)


def test_the_timeout_is_recorded_as_the_program_saw_it(
    round_trip: Callable[..., RoundTrip],
) -> None:
    done = round_trip(p_timeout)
    (call,) = done.processes
    assert call.timed_out is True
    assert call.timeouts == 1
    assert call.signals == [signal.SIGKILL]
    assert call.returncode == -signal.SIGKILL
    assert call.stdout == "started\n"
    kind, cmd, timeout, output, stderr = done.replayed
    assert (kind, timeout, output, stderr) == (subprocess.TimeoutExpired, 2, b"started\n", None)
    assert cmd == TIMED_OUT


def test_a_conversation_is_kept_as_chunks(round_trip: Callable[..., RoundTrip]) -> None:
    done = round_trip(p_conversation)
    (call,) = done.processes
    assert call.chunks is not None
    assert [(c.stream, c.data) for c in call.chunks] == [
        ("stdin", "abc\n"), ("stdout", "cba\n"),
        ("stdin", "hello\n"), ("stdout", "olleh\n"),
        ("stdin", "sessiontape\n"), ("stdout", "epatnoisses\n"),
    ]  # fmt: skip
    assert (call.input, call.stdout) == (None, None)


def test_a_process_left_running_is_recorded_unfinished(tmp_path: Path) -> None:
    import sessiontape

    path = tmp_path / "left.jsonl"
    with sessiontape.record(path) as tape:
        with tape.patch_subprocess():
            proc = Popen(echo("import sys; sys.stdin.read()"), stdin=PIPE)
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    (call,) = sessiontape.load(path).entries_for("process")
    assert call.unfinished is True
    assert call.returncode is None


def test_output_not_read_before_the_block_ends_is_recorded_whole(tmp_path: Path) -> None:
    import threading

    import sessiontape

    path = tmp_path / "unread.jsonl"
    # The shell exits at once; what it left in the background writes to the same pipe a
    # moment later, after wait() has returned and while the block ends.
    script = "(sleep 0.1; echo late) & echo early"
    with sessiontape.record(path) as tape:
        with tape.patch_subprocess():
            proc = Popen(script, shell=True, stdout=PIPE)
            proc.wait()
        assert proc.stdout is not None
        assert proc.stdout.read() == b"early\nlate\n"
        proc.stdout.close()
        relays = [t.name for t in threading.enumerate() if t.name.startswith("sessiontape-relay")]
        assert relays == []
    (call,) = sessiontape.load(path).entries_for("process")
    assert call.stdout == "early\nlate\n"
    assert call.unfinished is False
