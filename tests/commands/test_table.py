"""The command table: one entry per people's command, checked against the core at import, the
one check of a field's value, and the hints it generates."""

from __future__ import annotations

import dataclasses
import shlex

import pytest

from core.helpers import Harness
from stopline.commands.entry import (
    Entry,
    Shell,
    TableError,
    WebForm,
    check_idempotency_key,
    check_table,
    validate,
)
from stopline.commands.fields import (
    ABSENT,
    KEY,
    MAX_KEY,
    MAX_TEXT,
    Field,
    Type,
    Widget,
    check_value,
    from_text,
)
from stopline.commands.hints import hint, next_commands
from stopline.commands.table import COMMANDS, ENTRIES, REASON_FIELD, exposed
from stopline.core import commands as core
from stopline.core.rights import AUTHORITY
from stopline.core.states import State
from stopline.core.transitions import Cmd

S = State


def test_every_peoples_command_has_exactly_one_entry() -> None:
    """The table covers every command the core's rights know, each once, named as the core."""
    assert sorted(COMMANDS) == sorted(c.value for c in AUTHORITY)
    assert len(ENTRIES) == len(COMMANDS)
    for entry in ENTRIES:
        assert entry.command.name == entry.name
        assert entry.roles is AUTHORITY[entry.cmd]
    assert [e.name for e in exposed(Shell.WEB)] == [e.name for e in ENTRIES if e.form is not None]
    assert "finalize" not in {e.name for e in exposed(Shell.WEB)}
    # no people's command is offered to agents (their tools are commands/agent_table.py)
    assert [e.name for e in exposed(Shell.AGENT)] == []


def test_build_makes_the_core_command_with_the_cores_defaults() -> None:
    """Absent optional fields take the core's default; lists become tuples; the actor is added."""
    assert COMMANDS["reject"].build("bob", {"reason": "no"}) == core.Reject("bob", "no")
    assert COMMANDS["reject"].build(
        "bob", {"reason": "no", "return": True, "proposal": "d"}
    ) == core.Reject("bob", "no", send_back=True, digest="d")
    revise = COMMANDS["revise"].build("carol", {"reason": "r", "artifacts": ["a", "b"]})
    assert revise == core.Revise("carol", "r", ("a", "b"))
    assert COMMANDS["resolve"].build("c", {"reason": "r"}) == core.Resolve("c", "r", {})
    assert COMMANDS["reconcile"].build("c", {"artifact": "k"}) == core.Reconcile("c", "k")
    assert COMMANDS["finalize"].build(None, {}) == core.Finalize()
    with pytest.raises(ValueError, match="needs an actor"):
        COMMANDS["close"].build(None, {"reason": "r"})


def _entry(**changes: object) -> Entry:
    base = Entry(Cmd.CLOSE, core.Close, "close", (REASON_FIELD,), form=WebForm("Close", "Close"))
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (_entry(command=core.Reinspect), "builds Reinspect"),
        (_entry(fields=()), "may leave Close.reason unfilled"),
        (_entry(fields=(dataclasses.replace(REASON_FIELD, required=False),)), "unfilled"),
        (_entry(fields=(REASON_FIELD, Field("why", Type.TEXT, "?"))), "not a field of Close"),
        (_entry(fields=(Field("actor", Type.TEXT, "who"), REASON_FIELD)), "not a field"),
        (_entry(form=None), "without a form"),
        (_entry(fields=(dataclasses.replace(REASON_FIELD, flag="--db"),)), "reserved flag"),
        (_entry(fields=(REASON_FIELD, REASON_FIELD)), "repeats a field"),
        (
            _entry(
                fields=(
                    REASON_FIELD,
                    dataclasses.replace(REASON_FIELD, name="why", flag="--reason"),
                )
            ),
            "repeats a field or a flag",
        ),
        (
            _entry(fields=(dataclasses.replace(REASON_FIELD, web=Widget()),)),
            "no label for its form",
        ),
    ],
)
def test_a_malformed_table_is_refused(entry: Entry, problem: str) -> None:
    """check_table names what does not fit the core (as the import of the table would)."""
    with pytest.raises(TableError, match=problem):
        check_table((*[e for e in ENTRIES if e.name != "close"], entry))


