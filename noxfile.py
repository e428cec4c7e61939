"""Every task a contributor runs: ``nox -s tests lint typecheck browser bench demo reliability``,
and ``nox -s zoo`` (the whole capability matrix of ``tests/zoo``).

The tools are pinned so that a green run here is a green run in CI.
"""

from __future__ import annotations

import os
import shutil

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]


def _uv() -> str | None:
    """uv's binary: from the ``uv`` package (``pip install "nox[uv]"``, as the README and
    CI install nox), else the PATH's. It installs the test extra, the larger part of CI's
    time under pip, in seconds; without it, sessions use venv and pip as before."""
    try:
        from uv import find_uv_bin
    except ImportError:
        return shutil.which("uv")
    return str(find_uv_bin())


UV = _uv()

nox.options.default_venv_backend = "uv" if UV else "virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

RUFF = "ruff==0.17.6"
MYPY = "mypy==2.4.1"


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite (unit, plugin, CLI, examples, and the cassette corpus), on all cores.

    pytest's exit code 5 (no tests collected) fails the session like any other.
    """
    # The bench extra too: the benchmark smoke test drives pytest-subprocess and vcrpy.
    session.install("-e", ".[test,bench]")
    # The slowest tests are named at the end: what to look at when CI's time grows.
    args = session.posargs or ["-n", "auto", "--durations=25"]
    session.run("pytest", *args)


@nox.session
def zoo(session: nox.Session) -> None:
    """The zoo matrix in full: every program of ``tests/zoo`` through every capability that
    applies to it (``tests/zoo/matrix.py`` lists them, and the cells that fail today for a
    known defect). ``nox -s tests`` runs only its fast slice. The last line of the run
    gives the matrix's size.
    """
    session.install("-e", ".[test]")
    args = session.posargs or ["-n", "2"]
    session.run(
        "pytest", "tests/zoo", "-p", "no:randomly", "-rxXfE", *args, env={"SESSIONTAPE_ZOO": "full"}
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint rules and formatting."""
    session.install(RUFF)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on src/ and bench/ (settings in pyproject.toml), with the optional
    packages the code imports where installed (coverage, the test and bench extras)."""
    session.install("-e", ".[test,bench]", MYPY)
    session.run("mypy")


#: Where Debian's package puts Chromium. Playwright's own browser download is not used:
#: it needs a network this project's machines do not have.
CHROMIUM = "/usr/bin/chromium"


def _chromium(session: nox.Session) -> str:
    """A Chromium for Playwright: $SESSIONTAPE_CHROMIUM, the PATH's, or Debian's package.

    As root with apt-get, a missing Chromium is installed from Debian; otherwise the
    session fails and says how to get one.
    """
    for candidate in (os.environ.get("SESSIONTAPE_CHROMIUM"), shutil.which("chromium"), CHROMIUM):
        if candidate and os.path.exists(candidate):
            return candidate
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        # A fresh machine's package lists may be empty: read them first.
        apt_env = {"DEBIAN_FRONTEND": "noninteractive"}
        session.run("apt-get", "update", "-q", external=True, env=apt_env)
        session.run("apt-get", "install", "-y", "-q", "chromium", external=True, env=apt_env)
        if os.path.exists(CHROMIUM):
            return CHROMIUM
    session.error(
        f"no Chromium at {CHROMIUM} or on the PATH. Install Debian's package "
        "(sudo apt-get install chromium), or set SESSIONTAPE_CHROMIUM to a Chromium binary."
    )
    raise AssertionError("unreachable: session.error raises")


@nox.session
def browser(session: nox.Session) -> None:
    """The viewer (serve and report) in headless Chromium, driven by Playwright.

    A missing Playwright or Chromium fails the session: SESSIONTAPE_BROWSER_REQUIRED=1
    turns the tests' skip into a failure.
    """
    session.install("-e", ".[test,browser]")
    chromium = _chromium(session)
    env = {"SESSIONTAPE_BROWSER_REQUIRED": "1", "SESSIONTAPE_CHROMIUM": chromium}
    session.run("pytest", "tests/browser", "-p", "no:randomly", *session.posargs, env=env)


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmark suite; writes BENCHMARKS.md and BENCHMARKS.json.

    Each figure stands beside the committed BENCHMARKS.json's (read before the run replaces
    it). ``nox -s bench -- --quick`` runs small sizes and writes nothing;
    ``-- --no-compare`` leaves the previous figures out. About ten minutes on two cores.
    """
    # The test extra too: the corpus case replays cassettes through pytest -n 2 (xdist).
    session.install("-e", ".[test,bench]")
    session.run("python", "bench/run.py", *session.posargs)


