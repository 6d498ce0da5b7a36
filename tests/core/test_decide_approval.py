"""decide() for approval: approve, edit, reject, and the authority re-check at execution."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from stopline.core.approval import authority_now
from stopline.core.commands import Approve, Edit, Execute, Propose, Reject
from stopline.core.decision import Outcome
from stopline.core.policy import ApprovalPolicy, ApprovalRule, Policy
from stopline.core.records import Actor
from stopline.core.states import State

from .helpers import (
    APPROVER,
    AUTOMATION_PROPOSER,
    Harness,
    bound_digests,
    policy,
    revoke,
    unchanged,
    with_proposal,
)

S = State


def two_of_them() -> Harness:
    h = Harness(policy=policy(approvals=2))
    h.to_awaiting()
    return h


def strip_roles(h: Harness, name: str) -> None:
    h.actors[name] = replace(h.actors[name], roles=frozenset())


# --- approve -------------------------------------------------------------------------------------


def test_approve_moves_to_approved_and_records_who_when_what(h: Harness) -> None:
    """One approval of the current digest by an approver approves; the record is complete."""
    h.to_awaiting()
    digest = h.digest()
    h.clock.advance(60)
    d = h.ok(Approve("alice", digest), S.APPROVED)
    (approval,) = h.it.doc("proposal")["approvals"]
    assert approval["actor"] == "alice" and approval["digest"] == digest
    assert approval["at"] == "2026-03-01T12:01:00.250000Z" and approval["role"] == "approver"
    assert approval["policy_version"] == h.policy.approval.version
    assert d.event.digests["proposal"] == digest
    assert (d.event.detail["approvals"], d.event.detail["required"]) == (1, 1)
    assert h.it.attempts == 0 and h.it.doc("step")["state"] == "approved"


def test_approve_with_another_digest_is_refused(h: Harness) -> None:
    """An approval binds to exactly the proposal shown: any other digest is a mismatch."""
    h.to_awaiting()
    h.refused(Approve("alice", "0" * 64), "proposal_digest_mismatch")
    h.refused(Approve("alice", h.digest()[:-1]), "proposal_digest_mismatch")


@pytest.mark.parametrize(
    ("actor", "reason"),
    [
        ("stranger", "actor_unknown"),
        ("gone", "actor_unknown"),
        ("olivia", "actor_not_authorized"),
        ("nora", "actor_not_authorized"),
    ],
)
def test_approve_needs_a_known_actor_with_the_role(h: Harness, actor: str, reason: str) -> None:
    """Unknown, revoked, operator-only and role-less actors cannot approve."""
    h.to_awaiting()
    h.refused(Approve(actor, h.digest()), reason)


def test_proposer_may_not_approve(h: Harness) -> None:
    """An approver whose name is the proposer's is refused self_approval."""
    h.to_awaiting()
    assert h.it.doc("proposal")["proposer"] == AUTOMATION_PROPOSER
    h.refused(Approve(AUTOMATION_PROPOSER, h.digest()), "self_approval")


def test_last_editor_may_not_approve(h: Harness) -> None:
    """carol edited the proposal, so carol may not approve it; alice may."""
    h.to_awaiting()
    h.ok(Edit("carol", {"grace": 10}), S.AWAITING_APPROVAL)
    h.refused(Approve("carol", h.digest()), "self_approval")
    h.ok(Approve("alice", h.digest()), S.APPROVED)


def test_separation_of_duties_off_lets_proposer_and_editor_approve() -> None:
    """With separation_of_duties off, the proposer's and the editor's approvals count."""
    h = Harness(policy=policy(approvals=2, separation_of_duties=False))
    h.to_awaiting()
    h.ok(Edit("carol", {"grace": 10}), S.AWAITING_APPROVAL)
    h.ok(Approve("carol", h.digest()), S.AWAITING_APPROVAL)
    h.ok(Approve(AUTOMATION_PROPOSER, h.digest()), S.APPROVED)


def test_approve_on_stale_evidence_is_refused() -> None:
    """Evidence older than max_evidence_age cannot be approved."""
    h = Harness(policy=policy(max_evidence_age=600))
    h.to_awaiting()
    h.clock.advance(599.999)
    h.ok(Approve("alice", h.digest()), S.APPROVED)  # younger than the maximum: fresh
    h2 = Harness(policy=policy(max_evidence_age=600))
    h2.to_awaiting()
    h2.clock.advance(600)
    h2.refused(Approve("alice", h2.digest()), "evidence_stale")  # at the maximum: stale


