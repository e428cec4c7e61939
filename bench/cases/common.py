"""Timing helpers shared by the cases: warm-up, batches, medians, GC state, machine info.

Every figure is a median over batches timed with :func:`time.perf_counter_ns`; a batch
runs many calls so the timer's own cost (tens of nanoseconds) is spread thin. The timer
is held in a tuple, not a module attribute: freezegun (which ``sessiontape.replay`` runs
on by default) swaps every module attribute that *is* a real time function, and a
benchmark must keep reading the real clock while the fake one is installed.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from typing import Any, Final

#: The real timer, out of freezegun's reach (see the module docstring).
_TIMER: Final = (time.perf_counter_ns,)


def now_ns() -> int:
    """Real ``perf_counter_ns`` even while a FakeClock is installed."""
    return _TIMER[0]()


def median(values: list[float]) -> float:
    """The median of ``values`` (0.0 for none)."""
    return float(statistics.median(values)) if values else 0.0


def per_call_ns(
    make_batch: Callable[[], Any],
    *,
    batches: int,
    warmup: int = 2,
) -> dict[str, float]:
    """Median nanoseconds per call over ``batches`` batches.

    ``make_batch()`` prepares one batch outside the timed region and returns a function
    that runs it and returns how many calls it made, or a pair of that function and a
    clean-up to call after the timing. Returns the median, the best and the worst batch's
    per-call time, and the number of calls timed.
    """

    def prepare() -> tuple[Callable[[], int], Callable[[], Any] | None]:
        made = make_batch()
        return made if isinstance(made, tuple) else (made, None)

    for _ in range(warmup):
        run, cleanup = prepare()
        run()
        if cleanup is not None:
            cleanup()
    samples: list[float] = []
    calls = 0
    for _ in range(batches):
        run, cleanup = prepare()
        start = now_ns()
        n = run()
        elapsed = now_ns() - start
        if cleanup is not None:
            cleanup()
        samples.append(elapsed / max(n, 1))
        calls += n
    return {
        "median_ns": median(samples),
        "min_ns": min(samples),
        "max_ns": max(samples),
        "batches": batches,
        "calls": calls,
    }


def wall_ns(run: Callable[[], Any], *, repeat: int, warmup: int = 1) -> dict[str, float]:
    """Median wall time of ``run()`` over ``repeat`` runs (after ``warmup`` untimed ones)."""
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeat):
        start = now_ns()
        run()
        samples.append(now_ns() - start)
    return {
        "median_ns": median(samples),
        "min_ns": min(samples),
        "max_ns": max(samples),
        "repeat": repeat,
    }


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic GC for the block (restoring its state after)."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_revision(root: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", root, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(
        ["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    ).stdout.strip()
    return out.stdout.strip() + ("+dirty" if dirty else "")


def machine(root: str) -> dict[str, Any]:
    """What the numbers were measured on."""
    import sessiontape

    try:
        load1, load5, _ = os.getloadavg()
    except OSError:
        load1 = load5 = -1.0
    return {
        "nproc": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "loadavg_1m_at_start": round(load1, 2),
        "loadavg_5m_at_start": round(load5, 2),
        "gc_enabled": gc.isenabled(),
        "gc_thresholds": list(gc.get_threshold()),
        "git_revision": _git_revision(root),
        "packages": {
            "sessiontape": sessiontape.__version__,
            "msgspec": _version("msgspec"),
            "freezegun": _version("freezegun"),
            "pytest-subprocess": _version("pytest-subprocess"),
            "vcrpy": _version("vcrpy"),
            "requests": _version("requests"),
            "pytest": _version("pytest"),
        },
    }


_CHILD: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child.py")


def in_subprocess(target: str, **kwargs: Any) -> Any:
    """``module:function(**kwargs)`` run in a fresh interpreter; its JSON result."""
    import json

    done = subprocess.run(
        [sys.executable, _CHILD, target, json.dumps(kwargs)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{target} failed in its subprocess:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def cpu_ns() -> int:
    """CPU time of this process (user + system): less sensitive to a busy machine."""
    return time.process_time_ns()
