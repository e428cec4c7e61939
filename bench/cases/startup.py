"""Figure 8: start-up, what sessiontape costs a process that never uses a tape.

Three measurements, each in fresh interpreters, each against a baseline taken in the
same rounds (the variants take turns, so a busy spell of the shared machine weighs on all
of them alike), bytecode cached (a warm-up run writes it):

* ``python -X importtime -c "import pytest; import <entry point>"``: what the ``pytest11``
  entry point of sessiontape, and of each plugin users install beside it
  (pytest-randomly, pytest-recording, time-machine, syrupy, pytest-subprocess), imports
  beyond pytest's own imports (the entry module's cumulative time), beside pytest's;
* a one-test ``pytest`` run, whole process, with every installed plugin loaded, beside the
  same run without each plugin in turn (``-p no:NAME``): a plugin's cost is the
  difference, and sessiontape's figure the ratio to the run with ``-p no:sessiontape``;
* ``import sessiontape; sessiontape.record(None)`` (recording off, the production
  default), whole process, beside a bare interpreter (``python -c pass``).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from .common import median

__all__ = [
    "PLUGINS",
    "TEST",
    "child_env",
    "entry_points",
    "import_cpu",
    "importtimes",
    "pytest_runs",
    "record_none",
    "run",
]

#: The plugins measured beside sessiontape's entry point, by distribution name.
PLUGINS: Final = (
    "sessiontape",
    "pytest-randomly",
    "pytest-recording",
    "time-machine",
    "syrupy",
    "pytest-subprocess",
)

TEST: Final = "def test_one():\n    assert 1 + 1 == 2\n"
#: The sessiontape measured: the tree ``--against`` names, else this checkout's.
_SRC: Final = Path(
    os.environ.get("SESSIONTAPE_BENCH_TREE") or Path(__file__).resolve().parents[2] / "src"
)


def entry_points() -> dict[str, tuple[str, str]]:
    """``{distribution: (entry point name, module)}`` of the installed ``pytest11`` plugins
    among :data:`PLUGINS`."""
    found: dict[str, tuple[str, str]] = {}
    for ep in metadata.entry_points(group="pytest11"):
        dist = ep.dist.name if ep.dist is not None else None
        if dist in PLUGINS and dist not in found:
            found[dist] = (ep.name, ep.value.partition(":")[0])
    return found


def child_env() -> dict[str, str]:
    """The children's environment: the checkout's ``src/`` first, bytecode written and
    read (a user's interpreter caches it), no recording switched on."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONDONTWRITEBYTECODE", "SESSIONTAPE_RECORD", "PYTEST_ADDOPTS")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_SRC), env.get("PYTHONPATH")]))
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one child process, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stderr


def _top_level(importtime: str) -> list[tuple[str, float]]:
    """``(module, cumulative µs)`` of each import ``-X importtime`` shows at the top level
    (an import not made by another import), in order."""
    out: list[tuple[str, float]] = []
    for line in importtime.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2][1:].startswith(" "):
            out.append((parts[2].strip(), float(parts[1])))
    return out


def _ms_from(importtime: str, first: str, *, inclusive: bool) -> float:
    """Milliseconds of every top-level import from ``first`` on (or after it): what the
    code imported from there, a package's parents included (``sessiontape`` for
    ``sessiontape.plugin``)."""
    lines = _top_level(importtime)
    names = [name for name, _ in lines]
    if first not in names:
        return 0.0
    start = names.index(first) + (0 if inclusive else 1)
    return sum(us for _, us in lines[start:]) / 1000


def importtimes(
    entries: dict[str, tuple[str, str]], rounds: int, cwd: Path, env: dict[str, str]
) -> dict[str, Any]:
    samples: dict[str, list[float]] = {dist: [] for dist in entries}
    pytest_own: list[float] = []
    for _ in range(rounds):
        for dist, (_, module) in entries.items():
            code = f"import pytest; import {module}"
            _, _, err = _run([sys.executable, "-X", "importtime", "-c", code], cwd, env)
            samples[dist].append(_ms_from(err, "pytest", inclusive=False))
            pytest_own.append(dict(_top_level(err)).get("pytest", 0.0) / 1000)
    return {
        "pytest_ms": median(pytest_own),
        "entry_ms": {dist: median(values) for dist, values in samples.items()},
        "entry_best_ms": {dist: min(values) for dist, values in samples.items()},
        "modules": {dist: module for dist, (_, module) in entries.items()},
    }


_IMPORT_CPU: Final = (
    "import time, pytest\n"
    "start = time.thread_time_ns()\n"
    "import {module}\n"
    "print((time.thread_time_ns() - start) / 1e6)\n"
)


