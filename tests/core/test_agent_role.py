"""An actor holding the agent role decides nothing a person decides, whatever else it holds.

The core refuses every people's command by such an actor (``agent_forbidden``): approve most of
all, and an approval given before the actor was made an agent no longer counts when the action
is about to run. ``rights`` says the same (the property test of ``test_rights.py`` draws the
agent role too).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stopline.core.approval import authority_now
from stopline.core.commands import Approve, Close, Edit, Execute, Reinspect, Reject
from stopline.core.reasons import Reason
from stopline.core.records import Actor
from stopline.core.rights import AUTHORITY, Authority, rights
from stopline.core.states import State
from stopline.core.step import AGENT
from stopline.core.transitions import Cmd

from .helpers import Harness

OTHER_ROLES = ["approver", "operator", "publisher", "auditor"]


@settings(max_examples=40, deadline=None)
@given(extra=st.sets(st.sampled_from(OTHER_ROLES)))
def test_an_agent_may_not_approve_whatever_else_it_holds(extra: set[str]) -> None:
    """Approve, reject, edit, reinspect and close by an agent are refused agent_forbidden, and
    rights offers it no people's command on the item."""
    h = Harness()
    item = h.to(State.AWAITING_APPROVAL)
    h.actors["bot"] = Actor("bot", frozenset({AGENT, *extra}))
    digest = item.doc("proposal")["digest"]
    for command in (
        Approve(actor="bot", digest=digest),
        Reject(actor="bot", reason="no", digest=digest),
        Edit(actor="bot", params={"x": 1}),
        Reinspect(actor="bot", reason="look"),
        Close(actor="bot", reason="done"),
    ):
        decision = h.refused(command, *h.decide(command).reasons)
        assert Reason.AGENT_FORBIDDEN in decision.reasons, command
    for name, verdict in rights(item, "bot", h.ctx()).items():
        if AUTHORITY[Cmd(name)] is Authority.ANYONE:
            continue
        assert not verdict.allowed and Reason.AGENT_FORBIDDEN in verdict.reasons, name


def test_an_approval_by_an_actor_made_an_agent_later_does_not_count() -> None:
    """alice approved; then someone granted her the agent role: at execution her approval is
    dropped and the item goes back to awaiting_approval (the worker's re-check)."""
    h = Harness()
    item = h.to(State.AWAITING_APPROVAL)
    h.ok(Approve(actor="alice", digest=item.doc("proposal")["digest"]), State.APPROVED)
    h.actors["alice"] = Actor("alice", frozenset({"approver", AGENT}))
    failing, valid = authority_now(h.it, h.ctx())
    assert Reason.AGENT_FORBIDDEN in failing and valid == []
    h.claim()
    h.ok(Execute(**h.lease()), State.AWAITING_APPROVAL)


def test_an_execute_or_outcome_names_the_digest_it_carries_out() -> None:
    """An Execute naming another digest than the approved proposal's is refused."""
    h = Harness()
    item = h.to(State.AWAITING_APPROVAL)
    h.ok(Approve(actor="alice", digest=item.doc("proposal")["digest"]), State.APPROVED)
    h.claim()
    h.refused(Execute(**h.lease(), digest="0" * 64), Reason.PROPOSAL_DIGEST_MISMATCH)
    h.ok(Execute(**h.lease(), digest=item.doc("proposal")["digest"]), State.DELIVERING)