def test_approve_refusal_names_every_reason() -> None:
    """Wrong digest, unauthorized actor and stale evidence are reported together."""
    h = Harness(policy=policy(max_evidence_age=60))
    h.to_awaiting()
    h.clock.advance(61)
    h.refused(
        Approve("stranger", "x"), "proposal_digest_mismatch", "actor_unknown", "evidence_stale"
    )
    h.refused(
        Approve("olivia", "x"), "proposal_digest_mismatch", "actor_not_authorized", "evidence_stale"
    )


def test_approve_outside_awaiting_approval_is_illegal(h: Harness) -> None:
    """An approved item takes no more approvals; an item without proposal says so."""
    h.to_approved()
    h.refused(Approve("bob", h.digest()), "illegal_transition")
    h2 = Harness()
    h2.to(S.CLASSIFIED)
    h2.refused(Approve("alice", "x"), "illegal_transition", "no_proposal")
    h2.refused(Approve("stranger", "x"), "illegal_transition", "no_proposal", "actor_unknown")


def test_two_of_two_approvals() -> None:
    """With two required approvals the first leaves the item waiting ("1 of 2")."""
    h = two_of_them()
    d = h.ok(Approve("alice", h.digest()), S.AWAITING_APPROVAL)
    assert (d.event.detail["approvals"], d.event.detail["required"]) == (1, 2)
    assert [a["actor"] for a in h.it.doc("proposal")["approvals"]] == ["alice"]
    d = h.ok(Approve("bob", h.digest()), S.APPROVED)
    assert (d.event.detail["approvals"], d.event.detail["required"]) == (2, 2)


def test_duplicate_approval_by_the_same_actor_is_zero_write() -> None:
    """Approving twice does not count twice and writes nothing."""
    h = two_of_them()
    h.ok(Approve("alice", h.digest()), S.AWAITING_APPROVAL)
    before = h.it
    d = h.apply(Approve("alice", h.digest()))
    assert (d.outcome, d.reasons) == (Outcome.ZERO_WRITE, ("already_approved",))
    assert unchanged(before, d) and h.state is S.AWAITING_APPROVAL


def test_approved_needs_enough_approvals_that_still_hold() -> None:
    """alice approved then was revoked: bob's approval alone is 1 of 2, not approved."""
    h = two_of_them()
    h.ok(Approve("alice", h.digest()), S.AWAITING_APPROVAL)
    revoke(h, "alice")
    d = h.ok(Approve("bob", h.digest()))
    assert d.state is S.AWAITING_APPROVAL


# --- edit ----------------------------------------------------------------------------------------


def test_edit_changes_the_digest_and_voids_every_approval() -> None:
    """An edit is a new proposal: new digest, no approvals, evidence kept, editor recorded."""
    h = two_of_them()
    old = h.it.doc("proposal")
    h.ok(Approve("alice", h.digest()), S.AWAITING_APPROVAL)
    d = h.ok(Edit("olivia", {"grace": 30}), S.AWAITING_APPROVAL)
    new = h.it.doc("proposal")
    assert new["digest"] != old["digest"] and new["approvals"] == ()
    assert new["params"] == {"grace": 30} and new["previous_digest"] == old["digest"]
    assert new["edited_by"] == "olivia" and new["proposer"] == old["proposer"]
    assert new["evidence"] == old["evidence"]
    assert d.event.detail["voided_approvals"] == ("alice",)
    assert bound_digests(d.event) == {"proposal": new["digest"], "previous": old["digest"]}
    h.refused(Approve("bob", old["digest"]), "proposal_digest_mismatch")
    h.ok(Approve("bob", h.digest()), S.AWAITING_APPROVAL)  # 1 of 2 again


def test_edit_refusals_name_every_reason(h: Harness) -> None:
    """Edit needs an operator, on an item awaiting approval."""
    h.to_awaiting()
    h.refused(Edit("stranger", {"a": 1}), "actor_unknown")
    h.refused(Edit("alice", {"a": 1}), "actor_not_authorized")
    h2 = Harness()
    h2.to_approved()
    h2.refused(Edit("nora", {"a": 1}), "illegal_transition", "actor_not_authorized")
    h3 = Harness()
    h3.to(S.CLASSIFIED)
    h3.refused(Edit("stranger", {"a": 1}), "illegal_transition", "actor_unknown", "no_proposal")