def import_cpu(
    entries: dict[str, tuple[str, str]], rounds: int, cwd: Path, env: dict[str, str]
) -> dict[str, float]:
    """Each entry point's import after pytest's, in ms of the importing thread's CPU time
    (what a busy machine moves least), best of ``rounds``, the entry points taking turns."""
    best: dict[str, float] = {}
    for _ in range(rounds):
        for dist, (_, module) in entries.items():
            done = subprocess.run(
                [sys.executable, "-c", _IMPORT_CPU.format(module=module)],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            ms = float(done.stdout.split()[-1])
            best[dist] = min(ms, best.get(dist, ms))
    return best


def pytest_runs(
    entries: dict[str, tuple[str, str]], rounds: int, project: Path, env: dict[str, str]
) -> dict[str, Any]:
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    variants: dict[str, list[str]] = {"all": base}
    for dist, (name, _) in entries.items():
        variants[f"no:{dist}"] = [*base, "-p", f"no:{name}"]
    wall: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    names = list(variants)
    for i in range(rounds):
        # Each round in another order: no variant always runs right after the same one.
        for variant in names[i % len(names) :] + names[: i % len(names)]:
            w, c, _ = _run(variants[variant], project, env)
            wall[variant].append(w)
            cpu[variant].append(c)
    # sessiontape's own figure gets twice as many more pairs, in alternating order (the
    # round-by-round differences below pair the first ``rounds`` runs of each variant).
    ours = ["all", "no:sessiontape"]
    for i in range(2 * rounds):
        for variant in ours if i % 2 == 0 else ours[::-1]:
            w, c, _ = _run(variants[variant], project, env)
            wall[variant].append(w)
            cpu[variant].append(c)
    all_wall, all_cpu = median(wall["all"]), median(cpu["all"])
    return {
        "pairs": len(cpu["no:sessiontape"]),
        # Contention only ever adds CPU time too (cache, frequency): the best runs.
        "all_cpu_best_s": min(cpu["all"]),
        "without_cpu_best_s": {dist: min(cpu[f"no:{dist}"]) for dist in entries},
        "all_s": all_wall,
        "all_cpu_s": all_cpu,
        "without_s": {dist: median(wall[f"no:{dist}"]) for dist in entries},
        "without_cpu_s": {dist: median(cpu[f"no:{dist}"]) for dist in entries},
        # A plugin's cost: the paired difference, round by round, then the median.
        "cost_ms": {
            dist: median(
                [(a - b) * 1000 for a, b in zip(wall["all"], wall[f"no:{dist}"], strict=False)]
            )
            for dist in entries
        },
        "cost_cpu_ms": {
            dist: median(
                [(a - b) * 1000 for a, b in zip(cpu["all"], cpu[f"no:{dist}"], strict=False)]
            )
            for dist in entries
        },
    }


def record_none(rounds: int, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    bare_argv = [sys.executable, "-c", "pass"]
    code = "import sessiontape; sessiontape.record(None)"
    argv = [sys.executable, "-c", code]
    bare: list[float] = []
    used: list[float] = []
    bare_cpu: list[float] = []
    used_cpu: list[float] = []
    imported: list[float] = []
    for i in range(rounds):
        pair = [(bare_argv, bare, bare_cpu), (argv, used, used_cpu)]
        for command, wall, cpu in pair if i % 2 == 0 else pair[::-1]:
            w, c, _ = _run(command, cwd, env)
            wall.append(w)
            cpu.append(c)
        _, _, err = _run([sys.executable, "-X", "importtime", "-c", code], cwd, env)
        imported.append(_ms_from(err, "sessiontape", inclusive=True))
    return {
        "bare_s": median(bare),
        "record_none_s": median(used),
        "overhead_ms": median([(u - b) * 1000 for u, b in zip(used, bare, strict=True)]),
        # Start-up noise only ever adds: the best runs are the least disturbed ones.
        "best_overhead_ms": (min(used) - min(bare)) * 1000,
        "best_overhead_cpu_ms": (min(used_cpu) - min(bare_cpu)) * 1000,
        "bare_cpu_best_s": min(bare_cpu),
        "importtime_ms": median(imported),
        "importtime_best_ms": min(imported),
    }


def run(*, rounds: int, workdir: Path) -> dict[str, Any]:
    """Measure start-up; ``rounds`` turns of every variant."""
    project = workdir / "startup-project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "test_one.py").write_text(TEST, encoding="utf-8")
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = child_env()
    entries = entry_points()
    if "sessiontape" not in entries:
        raise RuntimeError("sessiontape's pytest11 entry point is not installed (pip install -e .)")
    # Warm-up: every variant once, writing the bytecode caches the rounds then read. A
    # single round (the smoke test's tiny mode) is no measurement to warm up for.
    if rounds > 1:
        importtimes(entries, 1, project, env)
        pytest_runs(entries, 1, project, env)
        record_none(1, project, env)
    return {
        "rounds": rounds,
        "plugins": sorted(entries),
        "missing": sorted(set(PLUGINS) - set(entries)),
        "importtime": importtimes(entries, rounds, project, env),
        "pytest": pytest_runs(entries, rounds, project, env),
        "record_none": record_none(rounds, project, env),
    }
