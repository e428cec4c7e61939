"""Shared set-up of the test suite."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import sessiontape
import sessiontape.tape
from interrupts import ctrl_c_interrupts

pytest_plugins = ["pytester"]

# pytester puts sys.modules back as it was after each in-process run, dropping the modules
# first imported inside it. sessiontape's fronts are lazy: they import a module on first
# access and keep what it gave, so a module dropped that way would be imported again later,
# as a second copy of its classes. Every public name is loaded here, before any test, so
# the suite holds one copy of each. (tests/test_startup.py checks what a fresh interpreter
# loads, in subprocesses.)
for _front in (sessiontape, sessiontape.tape):
    for _name in _front.__all__:
        getattr(_front, _name)


@pytest.fixture(autouse=True)
def _no_tape_left_open() -> Iterator[None]:
    """A test that leaves a tape open leaves threading.Thread.start patched and the
    derived thread names counting on, and so breaks the tests that run after it in the
    same process: it fails here, under its own name."""
    from sessiontape import _context

    yield
    left = _context._installed
    if left:
        # Put the process back first, so that only this test fails.
        _context._installed = 0
        threading.Thread.start = _context._REAL_START  # type: ignore[method-assign]
        ThreadPoolExecutor.submit = _context._REAL_SUBMIT  # type: ignore[method-assign,assignment]
        pytest.fail(f"the test left {left} tape(s) open: close every tape it creates")


# The signals whose handling a test must leave as it found it. A test that leaves SIGINT
# ignored or blocked breaks every later test in its process that interrupts itself, and
# every child it starts, which inherits both across exec and then cannot be stopped with
# Ctrl-C: it fails here, under its own name. Python's signal.getsignal() only knows what
# went through the signal module, so the kernel's view is read too (Linux: /proc).
_GUARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD)
_GUARDED_MASK = sum(1 << (number - 1) for number in _GUARDED_SIGNALS)


def _kernel_view() -> dict[str, int]:
    """The guarded signals' bits of the kernel's ignored set (the process's) and blocked
    set (this thread's), where /proc shows them."""
    try:
        lines = Path("/proc/thread-self/status").read_text().splitlines()
    except OSError:
        return {}
    return {
        key: int(value, 16) & _GUARDED_MASK
        for key, _, value in (line.partition(":\t") for line in lines)
        if key in ("SigIgn", "SigBlk")
    }


def _names(bits: int) -> list[str]:
    return [signal.Signals(n).name for n in _GUARDED_SIGNALS if bits & (1 << (n - 1))]


@pytest.fixture(autouse=True)
def _signals_left_as_found() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signal.signal only works in the main thread; nothing to put back
        return
    before = {number: signal.getsignal(number) for number in _GUARDED_SIGNALS}
    kernel = _kernel_view()
    yield
    changed = []
    for number, handler in before.items():
        now = signal.getsignal(number)
        if now != handler:
            changed.append(f"{signal.Signals(number).name}: {handler!r} -> {now!r}")
            signal.signal(number, handler)  # so that only this test fails
    for key, bits in _kernel_view().items():
        if bits == kernel[key]:
            continue
        what = "ignored" if key == "SigIgn" else "blocked"
        changed.append(f"{what} {_names(kernel[key])} -> {_names(bits)}")
        added = [n for n in _GUARDED_SIGNALS if bits & ~kernel[key] & (1 << (n - 1))]
        if key == "SigBlk":
            signal.pthread_sigmask(signal.SIG_UNBLOCK, added)
        else:
            for number in added:  # set where Python cannot see: set again through it
                signal.signal(number, before[number])
    if changed:
        pytest.fail("the test left signal handling changed: " + "; ".join(changed))


@pytest.fixture
def interruptible() -> Iterator[None]:
    """Ctrl-C (SIGINT) interrupts the test's process and the processes it starts, as at an
    interactive terminal, even when the suite itself was started with SIGINT ignored (a
    background job of a script): see ``tests/interrupts.py``."""
    with ctrl_c_interrupts():
        yield


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from a developer's environment, whatever the suite runs in: CI sets
    ``CI``, and both sessiontape (no recording in CI) and pytest (no truncated summaries)
    read it, in this process and in every pytest a test starts. A test about CI sets it."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--part",
        metavar="K/N",
        default=None,
        help="run only the K-th of N parts of the collected tests (every N-th test from "
        "the K-th, in collection order): CI spreads a slice over its interpreters this way.",
    )


def _part(value: str) -> tuple[int, int]:
    """``K/N`` as ``(K, N)``, or a usage error that says what is wanted."""
    k, _, n = value.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise pytest.UsageError(f"--part={value}: want K/N with 1 <= K <= N, as --part=2/3")
    return int(k), int(n)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--part=K/N``: deal the tests out like cards in the order of their ids, so that
    each part gets its share of every module's slow and quick tests, whatever order they
    run in (pytest-randomly's) and in whichever process (each xdist worker, each
    interpreter) deals them."""
    value = config.getoption("--part")
    if value is None:
        return
    k, n = _part(value)
    mine = {nodeid for i, nodeid in enumerate(sorted(i.nodeid for i in items)) if i % n == k - 1}
    kept = [item for item in items if item.nodeid in mine]
    dropped = [item for item in items if item.nodeid not in mine]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def pytest_configure(config: pytest.Config) -> None:
    value = config.getoption("--part")
    if value is not None:
        _part(value)  # a bad value is told before the tests are collected
    config.addinivalue_line(
        "markers",
        "writes_invalid_tapes: the test writes cassettes that `sessiontape validate` rejects "
        "on purpose (damaged, unredacted, cut): they are not validated at its teardown.",
    )


def _written_tapes(request: pytest.FixtureRequest) -> list[Path]:
    """The cassettes under the test's own directories (``tmp_path``, ``pytester``)."""
    roots: list[Path] = []
    funcargs = getattr(request.node, "funcargs", {})
    if "tmp_path" in funcargs:
        roots.append(funcargs["tmp_path"])
    if "pytester" in funcargs:
        roots.append(funcargs["pytester"].path)
    from sessiontape.cassette import is_cassette

    found: set[Path] = set()
    for root in roots:
        if root.is_dir():
            found.update(p for p in root.rglob("*.jsonl") if is_cassette(p))
    return sorted(found)


@pytest.fixture(autouse=True)
def _every_tape_written_is_valid(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every cassette a test leaves in its directories passes `sessiontape validate`
    (checked when the test is torn down, after the fixtures that finish tapes): whatever
    wrote it, recording, update, live, shrink, chaos save, slice or scrub. A test that
    writes broken tapes on purpose is marked ``writes_invalid_tapes``."""
    yield
    if request.node.get_closest_marker("writes_invalid_tapes") is not None:
        return
    from sessiontape import SessiontapeError
    from sessiontape.cassette import ERROR, load
    from sessiontape.cli._validate import check

    problems: list[str] = []
    for path in _written_tapes(request):
        try:
            findings = check(load(path))
        except SessiontapeError as exc:
            problems.append(f"{path}: cannot be read: {exc}")
            continue
        problems += [
            f"{path}: seq {f.seq}: {f.message}" if f.seq is not None else f"{path}: {f.message}"
            for f in findings
            if f.severity == ERROR
        ]
    if problems:
        pytest.fail(
            "the test wrote tapes that `sessiontape validate` rejects:\n" + "\n".join(problems)
        )
