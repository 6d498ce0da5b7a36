"""The input boundary's edges that its property tests did not reach (each found by a mutant of
``core/limits.py`` that passed them): the traceback kept of a hook, the text a path shows for
a key, the plain-text check of names and references, the size of ``false``, the members of an
oversized container left uninspected, and a ``to_plain`` that answers with itself."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from stopline.core.canonical import canonical_json
from stopline.core.limits import (
    MAX_TRACEBACK,
    Limits,
    check,
    show,
    text_problem,
    truncate_traceback,
)


def test_a_traceback_at_the_limit_is_kept_whole_and_a_longer_one_keeps_its_end() -> None:
    exact = "x" * (MAX_TRACEBACK - 1) + "E"
    assert truncate_traceback(exact) == exact
    longer = "a" * 10 + exact
    kept = truncate_traceback(longer)
    assert len(kept) == MAX_TRACEBACK
    assert kept == "...\n" + longer[-(MAX_TRACEBACK - 4) :]
    assert truncate_traceback("abcdefghij", limit=8) == "...\nghij"


def test_a_traceback_with_a_lone_surrogate_comes_back_as_valid_unicode() -> None:
    kept = truncate_traceback("KeyError: '\ud800'")
    kept.encode("utf-8")  # would raise on a lone surrogate
    assert kept == "KeyError: '?'"


def codes(value: Any, limits: Limits) -> list[tuple[str, str]]:
    return [(v.path, v.limit) for v in check(value, limits)]


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("plain_1", "$.plain_1"),
        ("1st", '$["1st"]'),  # an identifier does not start with a digit
        ("a-b", '$["a-b"]'),
        ("caf\u00e9", '$["caf\\u00e9"]'),  # the path is ASCII
        ("k" * 70, "$." + "k" * 70),  # an identifier, whole
        ("k-" * 35, '$["' + "k-" * 32 + '..."]'),  # another key is cut at 64 characters
    ],
)
def test_a_path_shows_a_key_as_an_identifier_or_as_ascii_json(key: str, path: str) -> None:
    assert codes({key: "xy"}, Limits(max_string_length=1, max_key_length=100)) == [
        (path, "string_length")
    ]


def test_text_problem_names_a_nul_a_lone_surrogate_and_what_is_not_text() -> None:
    assert text_problem("alice") is None
    assert text_problem("\x01 and \x7f are allowed") is None
    assert text_problem("ab\x00c") == "holds a NUL character at position 3"
    surrogate = text_problem("ab\udcff")
    assert surrogate is not None and surrogate.startswith("not valid Unicode")
    assert "position 3" in surrogate
    assert text_problem(b"alice") == "must be text, not bytes"  # type: ignore[arg-type]


def test_show_cuts_a_long_text_at_forty_characters() -> None:
    assert show("\u00e9") == "'\\xe9'"
    assert show("y" * 41) == repr("y" * 40 + "...")
    assert show("z" * 40) == repr("z" * 40)


def test_false_counts_five_bytes() -> None:
    value = [False, True, None]
    size = len(canonical_json(value).encode("utf-8"))
    assert size == len("[false,true,null]")
    assert check(value, Limits(max_bytes=size)) == []
    assert codes(value, Limits(max_bytes=size - 1)) == [("$", "bytes")]


def test_the_members_past_the_limit_are_not_inspected() -> None:
    """Only the first ``max_members`` of an oversized array or object are looked at: the width
    is the violation, and an answer for an enormous one comes at once."""
    limits = Limits(max_members=3)
    assert codes([1, 2, 3, float("nan")], limits) == [("$", "members")]
    assert codes({"a": 1, "b": 2, "c": 3, "d": float("nan")}, limits) == [("$", "members")]
    assert codes([1, 2, float("nan")], limits) == [("$[2]", "not_finite")]


def test_bytes_under_a_key_limit_shorter_than_their_key_are_named() -> None:
    """Bytes are the object ``{"$bytes": ...}``: its key counts against ``max_key_length``."""
    assert codes({"b": b"x"}, Limits(max_key_length=5)) == [('$.b["$bytes"]', "key_length")]
    assert check({"b": b"x"}, Limits(max_key_length=6)) == []


def test_a_to_plain_that_answers_with_itself_is_a_type_violation() -> None:
    """A hostile object whose ``to_plain()`` returns an object with ``to_plain()`` again (here,
    itself) is converted once: the answer is a violation, not an endless walk."""

    class Itself:
        def to_plain(self) -> Any:
            return self

    answer: list[Any] = []
    walker = threading.Thread(target=lambda: answer.append(check({"a": Itself()})), daemon=True)
    walker.start()
    walker.join(timeout=60)  # the walk takes microseconds; an endless one never ends
    assert answer and [(v.path, v.limit) for v in answer[0]] == [("$.a", "type")]
