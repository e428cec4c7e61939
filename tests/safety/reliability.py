"""The reliability matrix behind RELIABILITY.md: ``nox -s reliability`` (or run this file).

Runs, at full size, what the test suite runs a slice of: kill -9 trials, the disk-fault
matrix, thread stress, the loader fuzzers (mutations of real cassettes and hypothesis),
and the secret corpus by place and kind. Writes the figures into RELIABILITY.md between
its ``reliability:begin``/``reliability:end`` markers; exits 1 if any promise failed.
``--quick`` runs a small version of everything (about a minute) and writes nothing unless
``--write`` is given.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import multiprocessing
import os
import platform
import random
import signal
import sys
import tempfile
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))  # tests/, for the safety package

BEGIN = "<!-- reliability:begin -->"
END = "<!-- reliability:end -->"
HANG_SECONDS = 20


class Hang(Exception):
    """A case ran longer than :data:`HANG_SECONDS`."""


@contextmanager
def watchdog(seconds: int) -> Iterator[None]:
    """Raise :class:`Hang` in the block if it runs longer than ``seconds``."""

    def expired(signum: int, frame: Any) -> None:
        raise Hang

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# -- the loader fuzzers -------------------------------------------------------------


def _mutation_chunk(args: tuple[int, int]) -> dict[str, Any]:
    count, seed = args
    warnings.simplefilter("ignore")
    from safety import _fuzz

    slowest = 0.0
    real = _fuzz.contract

    def timed(data: bytes, path: Path | None = None) -> tuple[str | None, bool]:
        nonlocal slowest
        start = time.perf_counter()
        try:
            with watchdog(HANG_SECONDS):
                return real(data, path)
        except Hang:
            return f"no answer within {HANG_SECONDS} s", False
        finally:
            slowest = max(slowest, time.perf_counter() - start)

    _fuzz.contract = timed  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        result = _fuzz.run_mutations(count, seed, Path(tmp))
    result["slowest_s"] = slowest
    return result


def _hypothesis_run(examples: int) -> dict[str, Any]:
    os.environ["SESSIONTAPE_FUZZ_EXAMPLES"] = str(examples)
    warnings.simplefilter("ignore")
    from safety import _fuzz, test_fuzz

    counted = {"cases": 0, "loaded": 0}
    failures: list[str] = []
    real = _fuzz.contract

    def counting(data: bytes, path: Path | None = None) -> tuple[str | None, bool]:
        problem, loaded = real(data, path)
        counted["cases"] += 1
        counted["loaded"] += loaded
        if problem is not None:
            failures.append(problem)
        return problem, loaded

    _fuzz.contract = counting  # type: ignore[assignment]
    for test in (test_fuzz.test_any_bytes, test_fuzz.test_any_entries,
                 test_fuzz.test_any_numbers_in_a_valid_tape):  # fmt: skip
        try:
            test()
        except Exception as exc:  # hypothesis re-raises the shrunk failure
            failures.append(f"{test.__name__}: {type(exc).__name__}: {exc}")
    return {**counted, "failures": failures}


def fuzz(pool: Any, mutations: int, examples: int) -> dict[str, Any]:
    chunks = 8
    jobs = [(mutations // chunks, 1000 + i) for i in range(chunks)]
    hyp = pool.apply_async(_hypothesis_run, (examples,))
    parts = pool.map(_mutation_chunk, jobs)
    by_mutation: dict[str, int] = {}
    for part in parts:
        for name, n in part["by_mutation"].items():
            by_mutation[name] = by_mutation.get(name, 0) + n
    hypothesis = hyp.get()
    return {
        "mutation_cases": sum(p["cases"] for p in parts),
        "mutation_loaded": sum(p["loaded"] for p in parts),
        "mutation_refused": sum(p["refused"] for p in parts),
        "mutation_failures": [f for p in parts for f in p["failures"]],
        "slowest_s": max(p["slowest_s"] for p in parts),
        "by_mutation": by_mutation,
        "hypothesis_cases": hypothesis["cases"],
        "hypothesis_loaded": hypothesis["loaded"],
        "hypothesis_failures": hypothesis["failures"],
    }


# -- crashes, faults, threads ---------------------------------------------------------


def _kill_trial(seed: int) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    from safety import _trials

    with tempfile.TemporaryDirectory() as tmp:
        outcome = _trials.kill_trial(Path(tmp), random.Random(seed))
    outcome.pop("path")
    return outcome


def kills(pool: Any, trials: int) -> dict[str, Any]:
    outcomes = pool.map(_kill_trial, range(trials))
    return {
        "trials": trials,
        "loaded": sum(1 for o in outcomes if not any("does not load" in p for p in o["problems"])),
        "torn": sum(1 for o in outcomes if o["torn"]),
        "lines_min": min(o["lines"] for o in outcomes),
        "lines_max": max(o["lines"] for o in outcomes),
        "failures": [p for o in outcomes for p in o["problems"]],
    }


def update_kills(points: int) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    from safety import _update_kills

    with tempfile.TemporaryDirectory() as tmp:
        return _update_kills.kill_trials(Path(tmp), points)


def accept_kills(points: int) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    from safety import _accept_kills

    with tempfile.TemporaryDirectory() as tmp:
        return _accept_kills.kill_trials(Path(tmp), points)


def faults(write_moments: range, fs_moments: range) -> dict[str, Any]:
    from safety import _faults

    cases = _faults.matrix(write_moments, fs_moments)
    failures: list[str] = []
    by_fault: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fault, moment, at in cases:
            by_fault[fault] = by_fault.get(fault, 0) + 1
            failures += _faults.check(_faults.run_case(Path(tmp), fault, moment, at))
    return {"cases": len(cases), "by_fault": by_fault, "failures": failures}


def stress(rounds: int, threads: int, calls: int) -> dict[str, Any]:
    from safety import _trials

    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            failures += _trials.thread_stress(Path(tmp, f"s{r}.jsonl"), threads, calls, seed=r)
    return {"rounds": rounds, "threads": threads, "calls": rounds * threads * calls,
            "failures": failures}  # fmt: skip


# -- secrets --------------------------------------------------------------------------


def _corpus_shape(args: tuple[str, int]) -> dict[str, Any]:
    kind, seeds = args
    warnings.simplefilter("ignore")
    import io
    from contextlib import redirect_stdout

    from safety._planting import record_planted
    from safety._secrets import leaked
    from sessiontape.cli import main

    leaks: list[str] = []
    pairs = 0
    for seed in range(seeds):
        with tempfile.TemporaryDirectory() as tmp:
            path, planted = record_planted(
                Path(tmp), _corpora()[kind], zlib.crc32(kind.encode()) + seed
            )
            out = Path(tmp, "out")
            out.mkdir()
            shown = io.StringIO()
            with redirect_stdout(shown):
                main(["show", str(path), "--limit", "1000"])
                main(["export", str(path), "-o", str(out / "otlp.json")])
                main(["report", str(path), "-o", str(out / "report.html")])
            derived = [
                path.read_bytes(),
                shown.getvalue().encode(),
                (out / "otlp.json").read_bytes(),
                (out / "report.html").read_bytes(),
            ]
            for place, cores in planted.items():
                pairs += 1
                if any(leaked(data, cores) for data in derived):
                    leaks.append(place)
    return {"kind": kind, "pairs": pairs, "leaks": leaks}


def _corpora() -> dict[str, Any]:
    """Every kind of every corpus, by name."""
    from safety._gitleaks_kinds import gitleaks_kinds
    from safety._secrets import LISTED_LATER, SHAPES, UNLISTED

    return {**SHAPES, **LISTED_LATER, **UNLISTED, **gitleaks_kinds()}


def secrets(pool: Any, seeds: int, corpus_name: str = "listed") -> dict[str, Any]:
    """The corpus by place and kind: the listed shapes, the secrets no list names (found
    by their context: ``unlisted``), or gitleaks' rules by their own true examples."""
    from safety._gitleaks_kinds import gitleaks_kinds
    from safety._planting import PLACES
    from safety._secrets import LISTED_LATER, SHAPES, UNLISTED

    corpus = {
        "listed": {**SHAPES, **LISTED_LATER},
        "unlisted": UNLISTED,
        "gitleaks": gitleaks_kinds(),
    }[corpus_name]
    parts = pool.map(_corpus_shape, [(kind, seeds) for kind in sorted(corpus)])
    return {
        "shapes": len(corpus),
        "places": len(PLACES),
        "seeds": seeds,
        "pairs": sum(p["pairs"] for p in parts),
        "leaks": sum(len(p["leaks"]) for p in parts),
        "leaks_by_kind": {p["kind"]: len(p["leaks"]) for p in parts},
        "leaks_by_place": {place: sum(p["leaks"].count(place) for p in parts) for place in PLACES},
    }


