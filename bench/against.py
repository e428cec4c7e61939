"""``bench/run.py --against REV``: this checkout against commit REV, the trees taking turns.

Each tree runs in its own environment (``trees.py``: REV exported from git, both trees
installed the same way on the same pinned dependencies). A *measurement* (a function of
``cases/paired.py``) runs once per repetition in a fresh interpreter of the tree under
test and gives a few figures. Repetition by repetition, every measurement runs in both
trees back to back, the order flipping each time (new-old, old-new, ...), so whatever
else the machine is doing in that minute weighs on both alike. Each figure's result is
the median of the per-pair ratios new / old, with their spread (the middle half and the
extremes), beside both trees' medians.

The cases are this checkout's, run against REV's sessiontape package: the same workload
and the same timing code on both sides (see ``cases/paired.py``).

``--instructions`` counts instructions instead (``valgrind --tool=callgrind``): a
per-call figure is the difference between a run of 2N calls and a run of N, over N;
start-up, an import's instructions beyond pytest's. Deterministic on a busy machine,
but blind to what costs time without instructions (cache misses, syscalls, the GIL).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

from trees import Tree

__all__ = [
    "FIGURES",
    "MEASUREMENTS",
    "Figure",
    "Measurement",
    "compare",
    "patch_markdown",
    "ratio_cell",
    "render_section",
    "render_table",
    "spread",
]

BENCH: Final = Path(__file__).resolve().parent
_CHILD: Final = BENCH / "cases" / "_child.py"


class Figure(NamedTuple):
    """One figure of the comparison."""

    #: The summary table's figure id, where it has the same figure (else a new id).
    id: str
    label: str
    unit: str


class Measurement(NamedTuple):
    """One child run: the function, its arguments per mode, the figures it gives."""

    name: str
    target: str
    kwargs: dict[str, dict[str, Any]]
    figures: tuple[Figure, ...]


MEASUREMENTS: Final = (
    Measurement(
        "record",
        "cases.paired:recording",
        {
            "full": {
                "calls": 1000,
                "batches": 25,
                "threads": 8,
                "thread_calls": 1000,
                "thread_rounds": 5,
            },
            "quick": {
                "calls": 500,
                "batches": 8,
                "threads": 8,
                "thread_calls": 300,
                "thread_rounds": 2,
            },
            "tiny": {
                "calls": 20,
                "batches": 2,
                "threads": 2,
                "thread_calls": 10,
                "thread_rounds": 1,
            },
        },
        (
            Figure("record_full_us", "recording overhead per call, level full, 1 thread", "µs"),
            Figure("record_standard_us", "recording overhead per call, level standard", "µs"),
            Figure("record_threads_us", "recording overhead per call, 8 threads", "µs"),
        ),
    ),
    Measurement(
        "replay_call",
        "cases.paired:process_calls",
        {
            "full": {"calls": 1000, "batches": 25},
            "quick": {"calls": 500, "batches": 8},
            "tiny": {"calls": 20, "batches": 2},
        },
        (
            Figure("replay_call_us", "replay of one process call", "µs"),
            Figure("replay_call_floor_ratio", "replay of one process call / its floor", "×"),
        ),
    ),
    Measurement(
        "boundaries",
        "cases.paired:boundary_calls",
        {
            "full": {"calls": 1000, "batches": 15},
            "quick": {"calls": 300, "batches": 5},
            "tiny": {"calls": 12, "batches": 2},
        },
        (
            Figure("replay_agent_us", "replay of one agent turn", "µs"),
            Figure("replay_store_us", "replay of one store mutation", "µs"),
            Figure("replay_user_us", "replay of one user-boundary call", "µs"),
        ),
    ),
    Measurement(
        "corpus",
        "cases.paired:corpus_items",
        {
            "full": {"cassettes": 60, "sessions": 3},
            "quick": {"cassettes": 60, "sessions": 1},
            "tiny": {"cassettes": 3, "sessions": 1},
        },
        (
            Figure(
                "corpus_ratio",
                "60 cassettes via pytest / 60 trivial tests (items' CPU, summed)",
                "×",
            ),
            Figure("corpus_ratio_median_item", "the same, median item / median item", "×"),
            Figure("corpus_ratio_wall", "the same, summed wall time (the suite's figure)", "×"),
        ),
    ),
    Measurement(
        "fork",
        "cases.paired:fork_branch",
        {
            "full": {"workers": 4, "calls": 200, "every": 4, "rounds": 15},
            "quick": {"workers": 4, "calls": 200, "every": 4, "rounds": 7},
            "tiny": {"workers": 4, "calls": 12, "every": 4, "rounds": 2},
        },
        (
            Figure(
                "fork_budget_ratio",
                "fork of a 1,000-entry tape / (plain replay + writing the branch), CPU",
                "×",
            ),
            Figure(
                "fork_budget_ratio_wall",
                "fork of a 1,000-entry tape / (plain replay + writing the branch), wall",
                "×",
            ),
            Figure("fork_ratio", "fork of a 1,000-entry tape / its plain replay, wall", "×"),
            Figure("fork_ratio_cpu", "fork of a 1,000-entry tape / its plain replay, CPU", "×"),
            Figure("fork_cpu_ms", "fork of a 1,000-entry tape (CPU)", "ms"),
        ),
    ),
    Measurement(
        "startup",
        "cases.paired:start_up",
        {"full": {"rounds": 5}, "quick": {"rounds": 2}, "tiny": {"rounds": 1}},
        (
            Figure("startup_entry_ms", "`sessiontape.plugin` import after pytest's (CPU)", "ms"),
            Figure(
                "startup_entry_vs_recording",
                "the same / pytest-recording's entry point, same runs",
                "×",
            ),
            Figure("startup_run_ratio", "one-test pytest run / `-p no:sessiontape` (CPU)", "×"),
            Figure("startup_record_none_ms", "`import sessiontape` + `record(None)` (CPU)", "ms"),
        ),
    ),
)
#: Every figure, in table order.
FIGURES: Final = tuple(f for m in MEASUREMENTS for f in m.figures)
#: The rows of BENCHMARKS.md's summary table that a figure here compares: a piece of the
#: row's first cell, as ``bench/figures.py`` writes it.
SUMMARY_ROWS: Final = {
    "replay_call_us": "replay of one process call (fake runner",
    "replay_agent_us": "replay of one agent turn",
    "replay_store_us": "replay of one store mutation",
    "replay_user_us": "replay of one call on a user boundary",
    "corpus_ratio": "tiny cassettes through pytest vs",
    "record_full_us": "recording overhead per call, level full",
    "record_standard_us": "recording overhead per call, level standard",
    "record_threads_us": "recording per call in aggregate at",
    "fork_budget_ratio": "/ a plain replay of it plus writing its branch",
    "fork_ratio": "/ a plain replay of it (",
    "startup_entry_ms": "pytest11 entry point import",
    "startup_run_ratio": "one-test pytest run",
    "startup_record_none_ms": "`import sessiontape` + `record(None)`",
}
#: BENCHMARKS.md's markers around the comparison's section.
BEGIN: Final = "<!-- against:begin -->"
END: Final = "<!-- against:end -->"
_COLUMN: Final = "against the previous release"
#: Pairs per figure when ``--pairs`` is not given.
DEFAULT_PAIRS: Final = {"full": 7, "quick": 3}


def _child_env(tree: Tree) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "SESSIONTAPE_RECORD", "VIRTUAL_ENV")
        and not k.startswith("PYTEST_")
    }
    env["SESSIONTAPE_BENCH_TREE"] = str(tree.src)
    return env


def run_child(tree: Tree, target: str, kwargs: dict[str, Any], cwd: Path) -> dict[str, float]:
    """``target(**kwargs)`` in a fresh interpreter of ``tree``; the figures it gives."""
    done = subprocess.run(
        [str(tree.python), str(_CHILD), target, json.dumps(kwargs)],
        cwd=cwd,
        env=_child_env(tree),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{target} failed in {tree.label} ({tree.root}):\n{done.stdout[-2000:]}\n"
            f"{done.stderr[-4000:]}"
        )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, quartiles (the middle half) and extremes of ``values``."""
    ordered = sorted(values)
    if len(ordered) >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q3 = ordered[0]
    return {
        "median": statistics.median(ordered),
        "q1": q1,
        "q3": q3,
        "min": ordered[0],
        "max": ordered[-1],
    }


