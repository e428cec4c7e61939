"""Start-up: free when unused, and real time whenever sessiontape is first imported.

What is loaded is checked in fresh interpreters (``sys.modules``), never timed: the figures
are the benchmark's (``bench/run.py --only startup``). A heavy module loaded by the
plugin's entry point, by a pytest run that never uses a tape, or by
``sessiontape.record(None)`` fails these tests; so does a tape recorded by a sessiontape
first imported under freezegun's ``freeze_time`` or time-machine's ``travel`` that
carries the frozen time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import sessiontape

#: Modules that only a tape, an option or the fixture may load.
HEAVY = (
    "msgspec",
    "asyncio",
    "freezegun",
    "sessiontape.cassette",
    "sessiontape.recorder",
    "sessiontape.replayer",
    "sessiontape.scrub",
    "sessiontape.report",
    "sessiontape.boundaries",
)


def _python(code: str, *, env: dict[str, str] | None = None) -> str:
    """Run ``code`` in a fresh interpreter; its stdout (it must succeed)."""
    environ = {k: v for k, v in os.environ.items() if k != sessiontape.ENV_VAR}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**environ, **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _loaded_by(setup: str, code: str) -> list[str]:
    """The heavy modules that ``code`` loads in an interpreter where ``setup`` ran."""
    out = _python(
        f"""
        import json, sys
        {setup}
        before = set(sys.modules)
        {code}
        print(json.dumps(sorted(set(sys.modules) - before)))
        """
    )
    return [m for m in json.loads(out) if _heavy(m)]


def _heavy(module: str) -> bool:
    return any(module == h or module.startswith(h + ".") for h in HEAVY)


def test_the_plugin_entry_point_imports_nothing_heavy() -> None:
    assert _loaded_by("import pytest", "import sessiontape.plugin") == []


#: What the entry point may import: the package (real time, the lazy front), the options,
#: the mirror of the project's hooks (and the hook module's names, without the manager).
ENTRY_POINT_MODULES = {
    "sessiontape",
    "sessiontape._time",
    "sessiontape._lazy",
    "sessiontape._hooks",
    "sessiontape.plugin",
    "sessiontape.plugin._mirror",
    "sessiontape.plugin._options",
}


def test_the_plugin_entry_point_imports_only_what_the_options_need() -> None:
    # Every pytest run of everyone who has sessiontape installed imports the entry point:
    # each module more is paid by all of them (finding, loading and running it).
    out = _python(
        """
        import json, sys
        import pytest
        before = set(sys.modules)
        import sessiontape.plugin
        print(json.dumps(sorted(set(sys.modules) - before)))
        """
    )
    loaded = {m for m in json.loads(out) if m.startswith("sessiontape")}
    assert loaded <= ENTRY_POINT_MODULES, sorted(loaded - ENTRY_POINT_MODULES)


@pytest.mark.parametrize("entry", ["import sessiontape", "import pytest, sessiontape.plugin"])
def test_real_time_is_captured_before_anything_else_of_sessiontape(entry: str) -> None:
    out = _python(
        f"""
        import json, sys
        {entry}
        print(json.dumps([m for m in sys.modules if m.startswith("sessiontape")]))
        """
    )
    # sys.modules keeps the order modules were loaded in (a package moves to the end once
    # it is done): _time comes before any other module of sessiontape.
    loaded = [m for m in json.loads(out) if m != "sessiontape"]
    assert loaded[0] == "sessiontape._time", loaded


def test_record_none_imports_nothing_heavy() -> None:
    loaded = _loaded_by(
        "",
        "import sessiontape; tape = sessiontape.record(None); "
        "assert tape.mode is sessiontape.Mode.DISABLED; "
        "assert tape.agent(print) is print; tape.finish()",
    )
    assert loaded == []


def test_a_change_marker_outside_a_tape_imports_nothing_heavy() -> None:
    # sessiontape.patched() guards production code paths, where recording is mostly off.
    loaded = _loaded_by(
        "",
        "import sessiontape; tape = sessiontape.record(None); "
        "assert sessiontape.patched('fetch-before-merge') is True; "
        "assert tape.patched('fetch-before-merge') is True; tape.finish()",
    )
    assert loaded == []


def test_the_guard_sees_a_heavy_import() -> None:
    # The check above can fail: reading a name that lives in the engines loads them.
    assert "sessiontape.replayer" in _loaded_by("import sessiontape", "sessiontape.FakeClock")
    assert "msgspec" in _loaded_by("import sessiontape", "sessiontape.load")


def test_every_public_name_is_served_and_listed() -> None:
    out = _python(
        """
        import sessiontape
        names = sorted(sessiontape.__all__)
        assert set(names) <= set(dir(sessiontape))
        values = {n: getattr(sessiontape, n) for n in names}
        from sessiontape.cassette import load
        from sessiontape.tape import ReplayTape
        assert values["load"] is load and values["ReplayTape"] is ReplayTape
        print(len(names))
        """
    )
    assert int(out) == len(sessiontape.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        sessiontape.no_such_name  # type: ignore[attr-defined]  # noqa: B018


def test_star_import_gives_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from sessiontape import *", namespace)
    assert set(sessiontape.__all__) <= set(namespace)


# -- a pytest run that never uses a tape -------------------------------------------------

_REPORT_MODULES = """
import json, os, sys