def test_edit_that_changes_nothing_is_zero_write() -> None:
    """Repeating an edit with the same parameters writes nothing and keeps the approvals."""
    h = two_of_them()
    h.ok(Edit("olivia", {"grace": 30}), S.AWAITING_APPROVAL)
    h.ok(Approve("alice", h.digest()), S.AWAITING_APPROVAL)
    d = h.apply(Edit("olivia", {"grace": 30}))
    assert d.outcome is Outcome.ZERO_WRITE
    assert [a["actor"] for a in h.it.doc("proposal")["approvals"]] == ["alice"]


# --- reject --------------------------------------------------------------------------------------


def test_reject_closes_without_action() -> None:
    """reject ends the item in closed; the rejection and voided approvals are recorded."""
    h = two_of_them()
    digest = h.digest()
    h.ok(Approve("alice", digest), S.AWAITING_APPROVAL)
    d = h.ok(Reject("bob", "wrong host", digest=digest), S.CLOSED)
    rejection = h.it.doc("rejection")
    assert (rejection["actor"], rejection["reason"], rejection["digest"]) == (
        "bob",
        "wrong host",
        digest,
    )
    assert rejection["returned"] is False and h.it.doc("proposal") is None
    assert d.event.detail["voided_approvals"] == ("alice",)


def test_reject_with_return_sends_the_item_back_to_classified(h: Harness) -> None:
    """--return sends it back to be proposed again, keeping the rejection to read."""
    h.to_awaiting()
    digest = h.digest()
    h.ok(Reject("olivia", "smaller grace", send_back=True), S.CLASSIFIED)
    assert h.it.doc("rejection")["returned"] is True and h.it.doc("rejection")["digest"] == digest
    assert h.it.doc("proposal") is None and h.it.attempts == 0
    h.claim()
    h.ok(Propose(**h.lease(), action="restart", target="web-1", params={"grace": 1}))
    assert h.state is S.AWAITING_APPROVAL and h.digest() != digest
    # The answer is shown against the proposal it replaces.
    assert h.it.doc("previous_proposal")["digest"] == digest
    assert h.it.doc("proposal")["previous_digest"] == digest


def test_whoever_returned_a_proposal_may_not_approve_the_answer(h: Harness) -> None:
    """A person whose `reject --return` reason fed the next proposal counts like an editor of
    it: with separation of duties they may not approve it; someone else may."""
    h.to_awaiting()
    h.ok(Reject("alice", "smaller grace", send_back=True), S.CLASSIFIED)
    h.propose({"grace": 1})
    assert list(h.it.doc("proposal")["returned_by"]) == ["alice"]
    h.refused(Approve("alice", h.digest()), "self_approval")
    h.ok(Approve("bob", h.digest()), S.APPROVED)


def test_returners_stay_barred_across_rounds_and_edits(h: Harness) -> None:
    """Two rounds of returns and an edit: both returners stay barred from approving."""
    h.to_awaiting()
    h.ok(Reject("alice", "smaller grace", send_back=True), S.CLASSIFIED)
    h.propose({"grace": 2})
    h.ok(Reject("bob", "smaller still", send_back=True), S.CLASSIFIED)
    h.propose({"grace": 1})
    h.ok(Edit("olivia", {"grace": 0}), S.AWAITING_APPROVAL)
    assert list(h.it.doc("proposal")["returned_by"]) == ["alice", "bob"]
    h.refused(Approve("alice", h.digest()), "self_approval")
    h.refused(Approve("bob", h.digest()), "self_approval")


def test_a_policy_may_let_returners_approve() -> None:
    """`returners_may_approve=True` lets the person who returned a proposal approve its answer;
    it is recorded in the proposal, so the digest binds it."""
    h = Harness(
        policy=Policy(
            approval=ApprovalPolicy(
                default=ApprovalRule((APPROVER,), 1, returners_may_approve=True)
            )
        )
    )
    h.to_awaiting()
    h.ok(Reject("alice", "smaller grace", send_back=True), S.CLASSIFIED)
    h.propose({"grace": 1})
    assert h.it.doc("proposal")["returners_may_approve"] is True
    h.ok(Approve("alice", h.digest()), S.APPROVED)


def test_reject_refusals_name_every_reason(h: Harness) -> None:
    """Unknown actor, no role, blank reason and a wrong digest are all named."""
    h.to_awaiting()
    h.refused(
        Reject("stranger", " ", digest="x"),
        "actor_unknown",
        "invalid_input",
        "proposal_digest_mismatch",
    )
    h.refused(Reject("nora", "r"), "actor_not_authorized")
    h2 = Harness()
    h2.to(S.CLASSIFIED)
    h2.refused(Reject("olivia", "r"), "illegal_transition", "no_proposal")


