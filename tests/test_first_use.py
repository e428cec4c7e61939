"""First use from many threads and tasks at once: a recorder that is off never raises.

sessiontape's public names are imported on first use (``_lazy.py``). A module another
thread is still importing is already in ``sys.modules``, half made; handing it out gave
``AttributeError: partially initialized module 'sessiontape._context' has no attribute
'worker'`` to 2 to 7 of 8 worker threads entering ``sessiontape.worker(...)`` together.
Each round here is a fresh interpreter (nothing of sessiontape loaded), in which 16 threads,
or 16 asyncio tasks, released together touch 16 different public names first: names
whose modules import one another (``record`` and ``ReplayTape`` reach ``tape``, which
reaches ``boundaries``, ``cassette`` and ``scrub``...). Rounds run several interpreters
side by side; what is asserted is exact: no exception in any round, and every name the
object its module defines.

The import system has one more trap, met by these rounds: a thread importing a package's
submodule first (``from msgspec.structs import replace``) while another imports the
package, whose ``__init__`` imports that submodule, deadlocks (CPython takes the
submodule's lock, then the package's), and one of them gets ``_DeadlockError``. So no
module of sessiontape imports another project's submodule that its package imports
itself: it imports the package and reads the submodule from it.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import sessiontape

ROUNDS = 50

#: 16 public names from 12 modules, several of which import one another.
NAMES = (
    "worker",
    "current_worker",
    "record",
    "replay",
    "load",
    "Noise",
    "ReplayReport",
    "Scrubber",
    "Tape",
    "ReplayTape",
    "patched",
    "SubprocessRunner",
    "FakeClock",
    "ProcessCall",
    "get_plugin_manager",
    "RecordingWarning",
)

_PROLOGUE = """
import json, sys, threading, traceback
NAMES = {names!r}
errors = []

def touch(name):
    import sessiontape
    try:
        value = getattr(sessiontape, name)
        if name == "worker":
            with value("w-first"):
                pass
        elif name == "record":
            with value(None) as tape:  # recording off: the production default
                tape.finish()
    except BaseException:
        errors.append(traceback.format_exc())

def check_names():
    import importlib, sessiontape
    for name in NAMES:
        module = importlib.import_module(sessiontape._EXPORTS[name], "sessiontape")
        if getattr(sessiontape, name) is not getattr(module, name):
            errors.append(f"sessiontape.{{name}} is not {{module.__name__}}.{{name}}")
"""

#: 16 threads, released together, each touching its own name first.
THREADS = """
barrier = threading.Barrier(len(NAMES))

def run(name):
    barrier.wait()
    touch(name)

threads = [threading.Thread(target=run, args=(n,)) for n in NAMES]
for t in threads:
    t.start()
for t in threads:
    t.join()
check_names()
print(json.dumps(errors))
"""

#: 16 tasks on one loop, released together; every other one touches its name from a thread
#: (asyncio.to_thread), so that imports overlap with the loop's own.
TASKS = """
import asyncio

async def task(i, name, go):
    await go.wait()
    if i % 2:
        await asyncio.to_thread(touch, name)
    else:
        touch(name)

async def main():
    go = asyncio.Event()
    tasks = [asyncio.create_task(task(i, n, go)) for i, n in enumerate(NAMES)]
    await asyncio.sleep(0)
    go.set()
    for result in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(result, BaseException):
            errors.append(repr(result))

asyncio.run(main())
check_names()
print(json.dumps(errors))
"""

#: The reproduction of the report: 8 worker threads entering their worker block together.
WORKERS = """
import sessiontape
barrier = threading.Barrier(8)

def run(i):
    barrier.wait()
    try:
        with sessiontape.worker(f"w{i}"):
            pass
    except BaseException:
        errors.append(traceback.format_exc())

threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(errors))
"""


def _round(body: str) -> list[str]:
    """One fresh interpreter running ``body``: the exceptions it met."""
    environ = {k: v for k, v in os.environ.items() if k != sessiontape.ENV_VAR}
    code = textwrap.dedent(_PROLOGUE).format(names=NAMES) + textwrap.dedent(body)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=environ,
    )
    assert done.returncode == 0, done.stderr
    errors: list[str] = json.loads(done.stdout.splitlines()[-1])
    return errors


def _rounds(body: str) -> list[str]:
    """``ROUNDS`` fresh interpreters, a few side by side: every exception met."""
    with ThreadPoolExecutor(max_workers=max(2, min(8, (os.cpu_count() or 2) * 2))) as pool:
        return [error for errors in pool.map(_round, [body] * ROUNDS) for error in errors]


def test_the_names_are_public_and_distinct() -> None:
    assert len(set(NAMES)) == 16
    assert set(NAMES) <= set(sessiontape.__all__)
    assert len({sessiontape._EXPORTS[name] for name in NAMES}) >= 10


@pytest.mark.parametrize(
    "body", [THREADS, TASKS, WORKERS], ids=["16-threads", "16-tasks", "8-worker-blocks"]
)
def test_first_use_from_many_threads_at_once_never_raises(body: str) -> None:
    errors = _rounds(body)
    assert errors == [], f"{len(errors)} exceptions in {ROUNDS} rounds; the first:\n{errors[0]}"


SRC = Path(__file__).resolve().parent.parent / "src" / "sessiontape"


def _submodule_imports() -> dict[str, list[str]]:
    """``{"pkg.sub": ["file:line", ...]}``: every run-time import of another project's
    (or the standard library's) submodule in ``src/`` (``TYPE_CHECKING`` blocks aside)."""
    found: dict[str, list[str]] = {}

    def visit(node: ast.AST, where: Path) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for orelse in child.orelse:
                    visit(orelse, where)
                continue
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names = [child.module]
            for name in names:
                if "." in name and not name.startswith("sessiontape."):
                    line = getattr(child, "lineno", 0)
                    found.setdefault(name, []).append(f"{where.relative_to(SRC)}:{line}")
            visit(child, where)

    for path in sorted(SRC.rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")), path)
    return found


def test_no_submodule_is_imported_before_a_package_that_imports_it() -> None:
    imports = _submodule_imports()
    assert "collections.abc" in imports  # the scan sees what it must judge
    # In a fresh interpreter: which of them their own package imports while it loads.
    code = (
        "import importlib, json, sys\n"
        f"names = {sorted(imports)!r}\n"
        "hazards = []\n"
        "for name in names:\n"
        "    importlib.import_module(name.rsplit('.', 1)[0])\n"
        "    if name in sys.modules:\n"
        "        hazards.append(name)\n"
        "print(json.dumps(hazards))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    hazards = json.loads(done.stdout)
    assert {name: imports[name] for name in hazards} == {}