def test_a_table_missing_a_core_command_is_refused() -> None:
    """Dropping an entry fails: the core has the command, the shells would not."""
    with pytest.raises(TableError, match="the core has close but the table does not"):
        check_table(tuple(e for e in ENTRIES if e.name != "close"))


# --- the one check of a field's value -------------------------------------------------------------

DIGEST = Field("d", Type.TEXT, "", KEY)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        (REASON_FIELD, "ok", None),
        (REASON_FIELD, 3, "reason must be a string"),
        (REASON_FIELD, "a\x00b", "reason must not contain NUL characters"),
        (REASON_FIELD, "x" * (MAX_TEXT + 1), f"reason is longer than {MAX_TEXT} characters"),
        (REASON_FIELD, " \n", "reason must not be empty"),
        (DIGEST, "", "d must not be empty"),
        (DIGEST, "x" * (MAX_KEY + 1), f"d is longer than {MAX_KEY} characters"),
        (COMMANDS["review"].fields[1], "maybe", "verdict must be 'approve' or 'reject'"),
        (COMMANDS["reject"].fields[2], "yes", "return must be true or false"),
        (COMMANDS["edit"].fields[0], [1], "params must be a JSON object"),
        (COMMANDS["resume"].fields[1], True, "attempts must be an integer"),
        (
            COMMANDS["resume"].fields[1],
            2**31,
            f"attempts must be an integer from {-(2**31)} to {2**31 - 1}",
        ),
        (COMMANDS["resume"].fields[1], -(2**31), None),
        (COMMANDS["revise"].fields[1], [], "artifacts must be a list of 1 to 100 keys"),
        (COMMANDS["revise"].fields[1], ["a"] * 101, "artifacts must be a list of 1 to 100 keys"),
        (
            COMMANDS["revise"].fields[1],
            ["a", ""],
            f"artifacts must hold non-empty strings of at most {MAX_KEY} characters",
        ),
    ],
)
def test_check_value(field: Field, value: object, problem: str | None) -> None:
    """Each type and limit has one problem message, and a valid value has none."""
    assert check_value(field, value) == ([] if problem is None else [problem])


def test_validate_lists_every_problem() -> None:
    """Unknown fields, an actor field, missing required fields and bad values, all at once."""
    values, problems = validate(COMMANDS["review"], {"actor": "x", "extra": 1, "verdict": "no"})
    assert values == {}
    assert problems == [
        "actor is not a field: the actor is the authenticated identity",
        "unknown field 'extra'",
        "packet is required",
        "verdict must be 'approve' or 'reject'",
    ]
    assert validate(COMMANDS["close"], []) == ({}, ["the body must be a JSON object"])
    assert validate(COMMANDS["resume"], {"reason": "r", "attempts": 3.0}) == (
        {"reason": "r", "attempts": 3},
        [],
    )


def test_from_text() -> None:
    """Text from a flag or a form becomes a typed value; empty optional fields are absent."""
    edit, resolve = COMMANDS["edit"].fields[0], COMMANDS["resolve"].fields[1]
    assert from_text(edit, ['{"a": 1}']) == ({"a": 1}, [])
    value, problems = from_text(edit, ["{not json"], "--params")
    assert value is ABSENT and problems[0].startswith("--params is not valid JSON")
    assert from_text(resolve, ['{"x": NaN}'])[1][0].startswith(
        "input breaks the limits: $.x: not_finite"
    )
    assert from_text(resolve, [" "]) == (ABSENT, [])
    note = COMMANDS["acknowledge"].fields[0]
    assert from_text(note, [""]) == (ABSENT, [])
    assert from_text(REASON_FIELD, [""]) == ("", [])  # then refused: must not be empty
    assert from_text(COMMANDS["reject"].fields[2], ["on"]) == (True, [])
    assert from_text(COMMANDS["revise"].fields[1], ["a", "", "b"]) == (["a", "b"], [])
    assert from_text(COMMANDS["resume"].fields[1], ["x"]) == (
        ABSENT,
        ["attempts must be an integer"],
    )


