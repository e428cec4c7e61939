"""Chaos replay: what one schedule costs against a plain replay of the same tape.

Run alone (the full suite does not run it): ``python bench/cases/chaos.py``; with
``--write`` it puts its figures into BENCHMARKS.md between the ``chaos:begin`` and
``chaos:end`` markers (which ``bench/run.py`` carries over when it rewrites the file).
``--focused`` measures the 1,000-entry tape alone, with the spread, and writes nothing.

* **the gardener corpus**: each cassette of ``cassettes/`` replayed plainly and under a
  chaos schedule (PCT, a new seed each time), the two taking turns; medians per tape.
* **a 1,000-entry, 4-worker tape**: a threading program whose four workers each make 200
  process calls and 50 store calls, recorded once; plain replays and schedules taking
  turns.
* **schedules per second** beside plain replays per second (the corpus, one process).
* **across cores**: ``pytest --replay cassettes --sessiontape-chaos N`` serially and
  with ``-n 2``, wall time of the whole run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import sessiontape  # noqa: E402
from sessiontape import ProcessResult  # noqa: E402
from sessiontape.examples.gardener import WORK_ROOT, run_session  # noqa: E402

WORKERS: Final = 4
PROCESS_CALLS: Final = 200
STORE_CALLS: Final = 50


class Echo:
    """Answers like ``echo`` without starting a process."""

    def run(self, argv: list[str], **kwargs: Any) -> ProcessResult:
        return ProcessResult(argv, 0, " ".join(argv[1:]) + "\n")

    def stream(self, argv: list[str], **kwargs: Any) -> Any:
        raise NotImplementedError


class _Tally:
    """The store of the synthetic program: one counter per worker."""

    def __init__(self, counts: dict[str, int] | None = None) -> None:
        self.counts = dict(counts or {})

    def snapshot(self) -> dict[str, int]:
        return dict(self.counts)

    def bump(self, worker: str) -> int:
        self.counts[worker] = self.counts.get(worker, 0) + 1
        return self.counts[worker]


def workers_program(tape: sessiontape.Tape, workers: int, calls: int, every: int) -> dict[str, int]:
    """``workers`` threads, each making ``calls`` process calls through ``tape``'s runner
    and a store call every ``every`` of them (``bench/cases/fork.py`` runs it too)."""
    runner = tape.process_runner(Echo())  # type: ignore[arg-type]
    live = _Tally() if tape.mode is not sessiontape.Mode.REPLAY else None
    store = tape.store(live, mutations=["bump"], snapshot=_Tally.snapshot, factory=_Tally)

    def work(index: int) -> None:
        name = f"w{index}"
        with sessiontape.worker(name):
            for i in range(calls):
                runner.run(["echo", name, str(i)], text=True)
                if i % every == 0:
                    store.bump(name)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcome = dict(sorted(store.snapshot().items()))
    tape.finish(outcome=outcome)
    return outcome


def _four_workers(tape: sessiontape.Tape) -> dict[str, int]:
    return workers_program(tape, WORKERS, PROCESS_CALLS, PROCESS_CALLS // STORE_CALLS)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _check(ok: bool, tape: sessiontape.ReplayTape) -> None:
    if not ok:
        raise SystemExit(f"a benchmark replay did not pass: {tape.chaos or tape.report}")


def _gardener(cassette: Path, seed: int | None) -> None:
    work = Path(tempfile.mkdtemp(prefix="chaos-bench-"))
    try:
        schedule = sessiontape.Schedule(seed=seed) if seed is not None else None
        tape = sessiontape.replay(cassette, roots={WORK_ROOT: str(work)}, schedule=schedule)
        with tape:
            run_session(tape, work)
        if schedule is not None:
            _check(tape.chaos is not None and tape.chaos.verdict.value == "passed", tape)
        else:
            _check(tape.report is not None and tape.report.ok, tape)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _synthetic(cassette: Path, seed: int | None) -> None:
    schedule = sessiontape.Schedule(seed=seed) if seed is not None else None
    tape = sessiontape.replay(cassette, schedule=schedule)
    with tape:
        _four_workers(tape)
    if schedule is not None:
        _check(tape.chaos is not None and tape.chaos.verdict.value == "passed", tape)
    else:
        _check(tape.report is not None and tape.report.ok, tape)


def _pairs(run: Callable[[int | None], None], rounds: int) -> tuple[list[float], list[float]]:
    """Seconds of plain replays and of schedules (a new seed each), taking turns."""
    plain: list[float] = []
    chaos: list[float] = []
    run(None)
    run(0)
    for seed in range(rounds):
        plain.append(_timed(lambda: run(None)))
        chaos.append(_timed(lambda s=seed: run(s)))  # type: ignore[misc]
    return plain, chaos


def _pair(run: Callable[[int | None], None], rounds: int) -> tuple[float, float]:
    """Median seconds of a plain replay and of one schedule, taking turns."""
    plain, chaos = _pairs(run, rounds)
    return _median(plain), _median(chaos)


def _spread(values: list[float]) -> str:
    """Best, median and the middle half of ``values`` (seconds), in ms."""
    ordered = sorted(values)
    n = len(ordered)
    return (
        f"best {ordered[0] * 1e3:.2f} ms, median {_median(ordered) * 1e3:.2f} ms "
        f"(middle half {ordered[n // 4] * 1e3:.2f}-{ordered[(3 * n) // 4] * 1e3:.2f} ms)"
    )


def focused(rounds: int) -> str:
    """Only the 1,000-entry, 4-worker tape: plain replays and schedules taking turns, with
    their spread (``python bench/cases/chaos.py --focused``; writes nothing)."""
    with tempfile.TemporaryDirectory() as tmp:
        synthetic = Path(tmp) / "four-workers.jsonl"
        with sessiontape.record(synthetic, entrypoint="bench four workers") as tape:
            _four_workers(tape)
        plain, chaos = _pairs(lambda seed: _synthetic(synthetic, seed), rounds)
    ratios = sorted(c / p for p, c in zip(plain, chaos, strict=True))
    return "\n".join(
        [
            f"{rounds} rounds, a plain replay and a schedule taking turns:",
            f"  plain replay: {_spread(plain)}",
            f"  one schedule: {_spread(chaos)}",
            f"  ratio of medians {_median(chaos) / _median(plain):.2f}x, of bests "
            f"{min(chaos) / min(plain):.2f}x; per round: median {_median(ratios):.2f}x "
            f"(middle half {ratios[len(ratios) // 4]:.2f}-{ratios[(3 * len(ratios)) // 4]:.2f}x)",
        ]
    )


def _pytest(args: list[str]) -> float:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    started = time.perf_counter()
    subprocess.run([*command, *args], cwd=ROOT, check=True, capture_output=True, env={**os.environ})
    return time.perf_counter() - started


BEGIN: Final = "<!-- chaos:begin -->"
END: Final = "<!-- chaos:end -->"


def main() -> None:
    if "--focused" in sys.argv:
        print(focused(int(os.environ.get("CHAOS_BENCH_ROUNDS", "41"))))
        return
    rounds = int(os.environ.get("CHAOS_BENCH_ROUNDS", "15"))
    rows = []
    corpus = sorted((ROOT / "cassettes").glob("gardener-*.jsonl"))
    plain_total = chaos_total = 0.0
    for cassette in corpus:

        def replay_one(seed: int | None, cassette: Path = cassette) -> None:
            _gardener(cassette, seed)

        plain, chaos = _pair(replay_one, rounds)
        plain_total += plain
        chaos_total += chaos
        rows.append((cassette.name, plain, chaos))
    with tempfile.TemporaryDirectory() as tmp:
        synthetic = Path(tmp) / "four-workers.jsonl"
        with sessiontape.record(synthetic, entrypoint="bench four workers") as tape:
            _four_workers(tape)
        entries = len(sessiontape.load(synthetic).calls)
        plains, chaoses = _pairs(lambda seed: _synthetic(synthetic, seed), rounds)
        rows.append((f"{entries}-entry, {WORKERS}-worker tape", _median(plains), _median(chaoses)))
    lines = [
        "| tape | plain replay | one schedule (PCT) | ratio | target |",
        "|---|---|---|---|---|",
    ]
    for name, plain, chaos in rows:
        lines.append(
            f"| {name} | {plain * 1e3:.1f} ms | {chaos * 1e3:.1f} ms | {chaos / plain:.2f}x "
            "| ≤ 1.25x |"
        )
    lines.append("")
    lines.append(
        f"The {entries}-entry tape's spread: plain replay {_spread(plains)}; one schedule "
        f"{_spread(chaoses)}; ratio of bests {min(chaoses) / min(plains):.2f}x."
    )
    lines.append("")
    lines.append(
        f"Gardener corpus, one process: {len(corpus) / plain_total:.1f} plain replays/s, "
        f"{len(corpus) / chaos_total:.1f} schedules/s."
    )
    schedules = int(os.environ.get("CHAOS_BENCH_SCHEDULES", "40"))
    args = ["--replay", "cassettes", "--sessiontape-chaos", str(schedules)]
    plain_run = _pytest(["--replay", "cassettes"])
    serial = _pytest(args)
    spread = _pytest([*args, "-n", "2"])
    count = schedules * len(corpus)
    lines.append("")
    lines.append(
        f"Through pytest, `--replay cassettes --sessiontape-chaos {schedules}` ({count} "
        f"schedules, whole run with start-up): serial {serial:.1f} s ({count / serial:.1f} "
        f"schedules/s), `-n 2` {spread:.1f} s ({count / spread:.1f}/s), {serial / spread:.2f}x "
        f"faster; the plain replay of the corpus in the same way: {plain_run:.1f} s."
    )
    text = "\n".join(lines)
    print(text)
    if "--write" in sys.argv:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        section = "\n".join(
            [
                BEGIN,
                "## Chaos replay",
                "",
                f"Measured alone (`python bench/cases/chaos.py --write`, {stamp}, {rounds} "
                "rounds, a plain replay and a schedule taking turns; medians): one schedule "
                "against a plain replay of the same tape.",
                "",
                text,
                END,
            ]
        )
        path = ROOT / "BENCHMARKS.md"
        current = path.read_text(encoding="utf-8")
        if BEGIN in current:
            head, rest = current.split(BEGIN, 1)
            current = head + section + rest.split(END, 1)[1]
        else:
            current = current.rstrip("\n") + "\n\n" + section + "\n"
        path.write_text(current, encoding="utf-8")


if __name__ == "__main__":
    main()
