"""The replay report: field diffs, nearest candidate, JSON round trip and text rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessiontape.cassette import ErrorInfo
from sessiontape.report import (
    MISSING,
    NEAREST_SCAN_LIMIT,
    Candidate,
    FieldDiff,
    Mismatch,
    MismatchKind,
    ReplayReport,
    compute_ok,
    diff_values,
    diff_values_counted,
    mask_path,
    nearest_candidate,
    suggest_next_step,
    summarize_value,
)


def _report(mismatches: list[Mismatch], **overrides: Any) -> ReplayReport:
    fields: dict[str, Any] = {
        "cassette": "cassettes/x.jsonl",
        "run_id": "run-1",
        "ok": compute_ok(mismatches, 40),
        "strict": False,
        "loaded": 120,
        "consumed": 40,
        "unconsumed": 80,
        "extra": 1,
        "mismatches": mismatches,
        "context": ["seq 39 worker-2 process git status", "seq 40 worker-2 agent execute"],
        "workers": ["main", "worker-1", "worker-2"],
    }
    fields.update(overrides)
    return ReplayReport(**fields)


def _argv_mismatch() -> Mismatch:
    return Mismatch(
        MismatchKind.ARGUMENT_MISMATCH,
        41,
        "worker-2",
        "process",
        "The git call's argv differs from the recorded one.",
        diffs=diff_values(
            {"argv": ["git", "checkout", "-b", "main"]},
            {"argv": ["git", "checkout", "-b", "master"]},
        ),
        nearest=Candidate(seq=57, worker="worker-1", summary="git checkout -b master", distance=0),
    )


def _exhausted() -> Mismatch:
    return Mismatch(
        MismatchKind.EXHAUSTED,
        None,
        "worker-1",
        "agent",
        "The agent was called more often than recorded.",
        actual={"prompt": "hi"},
    )


# -- diff_values ---------------------------------------------------------------------------


def test_equal_values_have_no_diff() -> None:
    value = {"argv": ["git", "status"], "env": {"HOME": "/root"}, "n": 1.5, "b": b"\x00"}
    assert diff_values(value, {**value}) == []


def test_nested_dict_list_tuple_paths() -> None:
    expected = {"result": {"payload": {"items": [{"id": 1}, {"id": 2}]}}, "pair": (1, (2, 3))}
    actual = {"result": {"payload": {"items": [{"id": 1}, {"id": 9}]}}, "pair": [1, [2, 4]]}
    assert diff_values(expected, actual) == [
        FieldDiff("result.payload.items[1].id", 2, 9),
        FieldDiff("pair[1][1]", 3, 4),
    ]


def test_path_prefix() -> None:
    assert diff_values({"prompt": "a"}, {"prompt": "b"}, "request") == [
        FieldDiff("request.prompt", "a", "b")
    ]
    assert diff_values([1], [2], "argv") == [FieldDiff("argv[0]", 1, 2)]


def test_top_level_list_and_scalar_paths() -> None:
    assert diff_values([1, 2], [1, 3]) == [FieldDiff("[1]", 2, 3)]
    assert diff_values(1, 2) == [FieldDiff("", 1, 2)]


def test_missing_keys_on_either_side() -> None:
    assert diff_values({"env": {"HOME": "/a", "X": "1"}}, {"env": {"X": "1", "PATH": "/b"}}) == [
        FieldDiff("env.HOME", "/a", MISSING),
        FieldDiff("env.PATH", MISSING, "/b"),
    ]


def test_list_length_changes() -> None:
    assert diff_values({"argv": ["a", "b", "c"]}, {"argv": ["a"]}) == [
        FieldDiff("argv[1]", "b", MISSING),
        FieldDiff("argv[2]", "c", MISSING),
    ]
    assert diff_values(["a"], ["a", "b"]) == [FieldDiff("[1]", MISSING, "b")]


def test_identifier_and_quoted_keys() -> None:
    expected = {"a key": 1, "ok_name": 2, "x-y": 3, "1st": 4, 5: 5, 'q"uote': 6}
    actual = {"a key": 0, "ok_name": 0, "x-y": 0, "1st": 0, 5: 0, 'q"uote': 0}
    assert [d.path for d in diff_values({"kw": expected}, {"kw": actual})] == [
        'kw["a key"]',
        "kw.ok_name",
        'kw["x-y"]',
        'kw["1st"]',
        'kw["5"]',
        'kw["q\\"uote"]',
    ]


def test_type_changes_are_one_diff() -> None:
    assert diff_values({"r": {"a": 1}}, {"r": [1]}) == [FieldDiff("r", {"a": 1}, [1])]
    assert diff_values({"r": None}, {"r": "x"}) == [FieldDiff("r", None, "x")]
    assert diff_values("x", b"x") == [FieldDiff("", "x", b"x")]


def test_number_semantics() -> None:
    # JSON tells booleans from numbers, but not 1 from 1.0.
    assert diff_values(1, True) == [FieldDiff("", 1, True)]
    assert diff_values(1, 1.0) == []
    assert diff_values(float("nan"), float("nan")) == []


def test_structs_compare_field_by_field_even_against_dicts() -> None:
    recorded = {"type": "ValueError", "message": "bad", "traceback": None}
    assert diff_values(recorded, ErrorInfo("ValueError", "worse")) == [
        FieldDiff("message", "bad", "worse")
    ]


def test_short_strings_have_no_detail() -> None:
    assert diff_values("main", "master") == [FieldDiff("", "main", "master", None)]


def test_long_single_line_string_detail() -> None:
    expected = "fix the parser for nested lists in the config loader"
    actual = "fix the parser for nested dicts in the config loader"
    [diff] = diff_values(expected, actual)
    assert diff.detail == (
        "first difference at offset 26: "
        "expected ...' for nested lists in the'... got ...' for nested dicts in the'..."
    )


def test_multi_line_string_detail() -> None:
    [diff] = diff_values({"stdout": "a\nb = 2\nc\n"}, {"stdout": "a\nb = 3\nc\n"})
    assert diff.path == "stdout"
    assert diff.detail == "first difference at line 2: expected 'b = 2\\n' got 'b = 3\\n'"


def test_multi_line_detail_end_of_text_and_line_endings() -> None:
    [short] = diff_values("a\nb\n", "a\n")
    assert short.detail == "first difference at line 2: expected 'b\\n' got <end of text>"
    [ending] = diff_values("a\nb\n", "a\nb")
    assert ending.detail == "first difference at line 2: expected 'b\\n' got 'b'"


def test_multi_line_detail_windows_long_lines() -> None:
    expected = "header\n" + "x" * 40 + "A" + "y" * 40 + "\n"
    actual = "header\n" + "x" * 40 + "B" + "y" * 40 + "\n"
    [diff] = diff_values(expected, actual)
    assert diff.detail == (
        "first difference at line 2, column 41: "
        "expected ...'xxxxxxxxxxxxAyyyyyyyyyyy'... got ...'xxxxxxxxxxxxByyyyyyyyyyy'..."
    )


def test_limit_and_total_count() -> None:
    expected = {f"k{i}": i for i in range(120)}
    diffs, total = diff_values_counted(expected, {}, limit=5)
    assert [d.path for d in diffs] == ["k0", "k1", "k2", "k3", "k4"]
    assert total == 120
    assert len(diff_values(expected, {})) == 50
    assert diff_values(expected, {}, limit=0) == []


def test_mask_path() -> None:
    assert mask_path("process", "argv[3]") == "process.argv[3]"
    assert mask_path("agent", "kwargs.prompt") == "agent.kwargs.prompt"
    assert mask_path("agent", '["a key"]') == 'agent["a key"]'
    assert mask_path("agent", "") == "agent"
    assert _argv_mismatch().mask_paths == ["process.argv[3]"]


# -- nearest_candidate ---------------------------------------------------------------------


def test_nearest_candidate_picks_fewest_differences() -> None:
    actual = {"argv": ["git", "merge", "feature"], "cwd": "/repo"}
    candidates = [
        (3, "w1", {"argv": ["git", "status"], "cwd": "/repo"}, "git status"),
        (7, "w2", {"argv": ["git", "merge", "main"], "cwd": "/repo"}, "git merge main"),
        (9, "w1", {"argv": ["ls"], "cwd": "/"}, "ls"),
    ]
    assert nearest_candidate(actual, candidates) == Candidate(
        seq=7, worker="w2", summary="git merge main", distance=1
    )


def test_nearest_candidate_ties_go_to_lowest_seq() -> None:
    actual = {"argv": ["a", "b"]}
    candidates = [
        (12, "w3", {"argv": ["a", "x"]}, "late"),
        (4, "w2", {"argv": ["y", "b"]}, "early"),
        (8, "w1", {"argv": ["a", "z"]}, "middle"),
    ]
    assert nearest_candidate(actual, candidates) == Candidate(4, "w2", "early", 1)


def test_nearest_candidate_none_and_exact() -> None:
    assert nearest_candidate({"a": 1}, []) is None
    assert nearest_candidate({"a": 1}, iter([(2, "w", {"a": 1}, "same")])) == Candidate(
        2, "w", "same", 0
    )


def test_nearest_candidate_scans_at_most_the_limit() -> None:
    far = [(i, "w", {"a": -1}, "far") for i in range(NEAREST_SCAN_LIMIT)]
    exact = (NEAREST_SCAN_LIMIT + 1, "w", {"a": 1}, "exact")
    assert nearest_candidate({"a": 1}, [*far, exact]) == Candidate(0, "w", "far", 1)


# -- next steps ----------------------------------------------------------------------------


def test_suggest_next_step_argument_mismatch() -> None:
    one = [FieldDiff("argv[3]", "main", "master")]
    assert suggest_next_step(MismatchKind.ARGUMENT_MISMATCH, "process", "worker-2", one) == (
        "If argv[3] is noise, add the mask 'process.argv[3]'; otherwise accept today's "
        "request with --sessiontape-update."
    )
    two = [FieldDiff("kwargs.prompt", "a", "b"), FieldDiff("kwargs.seed", 1, 2)]
    assert suggest_next_step(MismatchKind.ARGUMENT_MISMATCH, "agent", "w", two) == (
        "If kwargs.prompt and kwargs.seed are noise, add the masks 'agent.kwargs.prompt' and "
        "'agent.kwargs.seed'; otherwise accept today's request with --sessiontape-update."
    )
    many = [FieldDiff(f"argv[{i}]", "a", "b") for i in range(5)]
    assert suggest_next_step(MismatchKind.ARGUMENT_MISMATCH, "process", "w", many) == (
        "If these 5 fields are noise, add masks such as 'process.argv[0]', 'process.argv[1]' "
        "and 'process.argv[2]'; otherwise accept today's request with --sessiontape-update."
    )


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        (MismatchKind.UNEXPECTED_CALL, "never did"),
        (MismatchKind.EXHAUSTED, "more 'process' calls in worker 'w' than were recorded"),
        (MismatchKind.UNCONSUMED, "early exit"),
        (MismatchKind.STORE_MISMATCH, "seeded snapshot"),
        (MismatchKind.OUTCOME_MISMATCH, "different outcome"),
        (MismatchKind.ERROR_MISMATCH, "if the bug is fixed, re-record"),
        (MismatchKind.ORDER_MISMATCH, "different order"),
    ],
)
def test_suggest_next_step_other_kinds(kind: MismatchKind, needle: str) -> None:
    step = suggest_next_step(kind, "process", "w", [])
    assert needle in step
    assert "\n" not in step


@pytest.mark.parametrize(
    ("kind", "boundary", "command"),
    [
        (MismatchKind.UNEXPECTED_CALL, "process", "--sessiontape-live=process@w "),
        (MismatchKind.EXHAUSTED, "agent", "--sessiontape-live=agent@w "),
        (MismatchKind.UNEXPECTED_CALL, "store", "--sessiontape-update"),
        (MismatchKind.UNCONSUMED, "process", "--sessiontape-update"),
        (MismatchKind.STORE_MISMATCH, "store", "--sessiontape-update"),
        (MismatchKind.OUTCOME_MISMATCH, "session", "--sessiontape-update"),
    ],
)
def test_next_steps_name_the_command_that_fixes_the_mismatch(
    kind: MismatchKind, boundary: str, command: str
) -> None:
    assert command in suggest_next_step(kind, boundary, "w", [])


# -- ok, first, JSON -----------------------------------------------------------------------


def test_compute_ok() -> None:
    assert compute_ok([], 3) is True
    assert compute_ok([], 0) is False
    assert compute_ok([_exhausted()], 3) is False
    assert ReplayReport.compute_ok([], 1) is True


def test_first_is_the_first_in_timeline_order() -> None:
    # The engine stores mismatches in timeline order; the report keeps that order.
    late = Mismatch(MismatchKind.UNCONSUMED, 90, "w", "process", "Never requested.")
    early = _argv_mismatch()
    assert _report([early, _exhausted(), late]).first is early
    assert _report([early, _exhausted(), late]).ordered_mismatches()[1].kind is (
        MismatchKind.EXHAUSTED
    )
    unexpected = Mismatch(MismatchKind.UNEXPECTED_CALL, None, "w", "store", "No queue.")
    assert _report([unexpected, _exhausted()]).first is unexpected
    assert _report([]).first is None


def test_json_round_trip() -> None:
    report = _report(
        [_exhausted(), _argv_mismatch()],
        recorded_duration_ns=12_300_000_000,
        replay_duration_ns=310_000_000,
        crashed=True,
    )
    missing = Mismatch(
        MismatchKind.ARGUMENT_MISMATCH,
        5,
        "w",
        "process",
        "The env differs.",
        diffs=diff_values({"env": {"HOME": "/a"}}, {"env": {}}),
        omitted_diffs=2,
        next_step="Mask it.",
    )
    report.mismatches.append(missing)
    data = report.to_json()
    back = ReplayReport.from_json(data)
    assert back == report
    assert back.mismatches[2].diffs[0].actual is MISSING
    assert back.mismatches[0].kind is MismatchKind.EXHAUSTED
    assert json.loads(data)["mismatches"][2]["diffs"][0]["actual"] == "<missing>"


def test_json_encodes_bytes_and_foreign_objects() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    m = Mismatch(
        MismatchKind.STORE_MISMATCH,
        3,
        "w",
        "store",
        "The store returned another row.",
        expected=b"\x00\xff",
        actual={"o": Opaque(), 7: (1, 2)},
    )
    as_dict = _report([m]).to_dict()
    assert as_dict["mismatches"][0]["expected"] == {"base64": "AP8="}
    assert as_dict["mismatches"][0]["actual"] == {"o": "<opaque>", "7": [1, 2]}
    assert as_dict["mismatches"][0]["kind"] == "store_mismatch"
    assert json.loads(_report([m]).to_json()) == as_dict


# -- render --------------------------------------------------------------------------------


def test_render_full_block() -> None:
    report = _report(
        [_argv_mismatch(), _exhausted()],
        recorded_duration_ns=12_300_000_000,
        replay_duration_ns=310_000_000,
    )
    assert report.render() == "\n".join(
        [
            "replay of cassettes/x.jsonl diverged at seq 41 (worker-2, process): argument_mismatch",
            "calls: 120 loaded, 40 consumed, 80 unconsumed, 1 extra; 2 mismatches; lenient; "
            "recorded 12.3 s, replayed 310.0 ms",
            "workers: main, worker-1, worker-2",
            "context before the divergence:",
            "  seq 39 worker-2 process git status",
            "  seq 40 worker-2 agent execute",
            "",
            "mismatch 1 of 2: argument_mismatch at seq 41 (worker-2, process)",
            "  The git call's argv differs from the recorded one.",
            "  argv[3]: expected 'main' got 'master'",
            "  nearest recorded call: seq 57 (worker-1), same request: git checkout -b master",
            "  next: If argv[3] is noise, add the mask 'process.argv[3]'; otherwise accept "
            "today's request with --sessiontape-update.",
            "",
            "mismatch 2 of 2: exhausted at an unrecorded call (worker-1, agent)",
            "  The agent was called more often than recorded.",
            "  actual:   {'prompt': 'hi'}",
            "  next: The code makes more 'agent' calls in worker 'worker-1' than were recorded; "
            "check for a loop that runs longer than before, or re-record it with "
            "--sessiontape-live=agent@worker-1 (add --sessiontape-update to replace the tape) "
            "if that is intended.",
        ]
    )


def test_render_prints_the_first_divergence_first() -> None:
    late = Mismatch(MismatchKind.UNCONSUMED, 90, "worker-1", "process", "Never requested.")
    text = _report([_argv_mismatch(), late, _exhausted()]).render()
    assert text.startswith("replay of cassettes/x.jsonl diverged at seq 41 (worker-2, process)")
    assert text.index("at seq 41") < text.index("at seq 90") < text.index("unrecorded call (")


def test_render_detail_omitted_diffs_next_step_and_cap() -> None:
    diffs, total = diff_values_counted(
        {"stdout": "a\nb\n", "x": 1, "y": 2, "z": 3}, {"stdout": "a\nc\n"}, limit=2
    )
    m = Mismatch(
        MismatchKind.STORE_MISMATCH,
        7,
        "w",
        "store",
        "The store returned another row.",
        diffs=diffs,
        omitted_diffs=total - len(diffs),
        next_step="Check the seed.",
    )
    others = [Mismatch(MismatchKind.UNCONSUMED, 100 + i, "w", "process", "Skip.") for i in range(3)]
    text = _report([m, *others]).render(max_mismatches=2)
    assert (
        "  stdout: expected 'a\\nb\\n' got 'a\\nc\\n'\n"
        "    first difference at line 2: expected 'b\\n' got 'c\\n'\n"
        "  x: expected 1 got <missing>\n"
        "  ... and 2 more differing fields\n"
        "  next: Check the seed.\n"
    ) in text
    assert text.endswith("\n\nand 2 more mismatches (see the JSON report)")
    assert text.count("\nmismatch ") == 2


def test_render_match_and_served_nothing() -> None:
    ok = _report([], ok=True, loaded=120, consumed=120, unconsumed=0, extra=0, workers=[])
    assert ok.render() == (
        "replay of cassettes/x.jsonl matched: 120 calls served\n"
        "calls: 120 loaded, 120 consumed, 0 unconsumed, 0 extra; 0 mismatches; lenient"
    )
    nothing = _report([], ok=compute_ok([], 0), consumed=0, unconsumed=120, extra=0)
    assert nothing.ok is False
    headline = nothing.render().splitlines()[0]
    assert headline == (
        "replay of cassettes/x.jsonl served nothing: none of the 120 recorded calls was requested"
    )
    assert "context before the divergence" not in nothing.render()


def test_render_crashed_and_result_kinds_show_both_sides() -> None:
    m = Mismatch(
        MismatchKind.ERROR_MISMATCH,
        200,
        "main",
        "session",
        "The recorded ValueError was not raised.",
        expected={"type": "ValueError", "message": "bad"},
        actual=None,
    )
    text = _report([m], crashed=True, strict=True).render()
    assert "; strict; tape of a crashed session\n" in text
    assert "  expected: {'type': 'ValueError', 'message': 'bad'}\n  actual:   None\n" in text
    assert "re-record to update the regression tape" in text


def test_render_color() -> None:
    text = _report([_argv_mismatch()]).render(color=True)
    assert text.startswith("\x1b[1;31mreplay of cassettes/x.jsonl diverged at seq 41")
    assert "expected \x1b[32m'main'\x1b[0m got \x1b[31m'master'\x1b[0m" in text
    assert "\x1b" not in _report([_argv_mismatch()]).render()


# -- summarize_value -----------------------------------------------------------------------


def test_summarize_value() -> None:
    assert summarize_value("short") == "'short'"
    assert summarize_value("x" * 200, 20) == "'xxxxxxxx...xxxxxxx'"
    assert len(summarize_value(list(range(10_000)), 40)) <= 40
    assert summarize_value({"a": 1, "b": [1, 2]}) == "{'a': 1, 'b': [1, 2]}"
    assert summarize_value((1,)) == "(1,)"
    assert summarize_value(MISSING) == "<missing>"
    text = summarize_value({"path": "/very/long/" + "d" * 200 + "/end"}, 40)
    assert len(text) <= 40
    assert text.startswith("{'path': '/very/lo")
    assert text.endswith("/end'}")