def false_positives(sessions: int) -> dict[str, Any]:
    """Ordinary sessions recorded: how many of their texts the tape does not hold as they
    were (nothing in them is a secret), and how many redaction marks it holds."""
    from safety._ordinary import altered, record_ordinary

    texts = changed = marks = 0
    examples: list[str] = []
    for seed in range(sessions):
        with tempfile.TemporaryDirectory() as tmp:
            path, planted = record_ordinary(Path(tmp), seed)
            data = path.read_bytes()
        lost = altered(data, planted)
        texts += len(planted)
        changed += len(lost)
        marks += data.count(b"[REDACTED")
        examples += lost[: 3 - len(examples)]
    return {"sessions": sessions, "texts": texts, "altered": changed, "marks": marks,
            "examples": examples}  # fmt: skip


def scrub_speed() -> dict[str, float]:
    import timeit

    from sessiontape.scrub import redact

    texts = {
        "git status output": (
            "On branch main\nYour branch is up to date with 'origin/main'.\n\nChanges not "
            'staged for commit:\n  (use "git add <file>..." to update what will be '
            "committed)\n\tmodified:   src/app/core.py\n\nno changes added"
        )[:200],
        "prose": (
            "The quick brown fox jumps over the lazy dog. Then it ran to the river_bank and "
            "back again, twice; see docs/guide.md for more. Version 1.2.3 of the tool was "
            "used here, on host-01."
        )[:200],
    }
    return {
        name: min(timeit.repeat(lambda t=text: redact(t), number=20_000, repeat=7)) / 20_000 * 1e6
        for name, text in texts.items()
    }


