"""Figure 7: what a replay costs where users feel it, once per tape.

Three measurements, each against a baseline taken in the same run:

* **fixed cost of one replay** in a fresh interpreter with at least 600 modules loaded (as
  a real application's test process has): ``sessiontape.replay(path)`` entered, one
  process call served, ``finish()`` and exit, on a one-call tape. Baseline: the same
  replay with ``patch_time=False``, which installs no fake clock.
* **a corpus through pytest**: one pytest session holding 60 tiny cassettes (collected as
  items and replayed through a ``sessiontape_replay`` hook) and 60 trivial tests; the
  time pytest spends in a cassette item against the time in a trivial one (each item's
  setup, call and teardown, timed by a small plugin; medians, and the sums with the first
  replay's one-time set-up shown apart), so collection and start-up count for neither.
* **a corpus across cores**: 500 real tapes (the shipped gardener corpus, copied round
  robin) replayed by the project's own hook, serially and with ``-n 2`` (pytest-xdist),
  wall time of the whole pytest run, the two runs taking turns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

from .common import in_subprocess, median, now_ns

__all__ = ["child_fixed_cost", "run", "session_items", "write_corpus"]

#: Modules the fixed-cost child imports until it holds at least this many.
MIN_MODULES: Final = 600

_APP: Final = '''
"""The application the corpus replays: one process call, one outcome."""
from sessiontape import ProcessResult


class Runner:
    def run(self, argv, *, cwd=None, env=None, input=None, timeout=None, text=False):
        return ProcessResult(argv, 0, "ok\\n", "")

    def stream(self, *args, **kwargs):
        raise NotImplementedError


def app(tape):
    out = tape.process_runner(Runner()).run(["git", "rev-parse", "HEAD"], text=True)
    tape.finish({"head": out.stdout.strip()})
    return True
'''

#: The corpus projects' settings: no test reordering, no cache, and none of the plugins a
#: development environment may add (hypothesis's takes half a second to import, paid by
#: every xdist worker), so a run measures the same wherever it runs.
_PYTEST_INI: Final = """[pytest]
addopts = -p no:randomly -p no:cacheprovider -p no:hypothesispytest
"""

_CONFTEST: Final = """
from corpus_app import app


def sessiontape_replay(tape, recording):
    return app(tape)
"""

_TRIVIAL: Final = """
import pytest


@pytest.mark.parametrize("n", range({count}))
def test_trivial(n):
    assert n >= 0
"""

#: Sums each item's setup + call + teardown time by kind (cassette item or plain test),
#: and times the end of collection, where the plugin does the one-time replay set-up.
#: ``cpu_cassette`` and ``cpu_test``: the CPU time of the whole run protocol of each item
#: (setup, call, teardown and their reports), which a busy machine moves far less.
_TIMING_PLUGIN: Final = """
import json, os, time

import pytest

_items = {
    "cassette": {}, "test": {}, "collection_finish": {}, "cpu_cassette": {}, "cpu_test": {}
}


def _kind(nodeid):
    return "cassette" if ".jsonl::" in nodeid else "test"


@pytest.hookimpl(hookwrapper=True)
def pytest_collection_finish(session):
    start = time.perf_counter()
    yield
    _items["collection_finish"]["all"] = time.perf_counter() - start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.thread_time()
    yield
    _items["cpu_" + _kind(item.nodeid)][item.nodeid] = time.thread_time() - start


def pytest_runtest_logreport(report):
    kind = _kind(report.nodeid)
    _items[kind][report.nodeid] = _items[kind].get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    out = os.environ.get("SESSIONTAPE_BENCH_TIMING")
    if out and not hasattr(session.config, "workerinput"):
        with open(out, "w") as fh:
            json.dump({kind: list(items.values()) for kind, items in _items.items()}, fh)
"""


def write_corpus(root: Path, cassettes: int, trivial: int) -> Path:
    """A project directory: the app, its conftest, ``cassettes`` tapes, trivial tests."""
    import sessiontape

    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus_app.py").write_text(_APP, encoding="utf-8")
    (root / "conftest.py").write_text(_CONFTEST, encoding="utf-8")
    (root / "bench_timing.py").write_text(_TIMING_PLUGIN, encoding="utf-8")
    (root / "pytest.ini").write_text(_PYTEST_INI, encoding="utf-8")
    if trivial:
        (root / "test_trivial.py").write_text(_TRIVIAL.format(count=trivial), encoding="utf-8")
    tapes = root / "tapes"
    tapes.mkdir(exist_ok=True)
    sys.path.insert(0, str(root))
    try:
        from corpus_app import app  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(root))
    first = tapes / "tape-0000.jsonl"
    with sessiontape.record(first, entrypoint="corpus", roots={"repo": str(root)}) as tape:
        app(tape)
    content = first.read_bytes()
    for i in range(1, cassettes):
        (tapes / f"tape-{i:04d}.jsonl").write_bytes(content)
    return root


_GARDENER_CONFTEST: Final = """
from sessiontape.examples.gardener import replay_hook as sessiontape_replay
"""


def write_gardener_corpus(root: Path, cassettes: int, source: Path) -> Path:
    """``cassettes`` copies of the shipped corpus tapes in ``source``, with its hook."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "conftest.py").write_text(_GARDENER_CONFTEST, encoding="utf-8")
    (root / "bench_timing.py").write_text(_TIMING_PLUGIN, encoding="utf-8")
    (root / "pytest.ini").write_text(_PYTEST_INI, encoding="utf-8")
    tapes = sorted(source.glob("*.jsonl"))
    if not tapes:
        raise RuntimeError(f"no cassettes in {source} to build a corpus from")
    (root / "tapes").mkdir(exist_ok=True)
    for i in range(cassettes):
        original = tapes[i % len(tapes)]
        (root / "tapes" / f"{original.stem}-{i:04d}.jsonl").write_bytes(original.read_bytes())
    return root


