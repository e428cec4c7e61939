"""Chaos replay in pytest: each cassette as N schedules, and the session's summary line.

The options are declared with the others (``_options``); this module is imported when a
run uses sessiontape, and the replay engine, where the scheduler is, only when a
``--sessiontape-chaos*`` option is given.

``pytest --replay X --sessiontape-chaos N`` collects ``x.jsonl`` as N items,
``x[chaos-S]`` ... ``x[chaos-S+N-1]`` (``S``: ``--sessiontape-chaos-seed``, default 0),
so pytest-xdist spreads them like any tests. ``--sessiontape-chaos-seed S`` alone runs
the one schedule ``S``. An item fails when its schedule fails; an inadmissible schedule
passes (it is counted apart in the summary). The results travel to the xdist controller
as user properties of the item's report, and the controller prints the summary.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import pytest

if TYPE_CHECKING:
    from collections.abc import Generator

    from ..replayer import Schedule
    from ..report import ChaosResult

__all__ = [
    "CHAOS_PROPERTY",
    "ChaosSettings",
    "chaos_header",
    "chaos_settings",
    "configure_chaos",
    "inadmissible_line",
    "reproduce_command",
]

#: The user property carrying an item's chaos result (JSON data) to the controller.
CHAOS_PROPERTY: Final = "sessiontape_chaos"
_KEY: Final = pytest.StashKey["ChaosSettings"]()


class ChaosSettings(NamedTuple):
    """The chaos options of one pytest run (``seeds`` empty: chaos is off, and the other
    fields are not read)."""

    seeds: tuple[int, ...]
    strategy: str
    depth: int
    stall_limit: float
    save: Path | None
    #: Schedules per estimate of ``--sessiontape-chaos-explain`` (0: off).
    explain: int = 0

    @classmethod
    def from_config(cls, config: pytest.Config) -> ChaosSettings:
        count: int | None = config.getoption("sessiontape_chaos", None)
        seed: int | None = config.getoption("sessiontape_chaos_seed", None)
        if count is None and seed is None:
            if config.getoption("sessiontape_chaos_explain", False) or config.getoption(
                "sessiontape_chaos_explain_samples", None
            ):
                raise pytest.UsageError(
                    "--sessiontape-chaos-explain explains failing chaos schedules: give "
                    "--sessiontape-chaos N or --sessiontape-chaos-seed S with it."
                )
            return cls(seeds=(), strategy="", depth=0, stall_limit=0.0, save=None)
        from ..replayer import DEFAULT_DEPTH, DEFAULT_STALL_LIMIT, Strategy

        first = seed or 0
        strategy: str | None = config.getoption("sessiontape_chaos_strategy", None)
        depth: int | None = config.getoption("sessiontape_chaos_depth", None)
        stall_limit: float | None = config.getoption("sessiontape_chaos_stall_limit", None)
        save: str | None = config.getoption("sessiontape_chaos_save", None)
        explain: bool = config.getoption("sessiontape_chaos_explain", False)
        samples: int | None = config.getoption("sessiontape_chaos_explain_samples", None)
        if explain or samples:
            from ..replayer import DEFAULT_SAMPLES

            samples = samples or DEFAULT_SAMPLES
        return cls(
            seeds=tuple(range(first, first + (count or 1))),
            strategy=strategy or Strategy.PCT.value,
            depth=depth or DEFAULT_DEPTH,
            stall_limit=stall_limit or DEFAULT_STALL_LIMIT,
            save=(config.invocation_params.dir / save).resolve() if save else None,
            explain=samples or 0,
        )

    @property
    def on(self) -> bool:
        return bool(self.seeds)

    def schedule(self, seed: int) -> Schedule:
        from ..replayer import Schedule

        return Schedule(
            seed=seed, strategy=self.strategy, depth=self.depth, stall_limit=self.stall_limit
        )


def chaos_settings(config: pytest.Config) -> ChaosSettings:
    settings = config.stash.get(_KEY, None)
    if settings is None:
        settings = config.stash[_KEY] = ChaosSettings.from_config(config)
    return settings


def reproduce_command(shown: str, result: ChaosResult, settings: ChaosSettings) -> str:
    """The one command that runs this schedule again."""
    from ..replayer import DEFAULT_STALL_LIMIT, Strategy

    parts = [
        "pytest",
        "--replay",
        shown,
        "--sessiontape-chaos-seed",
        str(result.seed),
        "--sessiontape-chaos-strategy",
        result.strategy,
    ]
    if result.strategy == Strategy.PCT.value:
        parts += ["--sessiontape-chaos-depth", str(result.depth)]
    if settings.stall_limit != DEFAULT_STALL_LIMIT:
        parts += ["--sessiontape-chaos-stall-limit", f"{settings.stall_limit:g}"]
    return shlex.join(parts)


def chaos_header(config: pytest.Config) -> str | None:
    """The report header's chaos line (seeds, strategy, depth), so any run can be redone."""
    settings = chaos_settings(config)
    if not settings.on:
        return None
    first, last = settings.seeds[0], settings.seeds[-1]
    from ..replayer import Strategy  # chaos is on: the engine is needed anyway

    seeds = f"seed {first}" if first == last else f"seeds {first}..{last}"
    depth = f", depth {settings.depth}" if settings.strategy == Strategy.PCT.value else ""
    return (
        f"sessiontape chaos: {len(settings.seeds)} schedule(s) per cassette, {seeds}, "
        f"strategy {settings.strategy}{depth}"
    )