# -- the report -----------------------------------------------------------------------


def render(figures: dict[str, Any]) -> str:
    f = figures
    fz, k, fa, st, se = f["fuzz"], f["kills"], f["faults"], f["stress"], f["secrets"]
    total_fuzz = fz["mutation_cases"] + fz["hypothesis_cases"]
    fuzz_failures = len(fz["mutation_failures"]) + len(fz["hypothesis_failures"])
    lines = [
        BEGIN,
        "",
        f"Measured by `nox -s reliability` on {f['when']} ({f['machine']}), "
        f"{f['seconds']:.0f} s in all. Every figure below is a count of cases run and of "
        "cases that broke the promise.",
        "",
        "| promise | cases | broken |",
        "|---|---|---|",
        f"| a killed recorder leaves a tape that loads, marked crashed, every whole line "
        f"intact, resumable | {k['trials']} kill -9 trials ({k['torn']} left a torn last "
        f"line; {k['lines_min']}-{k['lines_max']} lines) | {len(k['failures'])} |",
        *_update_row(f),
        *_accept_row(f),
        f"| a recording fault is one warning and a kept prefix, the application unharmed "
        f"| {fa['cases']} fault × moment cases | {len(fa['failures'])} |",
        f"| {st['threads']} threads write whole lines, gapless seqs, each thread in order "
        f"| {st['calls']:,} calls in {st['rounds']} rounds | {len(st['failures'])} |",
        f"| any bytes load or give a CassetteError with path:line; validate and replay "
        f"never raise on what loads | {total_fuzz:,} fuzzed tapes "
        f"({fz['mutation_cases']:,} mutations of real cassettes, {fz['hypothesis_cases']:,} "
        f"from hypothesis; {fz['mutation_loaded'] + fz['hypothesis_loaded']:,} loaded, the "
        f"rest refused; slowest case {fz['slowest_s'] * 1000:.0f} ms) | {fuzz_failures} |",
        f"| no secret on disk, nor in show, export or report | {se['pairs']:,} (secret, "
        f"place) pairs: {se['shapes']} shapes × {se['places']} places × {se['seeds']} "
        f"instances | {se['leaks']} |",
        *_second_line(f),
        "",
        "Disk faults by kind: "
        + ", ".join(f"{name} {n}" for name, n in fa["by_fault"].items())
        + ".",
        "",
        "Mutations applied: "
        + ", ".join(f"{name} {n:,}" for name, n in fz["by_mutation"].items())
        + ".",
        "",
        "Secrets leaked by place: "
        + ", ".join(f"{place} {n}" for place, n in se["leaks_by_place"].items())
        + ".",
        "",
        "Secrets leaked by kind: "
        + ", ".join(f"{kind} {n}" for kind, n in se["leaks_by_kind"].items())
        + ".",
        "",
        *(
            [
                "Secrets no list names leaked by kind: "
                + ", ".join(f"{k} {n}" for k, n in f["unlisted"]["leaks_by_kind"].items())
                + ".",
                "",
            ]
            if "unlisted" in f
            else []
        ),
        "Scrubbing a clean 200-character text: "
        + ", ".join(f"{name} {us:.2f} µs" for name, us in f["scrub_us"].items())
        + ".",
        "",
        END,
    ]
    return "\n".join(lines)


