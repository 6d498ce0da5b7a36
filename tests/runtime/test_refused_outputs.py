"""A hook's answer in shape and within the input limits that the core still refuses as
``invalid_input`` (evidence dated in the future, an empty action, a blank reason, no owner):
recorded as the terminal failure ``invalid_output`` at the first attempt, naming the refusal,
with nothing of the answer in the record. Without that, the step would end having written
nothing, and the item would wait for its lease to run out and ask the same hook again until
its budget was spent. On both stores, a real worker in process."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from stopline import (
    ApprovalPolicy,
    ApprovalRule,
    Automation,
    Evidence,
    NeedsEyes,
    NothingToDo,
    Proposal,
    RetryPolicy,
)
from stopline.store import Store

from .notice import drained

LATER = timedelta(days=365)


def _automation(observe: Any, propose: Any) -> Automation:
    return Automation(
        "ops",
        lambda ctx: ["k"],
        observe,
        propose,
        approval=ApprovalPolicy(default=ApprovalRule(approvals=0)),
        retry=RetryPolicy(max_attempts=5, base_delay=0.0),
    )


def _evidence(ctx: Any) -> Evidence:
    return Evidence({"seen": True})


CASES = {
    "evidence-from-the-future": (
        "observe",
        lambda ctx: Evidence({"seen": True}, observed_at=ctx.now + LATER),
        lambda ctx: Proposal("publish", {}),
    ),
    "empty-action": ("propose", _evidence, lambda ctx: Proposal("", {})),
    "blank-reason": ("propose", _evidence, lambda ctx: NothingToDo("   ")),
    "no-owner": ("propose", _evidence, lambda ctx: NeedsEyes("look", owner="")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_answer_the_core_refuses_is_invalid_output(store: Store, case: str) -> None:
    hook, observe, propose = CASES[case]
    item = drained(store, _automation(observe, propose))
    assert item.state.value == "failed", item.state  # terminal: not retried
    assert item.attempts == 1
    last = store.history(item.id)[-1]
    text = str(last.detail)
    assert "invalid_output" in text, last.detail
    assert f"the {hook} hook's output was refused: invalid_input" in text, last.detail
    if hook == "observe":
        assert item.doc("evidence") is None
    assert item.doc("proposal") is None