# --- execute: authority re-checked when the action is about to run -------------------------------


def test_execute_moves_to_delivering_with_the_approvers(h: Harness) -> None:
    """With authority intact, execute starts the delivery step."""
    h.to_approved()
    d = h.execute()
    assert d.state is S.DELIVERING and d.event.detail["approvers"] == ("alice",)
    assert h.it.attempts == 0 and h.it.lease_owner is None


def test_execute_needs_the_lease_and_approved(h: Harness) -> None:
    """A stale worker, or an item not approved, cannot execute."""
    h.to_approved()
    h.refused(Execute("w1", 0), "lease_lost")
    h2 = Harness()
    h2.to_awaiting()
    h2.refused(Execute("w1", 0), "illegal_transition", "lease_lost")


def test_execute_with_a_revoked_role_goes_back_to_awaiting_approval(h: Harness) -> None:
    """alice lost the approver role: the approval is voided, with the reasons recorded."""
    h.to_approved()
    strip_roles(h, "alice")
    d = h.execute()
    assert d.state is S.AWAITING_APPROVAL and d.event.command == "recheck_failed"
    assert set(d.reasons) == {"actor_not_authorized", "approvals_missing"}
    assert h.it.doc("proposal")["approvals"] == ()
    assert d.event.detail["voided_approvals"] == ("alice",)


def test_execute_with_a_revoked_actor_goes_back_to_awaiting_approval(h: Harness) -> None:
    """A revoked approver's approval no longer counts."""
    h.to_approved()
    revoke(h, "alice")
    d = h.execute()
    assert d.state is S.AWAITING_APPROVAL
    assert set(d.reasons) == {"actor_unknown", "approvals_missing"}


def test_execute_on_aged_evidence_goes_back_to_awaiting_approval() -> None:
    """Evidence that aged past the limit while waiting voids every approval."""
    h = Harness(policy=policy(max_evidence_age=120))
    h.to_approved()
    h.clock.advance(121)
    d = h.execute()
    assert d.state is S.AWAITING_APPROVAL and "evidence_stale" in d.reasons
    assert h.it.doc("proposal")["approvals"] == ()
    h.refused(Approve("bob", h.digest()), "evidence_stale")  # only reinspect helps now


def test_execute_with_insufficient_approvals_keeps_the_valid_ones() -> None:
    """2 of 2 approved, then bob revoked: alice's approval stays, one more is needed."""
    h = two_of_them()
    h.approve("alice", "bob")
    assert h.state is S.APPROVED
    revoke(h, "bob")
    d = h.execute()
    assert d.state is S.AWAITING_APPROVAL
    assert set(d.reasons) == {"actor_unknown", "approvals_missing"}
    assert [a["actor"] for a in h.it.doc("proposal")["approvals"]] == ["alice"]
    h.ok(Approve("carol", h.digest()), S.APPROVED)
    assert h.execute().state is S.DELIVERING


def test_execute_rechecks_roles_the_proposal_requires(h: Harness) -> None:
    """A new actor registry where alice holds another role is not enough."""
    h.to_approved()
    h.actors["alice"] = Actor("alice", frozenset({"auditor"}))
    assert h.execute().state is S.AWAITING_APPROVAL


# --- the policy and the approvals a proposal already holds -----------------------------------------


def test_approve_under_a_policy_changed_since_the_proposal_is_refused(h: Harness) -> None:
    """Approving a proposal made under rules that are no longer the automation's would approve
    it under rules nobody approved: ``policy_changed`` (a new proposal is needed)."""
    h.to_awaiting()
    h.policy = policy(approvals=2)
    h.refused(Approve("alice", h.digest()), "policy_changed")


def test_approve_when_the_recorded_rule_is_not_the_policys_is_refused(h: Harness) -> None:
    """The proposal's own record of its rule edited (one approval instead of the policy's
    two), its policy version left as it was: the rule it names must be the rule it records."""
    h = Harness(policy=policy(approvals=2))
    h.to_awaiting()
    h.item = with_proposal(h.it, required_approvals=1)
    h.refused(Approve("alice", h.digest()), "policy_changed")


