"""Chaos replay at full size: ``nox -s reliability`` runs it after the safety matrix.

1. No false alarms: 1,000 schedules over the shipped corpus (``cassettes/``), half PCT,
   half random, must all pass; the admissible share is reported.
2. Finds real races: for each planted race (three kinds, in the racy gardener and the
   racy threading program), 20 runs of ``--sessiontape-chaos 100`` with different base
   seeds; each race must be found in at least 19 of the 20.

Writes the figures between the ``chaos:begin``/``chaos:end`` markers of RELIABILITY.md
with ``--write``; ``--quick`` runs a small version. Exits 1 if a promise failed.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parents[0]))  # tests/, for the chaos package

import threading  # noqa: E402

import sessiontape  # noqa: E402
from chaos.conftest import CORPUS, replay_gardener  # noqa: E402
from chaos.races import PROGRAMS, RACES, record_all  # noqa: E402

BEGIN = "<!-- chaos:begin -->"
END = "<!-- chaos:end -->"


def corpus(total: int, work: Path) -> tuple[list[str], dict[str, int]]:
    cassettes = sorted(CORPUS.glob("gardener-*.jsonl"))
    per = total // (2 * len(cassettes))
    lines = ["| cassette | schedules | passed | inadmissible | failed |", "|---|---|---|---|---|"]
    totals: dict[str, int] = collections.Counter()
    for cassette in cassettes:
        counts: dict[str, int] = collections.Counter()
        for strategy in ("pct", "random"):
            for seed in range(per):
                schedule = sessiontape.Schedule(seed=seed, strategy=strategy)
                result = replay_gardener(
                    cassette, work / f"{cassette.stem}-{strategy}-{seed}", schedule
                )
                counts[result.verdict.value] += 1
                if result.failed:
                    print(result.render(), file=sys.stderr)
        totals.update(counts)
        lines.append(
            f"| {cassette.name} | {2 * per} | {counts['passed']} | {counts['inadmissible']} "
            f"| {counts['failed']} |"
        )
    return lines, totals


def races(bases: int, budget: int, work: Path) -> tuple[list[str], bool]:
    planted = record_all(work)
    lines = [
        f"| program | race | runs that found it (of {bases}) | schedules to the first find "
        "(median, max) |",
        "|---|---|---|---|",
    ]
    ok = True
    for program in PROGRAMS:
        for race in RACES:
            firsts = []
            for base in range(bases):
                seed = planted[(program, race)].first_found(base * 1000, budget)
                if seed is not None:
                    firsts.append(seed - base * 1000 + 1)
            found = len(firsts)
            ok = ok and found >= bases - bases // 20
            firsts.sort()
            median = firsts[len(firsts) // 2] if firsts else "-"
            worst = firsts[-1] if firsts else "-"
            lines.append(f"| {program} | {race} | {found} | {median}, {worst} |")
            print(lines[-1], flush=True)
    return lines, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    threading.excepthook = lambda args: None  # the racy workers die of their races
    total, bases = (100, 4) if args.quick else (1000, 20)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        corpus_lines, totals = corpus(total, work / "corpus")
        corpus_s = time.perf_counter() - started
        started = time.perf_counter()
        race_lines, found = races(bases, 100, work / "races")
        races_s = time.perf_counter() - started
    run = sum(totals.values())
    admissible = run - totals["inadmissible"]
    text = "\n".join(
        [
            BEGIN,
            f"No false alarms: {run} schedules over the shipped corpus, {totals['failed']} "
            f"failed; {admissible} admissible ({admissible / run:.0%}); {corpus_s:.0f} s.",
            "",
            *corpus_lines,
            "",
            f"Finds real races: each planted race, {bases} runs of 100 PCT schedules (base "
            f"seeds 0, 1000, 2000, ...); {races_s:.0f} s.",
            "",
            *race_lines,
            END,
        ]
    )
    print(text)
    if args.write:
        path = ROOT / "RELIABILITY.md"
        current = path.read_text(encoding="utf-8")
        if BEGIN in current:
            head, rest = current.split(BEGIN, 1)
            current = head + text + rest.split(END, 1)[1]
        else:
            current = current.rstrip("\n") + "\n\n## Chaos replay\n\n" + text + "\n"
        path.write_text(current, encoding="utf-8")
    return 0 if totals["failed"] == 0 and found else 1


if __name__ == "__main__":
    sys.exit(main())
