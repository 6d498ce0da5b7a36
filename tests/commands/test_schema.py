"""The JSON Schema every shell describes a command's body with (``commands/schema.py``) says
what the one check of a field's value (``check_value``) says: for each field of every people's
and agent command, a value at and past each of its bounds is valid for the schema exactly when
the check takes it."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from stopline.commands.agent_table import AGENT_COMMANDS
from stopline.commands.entry import AUTHOR, Entry
from stopline.commands.fields import Field, Type, check_value
from stopline.commands.schema import body_schema, value_schema
from stopline.commands.table import COMMANDS

EVERY_FIELD = sorted(
    {
        (entry.name, f.name): f
        for table in (COMMANDS, AGENT_COMMANDS)
        for entry in table.values()
        for f in entry.fields
    }.items()
)


def probes(field: Field) -> list[Any]:
    """Values at and past each bound of ``field``, and values of other types."""
    limits = field.limits
    others: list[Any] = [None, 1.5, [], {}, "1", True]
    if field.type is Type.TEXT:
        if limits.choices:
            return [*limits.choices, limits.choices[0] + "x", "", *others]
        low, high = limits.min_length, limits.max_length
        found = ["", " ", "a", "a\x00b", "a" * max(low, 1), *others]
        if low > 1:
            found.append("a" * (low - 1))
        if high is not None:
            found += ["a" * high, "a" * (high + 1)]
        return found
    if field.type is Type.BOOL:
        return [True, False, 1, 0, "true", None]
    if field.type is Type.OBJECT:
        return [{}, {"a": [1]}, [], "{}", None, 1]
    if field.type is Type.INT:
        # not 1.0: JSON Schema counts it an integer, the check takes only integers written
        # without a fraction (stricter: such a body is refused, never read as another number)
        found = [0, True, "1", 1.5, None]
        if limits.minimum is not None:
            found += [limits.minimum, limits.minimum - 1]
        if limits.maximum is not None:
            found += [limits.maximum, limits.maximum + 1]
        return found
    assert field.type is Type.KEYS
    high = limits.max_length or 1
    found = [[], ["k"], ["k", "j"], [""], ["a" * high], ["a" * (high + 1)], "k", [1], None]
    if limits.max_items is not None:
        found += [["k"] * limits.max_items, ["k"] * (limits.max_items + 1)]
    return found


@pytest.mark.parametrize(("name", "field"), EVERY_FIELD, ids=[".".join(n) for n, _ in EVERY_FIELD])
def test_a_fields_schema_takes_exactly_what_its_check_takes(
    name: tuple[str, str], field: Field
) -> None:
    validator = Draft202012Validator(value_schema(field))
    for value in probes(field):
        by_schema = validator.is_valid(value)
        by_check = check_value(field, value) == []
        assert by_schema == by_check, (value, value_schema(field), check_value(field, value))


def test_every_field_kind_is_probed() -> None:
    """The table holds every type and every kind of limit the schema writes."""
    fields = [f for _, f in EVERY_FIELD]
    assert {f.type for f in fields} == set(Type)
    assert any(f.limits.choices for f in fields) and any(f.limits.not_blank for f in fields)
    assert any(f.limits.min_length > 1 for f in fields)
    assert any(f.limits.max_items is not None for f in fields)
    assert any(f.type is Type.INT and f.limits.maximum is not None for f in fields)


def test_a_body_names_its_fields_its_author_and_its_key_and_nothing_else() -> None:
    """A people's command's body: its fields (the required ones required), the author a
    caller may declare, an idempotency key when the command takes one, and no other key. An
    agent command's: its fields alone."""
    for entry in COMMANDS.values():
        schema = body_schema(entry)
        assert isinstance(entry, Entry)
        expected = {f.name for f in entry.fields}
        expected |= {AUTHOR} if entry.takes_actor else set()
        expected |= {"idempotency_key"} if entry.idempotent else set()
        assert set(schema["properties"]) == expected, entry.name
        assert schema["required"] == [f.name for f in entry.fields if f.required]
        assert schema["additionalProperties"] is False
        validator = Draft202012Validator(schema)
        assert not validator.is_valid({"not_a_field": 1})
        if entry.idempotent:
            key = schema["properties"]["idempotency_key"]
            assert Draft202012Validator(key).is_valid("K-1")
            assert Draft202012Validator(key).is_valid("K")
            for bad in ("", "two words", "x" * 201, "caf\u00e9"):
                assert not Draft202012Validator(key).is_valid(bad)
    assert any(not e.takes_actor for e in COMMANDS.values())
    for agent in AGENT_COMMANDS.values():
        assert set(body_schema(agent)["properties"]) == {f.name for f in agent.fields}


def test_an_author_is_a_kind_and_for_an_ai_a_name_and_a_family_of_bounded_text() -> None:
    author = body_schema(COMMANDS["close"])["properties"][AUTHOR]
    valid = Draft202012Validator(author).is_valid
    assert valid({"kind": "human"})
    assert valid({"kind": "ai", "name": "n", "family": "f"})
    for bad in (
        {},
        {"kind": "robot"},
        {"kind": "ai", "name": ""},
        {"kind": "ai", "name": " "},
        {"kind": "ai", "other": "x"},
    ):
        assert not valid(bad), bad
