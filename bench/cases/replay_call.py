"""Figure 1: one process call replayed through the fake runner, alignment check included.

The same sequence of process calls (ten distinct ``git`` commands with realistic outputs,
cycled) is answered by

* sessiontape's FIFO fake runner, as ``sessiontape.replay(...)`` hands it out: the
  request is aligned with the head of the worker's queue, the virtual clock moves to
  the recorded time, the recorded result is returned. Variants: the default (clock
  installed through freezegun, the application's real ``cwd`` under a path root, so
  the request is normalised before it is compared), ``patch_time=False``, and a request
  with no path in it;
* sessiontape's ``patch_subprocess()``: unchanged code calling ``subprocess.run`` with
  ``capture_output=True``, a real ``Popen`` fed from the tape (no process spawned); also
  in binary mode, through ``check_output``, as a ``Popen`` whose ``stdout`` is read to the
  end, and a stdin conversation (the pump path: a thread feeds real pipes chunk by chunk);
* CPython's own floor under those: ``Popen(...)`` and ``subprocess.run(...,
  capture_output=True, text=True)`` with the spawn itself stubbed out (no tape), so what
  ``Popen.__init__``, its pipes and ``communicate`` cost by themselves is in the table;
* the floor: a bare ``collections.deque`` of (recorded argv, prebuilt result) whose
  ``popleft()`` is checked against today's argv (:class:`DequeFloor`), timed in turns
  with the default variant;
* pytest-subprocess (``FakeProcess`` with the same calls registered, serving
  ``subprocess.run``);
* vcrpy replaying 1,000 HTTP interactions from its cassette (``requests`` against a
  loopback ``http.server``, recorded once, replayed with ``record_mode="none"``); per
  interaction.

Each figure is the median over batches of the per-call time of a batch (a fresh fake per
batch, built outside the timed region).
"""

from __future__ import annotations

import collections
import http.server
import os
import subprocess
import tempfile
import threading
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import sessiontape
from sessiontape import Chunk, ProcessCall, ProcessResult, SessionEnd, SessionStart
from sessiontape.cassette import encode_entry

from .common import gc_paused, now_ns, per_call_each, per_call_ns

__all__ = ["COMMANDS", "DequeFloor", "deque_floor", "replaying", "run"]

_T0: Final = 1_763_700_000_000_000_000
_RECORDED_REPO: Final = "/srv/orchestrator/repo"
_STATUS: Final = "".join(f" M src/pkg/mod_{i}.py\n" for i in range(12))
_LOG: Final = "".join(
    f"{i * 7919:07x} Refactor the queue handling of worker {i}\n" for i in range(30)
)
_DIFF: Final = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,80 +1,80 @@\n" + "".join(
    f"{'+' if i % 2 else '-'}    value_{i} = compute(value_{i - 1}, retries=3)\n" for i in range(80)
)
#: (argv, cwd relative to the repository or None, stdout): what the calls look like.
COMMANDS: Final = (
    (["git", "status", "--porcelain"], "", _STATUS),
    (["git", "rev-parse", "HEAD"], "", "9f2c1e7b5d3a4c6e8f0a1b2c3d4e5f60718293a4\n"),
    (["git", "log", "--oneline", "-n", "30"], "", _LOG),
    (["git", "diff", "base", "HEAD"], "../worktrees/T000042", _DIFF),
    (["git", "add", "-A"], "../worktrees/T000042", ""),
    (
        ["git", "commit", "-q", "--allow-empty", "-m", "T000042 (round 1)"],
        "../worktrees/T000042",
        "",
    ),
    (["git", "worktree", "list", "--porcelain"], "", "worktree /srv/x\nHEAD abc\nbranch main\n"),
    (["git", "branch", "--show-current"], "", "main\n"),
    (
        ["git", "merge", "--no-ff", "-m", "Merge task/T000042", "task/T000042"],
        "",
        "Merge made by the 'ort' strategy.\n",
    ),
    (["git", "diff", "--name-only", "--diff-filter=U"], "", ""),
)


