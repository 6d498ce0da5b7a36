"""``validate``, the check of a command's whole body in every shell (``commands/entry.py``), at
the edges the table's tests did not reach (each found by a mutant of the module that passed
them): an integer sent as a fraction, an author declared to an agent's tool, the author kept
only with a valid body and as a copy, and DEL in an idempotency key."""

from __future__ import annotations

from stopline.commands.agent_table import AGENT_ENTRIES
from stopline.commands.entry import check_idempotency_key, validate
from stopline.commands.table import COMMANDS

HUMAN = {"kind": "human"}


def test_an_integer_field_takes_3_0_but_not_3_5() -> None:
    assert validate(COMMANDS["resume"], {"reason": "r", "attempts": 3.0}) == (
        {"reason": "r", "attempts": 3},
        [],
    )
    values, problems = validate(COMMANDS["resume"], {"reason": "r", "attempts": 3.5})
    assert problems == ["attempts must be an integer"] and "attempts" not in values


def test_an_agents_tool_takes_no_author() -> None:
    """An agent's tools take no actor and no author: the author is what the agent is."""
    tool = AGENT_ENTRIES[0]
    values, problems = validate(tool, {"author": {"kind": "ai", "name": "x", "family": "y"}})
    assert "unknown field 'author'" in problems and "author" not in values


def test_a_declared_author_is_kept_only_with_a_valid_body_and_as_a_copy() -> None:
    author = dict(HUMAN)
    values, problems = validate(COMMANDS["close"], {"reason": "r", "author": author})
    assert problems == [] and values["author"] == HUMAN and values["author"] is not author
    values, problems = validate(COMMANDS["close"], {"reason": " ", "author": dict(HUMAN)})
    assert problems == ["reason must not be empty"] and "author" not in values


def test_an_idempotency_key_is_printable_ascii_without_del() -> None:
    assert check_idempotency_key("key-1~!") is None
    for bad in ("a b", "a\x7fb", "caf\u00e9", ""):
        assert check_idempotency_key(bad) is not None, bad
