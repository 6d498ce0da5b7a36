"""What every shell does with a checked command (``commands/perform.py``), in process: digest
prefixes resolved against the item or refused before anything runs, an actor required, and
the explanation of a refusal. The shells' own tests run it behind a real server; these hold
each rule on its own (each was missing while a mutant of the module passed them)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from stopline.commands.perform import perform, resolve_digests
from stopline.commands.runners import RunOptions
from stopline.commands.table import COMMANDS
from stopline.controller import Controller
from stopline.core.decision import Outcome
from stopline.core.reasons import Reason
from stopline.store import raw

from .conftest import Demo

CHECKOUT = "service-health/checkout-api"  # awaiting approval in the demo
APPROVE = COMMANDS["approve"]


class Held:
    """An item as ``resolve_digests`` reads it: its documents by name."""

    def __init__(self, proposal: str | None, previous: str | None = None) -> None:
        self.data: dict[str, Any] = {}
        if proposal is not None:
            self.data["proposal"] = {"digest": proposal}
        if previous is not None:
            self.data["previous_proposal"] = {"digest": previous}

    def doc(self, name: str) -> Any:
        return self.data.get(name)


CURRENT = "ab12cd34ef56" + "1" * 52
OLDER = "ab12cd34ef56" + "2" * 52  # the same first twelve characters


def resolved(item: Any, value: Any) -> tuple[dict[str, Any], list[str]]:
    return resolve_digests(APPROVE, item, {"proposal": value})


def test_a_prefix_of_twelve_names_the_one_digest_it_starts() -> None:
    assert resolved(Held(CURRENT), CURRENT[:12]) == ({"proposal": CURRENT}, [])
    assert resolved(Held(CURRENT, OLDER), OLDER[:13]) == ({"proposal": OLDER}, [])
    # a prefix is the start of a digest, never a part of it
    assert resolved(Held(CURRENT), CURRENT[1:13]) == ({"proposal": CURRENT[1:13]}, [])


def test_a_shorter_prefix_is_a_problem_and_a_whole_digest_is_taken_as_given() -> None:
    _, problems = resolved(Held(CURRENT), CURRENT[:11])
    assert len(problems) == 1 and "is too short" in problems[0] and "at least 12" in problems[0]
    other = "f" * 64
    assert resolved(Held(CURRENT), other) == ({"proposal": other}, [])
    assert resolved(None, CURRENT[:5]) == ({"proposal": CURRENT[:5]}, [])  # no item: the core says


def test_a_prefix_that_starts_two_digests_of_the_item_is_a_problem() -> None:
    fields, problems = resolved(Held(CURRENT, OLDER), CURRENT[:12])
    assert fields == {"proposal": CURRENT[:12]}
    assert problems == [
        f"proposal: the prefix {CURRENT[:12]!r} matches 2 digests of this item; give more"
        " characters"
    ]
    # the same digest as current and previous is one digest, not two
    assert resolved(Held(CURRENT, CURRENT), CURRENT[:12]) == ({"proposal": CURRENT}, [])


def test_only_text_fields_bound_to_the_item_are_resolved() -> None:
    unbound = replace(APPROVE, fields=tuple(replace(f, bound=None) for f in APPROVE.fields))
    assert resolve_digests(unbound, Held(CURRENT), {"proposal": CURRENT[:12]})[0] == {
        "proposal": CURRENT[:12]
    }
    assert resolved(Held(CURRENT), 12345) == ({"proposal": 12345}, [])


@pytest.fixture
def controller(demo: Demo) -> Any:
    store = demo.store()
    try:
        yield Controller(store)
    finally:
        store.close()


def test_a_short_prefix_runs_nothing(controller: Controller) -> None:
    before = controller.item(CHECKOUT)
    assert before is not None
    digest = before.doc("proposal")["digest"]
    done = perform(controller, APPROVE, CHECKOUT, actor="alice", fields={"proposal": digest[:11]})
    assert done.decision is None and "is too short" in done.problems[0]
    after = controller.item(CHECKOUT)
    assert after is not None and after.version == before.version


@pytest.mark.parametrize("actor", [None, "", "   "])
def test_a_command_of_people_needs_someone_named(controller: Controller, actor: Any) -> None:
    done = perform(controller, COMMANDS["close"], CHECKOUT, actor=actor, fields={"reason": "r"})
    assert done.decision is None and done.problems == ("close needs an actor: nobody was named",)


def test_a_refusal_is_explained_by_the_command_the_core_decided(controller: Controller) -> None:
    done = perform(controller, APPROVE, CHECKOUT, actor="alice", fields={"proposal": "0" * 64})
    assert done.decision is not None and done.decision.outcome is Outcome.REFUSED
    assert Reason.PROPOSAL_DIGEST_MISMATCH in done.decision.reasons
    assert done.explanation.sentences, "a refusal says why"
    # an unknown item: nothing before it, and the explanation says so
    missing = perform(
        controller, APPROVE, "no/such-item", actor="alice", fields={"proposal": "0" * 64}
    )
    assert missing.decision is not None and missing.decision.outcome is Outcome.REFUSED
    assert missing.explanation.sentences


def test_an_applied_approval_and_its_replay_explain_nothing(controller: Controller) -> None:
    item = controller.item(CHECKOUT)
    assert item is not None
    digest = item.doc("proposal")["digest"]
    fields = {"proposal": digest[:12]}
    done = perform(controller, APPROVE, CHECKOUT, actor="alice", fields=fields)
    assert done.decision is not None and done.decision.outcome is Outcome.APPLIED
    assert done.explanation.sentences == ()


def test_a_replay_of_an_idempotent_command_explains_nothing(controller: Controller) -> None:
    """The same key given again returns the first decision, not a refusal to explain."""
    options = RunOptions(idempotency_key="close-once")

    def close() -> Any:
        fields = {"reason": "r"}
        return perform(
            controller, COMMANDS["close"], CHECKOUT, actor="carol", fields=fields, options=options
        )

    first = close()
    assert first.decision is not None and first.decision.outcome is Outcome.APPLIED
    again = close()
    assert again.decision is not None and "idempotent_replay" in again.decision.reasons
    assert again.explanation.sentences == ()


def test_a_prefix_of_the_replaced_proposal_is_explained_by_what_the_edit_changed(
    controller: Controller,
) -> None:
    item = controller.item(CHECKOUT)
    assert item is not None
    old = item.doc("proposal")["digest"]
    params = {**item.doc("proposal")["params"], "max_unavailable": 2}
    edited = perform(
        controller, COMMANDS["edit"], CHECKOUT, actor="carol", fields={"params": params}
    )
    assert edited.decision is not None and edited.decision.outcome is Outcome.APPLIED
    stale = perform(controller, APPROVE, CHECKOUT, actor="alice", fields={"proposal": old[:12]})
    assert stale.decision is not None
    assert Reason.PROPOSAL_DIGEST_MISMATCH in stale.decision.reasons
    assert "edited by carol" in stale.explanation.sentences[0]
    changed = {d["field"] for d in stale.explanation.details["diff"]}
    assert "params.max_unavailable" in changed


def test_what_the_integrity_check_found_comes_first(controller: Controller) -> None:
    """A record changed in the database is refused ``integrity_failed``: the findings lead the
    explanation, the core's sentences follow."""
    with raw.writing(controller.store) as cur:
        cur.execute(
            "UPDATE items SET max_attempts = max_attempts + 5 WHERE key = ?",
            ("checkout-api",),
        )
    done = perform(controller, APPROVE, CHECKOUT, actor="alice", fields={"proposal": "0" * 64})
    assert done.decision is not None and Reason.INTEGRITY_FAILED in done.decision.reasons
    assert done.explanation.sentences[0] == done.decision.explanation[0]
    assert len(done.explanation.sentences) > len(done.decision.explanation)