@nox.session
def reliability(session: nox.Session) -> None:
    """The safety promises at full size; writes its figures into RELIABILITY.md.

    First the safety tests as the suite runs them, then ``tests/safety/reliability.py``:
    200 kill -9 trials, the disk-fault matrix, 80,000 calls from 16 threads, more than
    100,000 fuzzed tapes and the secret corpus by place and kind (about five minutes on
    two cores), then chaos replay's (1,000 schedules over the corpus, 20 runs of 100
    schedules per planted race), then the full conformance run (``conformance``, about
    three minutes).
    ``nox -s reliability -- --quick`` runs a small version and writes nothing.
    """
    session.install("-e", ".[test]")
    session.run("pytest", "-q", "-p", "no:randomly", "-n", "2", "tests/safety")
    session.run("python", "tests/safety/reliability.py", *session.posargs)
    # Chaos replay: 1,000 schedules over the corpus, 20 x 100 schedules per planted race.
    session.run("python", "tests/chaos/reliability.py", *session.posargs)
    # CPython's own subprocess tests in full (CI runs their --quick slice): about three
    # minutes on two cores; the figures go into RELIABILITY.md by hand, per interpreter.
    quick = ["--quick"] if "--quick" in session.posargs else []
    session.run("python", "tests/conformance/run_conformance.py", *quick)


@nox.session
def demo(session: nox.Session) -> None:
    """Record and replay a live session of the bundled example orchestrator."""
    session.install("-e", ".")
    session.run("sessiontape", "demo", *session.posargs)


# -- the suite on every supported CPython ---------------------------------------------------

#: The CPython versions ``requires-python`` claims. ``nox -t pythons`` runs the suite on each
#: this machine has (``nox -s tests-3.12`` on one); ``nox -s tests`` stays the one-interpreter
#: run on nox's own Python. ``nox -t pythons-fast`` runs :data:`FAST_SLICE` on each; CI runs
#: a third of it on each CPython other than nox's (``nox -s tests-fast-3.12 -- --part=2/3``).
PYTHONS = ("3.10", "3.11", "3.12", "3.13")

#: What differs between interpreters, in about a quarter of the suite's time: real
#: processes and asyncio recorded and replayed (subprocess's and asyncio's internals change
#: from version to version), the virtual clock and its holds, the loader and its fuzzing
#: (recursion limits), recording and replay, and the layering rules.
FAST_SLICE = (
    "tests/real",
    "tests/boundaries",
    "tests/test_clock.py",
    "tests/test_clock_holds.py",
    "tests/safety/test_fuzz.py",
    "tests/safety/test_loader.py",
    "tests/test_replay.py",
    "tests/test_record.py",
    "tests/test_cassette.py",
    "tests/test_architecture.py",
)


#: Left out of the slice CI runs on the other CPythons: the shrink and corpus searches,
#: slow (a third of the slice's time), and what they test, the search, is the same on every
#: interpreter (the suite runs them on nox's CPython).
FAST_SLICE_OMITS = ("tests/real/test_shrink.py", "tests/real/test_corpus_minimize.py")


def _runs(candidate: str, version: str) -> bool:
    """Whether ``candidate`` is a working CPython ``version`` (a pyenv shim of a version
    that is installed but not selected exists and fails)."""
    import subprocess

    try:
        done = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def _find_python(version: str) -> str | None:
    """CPython ``version``: ``python3.X`` on the PATH if it runs, else the newest pyenv
    install of it ($PYENV_ROOT, else ~/.pyenv), else ``None``."""
    import glob

    found = shutil.which(f"python{version}")
    if found and _runs(found, version):
        return found
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    installs = glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}"))

    def patch_level(path: str) -> int:
        tail = path.split(os.sep)[-3].split(".")[-1]
        return int(tail) if tail.isdigit() else -1

    for candidate in sorted(installs, key=patch_level, reverse=True):
        if _runs(candidate, version):
            return candidate
    return None


