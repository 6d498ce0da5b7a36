"""decide() for the check before every acting call (``core/guard.py``): the lease, a work
state, a record its head event sealed and a sound registry; and, before acting, every counted
approval, the evidence and the policy again, or in a revision the operator it runs under.

The labs check the same through real workers and a tampered database; these hold each rule
of the check on its own, so that a rule dropped from it fails here first."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from stopline.core.commands import Failure, Guard, Revise
from stopline.core.decision import Decision, Outcome
from stopline.core.integrity import Finding
from stopline.core.reasons import Reason
from stopline.core.states import State
from stopline.core.transitions import Cmd

from .helpers import LEASE, Harness, policy, revoke

S = State
BROKEN_ACTOR = Finding("actor", "alice", "roles", "actor_altered", "the row differs")
BAD_SIGNATURE = Finding("actor", "alice", "signature", Reason.SIGNATURE_INVALID, "not signed")


def guard(h: Harness, **fields: Any) -> Guard:
    return Guard(**{**h.lease(), **fields})


def go_ahead(h: Harness, command: Guard) -> None:
    """The check passes: nothing is written and the item is as it was."""
    before = h.item
    decision = h.apply(command)
    assert decision.outcome is Outcome.ZERO_WRITE, decision.reasons
    assert h.item is before


def approved(h: Harness) -> Harness:
    h.to_approved()
    h.claim()
    return h


def delivering(h: Harness) -> Harness:
    h.to_approved()
    h.execute()
    assert h.state is S.DELIVERING
    h.claim()
    return h


# --- passing -------------------------------------------------------------------------------------


@pytest.mark.parametrize("authority", [True, False])
def test_a_sealed_record_under_a_live_lease_goes_ahead(h: Harness, authority: bool) -> None:
    go_ahead(approved(h), guard(h, authority=authority))


def test_a_delivering_item_whose_approvals_hold_goes_ahead(h: Harness) -> None:
    go_ahead(delivering(h), guard(h))


# --- the lease and the state: refused, nothing written ---------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [{"worker": "w2"}, {"token": 0}],
    ids=["another worker", "an older token"],
)
def test_a_check_under_a_lease_that_is_not_this_one_is_refused(
    h: Harness, fields: dict[str, Any]
) -> None:
    approved(h)
    h.refused(guard(h, **fields), Reason.LEASE_LOST)


def test_a_check_after_the_lease_ran_out_is_refused(h: Harness) -> None:
    approved(h)
    command = guard(h)
    h.clock.advance(LEASE.total_seconds())
    h.refused(command, Reason.LEASE_LOST)


@pytest.mark.parametrize("state", [S.AWAITING_APPROVAL, S.COMPLETED, S.EXCEPTION])
def test_outside_a_work_state_the_check_is_illegal(h: Harness, state: State) -> None:
    """Even a record its head seals, under a lease the worker holds, is not acted on in a
    stop state: no rule below (authority, integrity) gets to write anything."""
    h.to(state)
    h.claim(force=True)
    h.refused(guard(h), Reason.ILLEGAL_TRANSITION)
    h.refused(guard(h, registry=(BROKEN_ACTOR,)), Reason.ILLEGAL_TRANSITION)


# --- the record and the registry: the item stops at exception -----------------------------------


def integrity_failed(h: Harness, command: Guard) -> Decision:
    was = h.state
    decision = h.ok(command, S.EXCEPTION)
    assert decision.event is not None and decision.event.command == Cmd.INTEGRITY_FAILED
    assert Reason.INTEGRITY_FAILED in decision.reasons
    exception = h.it.doc("exception")
    assert exception["owner"] == "operators" and exception["from_state"] == was.value
    assert decision.event.detail["findings"] == exception["evidence"]["findings"]
    assert decision.event.detail["found"] >= 1
    return decision


@pytest.mark.parametrize("authority", [True, False])
def test_a_record_its_head_did_not_seal_stops_the_item(h: Harness, authority: bool) -> None:
    approved(h)
    h.item = replace(h.it, max_attempts=h.it.max_attempts + 5)  # edited behind the store
    decision = integrity_failed(h, guard(h, authority=authority))
    assert {f["reason"] for f in decision.event.detail["findings"]} == {"seal_mismatch"}  # type: ignore[union-attr]


def test_a_head_that_is_not_the_last_event_stops_the_item(h: Harness) -> None:
    approved(h)
    integrity_failed(h, guard(h, head=h.events[-2]))


@pytest.mark.parametrize("authority", [True, False])
def test_what_was_found_wrong_with_the_registry_stops_the_item(h: Harness, authority: bool) -> None:
    approved(h)
    decision = integrity_failed(h, guard(h, registry=(BROKEN_ACTOR,), authority=authority))
    assert decision.reasons == (Reason.INTEGRITY_FAILED,)
    assert list(decision.event.detail["findings"]) == [BROKEN_ACTOR.to_plain()]  # type: ignore[union-attr]


def test_an_invalid_signature_is_named_among_the_reasons(h: Harness) -> None:
    approved(h)
    decision = integrity_failed(h, guard(h, registry=(BAD_SIGNATURE,)))
    assert set(decision.reasons) == {Reason.INTEGRITY_FAILED, Reason.SIGNATURE_INVALID}


# --- authority, checked again before acting ------------------------------------------------------


def back_to_approval(h: Harness, command: Guard) -> Decision:
    decision = h.ok(command, S.AWAITING_APPROVAL)
    assert decision.event is not None and decision.event.command == Cmd.RECHECK_FAILED
    assert h.it.doc("staged") is None
    return decision


@pytest.mark.parametrize("walk", [approved, delivering], ids=["approved", "delivering"])
def test_an_approver_who_lost_authority_sends_the_item_back(h: Harness, walk: Any) -> None:
    walk(h)
    revoke(h, "alice")
    decision = back_to_approval(h, guard(h))
    assert list(decision.event.detail["voided_approvals"]) == ["alice"]  # type: ignore[union-attr]
    assert list(h.it.doc("proposal")["approvals"]) == []


def test_the_check_of_a_fresh_claim_leaves_authority_to_the_check_before_acting(
    h: Harness,
) -> None:
    approved(h)
    revoke(h, "alice")
    go_ahead(h, guard(h, authority=False))
    back_to_approval(h, guard(h))


@pytest.mark.parametrize("walk", [approved, delivering], ids=["approved", "delivering"])
def test_evidence_that_aged_past_the_policy_sends_the_item_back(h: Harness, walk: Any) -> None:
    walk(h)
    h.clock.advance(3600)  # the test policy's max_evidence_age
    h.claim(force=True)
    decision = back_to_approval(h, guard(h))
    assert Reason.EVIDENCE_STALE in decision.reasons
    assert list(h.it.doc("proposal")["approvals"]) == []  # stale evidence voids them all


def test_a_policy_changed_since_the_approval_sends_the_item_back(h: Harness) -> None:
    approved(h)
    h.policy = policy(approvals=2)
    decision = back_to_approval(h, guard(h))
    assert Reason.POLICY_CHANGED in decision.reasons


# --- a revision runs under the operator who asked for it (or took it up last) ----------------------


def fail_revision(h: Harness) -> None:
    h.claim()
    failure = Failure(**h.lease(), failure_class="boom", message="x", retryable=False)
    h.ok(failure, S.REVISION_FAILED)


def test_a_revision_whose_requester_lost_the_operator_role_fails(h: Harness) -> None:
    h.to(S.REVISION_PREPARED)
    h.claim()
    go_ahead(h, guard(h))
    revoke(h, "olivia")
    decision = h.ok(guard(h), S.REVISION_FAILED)
    assert decision.event is not None and decision.event.command == Cmd.REVISION_FAIL
    assert h.it.doc("revision")["failure"]["class"] == Reason.ACTOR_NOT_AUTHORIZED.value


@pytest.mark.parametrize(
    ("revoked", "fails"),
    [("olivia", False), ("carol", False), ("pat", True)],
    ids=["the requester", "the first to resume", "the last to resume"],
)
def test_a_resumed_revision_runs_under_whoever_resumed_it_last(
    h: Harness, revoked: str, fails: bool
) -> None:
    """olivia asks for the revision, carol and then pat take it up again after it failed:
    only pat's operator role counts before the revision acts."""
    h.to(S.REVISION_FAILED)
    for operator in ("carol", "pat"):
        h.ok(Revise(operator, "clearer writing", ("a",)), S.REVISION_PREPARED)
        if operator == "carol":
            fail_revision(h)
    assert [r["actor"] for r in h.it.doc("revision")["resumed"]] == ["carol", "pat"]
    h.claim()
    revoke(h, revoked)
    if fails:
        h.ok(guard(h), S.REVISION_FAILED)
    else:
        go_ahead(h, guard(h))
