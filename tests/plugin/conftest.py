"""Scaffolding for the plugin tests: a tiny app, its hook, and a project around them.

Each test writes the app into its own ``pytester`` directory. The app makes two process
calls through a fake ``echo`` runner (no real subprocess: the suite stays fast) in worker
``w1``; environment variables change what it does, so a replay can be made to diverge:
``APP_WORD`` (the first call's argument), ``APP_SHORT`` (skip the second call).
"""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

APP = '''
import os

import sessiontape
from sessiontape import ProcessResult


class EchoRunner:
    """Answers like `echo` without starting a process."""

    def run(self, argv, *, cwd=None, env=None, input=None, timeout=None, text=False):
        out = " ".join(argv[1:]) + "\\n"
        return ProcessResult(argv, 0, out if text else out.encode())

    def stream(self, argv, **kwargs):
        raise NotImplementedError


def main(tape):
    runner = tape.process_runner(EchoRunner())
    word = os.environ.get("APP_WORD", "hello")
    with sessiontape.worker("w1"):
        out = [runner.run(["echo", word], text=True).stdout]
        if not os.environ.get("APP_SHORT"):
            out.append(runner.run(["echo", "done"], text=True).stdout)
    return {"out": out}


def record(path, **kwargs):
    """Record one production-like session (not through the tape fixture)."""
    with sessiontape.record(path, entrypoint="app run", **kwargs) as tape:
        tape.finish(main(tape))
'''

HOOK = """
import app


def sessiontape_replay(tape, recording):
    return app.main(tape)
"""

TEST = """
import os

import app


def test_one(tape):
    expected = os.environ.get("EXPECT_MODE")
    if expected:
        assert tape.mode.value == expected
    app.main(tape)
"""

#: Environment variables the app and the plugin read; no test inherits them.
ENV = ("APP_WORD", "APP_SHORT", "EXPECT_MODE", "CI", "SESSIONTAPE_RECORD")

_names = itertools.count()


class Project:
    """A pytester directory holding the app, its conftest hook and a test using `tape`."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.path = pytester.path
        pytester.makepyfile(app=APP, test_app=TEST)
        pytester.makeconftest(HOOK)
        self._app: ModuleType | None = None

    @property
    def app(self) -> ModuleType:
        """The app module, imported under a unique name (the inner runs import `app`)."""
        if self._app is None:
            spec = importlib.util.spec_from_file_location(
                f"_sessiontape_test_app_{next(_names)}", self.path / "app.py"
            )
            assert spec is not None
            assert spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self._app = module
        return self._app

    def record(self, relpath: str, **kwargs: object) -> Path:
        """Record a production-like cassette of the app at ``relpath``."""
        path = self.path / relpath
        self.app.record(path, **kwargs)
        return path

    def cassette(self, test: str = "test_one", module: str = "test_app") -> Path:
        """Where the tape fixture keeps the cassette of ``module::test`` by default."""
        return self.path / "cassettes" / module / f"{test}.jsonl"


Run = Callable[..., pytest.RunResult]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def project(pytester: pytest.Pytester) -> Project:
    return Project(pytester)


@pytest.fixture
def run(pytester: pytest.Pytester) -> Run:
    """Run pytest in ``pytester``: in-process, or in a subprocess for xdist's ``-n``.

    pytest-randomly is off unless a test asks for it with ``-p randomly``.
    """

    def run(*args: str) -> pytest.RunResult:
        extra = () if "randomly" in args else ("-p", "no:randomly")
        if "-n" in args:
            return pytester.runpytest_subprocess(*extra, *args)
        return pytester.runpytest(*extra, *args)

    return run


@pytest.fixture(params=[(), ("-n", "2")], ids=["serial", "xdist"])
def xdist(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """Extra arguments: none, or two pytest-xdist workers."""
    args: tuple[str, ...] = request.param
    return args
