"""Noise masks, request comparison and the hooks that extend them."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import MismatchKind, Noise, UsageError
from sessiontape._hooks import get_plugin_manager
from sessiontape.replayer import MASKED, compare

PY = sys.executable


@pytest.mark.parametrize(
    ("mask", "request_", "expected"),
    [
        ("process.argv[1]", {"argv": ["git", "x"]}, {"argv": ["git", MASKED]}),
        ("process.argv[-1]", {"argv": ["a", "b"]}, {"argv": ["a", MASKED]}),
        ("process.argv[*]", {"argv": ["a", "b"]}, {"argv": [MASKED, MASKED]}),
        ("process.env.HOME", {"env": {"HOME": "/h", "A": "1"}}, {"env": {"HOME": MASKED,
                                                                         "A": "1"}}),
        ("process.env.*", {"env": {"HOME": "/h", "A": "1"}}, {"env": {"HOME": MASKED,
                                                                      "A": MASKED}}),
        ("process.env", {"env": None}, {"env": MASKED}),
        ("agent.request.prompt", {"args": [{"prompt": "p", "k": 1}]},
         {"args": [{"prompt": MASKED, "k": 1}]}),
        ('agent.kwargs["odd key"]', {"kwargs": {"odd key": 1}}, {"kwargs": {"odd key": MASKED}}),
        ("process.argv[9]", {"argv": ["a"]}, {"argv": ["a"]}),  # out of range: untouched
        ("process.nope.deeper", {"argv": ["a"]}, {"argv": ["a"]}),
    ],
)  # fmt: skip
def test_masks(mask: str, request_: dict[str, Any], expected: dict[str, Any]) -> None:
    boundary = mask.split(".")[0].split("[")[0]
    assert Noise([mask]).apply(boundary, request_) == expected


def test_masks_apply_only_to_their_boundary() -> None:
    noise = Noise(["process.argv[0]"])
    assert noise.apply("agent", {"argv": ["x"]}) == {"argv": ["x"]}
    assert not noise.applies_to("agent")
    assert noise.applies_to("process")


def test_patterns_substitute_every_string() -> None:
    noise = Noise(patterns=["uuid", (r"build-\d+", "build-N")])
    got = noise.apply(
        "agent",
        {"args": [{"id": "123e4567-e89b-12d3-a456-426614174000", "tag": "build-42"}]},
    )
    assert got == {"args": [{"id": "<uuid>", "tag": "build-N"}]}


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        ("[3].prompt", "must start with a boundary name"),
        ("process", "names a whole boundary"),
        ("process.argv[x]", "cannot read the path"),
        (".argv", "must start with a boundary name"),
    ],
)
def test_bad_masks_say_what_to_write(mask: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        Noise([mask])


def test_unknown_preset_and_bad_regex() -> None:
    with pytest.raises(UsageError, match="unknown noise preset 'uuids'; use one of hex, sha"):
        Noise(patterns=["uuids"])
    with pytest.raises(UsageError, match=r"noise pattern '\(' is not a valid regex"):
        Noise(patterns=[("(", "x")])


def test_coerce_and_merge() -> None:
    assert Noise.coerce(None).masks == ()
    assert Noise.coerce("process.argv[1]").masks == ("process.argv[1]",)
    merged = Noise.coerce({"masks": ["process.env.A"], "patterns": ["sha"]}) | Noise(
        ["agent.kwargs.x"]
    )
    assert merged.masks == ("process.env.A", "agent.kwargs.x")
    assert merged.patterns == ("sha",)
    assert not Noise()
    assert merged


def test_compare_reports_paths_and_totals() -> None:
    diffs, total = compare(
        "process",
        {"argv": ["git", "log", "-1"], "cwd": "{repo}"},
        {"argv": ["git", "log", "-2"], "cwd": "{repo}/sub"},
        noise=Noise(),
    )
    assert [(d.path, d.expected, d.actual) for d in diffs] == [
        ("argv[2]", "-1", "-2"),
        ("cwd", "{repo}", "{repo}/sub"),
    ]
    assert total == 2


def test_compare_with_a_matcher_that_rejects_equal_looking_requests() -> None:
    diffs, total = compare(
        "agent",
        {"method": "execute", "args": [1]},
        {"method": "execute", "args": [2]},
        noise=Noise(),
        matcher=lambda boundary, expected, actual: False,
    )
    assert [d.path for d in diffs] == ["args[0]"]
    assert total == 1


# -- hooks outside pytest: registered straight into the sessiontape plugin manager ------------


@pytest.fixture
def plugin() -> Iterator[types.ModuleType]:
    module = types.ModuleType("sessiontape_test_plugin")
    yield module
    pm = get_plugin_manager()
    if pm.is_registered(module):
        pm.unregister(module)


def _one_call_tape(path: Path, argv: list[str]) -> None:
    with sessiontape.record(path) as tape:
        tape.process_runner().run(argv)


def test_noise_hook_masks_every_replay(tmp_path: Path, plugin: types.ModuleType) -> None:
    path = tmp_path / "t.jsonl"
    _one_call_tape(path, [PY, "-c", "print(1)", "run-1"])
    plugin.sessiontape_noise = lambda: ["process.argv[3]"]  # type: ignore[attr-defined]
    get_plugin_manager().register(plugin)
    with sessiontape.replay(path) as tape:
        tape.process_runner().run([PY, "-c", "print(1)", "run-2"])
        assert tape.finish().ok


def test_match_hook_decides(tmp_path: Path, plugin: types.ModuleType) -> None:
    path = tmp_path / "t.jsonl"
    _one_call_tape(path, [PY, "-c", "print(1)", "A"])
    seen: list[tuple[str, Any]] = []

    def sessiontape_match(boundary: str, expected: Any, actual: Any) -> bool | None:
        seen.append((boundary, actual["argv"][3]))
        return actual["argv"][3].lower() == expected["argv"][3].lower()

    plugin.sessiontape_match = sessiontape_match  # type: ignore[attr-defined]
    get_plugin_manager().register(plugin)
    with sessiontape.replay(path) as tape:
        tape.process_runner().run([PY, "-c", "print(1)", "a"])
        assert tape.finish().ok
    assert seen == [("process", "a")]


def test_scrubbers_hook_redacts_at_record_time(tmp_path: Path, plugin: types.ModuleType) -> None:
    plugin.sessiontape_scrubbers = lambda: [  # type: ignore[attr-defined]
        lambda s: s.replace("internal.corp", "[REDACTED:host]")
    ]
    get_plugin_manager().register(plugin)
    path = tmp_path / "t.jsonl"
    _one_call_tape(path, [PY, "-c", "print('ssh internal.corp')"])
    assert "internal.corp" not in path.read_text()
    (call,) = sessiontape.load(path).entries_for("process")
    assert call.stdout == "ssh [REDACTED:host]\n"


def test_lookahead_skips_calls_today_code_no_longer_makes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with sessiontape.record(path) as tape:
        runner = tape.process_runner()
        for word in ("one", "two", "three"):
            runner.run([PY, "-c", f"print('{word}')"])
    with sessiontape.replay(path) as tape:
        runner = tape.process_runner()
        runner.run([PY, "-c", "print('one')"])
        assert runner.run([PY, "-c", "print('three')"]).stdout == b"three\n"
        report = tape.finish()
    assert [(m.kind, m.seq) for m in report.mismatches] == [(MismatchKind.UNCONSUMED, 2)]
