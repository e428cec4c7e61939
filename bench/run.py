"""sessiontape's benchmark suite: hours of session replayed in seconds, measured side by side.

One command runs everything and writes the results::

    python bench/run.py                  # full suite: BENCHMARKS.json + BENCHMARKS.md
    python bench/run.py --quick          # small sizes, about a minute; prints the table only
    python bench/run.py --quick --out q.json --markdown q.md

It generates synthetic session tapes (``bench/gen.py``: 10k and 100k entries, an
eight-hour session of 260k and a tape of 1,000,000 entries), then measures, each figure
against a baseline taken in the same run: one replayed call on every boundary (vs its
floor, a bare deque and a compare; processes also vs pytest-subprocess and vcrpy), the
fixed cost of one replay and a corpus of cassettes through pytest (vs trivial tests, and
with ``-n 2`` vs serially), the eight-hour tape end to end (vs msgspec decoding the
file), peak memory at 1,000,000 entries (vs the file and msgspec's eager decode), load
throughput, recording overhead (vs the unwrapped runner, on one thread and at 8, and on
the example orchestrator's run), the cost of a disabled recorder, ``sessiontape
report`` (vs the tape's size and load time), ``explain`` of a failing chaos schedule
of a 1,000-entry, 4-worker tape (vs one schedule of it), and a fork at the middle of such
a tape (vs a plain replay of it).

Beside each figure stands the previous run's: by default the committed
``BENCHMARKS.json`` (read before this run replaces it) when it was run in the same mode;
``--compare OLD.json`` names another, ``--no-compare`` leaves the column out. The
checkout's ``src/`` is measured, whatever sessiontape is installed.

``--against REV`` measures something else: this checkout against commit REV, each in its
own environment, the two taking turns figure by figure (``bench/against.py``); it prints
a Markdown table of the ratios, and a full run (no ``--quick``, no ``--only``) stores it
in BENCHMARKS.json and BENCHMARKS.md's column "against the previous release"::

    python bench/run.py --against v0.1.0 --quick     # a few minutes, prints the table
    python bench/run.py --against v0.1.0 --instructions --only record
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

BENCH: Final = Path(__file__).resolve().parent
#: Markers of BENCHMARKS.md's chaos section, which ``bench/cases/chaos.py`` writes.
CHAOS_BEGIN: Final = "<!-- chaos:begin -->"
CHAOS_END: Final = "<!-- chaos:end -->"
#: Markers of BENCHMARKS.md's fork section: the fork's budget, measured against the
#: commit before it (``bench/cases/fork.py``), which a full run keeps as it is.
FORK_BEGIN: Final = "<!-- fork:begin -->"
FORK_END: Final = "<!-- fork:end -->"
ROOT: Final = BENCH.parent
for _path in (ROOT / "src", BENCH):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import against  # noqa: E402
import gen  # noqa: E402
import trees  # noqa: E402
from cases import (  # noqa: E402
    boundaries,
    common,
    corpus,
    disabled,
    end_to_end,
    explain,
    fork,
    load,
    memory,
    record,
    replay_call,
    report,
    shrink,
    startup,
    update,
)
from figures import TARGETS, attach_previous, figures  # noqa: E402
from render import render_markdown  # noqa: E402

__all__ = ["ALL_CASES", "PROFILES", "TARGETS", "main", "run_suite"]

#: Where a full run writes its results, and what the next run compares itself with.
COMMITTED: Final = ROOT / "BENCHMARKS.json"

#: Sizes and repetitions per mode. ``tiny`` is what the smoke test runs. ``tapes`` maps a
#: generated tape's name to its entries and recorded hours (``None``: 8 h per 250k).
PROFILES: Final[dict[str, dict[str, Any]]] = {
    "full": {
        "tapes": {
            "small": (10_000, None),
            "medium": (100_000, None),
            "long": (260_000, 8.0),
            "huge": (1_000_000, None),
            "report": (120_000, None),
        },
        "workers": 8,
        "calls": 1000,
        "batches": 40,
        "vcr_interactions": 1000,
        "vcr_batches": 3,
        "e2e_repeat": 3,
        "load_repeat": 3,
        "threads": 8,
        "thread_calls": 2000,
        "thread_rounds": 7,
        "orchestrator_runs": 15,
        "disabled_calls": 10_000,
        "report_repeat": 5,
        "fixed_calls": 200,
        "corpus": 60,
        "big_corpus": 500,
        "corpus_rounds": 3,
        "startup_rounds": 15,
        "shrink_entries": 10_000,
        "shrink_big_entries": 100_000,
        "shrink_budget": 15.0,
        "shrink_candidate_entries": 600,
        "shrink_candidates": 24,
        "shrink_rounds": 3,
        "minimize_tapes": 500,
        "explain_workers": 4,
        "explain_calls": 198,
        "explain_every": 4,
        "explain_search": 1000,
        "explain_rounds": 15,
        "fork_workers": 4,
        "fork_calls": 200,
        "fork_every": 4,
        "fork_rounds": 15,
    },
    "quick": {
        "tapes": {
            "small": (2_000, None),
            "medium": (5_000, None),
            "long": (20_000, None),
            "huge": (50_000, None),
            "report": (20_000, None),
        },
        "workers": 4,
        "calls": 500,
        "batches": 10,
        "vcr_interactions": 100,
        "vcr_batches": 2,
        "e2e_repeat": 1,
        "load_repeat": 2,
        "threads": 8,
        "thread_calls": 300,
        "thread_rounds": 3,
        "orchestrator_runs": 3,
        "disabled_calls": 2000,
        "report_repeat": 2,
        "fixed_calls": 50,
        "corpus": 60,
        "big_corpus": 100,
        "corpus_rounds": 1,
        "startup_rounds": 5,
        "shrink_entries": 2_000,
        "shrink_big_entries": 10_000,
        "shrink_budget": 20.0,
        "shrink_candidate_entries": 400,
        "shrink_candidates": 12,
        "shrink_rounds": 2,
        "minimize_tapes": 100,
        "explain_workers": 4,
        "explain_calls": 198,
        "explain_every": 4,
        "explain_search": 1000,
        "explain_rounds": 5,
        "fork_workers": 4,
        "fork_calls": 200,
        "fork_every": 4,
        "fork_rounds": 7,
    },
    "tiny": {
        "tapes": {
            "small": (200, None),
            "medium": (300, None),
            "long": (400, None),
            "huge": (500, None),
            "report": (300, None),
        },
        "workers": 3,
        "calls": 40,
        "batches": 3,
        "vcr_interactions": 10,
        "vcr_batches": 1,
        "e2e_repeat": 1,
        "load_repeat": 1,
        "threads": 2,
        "thread_calls": 20,
        "thread_rounds": 1,
        "orchestrator_runs": 1,
        "disabled_calls": 200,
        "report_repeat": 1,
        "fixed_calls": 3,
        "corpus": 4,
        "big_corpus": 6,
        "corpus_rounds": 1,
        "startup_rounds": 1,
        "shrink_entries": 400,
        "shrink_big_entries": 1_000,
        "shrink_budget": 5.0,
        "shrink_candidate_entries": 200,
        "shrink_candidates": 3,
        "shrink_rounds": 1,
        "minimize_tapes": 8,
        "explain_workers": 3,
        "explain_calls": 12,
        "explain_every": 4,
        "explain_search": 500,
        "explain_rounds": 2,
        "fork_workers": 4,
        "fork_calls": 12,
        "fork_every": 4,
        "fork_rounds": 2,
    },
}

ALL_CASES: Final = (
    "disabled",
    "record",
    "replay_call",
    "boundaries",
    "corpus",
    "end_to_end",
    "memory",
    "load",
    "report",
    "startup",
    "shrink",
    "update",
    "explain",
    "fork",
)
#: The generated tapes each case reads.
_TAPES: Final = {
    "end_to_end": ("long",),
    "memory": ("huge",),
    "load": ("small", "medium", "long"),
    "report": ("report",),
    "update": ("medium",),
}


def _cases(
    prof: dict[str, Any], tapes: dict[str, Any], workdir: Path, others: bool
) -> dict[str, tuple[str, Callable[[], Any]]]:
    """Each case: what the log says while it runs, and how it runs."""
    calls, batches = prof["calls"], prof["batches"]
    return {
        "disabled": (
            "disabled recorder",
            lambda: disabled.run(calls=prof["disabled_calls"], batches=batches, workdir=workdir),
        ),
        "record": (
            "recording overhead (one thread, threads, the orchestrator)",
            lambda: record.run(
                calls=calls,
                batches=batches,
                threads=prof["threads"],
                thread_calls=prof["thread_calls"],
                thread_rounds=prof["thread_rounds"],
                orchestrator_runs=prof["orchestrator_runs"],
                workdir=workdir,
            ),
        ),
        "replay_call": (
            "one replayed process call (sessiontape, floor, pytest-subprocess, vcrpy)",
            lambda: replay_call.run(
                calls=calls,
                batches=batches,
                vcr_interactions=prof["vcr_interactions"],
                vcr_batches=prof["vcr_batches"],
                workdir=workdir,
                others=others,
            ),
        ),
        "boundaries": (
            "one replayed agent turn, store mutation and user boundary call",
            lambda: boundaries.run(calls=calls, batches=batches, workdir=workdir),
        ),
        "corpus": (
            "the fixed cost of a replay, and corpora through pytest",
            lambda: corpus.run(
                workdir=workdir,
                fixed_calls=prof["fixed_calls"],
                corpus=prof["corpus"],
                big_corpus=prof["big_corpus"],
                rounds=prof["corpus_rounds"],
                source=ROOT / "cassettes",
            ),
        ),
        "end_to_end": (
            "the long tape end to end",
            lambda: end_to_end.run(
                path=tapes["long"]["path"],
                file_bytes=tapes["long"]["bytes"],
                repeat=prof["e2e_repeat"],
                workdir=workdir,
            ),
        ),
        "memory": (
            "peak memory of the huge tape (replay, load, msgspec)",
            lambda: memory.run(
                path=tapes["huge"]["path"], file_bytes=tapes["huge"]["bytes"], workdir=workdir
            ),
        ),
        "load": (
            "load throughput and peak memory",
            lambda: load.run(
                tapes={name: tapes[name] for name in _TAPES["load"]}, repeat=prof["load_repeat"]
            ),
        ),
        "update": (
            "update of the medium tape against its plain replay",
            lambda: update.run(
                path=tapes["medium"]["path"], workdir=workdir, repeat=prof["load_repeat"]
            ),
        ),
        "report": (
            "sessiontape report against sessiontape.load",
            lambda: report.run(
                path=tapes["report"]["path"], workdir=workdir, repeat=prof["report_repeat"]
            ),
        ),
        "startup": (
            "start-up: entry points, a one-test pytest run, record(None) (whole processes)",
            lambda: startup.run(rounds=prof["startup_rounds"], workdir=workdir),
        ),
        "shrink": (
            "sessiontape shrink (a long tape; one under a budget) and corpus --minimize",
            lambda: shrink.run(
                workdir=workdir,
                entries=prof["shrink_entries"],
                big_entries=prof["shrink_big_entries"],
                budget=prof["shrink_budget"],
                tapes=prof["minimize_tapes"],
                candidate_entries=prof["shrink_candidate_entries"],
                candidates=prof["shrink_candidates"],
                rounds=prof["shrink_rounds"],
            ),
        ),
        "explain": (
            "explain of a failing chaos schedule, against one schedule of the same tape",
            lambda: explain.run(
                workdir=workdir,
                workers=prof["explain_workers"],
                calls=prof["explain_calls"],
                every=prof["explain_every"],
                search=prof["explain_search"],
                rounds=prof["explain_rounds"],
            ),
        ),
        "fork": (
            "a fork at the middle of a tape, against a plain replay of it",
            lambda: fork.run(
                workdir=workdir,
                workers=prof["fork_workers"],
                calls=prof["fork_calls"],
                every=prof["fork_every"],
                rounds=prof["fork_rounds"],
            ),
        ),
    }


#: From this many entries a tape is generated in a child process: it is built in memory
#: (several GB at 1,000,000 entries), and the suite's own process stays small.
_GENERATE_APART: Final = 100_000


def _generate(path: Path, entries: int, workers: int, hours: float | None) -> dict[str, Any]:
    """Generate a tape; what ``gen.generate`` says it wrote."""
    if entries < _GENERATE_APART:
        return gen.child_generate(os.fspath(path), entries, workers, hours)
    info: dict[str, Any] = common.in_subprocess(
        "gen:child_generate", path=os.fspath(path), entries=entries, workers=workers, hours=hours
    )
    return info


def run_suite(
    mode: str = "full",
    *,
    workdir: Path,
    cases: tuple[str, ...] = ALL_CASES,
    others: bool = True,
    log: Callable[[str], Any] = print,
) -> dict[str, Any]:
    """Generate the tapes the ``cases`` read and run them; return the results (with the
    summary rows of ``figures``)."""
    prof = PROFILES[mode]
    began = time.perf_counter()
    tapes: dict[str, Any] = {}
    results: dict[str, Any] = {
        "schema": 2,
        "mode": mode,
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": None,
        "machine": common.machine(str(ROOT)),
        "profile": {
            k: (v if k != "tapes" else {n: list(t) for n, t in v.items()}) for k, v in prof.items()
        },
        "tapes": tapes,
        "results": {},
    }
    runners = _cases(prof, tapes, workdir, others)
    for case in cases:
        for name in _TAPES.get(case, ()):
            if name not in tapes:
                entries, hours = prof["tapes"][name]
                log(f"generating the {name} tape ({entries:,} entries)...")
                tapes[name] = _generate(workdir / f"{name}.jsonl", entries, prof["workers"], hours)
        what, run = runners[case]
        log(f"{what}...")
        results["results"][case] = run()
    results["figures"] = figures(results)
    results["duration_s"] = round(time.perf_counter() - began, 1)
    return results


def read_previous(path: Path, mode: str, label: str) -> dict[str, Any] | None:
    """The earlier run at ``path`` to stand beside this one, read before anything is
    measured (a full run replaces the committed file); ``None`` when it was run in
    another mode, whose sizes differ."""
    old = json.loads(path.read_text(encoding="utf-8"))
    if old.get("mode") != mode:
        return None
    return {
        "label": label,
        "path": path.name,
        "mode": old.get("mode"),
        "command": old.get("command"),
        "started_at": old.get("started_at"),
        "machine": {"git_revision": old.get("machine", {}).get("git_revision")},
        "figures": old.get("figures", []),
    }


def _log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    add = parser.add_argument
    add("--quick", action="store_true", help="small sizes and few repetitions (about a minute)")
    add("--out", type=Path, help="JSON results (default: BENCHMARKS.json in a full run)")
    add("--markdown", type=Path, help="Markdown report (default: BENCHMARKS.md in a full run)")
    add(
        "--only",
        default=",".join(ALL_CASES),
        help=f"comma-separated cases to run (default all: {','.join(ALL_CASES)})",
    )
    add("--workdir", type=Path, help="where to write the tapes (default: a temporary directory)")
    add("--keep", action="store_true", help="keep the work directory")
    add(
        "--render",
        type=Path,
        metavar="RESULTS.json",
        help="measure nothing: write the Markdown report (--markdown) of a saved run",
    )
    add(
        "--compare",
        type=Path,
        default=COMMITTED,
        metavar="OLD.json",
        help="the earlier run whose figures stand beside this run's, matched by figure id "
        "(default: the committed BENCHMARKS.json, when it was run in the same mode)",
    )
    add("--no-compare", action="store_true", help="no column of the previous run's figures")
    add("--compare-label", default=None, help="how the previous run is described")
    add(
        "--against",
        metavar="REV",
        help="compare this checkout with commit REV instead (each in its own environment, "
        "timed in turns); cases: " + ",".join(m.name for m in against.MEASUREMENTS),
    )
    add("--pairs", type=int, help="--against: repetitions of each figure in both trees")
    add(
        "--instructions",
        action="store_true",
        help="--against: count instructions under valgrind's callgrind instead of timing",
    )
    return parser


def _against(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``--against REV``: see the module docstring and ``bench/against.py``."""
    names = [m.name for m in against.MEASUREMENTS]
    only = None
    if args.only != ",".join(ALL_CASES):
        only = [c.strip() for c in args.only.split(",") if c.strip()]
        unknown = sorted(set(only) - set(names))
        if unknown:
            parser.error(f"--against compares the cases {names}, not {unknown}")
    mode = "quick" if args.quick else "full"
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    pins = trees.pinned_requirements()
    old = trees.revision_tree(ROOT, args.against, pins, _log)
    new = trees.checkout_tree(ROOT, pins, _log)
    trees.evict((old, new), _log)
    if args.instructions:
        result = against.count_instructions(new, old, only=only, log=_log)
    else:
        pairs = args.pairs or against.DEFAULT_PAIRS[mode]
        result = against.compare(new, old, mode=mode, pairs=pairs, only=only, log=_log)
    command = ["python", "bench/run.py", "--against", args.against]
    command += ["--quick"] if args.quick else []
    command += ["--instructions"] if args.instructions else []
    command += ["--pairs", str(args.pairs)] if args.pairs else []
    command += ["--only", args.only] if only is not None else []
    result |= {
        "command": shlex.join(command),
        "started_at": started,
        "load": load,
        "checkout": common.machine(str(ROOT))["git_revision"],
        "revision": str(old.root.name),
    }
    table = against.render_table(result)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.markdown is not None:
        args.markdown.write_text("\n".join(against.render_section(result)), encoding="utf-8")
    if mode == "full" and only is None and not args.instructions and args.out is None:
        # The committed results keep the comparison beside the suite's figures, and
        # BENCHMARKS.md gets its column and section (the rest of the page is left as is).
        results = json.loads(COMMITTED.read_text(encoding="utf-8"))
        results["against"] = result
        COMMITTED.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        page = ROOT / "BENCHMARKS.md"
        page.write_text(against.patch_markdown(page.read_text("utf-8"), result), "utf-8")
    print(table)
    return 0