def compare(
    new: Tree,
    old: Tree,
    *,
    mode: str,
    pairs: int,
    only: Sequence[str] | None = None,
    log: Callable[[str], object] = print,
) -> dict[str, Any]:
    """Run every measurement ``pairs`` times in both trees, alternately; the figures with
    both trees' values and the per-pair ratios."""
    chosen = [m for m in MEASUREMENTS if only is None or m.name in only]
    values: dict[str, dict[str, list[float]]] = {}
    #: Measurements a tree gave no figure of (a capability it does not have): not run again.
    lacking: dict[str, str] = {}
    work = Path(tempfile.mkdtemp(prefix="sessiontape-against-"))
    try:
        for rep in range(pairs):
            for index, m in enumerate(chosen):
                if m.name in lacking:
                    continue
                order = (new, old) if (rep + index) % 2 == 0 else (old, new)
                log(f"pair {rep + 1}/{pairs}: {m.name} ({order[0].label} first)...")
                got = {
                    tree.label: run_child(tree, m.target, m.kwargs[mode], work) for tree in order
                }
                empty = [tree.label for tree in (new, old) if not got[tree.label]]
                if empty:
                    lacking[m.name] = empty[0]
                    log(f"{m.name}: {empty[0]} has none of its figures; left out")
                    continue
                for figure in m.figures:
                    a, b = got[new.label].get(figure.id), got[old.label].get(figure.id)
                    if a is None or b is None:
                        continue  # a figure one tree cannot give (an option it lacks)
                    slot = values.setdefault(figure.id, {"new": [], "old": []})
                    slot["new"].append(a)
                    slot["old"].append(b)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = []
    for m in chosen:
        for figure in m.figures:
            both = values.get(figure.id)
            if not both:
                continue
            ratios = [a / b for a, b in zip(both["new"], both["old"], strict=True) if b]
            rows.append(
                {
                    "id": figure.id,
                    "figure": figure.label,
                    "unit": figure.unit,
                    "old": spread(both["old"]),
                    "new": spread(both["new"]),
                    "ratio": spread(ratios),
                    "old_all": both["old"],
                    "new_all": both["new"],
                    "pairs": len(ratios),
                }
            )
    return {
        "method": "time",
        "mode": mode,
        "pairs": pairs,
        "old": old.label,
        "new": new.label,
        "figures": rows,
        "lacking": lacking,
    }


