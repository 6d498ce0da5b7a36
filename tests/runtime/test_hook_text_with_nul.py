"""A NUL character in the text a hook's outcome stops its item with (a proposal's action,
target or rationale, a report's summary, the owner and why of a call for eyes, a failure's
message): the input limits let a NUL through in a JSON document, and every document holds it.
The item's inbox search line (a text column) is made of those texts, and PostgreSQL's text
columns refuse a NUL: the worker must still record the stop, on either store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stopline import (
    App,
    ApprovalPolicy,
    ApprovalRule,
    Artifact,
    Automation,
    Deliver,
    Evidence,
    NeedsEyes,
    Proposal,
    ReportForReview,
    RetryLater,
)
from stopline.core.failures import INVALID_OUTPUT
from stopline.core.policy import RetryPolicy
from stopline.core.search import search_text
from stopline.store import Store
from stopline.targets.directory import DirectoryTarget

from .notice import discovered, drain, drained, notice_automation

OUTCOMES: dict[str, Any] = {
    "action": (Proposal("pub\x00lish", {}), "awaiting_approval"),
    "target": (Proposal("publish", {}, target="status\x00page"), "awaiting_approval"),
    "rationale": (Proposal("publish", {}, rationale="because\x00"), "awaiting_approval"),
    "summary": (ReportForReview({"summary": "all\x00well"}), "ready_for_review"),
    "why": (NeedsEyes("look\x00here"), "exception"),
    "owner": (NeedsEyes("look", owner="ops\x00team"), "exception"),
    "message": (RetryLater("try\x00again"), "exhausted"),
}


@pytest.mark.parametrize("field", list(OUTCOMES))
def test_a_nul_in_the_text_an_item_stops_with_is_recorded(store: Store, field: str) -> None:
    """Before, on PostgreSQL: the decision's write raised ``DataError`` out of
    ``Worker.tick`` (the loop of ``stopline run``), the item still claimed, and every worker
    that took it again ended the same way."""
    outcome, state = OUTCOMES[field]
    automation = Automation(
        "ops",
        lambda ctx: ["k"],
        lambda ctx: Evidence({}),
        lambda ctx: outcome,
        approval=ApprovalPolicy(default=ApprovalRule(approvals=1)),
        retry=RetryPolicy(max_attempts=1),
    )
    drain(discovered(store, App([automation])))
    (item,) = store.list_items(automation="ops")
    assert item.state.value == state
    line = search_text(item)
    assert line is not None and "\x00" not in line and line.startswith("ops/k ")


@pytest.mark.parametrize("key", ["notice\x00", "notice\ud800"], ids=["nul", "surrogate"])
def test_an_artifact_key_no_record_may_hold_is_invalid_output(
    store: Store, tmp_path: Path, key: str
) -> None:
    """An artifact's key names the artifact in every record of its delivery, the hold on its
    remote object among them (a text column). Before, on PostgreSQL, with a NUL: the object
    was written to the target, then taking its hold raised ``DataError`` out of
    ``Worker.tick``, the item still claimed. Now the output is ``invalid_output`` before
    anything is delivered."""
    target = DirectoryTarget(tmp_path / "site")
    automation = notice_automation(
        target, execute=lambda ctx: Deliver([Artifact(key, "Outage", "API down", "On it.")])
    )
    item = drained(store, automation)
    assert item.state.value == "failed"
    text = str(store.history(item.id)[-1].detail)
    assert INVALID_OUTPUT in text and "$.execute.artifacts[0].key" in text, text
    assert not (tmp_path / "site").exists() or not any((tmp_path / "site").iterdir())