def _write_markdown(markdown: Path, text: str) -> None:
    """Write the report, carrying over the chaos section (measured on its own by
    ``bench/cases/chaos.py``) and the fork's (its budget, measured against a commit)."""
    old = markdown.read_text(encoding="utf-8") if markdown.exists() else ""
    for begin, end in ((CHAOS_BEGIN, CHAOS_END), (FORK_BEGIN, FORK_END)):
        if begin in old and end in old:
            kept = old[old.index(begin) : old.index(end) + len(end)]
            text = text.rstrip("\n") + "\n\n" + kept
    markdown.write_text(text + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.against is not None:
        return _against(args, parser)
    cases = tuple(c.strip() for c in args.only.split(",") if c.strip())
    unknown = sorted(set(cases) - set(ALL_CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {list(ALL_CASES)}")
    if args.render is not None:
        text = render_markdown(json.loads(args.render.read_text(encoding="utf-8")))
        if args.markdown is not None:
            args.markdown.write_text(text + "\n", encoding="utf-8")
        else:
            print(text)
        return 0
    mode = "quick" if args.quick else "full"
    if args.no_compare:
        previous = None
    elif args.compare.exists():
        label = args.compare_label or (
            "the committed BENCHMARKS.json" if args.compare == COMMITTED else str(args.compare)
        )
        previous = read_previous(args.compare, mode, label)
        if previous is None:
            _log(f"not comparing with {args.compare}: it was not run in mode {mode}")
    elif args.compare == COMMITTED:
        previous = None  # a checkout without a committed run yet
    else:
        parser.error(f"--compare {args.compare}: no such file")
    out, markdown = args.out, args.markdown
    # Only a full run of every case replaces the committed report; a partial run (--only)
    # prints its table and writes files only when asked to.
    partial = set(cases) != set(ALL_CASES)
    if mode == "full" and not partial and out is None and markdown is None:
        out, markdown = COMMITTED, ROOT / "BENCHMARKS.md"
    compared = (
        json.loads(COMMITTED.read_text(encoding="utf-8")).get("against")
        if COMMITTED.exists()
        else None
    )
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sessiontape-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        results = run_suite(mode, workdir=workdir, cases=cases, log=_log)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    command = ["python", "bench/run.py"]
    if args.quick:
        command.append("--quick")
    if args.only != ",".join(ALL_CASES):
        command += ["--only", args.only]
    results["command"] = shlex.join(command)
    for tape in results["tapes"].values():
        tape["path"] = os.path.basename(tape["path"])
    if previous is not None:
        attach_previous(results["figures"], previous.pop("figures"))
        results["previous"] = previous
    if out == COMMITTED and compared is not None:
        # The last --against comparison stays beside the figures (it names its checkout).
        results["against"] = compared
    if out is not None:
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    text = render_markdown(results)
    if markdown is not None:
        _write_markdown(markdown, text)
    print(text.split("## Machine")[0])
    gc.collect()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
