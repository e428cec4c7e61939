"""Path roots: collapse finds roots by plain string search, exactly where a regex would.

``PathRoots`` used to compile one regex per set of roots, most of what a recording's
set-up cost. The regex it used is kept here as the oracle the string search must agree
with, on every text hypothesis can build from the roots' spellings and the characters
that decide a path component's bounds.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontape.scrub import PathRoots

_PATH_CHAR = r"[\w.~+@%#$!=-]"
_PATH_CHAR_BEFORE = r"[\w.~+@%#$!-]"


def regex_collapse(roots: PathRoots, text: str) -> str:
    """What collapse() gave when it was one regex per set of roots (the oracle)."""
    table = {}
    for name, path in roots.as_dict().items():
        table.setdefault(path, "{" + name + "}")
    if not table:
        return text
    by_first: dict[str, list[str]] = {}
    for spelling in sorted(table, key=len, reverse=True):
        by_first.setdefault(spelling[0], []).append(re.escape(spelling[1:]))
    alternatives = "|".join(
        f"{re.escape(c)}(?<!{_PATH_CHAR_BEFORE}{re.escape(c)})(?:{'|'.join(rests)})"
        for c, rests in by_first.items()
    )
    parts = re.compile(f"((?:{alternatives}))(?!{_PATH_CHAR})").split(text)
    parts[1::2] = [table[found] for found in parts[1::2]]
    return "".join(parts)


# Roots inside each other, sharing prefixes, one of them a prefix of another's component.
ROOTS = {"tmp": "/tmp", "work": "/tmp/w", "repo": "/tmp/w/repo", "home": "/home/a", "ho": "/ho"}
ATOMS = [*ROOTS.values(), "/", "x", "repo", "é", "²", "_", ".", "~", "+", "@", "%", "#", "$"]
ATOMS += ["!", "=", "-", " ", ":", "'", '"', "{", "}", "\n", "\\"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(ATOMS), max_size=12).map("".join))
def test_collapse_agrees_with_the_regex_it_replaced(text: str) -> None:
    # Roots under /tmp are not symlinks here: the spellings are the given ones.
    roots = PathRoots(ROOTS)
    assert roots.collapse(text) == regex_collapse(roots, text)


def test_a_text_without_the_first_character_of_any_root_is_returned_as_is() -> None:
    roots = PathRoots({"repo": "/srv/app"})
    text = "no slash at all: srv app"
    assert roots.collapse(text) is text


def test_roots_starting_with_other_characters_are_found_too() -> None:
    roots = PathRoots({"win": "C:\\Users\\ann", "srv": "/srv"})
    assert roots.collapse(r"C:\Users\ann\x /srv/y C:/Users/ann/z") == "{win}\\x {srv}/y {win}/z"


def test_expand_is_compiled_when_first_used_and_kept(tmp_path: Path) -> None:
    roots = PathRoots({"work": str(tmp_path)})
    assert roots.expand("nothing to expand") == "nothing to expand"
    assert roots.expand("{work}/a {other}/b") == f"{tmp_path}/a {{other}}/b"
    assert roots.expand("{work}") == str(tmp_path)


def test_no_roots_collapse_and_expand_nothing() -> None:
    roots = PathRoots({})
    assert roots.collapse("/tmp/x") == "/tmp/x"
    assert roots.expand("{tmp}/x") == "{tmp}/x"


def test_expand_with_one_kind_of_placeholder_replaces_every_occurrence() -> None:
    roots = PathRoots({"repo": "/srv/app", "home": "/home/ann"})
    assert roots.expand("{repo}/a:{repo}/b") == "/srv/app/a:/srv/app/b"
    assert roots.expand("{home}") == "/home/ann"
    assert roots.expand("{ only a brace }") == "{ only a brace }"


def test_expand_with_two_kinds_never_reads_a_root_as_a_placeholder() -> None:
    # A root whose own text looks like another root's placeholder: expanded in one pass,
    # the inserted text is never expanded again.
    roots = PathRoots({"repo": "/srv/{home}", "home": "/home/ann"})
    assert roots.expand("{repo}/x {home}/y") == "/srv/{home}/x /home/ann/y"
    assert roots.expand("{repo}/x") == "/srv/{home}/x"