def test_check_idempotency_key() -> None:
    """1 to 200 printable ASCII characters without spaces, named as the shell names it."""
    assert check_idempotency_key(None) is None
    assert check_idempotency_key("K-1") is None
    assert check_idempotency_key("two words", "--idempotency-key") == (
        "--idempotency-key must be 1 to 200 printable ASCII characters, no spaces"
    )
    assert check_idempotency_key("") is not None
    assert check_idempotency_key("x" * 201) is not None
    assert check_idempotency_key("K") is None and check_idempotency_key("x" * 200) is None
    assert check_idempotency_key("tab\there") is not None
    assert check_idempotency_key("caf\u00e9") is not None


def test_a_command_declared_twice_is_refused() -> None:
    with pytest.raises(TableError, match="a command is declared twice"):
        check_table((*ENTRIES, ENTRIES[0]))


# --- hints ----------------------------------------------------------------------------------------


def test_hints_follow_the_state_and_fill_in_what_the_item_holds() -> None:
    """Hints name the suggested commands the state allows, with the item's digests and keys."""
    h = Harness()
    item = h.to(S.AWAITING_APPROVAL)
    digest = item.doc("proposal")["digest"]
    assert next_commands(item) == [
        f"stopline approve {item.id} --actor ACTOR --proposal {digest}",
        f'stopline reject {item.id} --actor ACTOR --proposal {digest} --reason "REASON" [--return]',
    ]
    done = Harness().to(S.COMPLETED)
    lines = next_commands(done)
    assert [line.split()[1] for line in lines] == ["revise", "review"]
    assert "--artifact a" in lines[0] and done.doc("review_packet")["digest"] in lines[1]
    assert next_commands(Harness().to(S.OBSERVING)) == []


def test_a_failed_revision_hint_repeats_the_same_request() -> None:
    """Taking a failed revision up again needs the same reason and scope: the hint has both."""
    h = Harness()
    item = h.to(S.REVISION_FAILED)
    [revise, reconcile] = next_commands(item)
    words = shlex.split(revise)
    assert words[words.index("--reason") + 1] == item.doc("revision")["reason"]
    assert words.count("--artifact") == len(item.doc("revision")["scope"])
    assert reconcile == f"stopline reconcile {item.id} --actor ACTOR --artifact KEY"


def test_hints_leave_out_what_the_item_cannot_fill() -> None:
    """No review hint on a void packet; no reconcile hint without artifacts."""
    item = Harness().to(S.COMPLETED)
    void = dataclasses.replace(
        item, data=item.with_data(review_packet={**item.doc("review_packet"), "void": True})
    )
    assert [line.split()[1] for line in next_commands(void)] == ["revise"]
    exception = Harness().to(S.EXCEPTION)
    assert [line.split()[1] for line in next_commands(exception)] == ["resolve"]


def test_a_record_that_is_not_what_its_history_sealed_is_offered_close_alone() -> None:
    for state in (S.AWAITING_APPROVAL, S.EXCEPTION, S.EXHAUSTED, S.READY_FOR_REVIEW):
        item = Harness().to(state)
        assert next_commands(item, sound=False) == [
            f'stopline close {item.id} --actor ACTOR --reason "REASON"'
        ]
    assert next_commands(Harness().to(S.OBSERVING), sound=False) == []


def test_a_hint_writes_a_document_as_json_and_leaves_out_a_binding_the_item_lacks() -> None:
    """edit's parameters from the proposal, quoted for a shell as one JSON word; reject's
    proposal digest left out where the item holds no proposal."""
    awaiting = Harness().to(S.AWAITING_APPROVAL)
    assert hint(COMMANDS["edit"], awaiting) == (
        f"stopline edit {awaiting.id} --actor ACTOR --params '{{\"grace\": 5}}'"
    )
    observing = Harness().to(S.OBSERVING)
    assert hint(COMMANDS["reject"], observing) == (
        f'stopline reject {observing.id} --actor ACTOR --reason "REASON" [--return]'
    )
