"""Figure 6: ``sessiontape report`` on a 120,000-entry tape, against the tape itself.

Two ratios, both measured in one fresh interpreter: the page's size over the tape's, and
the time ``sessiontape report`` takes (``main(["report", ...])``: loading the tape,
packing its rows and details, compressing, writing) over the time ``sessiontape.load``
takes for the same file. Loads and reports alternate, after one of each as warm-up, so a
busy machine weighs on both alike; the medians are compared. CPU time is kept too: the
report compresses on a second thread, so its CPU time exceeds its wall time when a second
core is free.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape.cli import main

from .common import cpu_ns, in_subprocess, median, now_ns

__all__ = ["child_report", "run"]


def _report(path: str, out: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["report", path, "-o", out])
    if code != 0:
        raise RuntimeError(f"sessiontape report {path} exited with {code}")


def child_report(path: str, out: str, repeat: int) -> dict[str, Any]:
    """Alternate ``repeat`` loads and reports of ``path`` (after a warm-up of each)."""
    recording = sessiontape.load(path)
    entries = len(recording)
    del recording
    _report(path, out)
    load_wall, load_cpu, report_wall, report_cpu = [], [], [], []
    for _ in range(repeat):
        gc.collect()
        wall, cpu = now_ns(), cpu_ns()
        recording = sessiontape.load(path)
        load_wall.append(now_ns() - wall)
        load_cpu.append(cpu_ns() - cpu)
        del recording
        gc.collect()
        wall, cpu = now_ns(), cpu_ns()
        _report(path, out)
        report_wall.append(now_ns() - wall)
        report_cpu.append(cpu_ns() - cpu)
    return {
        "entries": entries,
        "tape_bytes": os.path.getsize(path),
        "page_bytes": os.path.getsize(out),
        "load_ns": load_wall,
        "load_cpu_ns": load_cpu,
        "report_ns": report_wall,
        "report_cpu_ns": report_cpu,
        "cores": os.cpu_count(),
    }


def run(*, path: str, workdir: Path, repeat: int) -> dict[str, Any]:
    """The page's size and write time against the tape's size and load time."""
    out = str(workdir / "report.html")
    child = in_subprocess("cases.report:child_report", path=path, out=out, repeat=repeat)
    load_ns, report_ns = median(child["load_ns"]), median(child["report_ns"])
    load_cpu, report_cpu = median(child["load_cpu_ns"]), median(child["report_cpu_ns"])
    return {
        "entries": child["entries"],
        "tape_bytes": child["tape_bytes"],
        "page_bytes": child["page_bytes"],
        "size_ratio": child["page_bytes"] / child["tape_bytes"],
        "load_ns": load_ns,
        "report_ns": report_ns,
        "time_ratio": report_ns / load_ns,
        "write_after_load_ratio": (report_ns - load_ns) / load_ns,
        "load_cpu_ns": load_cpu,
        "report_cpu_ns": report_cpu,
        "cpu_ratio": report_cpu / load_cpu,
        "samples": {k: child[k] for k in ("load_ns", "report_ns")},
        "repeat": repeat,
    }
