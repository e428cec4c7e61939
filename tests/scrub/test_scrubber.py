"""The scrubber's memos give the same answers as scrubbing afresh, whatever came before.

Recording remembers argv words, dict keys and short texts per scrubber; what it
remembers must never change what a later value scrubs to (a secret option's value
redacted in one command is not a secret in the next; a secret key stays secret).
"""

from __future__ import annotations

from sessiontape.cassette import ProcessCall, StoreMutation
from sessiontape.scrub import PathRoots, Scrubber, scrub_entry, scrub_fields

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
ROOTS = PathRoots({"repo": "/srv/app"})


def test_argv_words_are_judged_the_same_in_every_command() -> None:
    scrubber = Scrubber(ROOTS)
    commands = [
        (["gh", "--token", "abc", "api"], ["gh", "--token", "[REDACTED]", "api"]),
        (["echo", "abc", "--token"], ["echo", "abc", "--token"]),
        (["gh", "--token", "-v"], ["gh", "--token", "-v"]),
        (["gh", "--token", "def"], ["gh", "--token", "[REDACTED]"]),
        (
            ["aws", "set", "aws_secret_access_key", "K"],
            ["aws", "set", "aws_secret_access_key", "[REDACTED]"],
        ),
        (["x", "aws_secret_access_key"], ["x", "aws_secret_access_key"]),
        (["ls", "/srv/app/src", "--api-key=v"], ["ls", "{repo}/src", "--api-key=[REDACTED]"]),
        (["ls", "--api-key=", "/srv/app"], ["ls", "--api-key=", "{repo}"]),
        (["echo", TOKEN], ["echo", "[REDACTED:github]"]),
    ]
    for argv, expected in commands + commands:  # the second time, every word is known
        assert scrubber.argv(list(argv)) == expected
        assert Scrubber(ROOTS).argv(list(argv)) == expected  # as a fresh scrubber says


def test_argv_words_without_redaction_are_kept() -> None:
    scrubber = Scrubber(ROOTS, redact=False)
    for _ in range(2):
        assert scrubber.argv(["gh", "--token", "abc", "/srv/app"]) == [
            "gh",
            "--token",
            "abc",
            "{repo}",
        ]


def test_dict_keys_are_judged_the_same_in_every_document() -> None:
    scrubber = Scrubber(ROOTS)
    documents = [
        (
            {"password": "x", "/srv/app/a": 1, "name": "n"},
            {"password": "[REDACTED]", "{repo}/a": 1, "name": "n"},
        ),
        ({"name": {"password": ["y", 2]}}, {"name": {"password": ["[REDACTED]", 2]}}),
        ({1: "a", "note": TOKEN}, {1: "a", "note": "[REDACTED:github]"}),
        ([{"name": "/srv/app"}, "/srv/app/x", 3, None], [{"name": "{repo}"}, "{repo}/x", 3, None]),
    ]
    for document, expected in documents + documents:
        assert scrubber.data(document) == expected


def test_scrub_entry_replaces_what_it_scrubs_and_keeps_the_rest() -> None:
    scrubber = Scrubber(ROOTS)
    clean = ProcessCall(seq=1, ts_ns=1, mono_ns=1, argv=["git"], cwd="/elsewhere", stdout="ok")
    scrubbed = scrub_entry(clean, scrubber)
    assert scrubbed == clean
    dirty = ProcessCall(seq=2, ts_ns=1, mono_ns=1, argv=["git", TOKEN], cwd="/srv/app/x")
    assert scrub_entry(dirty, scrubber) == ProcessCall(
        seq=2, ts_ns=1, mono_ns=1, argv=["git", "[REDACTED:github]"], cwd="{repo}/x"
    )
    mutation = StoreMutation(seq=3, ts_ns=1, mono_ns=1, operation="put", args=[{"token": "t"}])
    assert scrub_entry(mutation, scrubber).args == [{"token": "[REDACTED]"}]


def test_scrub_fields_names_only_the_fields_that_change() -> None:
    scrubber = Scrubber(ROOTS)
    entry = StoreMutation(
        seq=1, ts_ns=1, mono_ns=1, operation="put", args=["a"], kwargs={"p": "/srv/app"}, result=[1]
    )
    assert scrub_fields(entry, scrubber) == {"kwargs": {"p": "{repo}"}}


def test_long_texts_are_remembered_by_content_within_a_budget() -> None:
    scrubber = Scrubber(ROOTS)
    body = "line in /srv/app\n" * 200  # past the short-text memo
    texts = [f"{i} {TOKEN} {body}" for i in range(400)]  # ~5 MB of inputs and results
    expected = [Scrubber(ROOTS).text(t) for t in texts]
    assert expected[0].startswith("0 [REDACTED:github] line in {repo}\n")
    for _ in range(2):  # the second round finds some remembered, the budget forgot others
        # A copy, equal but not the same object: found by content, not by identity.
        assert [scrubber.text("".join(list(t))) for t in texts] == expected
    assert scrubber._long_chars <= 2 * 1024 * 1024 + 2 * len(texts[0])
