"""From a hook's outcome to the command that records it (``runtime/outcome_table.py``): an
outcome is recorded whole, and an outcome type a hook may not return (evidence from
``execute``, a proposal from ``observe``) stops the item for a person at the first attempt,
naming what the hook returned, with nothing of it in the record. On both stores, a real
worker in process."""

from __future__ import annotations

from typing import Any

import pytest

from stopline import (
    ApprovalPolicy,
    ApprovalRule,
    Automation,
    Deliver,
    Evidence,
    NeedsEyes,
    NothingToDo,
    Proposal,
    RetryPolicy,
)
from stopline.store import Store

from .notice import drained


def _automation(**hooks: Any) -> Automation:
    return Automation(
        "ops",
        lambda ctx: ["k"],
        hooks.get("observe", lambda ctx: Evidence({"seen": True})),
        hooks.get("propose", lambda ctx: Proposal("publish", {})),
        execute=hooks.get("execute", lambda ctx: Deliver(result={"done": True})),
        approval=ApprovalPolicy(default=ApprovalRule(approvals=0)),
        retry=RetryPolicy(max_attempts=5, base_delay=0.0),
    )


def test_evidence_is_recorded_with_its_classification(store: Store) -> None:
    classified = Evidence({"p99_ms": 4100}, classification={"kind": "latency", "sev": 2})
    item = drained(store, _automation(observe=lambda ctx: classified))
    assert item.state.value == "completed", item.state
    assert item.data["classification"] == {"kind": "latency", "sev": 2}


def test_nothing_to_do_is_recorded_with_its_reason(store: Store) -> None:
    item = drained(store, _automation(propose=lambda ctx: NothingToDo("the queue is empty")))
    assert item.state.value == "completed", item.state
    last = store.history(item.id)[-1]
    assert last.command == "nothing_to_do" and "the queue is empty" in str(last.detail)


def test_needs_eyes_is_recorded_with_its_owner_and_evidence(store: Store) -> None:
    asked = NeedsEyes("two runbooks disagree", owner="sre", evidence={"runbooks": ["a", "b"]})
    item = drained(store, _automation(propose=lambda ctx: asked))
    assert item.state.value == "exception", item.state
    exception = item.data["exception"]
    assert (exception["why"], exception["owner"]) == ("two runbooks disagree", "sre")
    assert exception["evidence"] == {"runbooks": ("a", "b")}  # read-only, as recorded


CASES = {
    "observe-returns-a-proposal": ("observe", "Proposal", "observing"),
    "propose-returns-evidence": ("propose", "Evidence", "classified"),
    "execute-returns-evidence": ("execute", "Evidence", "delivering"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_outcome_a_hook_may_not_return_stops_the_item(store: Store, case: str) -> None:
    hook, returned, state = CASES[case]
    wrong = {"Proposal": Proposal("publish", {}), "Evidence": Evidence({"seen": True})}[returned]
    item = drained(store, _automation(**{hook: lambda ctx: wrong}))
    assert item.state.value == "exception", item.state
    assert item.attempts == 1
    last = store.history(item.id)[-1]
    assert (last.command, last.from_state.value if last.from_state else None) == (
        "needs_eyes",
        state,
    )
    assert item.data["exception"]["why"] == (
        f"{hook} hook returned {returned}, which it may not return"
    )
    assert item.data["exception"]["owner"] == "operators"
    if hook == "observe":
        assert item.doc("evidence") is None
    if hook == "propose":
        assert item.doc("proposal") is None
