"""Who wrote an event (``core/authorship.py``): the declarations refused, and what a history
line and a stored event show of them. Each test here was missing while a mutant of the module
passed the others."""

from __future__ import annotations

from typing import Any

import pytest

from stopline.core.authorship import (
    Author,
    author_from,
    author_problems,
    author_text,
    event_author,
)


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ({"kind": "ai", "name": "   ", "family": "f"}, "author.name must not be empty"),
        ({"kind": "ai", "name": "n", "family": "a\x1fb"}, "must not contain control characters"),
        ({"kind": "ai", "name": "a\x7fb", "family": "f"}, "must not contain control characters"),
        ({"kind": "ai", "name": "a\udc00b", "family": "f"}, "must not contain control characters"),
        ({"kind": "ai", "name": "n", "family": "f", "model": "x"}, "author.model is not a field"),
        ({"kind": "human", "name": ""}, "author.name is only for an ai author"),
        ({"kind": "automation", "family": None}, "author.family is only for an ai author"),
        (["kind", "ai"], "author must be a JSON object"),
    ],
)
def test_a_declaration_is_refused_for_what_is_wrong_with_it(declared: Any, problem: str) -> None:
    found = author_problems(declared)
    assert any(problem in p for p in found), found


def test_the_longest_allowed_and_other_printable_characters_pass() -> None:
    assert author_problems({"kind": "ai", "name": "n" * 200, "family": "~ \u00e9 \U0001f600"}) == []
    assert author_problems({"kind": "human"}) == []


def test_a_declared_name_of_a_person_is_part_of_the_declaration_checked() -> None:
    """``Author("human", "alice")`` declares a name a person's author may not carry: the
    declaration keeps it, so the check refuses it instead of dropping it unseen."""
    assert Author("human", "alice").declared() == {"kind": "human", "name": "alice"}
    assert Author("human").declared() == {"kind": "human"}
    assert Author("ai", "n", "f").declared() == {"kind": "ai", "name": "n", "family": "f"}
    assert author_problems(Author("human", "alice").declared()) == [
        "author.name is only for an ai author"
    ]


def test_what_an_event_records_and_a_history_line_shows() -> None:
    ai = author_from({"kind": "ai", "name": "helper-7", "family": "fam"})
    assert ai.to_plain() == {"kind": "ai", "name": "helper-7", "family": "fam"}
    assert Author("human", "alice", "x").to_plain() == {"kind": "human"}
    assert author_text(ai.to_plain()) == "ai helper-7 (fam)"
    assert author_text({"kind": "human"}) == "human"
    assert author_text(None) == "-"
    assert event_author({"author": {"kind": "human"}}) == {"kind": "human"}
    assert event_author({"author": "human"}) is None  # not a declaration: none recorded
    assert event_author({}) is None