def configure_chaos(config: pytest.Config) -> None:
    """Register the summary of this run's schedules (when chaos is on)."""
    if chaos_settings(config).on:
        config.pluginmanager.register(_ChaosSummary(config), _ChaosSummary.NAME)


class _ChaosSummary:
    """Collects every schedule's result (from xdist workers too) and prints the line."""

    NAME: Final = "sessiontape-chaos"

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[dict[str, Any]] = []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """An inadmissible schedule's skip is placed at its cassette, not at the line of
        sessiontape that skipped it."""
        report = yield
        if (
            report.skipped
            and isinstance(report.longrepr, tuple)
            and any(name == CHAOS_PROPERTY for name, _ in report.user_properties)
        ):
            # No line: pytest shows "PATH: reason" for a skip whose line is None.
            report.longrepr = (str(item.path), None, report.longrepr[2])  # type: ignore[assignment]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == CHAOS_PROPERTY and isinstance(value, dict):
                self.results.append(value)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        line = summary_line(self.results, chaos_settings(self.config))
        if line:
            terminalreporter.write_line(line)
        why = inadmissible_line(self.results)
        if why:
            terminalreporter.write_line(why)

    def pytest_unconfigure(self) -> None:
        if self.config.pluginmanager.is_registered(self):
            self.config.pluginmanager.unregister(self)


def summary_line(results: list[dict[str, Any]], settings: ChaosSettings) -> str:
    """``sessiontape chaos: 100 schedules, 93 admissible, 2 failed (1 distinct) ...``."""
    if not results:
        return ""
    from ..replayer import Strategy, pct_bound

    run = len(results)
    inadmissible = sum(1 for r in results if r["verdict"] == "inadmissible")
    failed = [r for r in results if r["verdict"] == "failed"]
    distinct = {(r["cassette"], r["signature"]) for r in failed}
    share = (run - inadmissible) / run
    line = (
        f"sessiontape chaos: {run} schedules run, {run - inadmissible} admissible "
        f"({share:.0%}), {len(failed)} failed, {len(distinct)} distinct failures"
    )
    if settings.strategy == Strategy.PCT.value:
        # The weakest guarantee among the cassettes: the one with the most steps and threads.
        bound = min(pct_bound(r["steps"], r["threads"], settings.depth) for r in results)
        per_cassette: dict[str, int] = {}
        for r in results:
            per_cassette[r["cassette"]] = per_cassette.get(r["cassette"], 0) + 1
        schedules = min(per_cassette.values())
        found = 1 - (1 - bound) ** schedules
        line += (
            f"; PCT depth {settings.depth}: a bug of depth {settings.depth} is found with "
            f"probability >= {bound:.2e} per schedule (1/(n*k^(d-1))), >= {found:.2e} "
            f"over {schedules} schedules of a cassette"
        )
    return line


def inadmissible_line(results: list[dict[str, Any]]) -> str:
    """What made most inadmissible schedules inadmissible: the kind of call they stopped
    at, how many did, and the reason of the first of them (by cassette and seed)."""
    stopped = [r for r in results if r["verdict"] == "inadmissible"]
    if not stopped:
        return ""
    counts: dict[str, int] = {}
    for r in stopped:
        call = r.get("inadmissible_call") or "call"
        counts[call] = counts.get(call, 0) + 1
    call, count = min(counts.items(), key=lambda item: (-item[1], item[0]))
    first = min(
        (r for r in stopped if (r.get("inadmissible_call") or "call") == call),
        key=lambda r: (r["cassette"], r["seed"]),
    )
    most = "all" if count == len(stopped) else f"{count}"
    article = "an" if call[:1] in "aeiou" else "a"
    return (
        f"sessiontape chaos: {len(stopped)} inadmissible schedules (not failures; shown as "
        f"skipped), {most} of them stopped at {article} {call} that no recorded call answers; "
        f"the first, {first['cassette']} seed {first['seed']}: {first['inadmissible']}"
    )