def _second_line(f: dict[str, Any]) -> list[str]:
    """The rows of the shape-free detector and of the false positives, when measured."""
    rows = []
    if "unlisted" in f:
        un = f["unlisted"]
        rows.append(
            f"| no secret of a shape no list names on disk, nor in show, export or report "
            f"(unknown vendor prefixes, random base64 and hex after credential words, -p/-a "
            f"and in URLs) | {un['pairs']:,} (secret, place) pairs: {un['shapes']} kinds × "
            f"{un['places']} places × {un['seeds']} instances | {un['leaks']} |"
        )
    if "gitleaks" in f:
        gl = f["gitleaks"]
        rows.append(
            f"| no secret of gitleaks' default rules on disk, nor in show, export or report: "
            f"each rule's own true examples (tests/scrub/data/gitleaks_examples.json) | "
            f"{gl['pairs']:,} (secret, place) pairs: {gl['shapes']} rules × {gl['places']} "
            f"places | {gl['leaks']} |"
        )
    if "false_positives" in f:
        fp = f["false_positives"]
        rows.append(
            f"| nothing redacted that is not a secret: ordinary sessions (git shas, UUIDs, "
            f"paths, URLs, base64 outputs, -p/-a options, credential words in prose) | "
            f"{fp['texts']:,} texts in {fp['sessions']} recorded sessions "
            f"({fp['marks']} redaction marks on their tapes) | {fp['altered']} |"
        )
    return rows


def _update_row(f: dict[str, Any]) -> list[str]:
    u = f.get("update_kills")
    if u is None:  # figures of a run from before update mode
        return []
    return [
        f"| a killed update leaves the old tape or the new one, whole, never a mix | "
        f"{u['points']} kill -9 points over an update's finish of {u['finish_ms']:.0f} ms "
        f"({u['old']} left the old tape, {u['new']} the new one) | {len(u['failures'])} |"
    ]