def write_tape(path: Path, calls: int, *, with_cwd: bool = True) -> None:
    """A tape of ``calls`` process calls of worker ``main``, cycling through COMMANDS."""
    out = [
        encode_entry(
            SessionStart(
                seq=0,
                ts_ns=_T0,
                mono_ns=0,
                run_id="bench-calls",
                recorded_at="2025-11-21T05:20:00+00:00",
                roots={"repo": _RECORDED_REPO},
            )
        )
    ]
    for i in range(calls):
        argv, rel, stdout = COMMANDS[i % len(COMMANDS)]
        cwd = None
        if with_cwd:
            cwd = "{repo}" + ("/" + rel if rel else "")
        ts = _T0 + (i + 1) * 50_000_000
        out.append(
            encode_entry(
                ProcessCall(
                    seq=i + 1,
                    ts_ns=ts,
                    mono_ns=ts - _T0,
                    argv=argv,
                    cwd=cwd,
                    text=True,
                    returncode=0,
                    stdout=stdout,
                    stderr="",
                    duration_ns=20_000_000,
                )
            )
        )
    end_ts = _T0 + (calls + 2) * 50_000_000
    out.append(
        encode_entry(
            SessionEnd(seq=calls + 1, ts_ns=end_ts, mono_ns=end_ts - _T0, duration_ns=end_ts - _T0)
        )
    )
    path.write_bytes(b"".join(out))


def requests_for(calls: int, repo: str | None) -> list[tuple[list[str], str | None, str]]:
    out = []
    for i in range(calls):
        argv, rel, stdout = COMMANDS[i % len(COMMANDS)]
        cwd = None if repo is None else (os.path.join(repo, rel) if rel else repo)
        out.append((list(argv), cwd, stdout))
    return out


def replaying(
    recording: sessiontape.Recording, requests: list[Any], repo: str, *, patch_time: bool
) -> Any:
    roots = {"repo": repo}

    def batch() -> Any:
        tape = sessiontape.replay(recording, roots=roots, patch_time=patch_time)
        tape.__enter__()
        run = tape.process_runner().run

        def go() -> int:
            for argv, cwd, _ in requests:
                run(argv, cwd=cwd, text=True)
            return len(requests)

        return go, lambda: tape.__exit__(None, None, None)

    return batch


def requests_for_talk(calls: int) -> list[tuple[list[str], None, str]]:
    """The requests of :func:`write_conversation_tape`'s tape."""
    return [(list(_TALK_ARGV), None, "") for _ in range(calls)]


def _patch_subprocess(recording: sessiontape.Recording, requests: list[Any], repo: str) -> Any:
    """Unchanged code calling ``subprocess.run`` under ``tape.patch_subprocess()``: a real
    ``Popen``, served from the tape."""
    return _patched(recording, requests, repo, PATTERNS["text"])


#: The ways of running a process ``patch_subprocess()`` is measured with (see the module).
PATTERNS: Final[dict[str, Any]] = {
    "text": lambda argv, cwd: subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, check=False
    ),
    "binary": lambda argv, cwd: subprocess.run(argv, cwd=cwd, capture_output=True, check=False),
    "check_output": lambda argv, cwd: subprocess.check_output(argv, cwd=cwd),
    "read": lambda argv, cwd: _read_to_end(argv, cwd),
}


def _read_to_end(argv: list[str], cwd: str | None) -> bytes:
    with subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        return proc.stdout.read()


def _patched(recording: sessiontape.Recording, requests: list[Any], repo: str, how: Any) -> Any:
    """``how(argv, cwd)`` for each request under ``tape.patch_subprocess()``."""
    roots = {"repo": repo}

    def batch() -> Any:
        tape = sessiontape.replay(recording, roots=roots)
        tape.__enter__()
        patch = tape.patch_subprocess()
        patch.__enter__()

        def go() -> int:
            for argv, cwd, _ in requests:
                how(argv, cwd)
            return len(requests)

        def cleanup() -> None:
            patch.__exit__(None, None, None)
            tape.__exit__(None, None, None)

        return go, cleanup

    return batch


_QUESTIONS: Final = (b"first question\n", b"second question\n")
_ANSWERS: Final = (b"the first answer\n", b"the second answer\n")
_TALK_ARGV: Final = ["language-server", "--stdio"]


