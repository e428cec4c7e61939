"""Every task a contributor runs: ``nox -s tests lint typecheck bench demo reliability``.

The tools are pinned so that a green run here is a green run in CI.
"""

from __future__ import annotations

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
    """mypy --strict on src/ (settings in pyproject.toml)."""
    session.install("-e", ".", MYPY)
    session.run("mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmark suite; writes BENCHMARKS.md and BENCHMARKS.json."""
    session.install("-e", ".[bench]")
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


@nox.session
def demo(session: nox.Session) -> None:
    """Record and replay a live session of the bundled example orchestrator."""
    session.install("-e", ".")
    session.run("sessiontape", "demo", *session.posargs)