def _accept_row(f: dict[str, Any]) -> list[str]:
    a = f.get("accept_kills")
    if a is None:  # figures of a run from before pending changes
        return []
    return [
        f"| a killed accept leaves the old tape or the new one, whole; accepting again "
        f"completes | {a['points']} kill -9 points over an accept's writing of "
        f"{a['finish_ms']:.0f} ms ({a['old']} left the old tape, {a['new']} the new one) | "
        f"{len(a['failures'])} |"
    ]


def write_into(doc: Path, block: str) -> None:
    text = doc.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    doc.write_text(text[:start] + block + text[end:], encoding="utf-8")


def failures_of(figures: dict[str, Any]) -> list[str]:
    fz = figures["fuzz"]
    found = [*fz["mutation_failures"], *fz["hypothesis_failures"]]
    for part in ("kills", "update_kills", "accept_kills", "faults", "stress"):
        found += figures.get(part, {"failures": []})["failures"]
    if figures["secrets"]["leaks"]:
        found.append(f"{figures['secrets']['leaks']} secrets leaked")
    if figures.get("unlisted", {}).get("leaks"):
        found.append(f"{figures['unlisted']['leaks']} unlisted secrets leaked")
    if figures.get("gitleaks", {}).get("leaks"):
        gl = figures["gitleaks"]["leaks_by_kind"]
        found.append(f"gitleaks' examples leaked: {[k for k, n in gl.items() if n]}")
    if figures.get("false_positives", {}).get("altered"):
        fp = figures["false_positives"]
        found.append(f"{fp['altered']} ordinary texts redacted, e.g. {fp['examples']}")
    return [str(f) for f in found]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small run of everything")
    parser.add_argument("--write", type=Path, default=None, help="the document to update")
    parser.add_argument("--json", type=Path, default=None, help="also save the figures here")
    args = parser.parse_args(argv)
    quick = args.quick
    doc = args.write if args.write is not None else (None if quick else ROOT / "RELIABILITY.md")
    started = time.perf_counter()
    steps: list[tuple[str, Callable[[], Any]]] = []
    figures: dict[str, Any] = {}
    with multiprocessing.get_context("fork").Pool(2) as pool:
        steps = [
            ("fuzz", lambda: fuzz(pool, 8_000 if quick else 104_000, 300 if quick else 4_000)),
            ("kills", lambda: kills(pool, 20 if quick else 200)),
            ("update_kills", lambda: update_kills(10 if quick else 60)),
            ("accept_kills", lambda: accept_kills(10 if quick else 60)),
            ("faults", lambda: faults(range(14), range(6))),
            ("stress", lambda: stress(1 if quick else 5, 16, 200 if quick else 1_000)),
            ("secrets", lambda: secrets(pool, 1 if quick else 3)),
            ("unlisted", lambda: secrets(pool, 1 if quick else 3, "unlisted")),
            ("gitleaks", lambda: secrets(pool, 1, "gitleaks")),
            ("false_positives", lambda: false_positives(5 if quick else 50)),
            ("scrub_us", scrub_speed),
        ]
        for name, step in steps:
            began = time.perf_counter()
            figures[name] = step()
            print(f"[reliability] {name}: {time.perf_counter() - began:.1f} s", flush=True)
    figures["seconds"] = time.perf_counter() - started
    figures["when"] = _dt.date.today().isoformat()
    figures["machine"] = f"{os.cpu_count()} cores, Python {platform.python_version()}"
    block = render(figures)
    print(block)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    if doc is not None:
        write_into(doc, block)
        print(f"[reliability] figures written into {doc}")
    broken = failures_of(figures)
    for failure in broken[:50]:
        print(f"[reliability] BROKEN: {failure}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