def write_conversation_tape(path: Path, calls: int) -> None:
    """A tape of ``calls`` processes each spoken to over stdin: two questions, two answers."""
    start = SessionStart(
        seq=0, ts_ns=_T0, mono_ns=0, run_id="bench-talk", recorded_at="2025-11-21T05:20:00+00:00"
    )
    out = [encode_entry(start)]
    for i in range(calls):
        ts = _T0 + (i + 1) * 50_000_000
        chunks = []
        for question, answer in zip(_QUESTIONS, _ANSWERS, strict=True):
            chunks += [Chunk("stdin", question.decode()), Chunk("stdout", answer.decode())]
        call = ProcessCall(
            seq=i + 1, ts_ns=ts, mono_ns=ts - _T0, argv=_TALK_ARGV, cwd=None,
            text=False, returncode=0, chunks=chunks, duration_ns=20_000_000,
        )  # fmt: skip
        out.append(encode_entry(call))
    end_ts = _T0 + (calls + 2) * 50_000_000
    out.append(
        encode_entry(
            SessionEnd(seq=calls + 1, ts_ns=end_ts, mono_ns=end_ts - _T0, duration_ns=end_ts - _T0)
        )
    )
    path.write_bytes(b"".join(out))


def _talk(argv: list[str], cwd: str | None) -> None:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None
    assert proc.stdout is not None
    for question in _QUESTIONS:
        proc.stdin.write(question)
        proc.stdout.readline()
    proc.stdin.close()
    proc.wait()


def _floor(requests: list[Any], how: str) -> Any:
    """CPython's ``Popen`` with only the spawn stubbed out: no tape, no process.

    ``"init"`` builds a ``Popen`` with no pipes and waits for it; ``"pipes"`` runs
    ``subprocess.run(..., capture_output=True, text=True)``, whose two pipes are real and
    empty, through CPython's ``communicate``.
    """
    popen = subprocess.Popen
    saved = {name: popen.__dict__[name] for name in ("_execute_child", "_wait")}

    def _execute_child(self: Any, args: Any, executable: Any, *rest: Any) -> None:
        self._close_pipe_fds(*rest[8:14])
        self.pid = 1 << 22
        self._child_created = True

    def _wait(self: Any, timeout: Any) -> int:
        self.returncode = 0
        return 0

    def batch() -> Any:
        popen._execute_child = _execute_child  # type: ignore[attr-defined]
        popen._wait = _wait  # type: ignore[attr-defined]

        def go() -> int:
            if how == "init":
                for argv, cwd, _ in requests:
                    popen(argv, cwd=cwd).wait()
            else:
                for argv, cwd, _ in requests:
                    subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
            return len(requests)

        def cleanup() -> None:
            for name, method in saved.items():
                setattr(popen, name, method)

        return go, cleanup

    return batch


