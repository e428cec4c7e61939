"""What the cases share: warm-up, batches, medians, peak RSS, GC state, machine info.

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
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import metadata
from typing import Any, Final

#: The real timer, out of freezegun's reach (see the module docstring).
_TIMER: Final = (time.perf_counter_ns,)


def now_ns() -> int:
    """Real ``perf_counter_ns`` even while a FakeClock is installed."""
    return _TIMER[0]()


#: CPU time of the calling thread, in ns (freezegun leaves it alone): a figure timed on
#: one thread by what it ran, not by how long the shared machine made it wait.
THREAD_CPU: Final = time.thread_time_ns
#: CPU time of the whole process (every thread), in ns.
PROCESS_CPU: Final = time.process_time_ns


def median(values: Sequence[float]) -> float:
    """The median of ``values`` (0.0 for none)."""
    return float(statistics.median(values)) if values else 0.0


def _spread(samples: list[float]) -> dict[str, float]:
    return {"median_ns": median(samples), "min_ns": min(samples), "max_ns": max(samples)}


def per_call_each(
    makers: Mapping[str, Callable[[], Any]],
    *,
    batches: int,
    warmup: int = 2,
    clock: Callable[[], int] = now_ns,
) -> dict[str, dict[str, float]]:
    """Median nanoseconds per call of each variant, the variants taking turns.

    ``makers[name]()`` prepares one batch of that variant outside the timed region and
    returns a function that runs it and returns how many calls it made, or a pair of that
    function and a clean-up to call after the timing. Round by round, every variant runs
    one batch, so a busy spell of the shared machine weighs on all of them alike. Returns,
    per variant, the median, the best and the worst batch's per-call time, and the number
    of calls timed. ``clock`` reads the time in ns: the wall clock by default,
    :data:`THREAD_CPU` for the CPU time of this thread (what ``--against`` reads, since a
    batch descheduled on a shared machine does not count against it).
    """

    def prepare(make: Callable[[], Any]) -> tuple[Callable[[], int], Callable[[], Any] | None]:
        made = make()
        return made if isinstance(made, tuple) else (made, None)

    for _ in range(warmup):
        for make in makers.values():
            run, cleanup = prepare(make)
            run()
            if cleanup is not None:
                cleanup()
    samples: dict[str, list[float]] = {name: [] for name in makers}
    calls = dict.fromkeys(makers, 0)
    for _ in range(batches):
        for name, make in makers.items():
            run, cleanup = prepare(make)
            start = clock()
            n = run()
            elapsed = clock() - start
            if cleanup is not None:
                cleanup()
            samples[name].append(elapsed / max(n, 1))
            calls[name] += n
    return {
        name: {**_spread(samples[name]), "batches": batches, "calls": calls[name]}
        for name in makers
    }


def per_call_ns(
    make_batch: Callable[[], Any],
    *,
    batches: int,
    warmup: int = 2,
    clock: Callable[[], int] = now_ns,
) -> dict[str, float]:
    """:func:`per_call_each` for one variant."""
    return per_call_each({"": make_batch}, batches=batches, warmup=warmup, clock=clock)[""]


def peak_rss_bytes() -> int:
    """This process's peak RSS.

    ``ru_maxrss`` survives ``exec``: a child started by a big parent (this suite, after
    generating a 370 MB tape) starts with the parent's peak, and a load below it would
    read as zero. Linux's ``VmHWM`` is the same peak for this process image alone; other
    systems fall back to ``ru_maxrss``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


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
