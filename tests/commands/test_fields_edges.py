"""The one check of a field's value (``commands/fields.py``) at the edges its table of examples
did not reach (each found by a mutant of the module that passed it): a field's own bounds on
an integer, on a list's length and on its choices, the 32-bit range to the unit, a boolean
that is not ``1``, and a check box's text."""

from __future__ import annotations

from typing import Any

import pytest

from stopline.commands.agent_table import AGENT_COMMANDS
from stopline.commands.fields import (
    INT_MAX,
    INT_MIN,
    MAX_TEXT,
    Field,
    Limits,
    Type,
    check_value,
    from_text,
)
from stopline.commands.table import COMMANDS

TIMEOUT = next(f for f in AGENT_COMMANDS["wait_for_decision"].fields if f.name == "timeout")
ATTEMPTS = COMMANDS["resume"].fields[1]


def test_an_agents_wait_is_held_to_the_fields_own_bounds() -> None:
    high = TIMEOUT.limits.maximum
    assert high is not None and high < INT_MAX
    assert check_value(TIMEOUT, 0) == [] and check_value(TIMEOUT, high) == []
    for value in (-1, high + 1, INT_MAX):
        assert check_value(TIMEOUT, value) == [f"timeout must be an integer from 0 to {high}"]


def test_the_32_bit_range_holds_to_the_unit() -> None:
    assert INT_MIN == -(2**31) and INT_MAX == 2**31 - 1
    assert check_value(ATTEMPTS, INT_MAX) == [] and check_value(ATTEMPTS, INT_MIN) == []
    assert check_value(ATTEMPTS, INT_MIN - 1) != []


@pytest.mark.parametrize("value", [1, 0, "true", None])
def test_a_boolean_is_true_or_false_and_nothing_equal_to_them(value: Any) -> None:
    flag = COMMANDS["reject"].fields[2]
    assert check_value(flag, value) == ["return must be true or false"]


def test_an_object_is_a_json_object_not_another_mapping() -> None:
    from types import MappingProxyType

    params = COMMANDS["edit"].fields[0]
    assert check_value(params, {"a": 1}) == []
    assert check_value(params, MappingProxyType({"a": 1})) == ["params must be a JSON object"]


def test_a_choice_is_matched_exactly() -> None:
    verdict = COMMANDS["review"].fields[1]
    assert check_value(verdict, "approve") == []
    assert check_value(verdict, "Approve") == ["verdict must be 'approve' or 'reject'"]


def test_a_list_is_held_to_the_fields_own_number_of_items() -> None:
    few = Field("keys", Type.KEYS, "", Limits(min_length=1, max_length=5, min_items=1, max_items=2))
    assert check_value(few, ["a", "b"]) == []
    assert check_value(few, ["a", "b", "c"]) == ["keys must be a list of 1 to 2 keys"]


def test_a_text_shorter_than_a_minimum_of_two_says_so_as_a_prefix() -> None:
    pair = Field("d", Type.TEXT, "", Limits(min_length=2, max_length=10))
    assert check_value(pair, "x") == [
        "d is too short: give the whole digest or at least 2 of its first characters"
        " (`stopline show` prints it)"
    ]


@pytest.mark.parametrize(
    ("texts", "value"),
    [
        (["on"], True),
        (["1"], True),
        (["true"], True),
        (["off"], False),
        (["false"], False),
        (["0"], False),
        (["on", "off"], False),
    ],
)
def test_a_check_box_is_true_only_for_what_a_form_or_flag_sends_for_true(
    texts: list[str], value: bool
) -> None:
    assert from_text(COMMANDS["reject"].fields[2], texts) == (value, [])


def test_free_text_holds_to_its_length_to_the_character_and_refuses_a_lone_surrogate() -> None:
    """A note of exactly MAX_TEXT characters is accepted, one more is refused; text that is
    not valid Unicode (a lone surrogate, as a command line hands over a byte that is not
    UTF-8) is refused with where it is."""
    note = next(f for f in COMMANDS["close"].fields if f.name == "reason")
    assert note.limits.max_length == MAX_TEXT == 10_000
    assert check_value(note, "x" * MAX_TEXT) == []
    assert check_value(note, "x" * (MAX_TEXT + 1)) == [
        f"reason is longer than {MAX_TEXT} characters"
    ]
    [problem] = check_value(note, "ok\udcff")
    assert problem.startswith("reason is not valid Unicode: a lone surrogate")
    assert "at position 3" in problem


def test_a_required_field_bound_to_a_value_the_item_lacks_is_not_fillable() -> None:
    """A command whose required field is bound to something the item does not hold is not
    offered; with the value there, or with choices to make, it is."""
    from datetime import UTC, datetime

    from stopline.core.records import Item
    from stopline.core.states import State

    now = datetime(2026, 1, 1, tzinfo=UTC)
    item = Item("i", "a", "k", State.OBSERVING, 1, 1, "", now, now, 0, 3, now)
    bound = Field("digest", Type.TEXT, "", required=True, bound=lambda it: it.doc("proposal"))
    assert not bound.fillable(item)
    held = Field("key", Type.TEXT, "", required=True, bound=lambda it: it.key)
    assert held.fillable(item)
    empty = Field("keys", Type.KEYS, "", required=True, options=lambda it: [])
    assert not empty.fillable(item)
    optional = Field("note", Type.TEXT, "", bound=lambda it: None)
    assert optional.fillable(item)