def _pytest(root: Path, *args: str, timing: Path | None = None) -> int:
    """Wall ns of one pytest run in ``root`` (fails loudly if pytest fails)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
    if timing is not None:
        env["SESSIONTAPE_BENCH_TIMING"] = str(timing)
    start = now_ns()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "bench_timing", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = now_ns() - start
    if done.returncode != 0:
        raise RuntimeError(
            f"pytest failed in {root}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return elapsed


def child_fixed_cost(path: str, calls: int) -> dict[str, Any]:
    """In a fresh interpreter: load modules to 600+, then time ``calls`` replays each way."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules():
        if len(sys.modules) >= MIN_MODULES + 50:
            break
        if info.name.startswith(("test", "idle", "tkinter", "turtle", "antigravity", "this")):
            continue
        try:
            importlib.import_module(info.name)
        except BaseException:
            continue
    import sessiontape

    modules = len(sys.modules)

    def once(patch_time: bool) -> None:
        with sessiontape.replay(path, patch_time=patch_time) as tape:
            tape.process_runner().run(["git", "rev-parse", "HEAD"], text=True)
            report = tape.finish({"head": "ok"})
        assert report.ok, report.render()

    out: dict[str, Any] = {"modules": modules}
    for patch_time in (True, False):
        for _ in range(5):
            once(patch_time)
        samples = []
        for _ in range(calls):
            start = now_ns()
            once(patch_time)
            samples.append(now_ns() - start)
        out["default" if patch_time else "patch_time_false"] = {
            "median_ns": median(samples),
            "min_ns": min(samples),
            "max_ns": max(samples),
        }
    return out


def session_items(root: Path, timing: Path, count: int) -> dict[str, list[float]]:
    """One pytest session over the small corpus: each item's time, by kind."""
    _pytest(root, ".", timing=timing)
    items: dict[str, list[float]] = json.loads(timing.read_text())
    counts = {kind: len(durations) for kind, durations in items.items()}
    expected = {"collection_finish": 1} | dict.fromkeys(
        ("cassette", "test", "cpu_cassette", "cpu_test"), count
    )
    if counts != expected:
        raise RuntimeError(f"the corpus session ran {counts}, not {count} of each")
    return items


def run(
    *,
    workdir: Path,
    fixed_calls: int,
    corpus: int,
    big_corpus: int,
    rounds: int,
    source: Path,
) -> dict[str, Any]:
    """Run the three measurements; see the module docstring. ``source`` holds the
    shipped corpus the big one is copied from; the pytest sessions are repeated
    ``rounds`` times (serial and ``-n 2`` alternating) and the medians kept."""
    root = write_corpus(workdir / "corpus-small", corpus, corpus)
    one = root / "tapes" / "tape-0000.jsonl"
    fixed = in_subprocess("cases.corpus:child_fixed_cost", path=str(one), calls=fixed_calls)
    sessions = [session_items(root, workdir / "corpus-timing.json", corpus) for _ in range(rounds)]
    big = write_gardener_corpus(workdir / "corpus-big", big_corpus, source)
    serial, parallel = [], []
    for _ in range(rounds):
        serial.append(_pytest(big, "tapes"))
        parallel.append(_pytest(big, "tapes", "-n", "2"))
    return {
        "fixed": fixed,
        "corpus": {
            "items": corpus,
            "rounds": rounds,
            # The first replay of a process also pays one-time set-up (the first look at
            # every loaded module); it is part of the total, and shown on its own too.
            "cassette_items_s": median([sum(s["cassette"]) for s in sessions]),
            "trivial_items_s": median([sum(s["test"]) for s in sessions]),
            "cassette_median_s": median([median(s["cassette"]) for s in sessions]),
            "trivial_median_s": median([median(s["test"]) for s in sessions]),
            "cassette_first_s": median([s["cassette"][0] for s in sessions]),
            # Done once per pytest process when cassette items were collected (importing
            # freezegun, the first search of the loaded modules): not part of any item.
            "set_up_once_s": median([s["collection_finish"][0] for s in sessions]),
        },
        "big_corpus": {
            "items": big_corpus,
            "rounds": rounds,
            "serial_ns": median(serial),
            "xdist_2_ns": median(parallel),
            "serial_all_ns": serial,
            "xdist_2_all_ns": parallel,
        },
    }


def _main() -> None:  # pragma: no cover - a manual check: python -m cases.corpus DIR
    import tempfile

    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    source = Path(__file__).resolve().parents[2] / "cassettes"
    result = run(workdir=work, fixed_calls=100, corpus=60, big_corpus=500, rounds=1, source=source)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":  # pragma: no cover
    _main()
