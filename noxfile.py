"""Every task a contributor runs: ``nox -s tests lint typecheck browser bench demo reliability``.

The tools are pinned so that a green run here is a green run in CI.
"""

from __future__ import annotations

import os
import shutil

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
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
    args = session.posargs or ["-n", "auto"]
    session.run("pytest", *args)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint rules and formatting."""
    session.install(RUFF)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on src/ and bench/ (settings in pyproject.toml)."""
    session.install("-e", ".[bench]", MYPY)
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
    two cores). ``nox -s reliability -- --quick`` runs a small version and writes nothing.
    """
    session.install("-e", ".[test]")
    session.run("pytest", "-q", "-p", "no:randomly", "-n", "2", "tests/safety")
    session.run("python", "tests/safety/reliability.py", *session.posargs)
    # Chaos replay: 1,000 schedules over the corpus, 20 x 100 schedules per planted race.
    session.run("python", "tests/chaos/reliability.py", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """Record and replay a live session of the bundled example orchestrator."""
    session.install("-e", ".")
    session.run("sessiontape", "demo", *session.posargs)