def _num(value: float, unit: str) -> str:
    if unit == "×":
        return f"{value:.2f}×"
    return f"{value:,.2f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def render_table(result: dict[str, Any]) -> str:
    """The comparison as a Markdown table (what ``--against`` prints, to paste)."""
    old, new = result["old"], result["new"]
    per = "instructions" if result["method"] == "instructions" else "pairs"
    lines = [
        f"| figure | {old} | {new} | {new} / {old} | per-pair ratios: middle half; "
        f"extremes | {per} |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["figures"]:
        o, n, r = row["old"], row["new"], row["ratio"]
        lines.append(
            f"| {row['figure']} | {_num(o['median'], row['unit'])} | "
            f"{_num(n['median'], row['unit'])} | **{r['median']:.3f}×** | "
            f"{r['q1']:.3f}–{r['q3']:.3f}; {r['min']:.3f}–{r['max']:.3f} | {row['pairs']} |"
        )
    return "\n".join(lines)


def ratio_cell(result: dict[str, Any] | None, figure_id: str) -> str | None:
    """The summary table's cell for ``figure_id``: new / old and the middle half of the
    per-pair ratios; ``None`` when the comparison has no such figure."""
    if not result:
        return None
    for row in result["figures"]:
        if row["id"] == figure_id:
            r = row["ratio"]
            return f"{r['median']:.2f}× ({r['q1']:.2f}–{r['q3']:.2f})"
    return None


def render_section(result: dict[str, Any]) -> list[str]:
    """BENCHMARKS.md's section of the comparison: how it was run, and the table."""
    what = (
        "instructions counted by `valgrind --tool=callgrind` (a per-call figure: a run of "
        "2N calls minus a run of N, over N)"
        if result["method"] == "instructions"
        else f"{result['pairs']} pairs per figure, the trees taking turns (the order "
        "flipping each pair), each measurement in a fresh interpreter of the tree under "
        "test; per-call figures by the CPU time of the thread (8 threads: of the process)"
    )
    return [
        f"## Against the previous release ({result['old']})\n",
        f"`{result['command']}`, {result['started_at']}, checkout {result['checkout']}, "
        f"load average {result['load']} at its start: {what}. Each tree runs in its own "
        "virtualenv on the same pinned dependencies; the cases are this checkout's "
        "(`bench/cases/paired.py`), run against both trees' sessiontape. A ratio above 1 "
        "means this tree takes more.\n",
        render_table(result),
        "",
        *(
            f"No {name} figures: {tree} has no {name}.\n"
            for name, tree in sorted(result.get("lacking", {}).items())
        ),
    ]


# -- instructions ---------------------------------------------------------------------


def _callgrind(tree: Tree, argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> int:
    """Instructions (callgrind's ``Ir``) of ``argv`` run with ``tree``'s interpreter."""
    fd, name = tempfile.mkstemp(prefix="callgrind.", dir=cwd)
    os.close(fd)
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={name}", str(tree.python), *argv],
        cwd=cwd,
        env={**_child_env(tree), "PYTHONHASHSEED": "0", **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed under callgrind in {tree.label}:\n{done.stderr[-3000:]}")
    with open(name, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no instruction total in {name}")


def _per_call(tree: Tree, target: str, cwd: Path, n: int, **kwargs: Any) -> float:
    """Instructions per call of ``target``: its run with ``2n`` calls (on each of
    ``threads``) minus its run with ``n``, over the ``n`` calls (times the threads).

    One run without valgrind comes first: a tree's first run compiles its modules to
    bytecode (a second of instructions), which would count in the first run only."""
    argv = [str(_CHILD), target, json.dumps({**kwargs, "calls": n})]
    # Every run works in one directory of one name (``cases/paired.py``, FIXED_DIR_ENV).
    fixed = {"SESSIONTAPE_BENCH_FIXED_DIR": str(cwd / "counted")}
    subprocess.run(
        [str(tree.python), *argv],
        cwd=cwd,
        env={**_child_env(tree), **fixed},
        capture_output=True,
        check=True,
    )
    counts = [
        _callgrind(tree, [str(_CHILD), target, json.dumps({**kwargs, "calls": calls})], cwd, fixed)
        for calls in (n, 2 * n)
    ]
    threads: int = kwargs.get("threads", 1)
    return (counts[1] - counts[0]) / (n * threads)


def _entry_imports(tree: Tree, cwd: Path) -> dict[str, float]:
    code = "import pytest; import {}"
    base = _callgrind(tree, ["-c", "import pytest"], cwd)
    ours = _callgrind(tree, ["-c", code.format("sessiontape.plugin")], cwd) - base
    theirs = _callgrind(tree, ["-c", code.format("pytest_recording.plugin")], cwd) - base
    return {"startup_entry_ir": ours, "startup_entry_vs_recording": ours / theirs}


def _one_test(tree: Tree, cwd: Path) -> dict[str, float]:
    project = cwd / f"one-{tree.label.replace(' ', '-')}"
    project.mkdir(exist_ok=True)
    (project / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n", "utf-8")
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    pytest = ["-m", "pytest", "-q", "-p", "no:cacheprovider"]
    subprocess.run([str(tree.python), *pytest], cwd=project, env=_child_env(tree), check=False)
    with_us = _callgrind(tree, pytest, project)
    without = _callgrind(tree, [*pytest, "-p", "no:sessiontape"], project)
    return {"startup_run_ir": with_us - without, "startup_run_ratio": with_us / without}


def _corpus(tree: Tree, cwd: Path) -> dict[str, float]:
    project = cwd / f"corpus-{tree.label.replace(' ', '-')}"
    kwargs = {"root": str(project), "cassettes": 60, "trivial": 60}
    run_child(tree, "cases.paired:corpus_project", kwargs, cwd)
    env = {"PYTHONPATH": str(project)}
    pytest = ["-m", "pytest", "-q", "-p", "no:cacheprovider"]
    subprocess.run(
        [str(tree.python), *pytest, "tapes", "test_trivial.py"],
        cwd=project,
        env={**_child_env(tree), **env},
        check=True,
        capture_output=True,
    )
    both = _callgrind(tree, [*pytest, "tapes", "test_trivial.py"], project, env)
    tests = _callgrind(tree, [*pytest, "test_trivial.py"], project, env)
    more = _callgrind(tree, [*pytest, "tapes", "test_trivial.py", "test_more.py"], project, env)
    return {"corpus_ratio_ir": (both - tests) / (more - both)}


#: The boundaries other than processes, as ``cases/boundaries.py`` names their workloads.
_BOUNDARY_KINDS: Final = (
    ("agent", "agent turn"),
    ("store", "store mutation"),
    ("user", "user-boundary call"),
)

#: ``--instructions``: what each case counts, per tree.
_COUNTED: Final[dict[str, tuple[tuple[Figure, ...], Callable[[Tree, Path], dict[str, float]]]]] = {
    "record": (
        (
            Figure("record_full_ir", "recorded call, level full, 1 thread", "instructions"),
            Figure("record_standard_ir", "recorded call, level standard", "instructions"),
            Figure("record_threads_ir", "recorded call, 8 threads", "instructions"),
        ),
        lambda tree, cwd: {
            "record_full_ir": _per_call(tree, "cases.paired:record_calls", cwd, 1000, level="full"),
            "record_standard_ir": _per_call(
                tree, "cases.paired:record_calls", cwd, 1000, level="standard"
            ),
            "record_threads_ir": _per_call(
                tree, "cases.paired:record_calls", cwd, 125, level="full", threads=8
            ),
        },
    ),
    "replay_call": (
        (Figure("replay_call_ir", "replay of one process call", "instructions"),),
        lambda tree, cwd: {
            "replay_call_ir": _per_call(
                tree, "cases.paired:replay_calls", cwd, 1000, tape_calls=2000
            )
        },
    ),
    "boundaries": (
        tuple(
            Figure(f"replay_{kind}_ir", f"replay of one {what}", "instructions")
            for kind, what in _BOUNDARY_KINDS
        ),
        lambda tree, cwd: {
            f"replay_{kind}_ir": _per_call(
                tree, "cases.paired:replay_boundary_calls", cwd, 500, kind=kind, tape_calls=1000
            )
            for kind, _ in _BOUNDARY_KINDS
        },
    ),
    "corpus": (
        (
            Figure(
                "corpus_ratio_ir",
                "60 cassettes / 60 trivial tests, each with its collection (instructions)",
                "×",
            ),
        ),
        _corpus,
    ),
    "startup": (
        (
            Figure(
                "startup_entry_ir", "`sessiontape.plugin` import after pytest's", "instructions"
            ),
            Figure("startup_entry_vs_recording", "the same / pytest-recording's", "×"),
            Figure(
                "startup_run_ir", "one-test pytest run, beyond `-p no:sessiontape`", "instructions"
            ),
            Figure("startup_run_ratio", "one-test pytest run / `-p no:sessiontape`", "×"),
        ),
        lambda tree, cwd: {**_entry_imports(tree, cwd), **_one_test(tree, cwd)},
    ),
}


def count_instructions(
    new: Tree,
    old: Tree,
    *,
    only: Sequence[str] | None = None,
    log: Callable[[str], object] = print,
) -> dict[str, Any]:
    """Every case's instruction counts in both trees (deterministic: once each)."""
    rows = []
    work = Path(tempfile.mkdtemp(prefix="sessiontape-against-"))
    try:
        for name, (figures, count) in _COUNTED.items():
            if only is not None and name not in only:
                continue
            got = {}
            for tree in (new, old):
                log(f"{name}: counting instructions in {tree.label} (valgrind, minutes)...")
                got[tree.label] = count(tree, work)
            for figure in figures:
                a, b = got[new.label][figure.id], got[old.label][figure.id]
                rows.append(
                    {
                        "id": figure.id,
                        "figure": figure.label,
                        "unit": figure.unit,
                        "old": spread([b]),
                        "new": spread([a]),
                        "ratio": spread([a / b]),
                        "pairs": 1,
                    }
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"method": "instructions", "old": old.label, "new": new.label, "figures": rows}


def _summary_cell(result: dict[str, Any], first_cell: str) -> str:
    for figure_id, piece in SUMMARY_ROWS.items():
        if piece in first_cell:
            return ratio_cell(result, figure_id) or "—"
    return "—"


def patch_markdown(text: str, result: dict[str, Any]) -> str:
    """BENCHMARKS.md with the comparison in it: the summary table's column "against the
    previous release" (an earlier comparison's replaced), and the comparison's own section
    between :data:`BEGIN` and :data:`END` (replaced, or put right after the summary)."""
    lines = text.split("\n")
    in_summary = replacing = False
    for i, line in enumerate(lines):
        if line.startswith("## "):
            in_summary = line == "## Summary"
            continue
        if not in_summary or not line.startswith("|"):
            continue
        if line.startswith("| figure |"):
            replacing = f"| {_COLUMN}" in line
        if replacing:  # drop the last cell: an earlier comparison's
            line = line.rstrip()[:-1]
            line = line[: line.rfind("|") + 1]
        if line.startswith("| figure |"):
            lines[i] = f"{line} {_COLUMN} ({result['old']}) |"
        elif line.startswith("|---"):
            lines[i] = line + "---|"
        else:
            lines[i] = f"{line} {_summary_cell(result, line.split(' | ', 1)[0])} |"
    text = "\n".join(lines)
    section = "\n".join([BEGIN, *render_section(result), END])
    if BEGIN in text and END in text:
        return text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) :]
    anchor = text.find("\n## ", text.find("## Summary") + 1)
    if anchor < 0:
        return text.rstrip("\n") + "\n\n" + section + "\n"
    return text[: anchor + 1] + section + "\n\n" + text[anchor + 1 :]
