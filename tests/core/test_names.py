"""The safe alphabet of actor, role and automation names (core/names.py)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stopline.core.names import (
    ACTOR,
    AUTOMATION,
    KINDS,
    MAX_LENGTH,
    ROLE,
    InvalidName,
    check_actor_name,
    check_automation_name,
    check_name,
    check_role,
    lookalike,
    lookalikes,
    name_problem,
    require_normal,
    skeleton,
)

CYRILLIC_A = "\u0430"  # looks like the Latin "a"
FULLWIDTH_ALICE = "".join(chr(ord(c) - ord("a") + 0xFF41) for c in "alice")
ALPHABET = {
    ACTOR: "abcdefghijklmnopqrstuvwxyz0123456789._-@",
    ROLE: "abcdefghijklmnopqrstuvwxyz0123456789._-",
    AUTOMATION: "abcdefghijklmnopqrstuvwxyz0123456789._-",
}


def valid_names(kind: str) -> st.SearchStrategy[str]:
    first = st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789")
    rest = st.text(st.sampled_from(ALPHABET[kind]), max_size=MAX_LENGTH - 1)
    return st.builds(lambda a, b: a + b, first, rest)


def test_a_cyrillic_letter_is_refused_naming_it_and_its_position() -> None:
    """The message names the code point, its Unicode name, its position and the alphabet."""
    with pytest.raises(InvalidName) as caught:
        check_actor_name(CYRILLIC_A + "lice")
    assert str(caught.value) == (
        f"{CYRILLIC_A + 'lice'!r} has U+0430 CYRILLIC SMALL LETTER A at position 1;"
        " actor names use a-z 0-9 . _ - @, 1-64 characters"
    )
    assert "\n" not in str(caught.value)


def test_fullwidth_letters_normalise_to_ascii() -> None:
    """NFKC turns fullwidth letters into the ASCII name they stand for."""
    assert FULLWIDTH_ALICE != "alice"
    assert check_actor_name(FULLWIDTH_ALICE) == "alice"
    assert check_automation_name("\uff44igest") == "digest"


def test_upper_case_is_refused_with_the_lower_case_hint() -> None:
    """Upper case is never folded silently: the message says what to write."""
    with pytest.raises(InvalidName, match="actor names are lower case: write 'alice'"):
        check_actor_name("Alice")
    with pytest.raises(InvalidName, match="role names are lower case: write 'approver'"):
        check_role("APPROVER")


@pytest.mark.parametrize(
    ("kind", "name", "found"),
    [
        (AUTOMATION, "a/b", "U+002F SOLIDUS at position 2"),
        (ACTOR, "automation:refund", "U+003A COLON at position 11"),
        (ACTOR, "bob smith", "U+0020 SPACE at position 4"),
        (ACTOR, "bob\tsmith", "U+0009 <control> at position 4"),
        (ROLE, "ops@x", "U+0040 COMMERCIAL AT at position 4"),
        (AUTOMATION, "digest\u200b", "U+200B ZERO WIDTH SPACE at position 7"),
        (ACTOR, "r\u043eot", "U+043E CYRILLIC SMALL LETTER O at position 2"),
        (ACTOR, "\u03b1lice", "U+03B1 GREEK SMALL LETTER ALPHA at position 1"),
    ],
)
def test_a_character_outside_the_alphabet_is_named(kind: str, name: str, found: str) -> None:
    """Each refusal names the first character that is not allowed."""
    with pytest.raises(InvalidName, match=found.replace("+", r"\+")) as caught:
        check_name(kind, name)
    assert caught.value.kind == kind and caught.value.given == name


def test_a_slash_is_explained_for_automation_names() -> None:
    """'/' is refused because it separates AUTOMATION/KEY."""
    with pytest.raises(InvalidName, match="separates AUTOMATION/KEY"):
        check_automation_name("a/b")


@pytest.mark.parametrize("name", ["", ".alice", "-x", "_x", "@x"])
def test_empty_names_and_names_not_starting_with_a_letter_or_digit(name: str) -> None:
    """A name is not empty and starts with a-z or 0-9."""
    with pytest.raises(InvalidName):
        check_actor_name(name)


def test_length_is_at_most_64_after_normalisation() -> None:
    """64 characters pass, 65 do not; a ligature counts as the letters it stands for."""
    assert check_actor_name("a" * MAX_LENGTH) == "a" * MAX_LENGTH
    with pytest.raises(InvalidName, match="65 characters"):
        check_actor_name("a" * (MAX_LENGTH + 1))
    with pytest.raises(InvalidName, match="65 characters"):
        check_actor_name("\ufb01" + "a" * (MAX_LENGTH - 1))  # the "fi" ligature is two


def test_actors_may_use_an_at_sign() -> None:
    """ops@example.org is an actor name, not a role or an automation name."""
    assert check_actor_name("ops@example.org") == "ops@example.org"
    for check in (check_role, check_automation_name):
        with pytest.raises(InvalidName):
            check("ops@example.org")


def test_names_declared_in_code_must_already_be_normal() -> None:
    """require_normal refuses a name that NFKC would change, saying how to write it."""
    assert require_normal(AUTOMATION, "weekly-digest") == "weekly-digest"
    with pytest.raises(InvalidName, match="must be written 'alice'"):
        require_normal(ACTOR, FULLWIDTH_ALICE)


def test_name_problem_reports_stored_names() -> None:
    """A stored name that is invalid, or valid only after normalisation, is a problem."""
    assert name_problem(ACTOR, "alice") is None
    assert "U+0430" in (name_problem(ACTOR, CYRILLIC_A + "lice") or "")
    assert "not in normal form" in (name_problem(ACTOR, FULLWIDTH_ALICE) or "")
    assert "must be text" in (name_problem(ROLE, 7) or "")
    assert "SOLIDUS" in (name_problem(AUTOMATION, "a/b") or "")
    with pytest.raises(ValueError, match="unknown kind"):
        name_problem("item", "x")


def test_ascii_lookalikes_share_a_skeleton() -> None:
    """1/l, 0/o, rn/m and vv/w look alike; other names do not collide."""
    assert skeleton("a1ice") == skeleton("alice")
    assert skeleton("rnallory") == skeleton("mallory")
    assert skeleton("vvendy") == skeleton("wendy")
    assert skeleton("b0b") == skeleton("bob")
    assert lookalike("a1ice", ["alice", "bob"]) == "alice"
    assert lookalike("alice", ["alice", "bob"]) is None  # the same name is not a look-alike
    assert lookalike("carol", ["alice", "bob", "dana", "erin"]) is None
    assert lookalikes(["alice", "a1ice", "bob", "rnallory", "mallory"]) == [
        ("a1ice", "alice"),
        ("mallory", "rnallory"),
    ]
    # a name listed twice is one name: it looks like nothing but the others
    assert lookalikes(["alice", "alice", "a1ice", "bob", "bob"]) == [("a1ice", "alice")]


@given(st.sampled_from(KINDS), st.text(max_size=80))
def test_every_accepted_name_is_ascii_normal_and_round_trips(kind: str, text: str) -> None:
    """Whatever is typed: refused, or an ASCII name of the alphabet that checks as itself."""
    try:
        name = check_name(kind, text)
    except InvalidName as exc:
        assert str(exc) and "\n" not in str(exc)
        assert name_problem(kind, text) is not None
        return
    assert name.isascii() and 1 <= len(name) <= MAX_LENGTH
    assert set(name) <= set(ALPHABET[kind]) and name[0].isalnum()
    assert unicodedata.normalize("NFKC", name) == name
    assert name == unicodedata.normalize("NFKC", text)
    assert check_name(kind, name) == name and require_normal(kind, name) == name
    assert name_problem(kind, name) is None


@given(st.sampled_from(KINDS).flatmap(lambda k: st.tuples(st.just(k), valid_names(k))))
def test_every_name_of_the_alphabet_is_accepted_as_is(kind_and_name: tuple[str, str]) -> None:
    """The documented alphabet is exactly what is accepted: each such name is itself."""
    kind, name = kind_and_name
    assert check_name(kind, name) == name


@given(
    valid_names(ACTOR),
    st.integers(min_value=0, max_value=MAX_LENGTH),
    st.characters(min_codepoint=0x80),
)
def test_a_non_ascii_letter_never_passes_as_another_name(name: str, at: int, char: str) -> None:
    """A non-ASCII character inserted into a valid name is refused unless NFKC makes it ASCII
    (then the name is that ASCII name, not a different one that looks the same)."""
    typed = name[:at] + char + name[at:]
    try:
        accepted = check_actor_name(typed)
    except InvalidName:
        return
    assert accepted.isascii()
    assert accepted == unicodedata.normalize("NFKC", typed)
    assert unicodedata.normalize("NFKC", char).isascii()