class DequeFloor:
    """The per-call floor of a replay: a FIFO of (recorded request, result), one comparison.

    What no replay goes under: take the next recorded call, check today's request against
    the recorded one, hand back the recorded result. ``run`` stands in for a process
    runner (the request is the argv), ``execute`` for an agent adapter, ``request`` for a
    user boundary's method: each takes the request as its first argument.
    """

    def __init__(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        self._next = collections.deque(pairs).popleft

    def take(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        recorded, result = self._next()
        if request != recorded:
            raise AssertionError(f"the floor expected {recorded!r}, got {request!r}")
        return result

    run = execute = request = take


def deque_floor(requests: list[Any]) -> Any:
    def batch() -> Any:
        # The recorded argv is a list of its own, as one decoded from a tape is.
        pairs = [(list(argv), ProcessResult(argv, 0, out, "")) for argv, _, out in requests]
        run = DequeFloor(pairs).run

        def go() -> int:
            for argv, cwd, _ in requests:
                run(argv, cwd=cwd, text=True)
            return len(requests)

        return go

    return batch


def _pytest_subprocess(requests: list[Any]) -> Any:
    from pytest_subprocess import FakeProcess

    def batch() -> Any:
        fp = FakeProcess()
        for argv, _, out in requests:
            fp.register(argv, stdout=out)
        fp.__enter__()

        def go() -> int:
            for argv, cwd, _ in requests:
                subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
            return len(requests)

        return go, fp.__exit__

    return batch


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without this, Nagle's algorithm and the
    # client's delayed ACK add 40 ms to every recorded request.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:  # the http.server API
        body = f'{{"path": "{self.path}", "status": "ok", "items": [1, 2, 3]}}'.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _vcrpy(interactions: int, workdir: Path, batches: int) -> dict[str, float]:
    import requests
    import vcr

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    urls = [f"{base}/calls/{i}" for i in range(interactions)]
    cassette = workdir / "vcr_cassette.yaml"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with requests.Session() as session:
                start = now_ns()
                with vcr.VCR(record_mode="all").use_cassette(str(cassette)):
                    for url in urls:
                        session.get(url).raise_for_status()
                record_ns = now_ns() - start
            player = vcr.VCR(record_mode="none")

            def batch() -> Any:
                session = requests.Session()
                ctx = player.use_cassette(str(cassette))
                ctx.__enter__()

                def go() -> int:
                    for url in urls:
                        session.get(url)
                    return len(urls)

                def cleanup() -> None:
                    ctx.__exit__(None, None, None)
                    session.close()

                return go, cleanup

            result = per_call_ns(batch, batches=batches, warmup=1)
    finally:
        server.shutdown()
        server.server_close()
    result["interactions"] = interactions
    result["record_ns_per_interaction"] = record_ns / interactions
    return result


def run(
    *,
    calls: int,
    batches: int,
    vcr_interactions: int,
    vcr_batches: int,
    workdir: Path,
    others: bool = True,
) -> dict[str, Any]:
    """Measure every variant; ``others=False`` skips pytest-subprocess and vcrpy (each is
    also skipped, and its result ``None``, when it is not installed)."""
    repo = tempfile.mkdtemp(prefix="bench-repo-", dir=workdir)
    tape_cwd = workdir / "calls_cwd.jsonl"
    tape_plain = workdir / "calls_plain.jsonl"
    write_tape(tape_cwd, calls, with_cwd=True)
    write_tape(tape_plain, calls, with_cwd=False)
    rec_cwd = sessiontape.load(tape_cwd)
    rec_plain = sessiontape.load(tape_plain)
    with_cwd = requests_for(calls, repo)
    no_cwd = requests_for(calls, None)
    out: dict[str, Any] = {"calls_per_batch": calls, "gc": "enabled"}
    # The figure and its floor take turns, batch by batch.
    out |= per_call_each(
        {
            "sessiontape": replaying(rec_cwd, with_cwd, repo, patch_time=True),
            "deque": deque_floor(with_cwd),
        },
        batches=batches,
    )
    out["sessiontape_patch_time_false"] = per_call_ns(
        replaying(rec_cwd, with_cwd, repo, patch_time=False), batches=batches
    )
    out["sessiontape_no_paths"] = per_call_ns(
        replaying(rec_plain, no_cwd, repo, patch_time=True), batches=batches
    )
    with gc_paused():
        out["sessiontape_gc_paused"] = per_call_ns(
            replaying(rec_cwd, with_cwd, repo, patch_time=True), batches=batches
        )
    out["patch_subprocess"] = per_call_ns(
        _patch_subprocess(rec_cwd, with_cwd, repo), batches=batches
    )
    for name, how in PATTERNS.items():
        if name != "text":
            out[f"patch_subprocess_{name}"] = per_call_ns(
                _patched(rec_cwd, with_cwd, repo, how), batches=batches
            )
    talks = max(1, calls // 10)
    tape_talk = workdir / "calls_talk.jsonl"
    write_conversation_tape(tape_talk, talks)
    out["patch_subprocess_pump"] = per_call_ns(
        _patched(sessiontape.load(tape_talk), requests_for_talk(talks), repo, _talk),
        batches=batches,
    )
    out["popen_floor_init"] = per_call_ns(_floor(with_cwd, "init"), batches=batches)
    out["popen_floor_pipes"] = per_call_ns(_floor(with_cwd, "pipes"), batches=batches)
    if others:
        out["pytest_subprocess"] = pytest_subprocess_per_call(with_cwd, batches)
        out["vcrpy"] = vcrpy_per_interaction(vcr_interactions, workdir, vcr_batches)
    return out


def pytest_subprocess_per_call(requests: list[Any], batches: int) -> dict[str, float] | None:
    """pytest-subprocess serving ``requests`` through ``subprocess.run`` (None: missing)."""
    try:
        import pytest_subprocess  # noqa: F401
    except ImportError:
        return None
    return per_call_ns(_pytest_subprocess(requests), batches=batches)


def vcrpy_per_interaction(interactions: int, workdir: Path, batches: int) -> dict[str, Any] | None:
    """vcrpy replaying ``interactions`` loopback HTTP requests (None: vcrpy or requests missing)."""
    try:
        import requests  # noqa: F401
        import vcr  # noqa: F401
    except ImportError:
        return None
    return _vcrpy(interactions, workdir, batches)