def pytest_unconfigure(config):
    with open(os.environ["MODULES_OUT"], "w") as fh:
        json.dump(sorted(sys.modules), fh)
"""


def _modules_of_a_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, test: str, *args: str
) -> set[str]:
    """The modules loaded by a whole ``pytest`` run of ``test`` with only sessiontape's
    plugin (the project's conftest reports them when pytest unconfigures)."""
    pytester.makeconftest(_REPORT_MODULES)
    pytester.makepyfile(test_one=test)
    # Files pytest looks at and passes by: only a ``.jsonl`` file is read as a cassette.
    pytester.makefile(".json", notes='{"kind": "session_start"}\n')
    pytester.makefile(".txt", readme="hello\n")
    out = pytester.path / "modules.json"
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("MODULES_OUT", str(out))
    result = pytester.runpytest_subprocess(
        "-p", "sessiontape.plugin", "-p", "no:cacheprovider", *args
    )
    result.assert_outcomes(passed=1)
    modules = set(json.loads(out.read_text()))
    assert "sessiontape.plugin" in modules  # the plugin was there
    return modules


def test_a_run_that_uses_no_tape_loads_nothing_heavy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    modules = _modules_of_a_run(pytester, monkeypatch, "def test_one():\n    assert 1 + 1 == 2\n")
    assert sorted(m for m in modules if _heavy(m)) == []


def test_a_run_that_uses_the_fixture_loads_the_engines(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The positive control: the check above sees what the fixture loads.
    modules = _modules_of_a_run(
        pytester,
        monkeypatch,
        "def test_one(tape):\n    assert tape.process_runner(None) is not None\n",
        "--record-session",
    )
    assert {"msgspec", "sessiontape.recorder", "sessiontape.scrub"} <= modules


_REPORT_HOOKS = """
import json, os

def pytest_sessionfinish(session):
    # Which of pytest's hooks have an implementation of sessiontape's, after the tests.
    pm = session.config.pluginmanager
    ours = {}
    for name in dir(pm.hook):
        caller = getattr(pm.hook, name)
        if not hasattr(caller, "get_hookimpls"):
            continue
        for impl in caller.get_hookimpls():
            plugin = impl.plugin
            module = getattr(plugin, "__name__", None) or type(plugin).__module__
            if module.startswith("sessiontape"):
                ours.setdefault(name, []).append(impl.plugin_name)
    with open(os.environ["HOOKS_OUT"], "w") as fh:
        json.dump(ours, fh)
"""

#: The hooks a run that does not use sessiontape has from it: the options and the marker,
#: the mirror of the project's hooks, a look at each collected file's suffix and at each
#: failure. Nothing runs per test, at the end of collection or at the end of the session.
UNUSED_RUN_HOOKS = {
    "pytest_addoption",
    "pytest_configure",
    "pytest_plugin_registered",
    "pytest_collect_file",
    "pytest_runtest_makereport",
}


def _hooks_of_a_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, test: str, *args: str
) -> set[str]:
    """The pytest hooks sessiontape implements in a run of ``test`` (after the tests)."""
    pytester.makeconftest(_REPORT_HOOKS)
    pytester.makepyfile(test_one=test)
    out = pytester.path / "hooks.json"
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("HOOKS_OUT", str(out))
    result = pytester.runpytest_subprocess(
        "-p", "sessiontape.plugin", "-p", "no:cacheprovider", *args
    )
    result.assert_outcomes(passed=1)
    return set(json.loads(out.read_text()))


def test_a_run_that_uses_no_tape_has_none_of_the_plugins_other_hooks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = _hooks_of_a_run(pytester, monkeypatch, "def test_one():\n    pass\n")
    assert hooks == UNUSED_RUN_HOOKS
    # No header line either: it is part of a run that uses sessiontape.
    assert (
        "sessiontape:" not in pytester.runpytest_subprocess("-p", "sessiontape.plugin").stdout.str()
    )


@pytest.mark.parametrize(
    ("args", "added"),
    [
        (("--sessiontape-report", "r.json"), {"pytest_report_header", "pytest_sessionfinish"}),
        (("-o", "sessiontape_record_mode=none"), {"pytest_report_header"}),
    ],
)
def test_an_option_or_an_ini_setting_brings_the_plugin_in(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    added: set[str],
) -> None:
    hooks = _hooks_of_a_run(pytester, monkeypatch, "def test_one():\n    pass\n", *args)
    assert added <= hooks - UNUSED_RUN_HOOKS


def test_the_fixture_brings_its_call_hook_in_with_the_first_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing of it is registered before the first tape; the hook comes with it, in time
    # for that test's own call phase (where a replay finishes: see test_tape_fixture).
    test = "def test_one(tape):\n    assert tape.process_runner(None) is not None\n"
    hooks = _hooks_of_a_run(pytester, monkeypatch, test)
    assert {"pytest_runtest_call", "pytest_runtest_logreport"} <= hooks - UNUSED_RUN_HOOKS


def test_the_chaos_options_load_the_engine_only_when_given(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The chaos options are in every run's parser; their defaults, resolved from the
    # replayer, are read only when chaos is on (here with no cassette to replay).
    modules = _modules_of_a_run(
        pytester, monkeypatch, "def test_one():\n    pass\n", "--sessiontape-chaos", "2"
    )
    assert "sessiontape.replayer" in modules
    help_text = pytester.runpytest_subprocess("-p", "sessiontape.plugin", "--help").stdout.str()
    from sessiontape.plugin import _options
    from sessiontape.replayer import DEFAULT_DEPTH, DEFAULT_SAMPLES, DEFAULT_STALL_LIMIT

    # The help names the replayer's defaults without importing it.
    assert (_options._HELP_DEPTH, _options._HELP_STALL_LIMIT) == (
        DEFAULT_DEPTH,
        DEFAULT_STALL_LIMIT,
    )
    assert _options._HELP_SAMPLES == DEFAULT_SAMPLES
    assert f"per schedule (default {DEFAULT_DEPTH})" in " ".join(help_text.split())


# -- real time, whoever froze it ----------------------------------------------------------

_RECORD_UNDER = """
import json, subprocess, sys
{start}
import sessiontape

path = sys.argv[1]
for _ in range(2):  # the second recording moves the first aside, with a timestamp
    with sessiontape.record(path) as tape:
        runner = tape.process_runner()
        runner.run([sys.executable, "-c", "pass"])
        tape.clock.sleep(0.01)
        moved = tape.moved_to
import datetime, time
print(json.dumps({{"moved": str(moved), "seen": time.time(), "now": str(tape.clock.now())}}))
{stop}
"""

_UNDER = {
    "freezegun": (
        "import freezegun\nfrozen = freezegun.freeze_time('2001-02-03 04:05:06')\nfrozen.start()",
        "frozen.stop()",
    ),
    "time-machine": (
        "import time_machine\n"
        "travel = time_machine.travel('2001-02-03 04:05:06Z', tick=False)\n"
        "travel.start()",
        "travel.stop()",
    ),
}


@pytest.mark.parametrize("tool", sorted(_UNDER))
def test_a_tape_recorded_under_frozen_time_carries_real_time(tool: str, tmp_path: Path) -> None:
    start, stop = _UNDER[tool]
    script = tmp_path / "app.py"
    script.write_text(_RECORD_UNDER.format(start=start, stop=stop))
    cassette = tmp_path / "run.jsonl"
    before = time.time_ns()
    result = subprocess.run(
        [sys.executable, str(script), str(cassette)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in os.environ.items() if k != sessiontape.ENV_VAR},
    )
    after = time.time_ns()
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    # The application's own reads were frozen: the tool was active all along.
    assert seen["seen"] == 981173106.0
    recording = sessiontape.load(cassette)
    stamps = [e.ts_ns for e in recording.entries]
    assert stamps
    assert all(before <= ns <= after for ns in stamps), (before, stamps, after)
    recorded_at = sessiontape.load(cassette).header.recorded_at
    assert before // 10**9 - 1 <= _epoch(recorded_at) <= after // 10**9 + 1, recorded_at
    # The recorder's clock and the writer's moved-aside stamp read real time too.
    assert not seen["now"].startswith("2001"), seen["now"]
    assert ".old." in seen["moved"]
    assert ".old.2001" not in seen["moved"]
    (call,) = [e for e in recording.entries if isinstance(e, sessiontape.ProcessCall)]
    assert call.duration_ns > 0


def _epoch(iso: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(iso).timestamp()