def _python_venv(session: nox.Session, version: str, what: str) -> str:
    """The python of the project's virtualenv on CPython ``version`` (made and installed
    with the test and bench extras as needed); the session is skipped, or with
    ``SESSIONTAPE_PYTHONS_REQUIRED=1`` failed, when the machine lacks that CPython."""
    interpreter = _find_python(version)
    if interpreter is None:
        message = (
            f"CPython {version} is not on this machine (no working python{version} on "
            f"the PATH, no pyenv install of it): `pyenv install {version}` to run {what} "
            "on it"
        )
        if os.environ.get("SESSIONTAPE_PYTHONS_REQUIRED") == "1":
            session.error(message)
        session.skip(message)
    # A virtualenv of our own (nox looks interpreters up on the PATH only, where a
    # pyenv shim of a version not selected answers but does not run).
    venv = os.path.join(".nox", f"tests-{version.replace('.', '-')}")
    python = os.path.join(venv, "bin", "python")
    marker = os.path.join(venv, ".installed")
    if not os.path.exists(python):
        if UV:
            session.run(UV, "venv", "-q", "--python", interpreter, venv, external=True)
        else:
            session.run(interpreter, "-m", "venv", venv, external=True)
    # The editable install follows the sources; it is redone only when the project's
    # metadata (its dependencies) changed since.
    if not os.path.exists(marker) or os.path.getmtime(marker) < os.path.getmtime("pyproject.toml"):
        install = (
            [UV, "pip", "install", "--python", python] if UV else [python, "-m", "pip", "install"]
        )
        session.run(*install, "-q", "-e", ".[test,bench]", external=True)
        with open(marker, "w", encoding="utf-8") as done:
            done.write(f"{interpreter}\n")
    return python


def _suite_on(version: str, *, fast: bool) -> None:
    """Define the session ``tests-<version>`` (the suite on that CPython), or with ``fast``
    ``tests-fast-<version>`` (:data:`FAST_SLICE` on it)."""
    name = f"tests-fast-{version}" if fast else f"tests-{version}"

    @nox.session(name=name, python=False, tags=["pythons-fast" if fast else "pythons"])
    def run(session: nox.Session) -> None:
        python = _python_venv(session, version, "the suite")
        if fast:
            args = ["-n", "2", "-q", "-p", "no:randomly", "--durations=10", *FAST_SLICE]
            args += [f"--ignore={path}" for path in FAST_SLICE_OMITS] + session.posargs
        else:
            args = session.posargs or ["-n", "auto"]
        session.run(python, "-m", "pytest", *args, external=True)

    what = "The interpreter-sensitive slice of the suite" if fast else "The suite"
    run.__doc__ = f"{what} on CPython {version} (found on the PATH or under pyenv)."


for _version in PYTHONS:
    _suite_on(_version, fast=False)
    _suite_on(_version, fast=True)


@nox.session
def conformance(session: nox.Session) -> None:
    """CPython's own subprocess tests, three ways: plain, recording, replaying.

    ``tests/conformance/run_conformance.py`` runs ``test.test_subprocess`` and
    ``test.test_asyncio.test_subprocess`` of the session's interpreter plain, then each
    passing test while recording into its own tape, then each tape replayed (no process
    may start), and prints the three counts and the reviewed list of tests that cannot
    pass on replay. An interpreter without its ``test`` package is skipped with a message.
    ``nox -s conformance -- --quick`` runs the CI slice (about a minute); the full run
    takes several minutes on two cores.
    """
    session.install("-e", ".[test]")
    session.run("python", "tests/conformance/run_conformance.py", *session.posargs)


def _conformance_on(version: str) -> None:
    """Define the session ``conformance-<version>``: the conformance run on that CPython."""

    @nox.session(name=f"conformance-{version}", python=False, tags=["conformances"])
    def run(session: nox.Session) -> None:
        python = _python_venv(session, version, "the conformance run")
        script = os.path.join("tests", "conformance", "run_conformance.py")
        session.run(python, script, *session.posargs, external=True)

    run.__doc__ = (
        f"CPython {version}'s own subprocess tests plain, recording and replaying (found on "
        "the PATH or under pyenv); ``nox -t conformances -- --quick`` runs the CI slice on each."
    )


for _version in PYTHONS:
    _conformance_on(_version)


@nox.session
def screenshots(session: nox.Session) -> None:
    """The README's picture of the lane view (docs/lanes.png), from the real viewer in
    headless Chromium (docs/screenshots.py); never drawn by hand."""
    session.install("-e", ".[browser]")
    chromium = _chromium(session)
    session.run("python", "docs/screenshots.py", env={"SESSIONTAPE_CHROMIUM": chromium})