def test_an_approval_held_under_another_digest_is_voided_not_counted() -> None:
    """An approval the proposal holds that was given to another digest (a record edited
    behind the store) never counts towards the approvals it needs."""
    h = two_of_them()
    proposal = h.it.doc("proposal")
    stale = {"actor": "bob", "at": "2026-03-01T12:00:00Z", "digest": "0" * 64, "role": APPROVER}
    stale["policy_version"] = proposal["policy_version"]
    h.item = with_proposal(h.it, approvals=[stale])
    d = h.ok(Approve("alice", h.digest()), S.AWAITING_APPROVAL)
    assert list(d.event.detail["voided_approvals"]) == ["bob"]  # type: ignore[union-attr]
    assert [a["actor"] for a in h.it.doc("proposal")["approvals"]] == ["alice"]


def test_approve_under_another_version_of_the_approval_policy_is_refused(h: Harness) -> None:
    """A rule added for another action leaves this action's rule as it was but makes another
    approval policy: the proposal was made under rules that are no longer the automation's."""
    h.to_awaiting()
    rule = h.policy.approval.default
    other = ApprovalRule((APPROVER,), 2, 3600.0, True)
    h.policy = replace(h.policy, approval=ApprovalPolicy(default=rule, rules={"delete": other}))
    assert h.policy.approval.rule("restart") == rule
    h.refused(Approve("alice", h.digest()), "policy_changed")


def test_a_recorded_rule_without_its_count_is_refused_not_a_crash(h: Harness) -> None:
    h.to_awaiting()
    proposal = {k: v for k, v in h.it.doc("proposal").items() if k != "required_approvals"}
    h.item = replace(h.it, data=h.it.with_data(proposal=proposal))
    h.refused(Approve("alice", h.digest()), "policy_changed")


def with_approvals(h: Harness, approvals: list[Any]) -> None:
    """The proposal's approvals replaced behind the store (the record's own check, at every
    load, then finds ``approval_altered``; these hold the rule behind it)."""
    h.item = with_proposal(h.it, approvals=approvals)


def test_one_approver_recorded_twice_counts_once_towards_approve() -> None:
    h = Harness(policy=policy(approvals=3))
    h.to_awaiting()
    h.approve("bob")
    bob = dict(h.it.doc("proposal")["approvals"][0])
    with_approvals(h, [bob, bob])
    d = h.decide(Approve("alice", h.digest()))
    assert d.state is S.AWAITING_APPROVAL  # bob and alice: two of three


def test_one_approver_recorded_twice_counts_once_at_execution() -> None:
    h = two_of_them()
    h.approve("bob")
    bob = dict(h.it.doc("proposal")["approvals"][0])
    with_approvals(h, [bob, bob])
    h.item = replace(h.it, state=S.APPROVED)  # as if two had approved
    h.claim()
    d = h.decide(Execute(**h.lease()))
    assert d.state is S.AWAITING_APPROVAL and "approvals_missing" in d.reasons


def test_an_approval_given_to_another_digest_does_not_count_at_execution() -> None:
    h = Harness()
    h.to_approved()
    alice = {**h.it.doc("proposal")["approvals"][0], "digest": "0" * 64}
    with_approvals(h, [alice])
    h.claim()
    d = h.decide(Execute(**h.lease()))
    assert d.state is S.AWAITING_APPROVAL
    assert {"proposal_digest_mismatch", "approvals_missing"} <= set(d.reasons)


def test_execute_under_a_policy_changed_since_the_approval_goes_back(h: Harness) -> None:
    h.to_approved()
    h.policy = policy(approvals=2)
    h.claim()
    d = h.ok(Execute(**h.lease()), S.AWAITING_APPROVAL)
    assert "policy_changed" in d.reasons
    assert list(h.it.doc("proposal")["approvals"]) == []  # approved under other rules: void


def test_evidence_observed_after_now_is_not_fresh() -> None:
    """Evidence stamped later than now (a clock ahead of this host's, or a row written by
    hand) would never age: it is not fresh, for an approval and for the check before acting."""
    h = Harness(policy=policy(max_evidence_age=600))
    h.to_awaiting()
    h.clock.advance(-0.001)  # this host's now: just before the evidence was observed
    h.refused(Approve("alice", h.digest()), "evidence_stale")
    h.clock.advance(0.001)
    h.approve("alice")
    assert h.state is S.APPROVED
    h.clock.advance(-3600)
    failing, valid = authority_now(h.it, h.ctx())
    assert "evidence_stale" in failing and valid == []
