"""What a load must prove before anything acts on an item (``integrity.head_findings``): its
head event is intact, is the item's last, and seals exactly this record up to the claims made
since; its proposal hashes to its digest and every approval names it.

The stores and the tamper labs check it on rows edited behind them; these hold each finding
on its own."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from stopline.core.integrity import (
    APPROVAL_ALTERED,
    EVENT_ALTERED,
    HEAD_MISMATCH,
    HEAD_MISSING,
    PROPOSAL_ALTERED,
    RECORD_MALFORMED,
    SEAL_MISMATCH,
    UNSEALED,
    head_findings,
)
from stopline.core.records import Event, Item
from stopline.core.states import State

from .helpers import T0, Harness, claim, reasons_of, resealed, with_proposal

S = State


def walked(state: State) -> Harness:
    h = Harness()
    h.to(state)
    return h


def found(item: Item, head: Event | None, legacy_seal: str | None = None) -> set[tuple[str, str]]:
    """(reason, field) of every finding."""
    return {(f.reason, f.field) for f in head_findings(item, head, legacy_seal)}


@pytest.mark.parametrize("state", [S.OBSERVING, S.AWAITING_APPROVAL, S.APPROVED, S.COMPLETED])
def test_a_record_as_its_last_event_left_it_has_no_findings(state: State) -> None:
    h = walked(state)
    assert head_findings(h.it, h.events[-1]) == []


def test_claims_made_since_the_last_event_are_no_finding() -> None:
    """Each claim adds an attempt and a token without an event; an expired claim taken over
    logs the attempt it abandoned."""
    h = walked(S.CLASSIFIED)
    item = claim(h.it, "w1", h.now)
    item = claim(item, "w2", h.now.replace(year=h.now.year + 1))  # the first lease ran out
    assert item.attempt_log and head_findings(item, h.events[-1]) == []


@pytest.mark.parametrize("claims", [0, 1, 2, 3])
def test_a_record_under_a_lease_matches_its_seal_whatever_the_claims_since(claims: int) -> None:
    """A leased record is tried as claimed once since its event first: a lease held at the
    event itself, or taken over twice since, matches as well."""
    h = walked(S.CLASSIFIED)
    item = h.it
    for n in range(claims):
        item = claim(item, f"w{n}", h.now.replace(year=h.now.year + n))  # each lease ran out
    if claims == 0:  # the event left the lease held (a step that continues under its claim)
        item = replace(item, lease_owner="w0", lease_expires_at=h.now, claimed_at=h.now)
    assert item.lease_owner is not None and item.attempts == h.it.attempts + claims
    assert head_findings(item, h.events[-1]) == []
    assert found(replace(item, lease_token=item.lease_token + 1), h.events[-1]) == {
        ("seal_mismatch", "record")
    }


@pytest.mark.parametrize(
    "changes",
    [
        {"lease_token": 7},  # a token no claim gave
        {"attempts": 5},  # attempts no claim counted
        {"max_attempts": 9},
        {"automation": "other"},
        {"key": "k2"},
        {"next_eligible_at": T0 - timedelta(hours=1)},  # due before its retry delay
        {"created_at": T0 - timedelta(days=1)},
    ],
    ids=lambda c: next(iter(c)),
)
def test_a_record_edited_behind_the_store_no_longer_matches_its_seal(
    changes: dict[str, Any],
) -> None:
    h = walked(S.CLASSIFIED)
    assert found(replace(h.it, **changes), h.events[-1]) == {(SEAL_MISMATCH, "record")}


def test_an_item_without_events_is_missing_its_head() -> None:
    h = walked(S.OBSERVING)
    assert found(h.it, None) == {(HEAD_MISSING, "head")}


def test_an_altered_head_event_is_found() -> None:
    h = walked(S.CLASSIFIED)
    altered = replace(h.events[-1], actor="mallory")  # its hash no longer fits
    assert found(h.it, altered) == {(EVENT_ALTERED, "hash")}


def test_a_head_rewritten_and_rehashed_is_not_the_items_head() -> None:
    h = walked(S.CLASSIFIED)
    forged = resealed(h.events[-1], actor="mallory")
    assert found(h.it, forged) == {(HEAD_MISMATCH, "head")}


def test_an_earlier_event_is_not_the_head() -> None:
    h = walked(S.CLASSIFIED)
    assert (HEAD_MISMATCH, "head") in found(h.it, h.events[-2])


def test_a_record_pointing_at_another_position_is_found() -> None:
    h = walked(S.CLASSIFIED)
    moved = replace(h.it, seq=h.it.seq + 1)
    assert found(moved, h.events[-1]) == {(HEAD_MISMATCH, "head"), (SEAL_MISMATCH, "record")}


def test_another_items_event_is_not_the_head() -> None:
    """The head row's item id edited (its hash then no longer fits, but it is the hash the
    record names): it is not this item's event."""
    h = walked(S.CLASSIFIED)
    theirs = replace(h.events[-1], item_id="auto-other")
    assert found(h.it, theirs) == {(EVENT_ALTERED, "hash"), (HEAD_MISMATCH, "head")}


def test_a_state_the_head_did_not_end_in_is_found() -> None:
    h = walked(S.CLASSIFIED)
    moved = replace(h.it, state=S.APPROVED)
    assert found(moved, h.events[-1]) == {(SEAL_MISMATCH, "state"), (SEAL_MISMATCH, "record")}


def test_a_head_without_a_seal_is_unsealed_unless_the_upgrade_recorded_one() -> None:
    h = walked(S.CLASSIFIED)
    head = h.events[-1]
    seal = head.digests["seal"]
    bare = resealed(head, digests={k: v for k, v in head.digests.items() if k != "seal"})
    item = replace(h.it, head=bare.hash)
    assert found(item, bare) == {(UNSEALED, "seal")}
    assert found(item, bare, legacy_seal=seal) == set()
    assert found(item, bare, legacy_seal="0" * 64) == {(SEAL_MISMATCH, "record")}


# --- the proposal ----------------------------------------------------------------------------------


def test_a_proposal_edited_without_a_new_digest_is_altered() -> None:
    h = walked(S.AWAITING_APPROVAL)
    edited = with_proposal(h.it, params={"grace": 500})
    assert (PROPOSAL_ALTERED, "proposal") in found(edited, h.events[-1])


def test_an_approval_naming_another_digest_is_altered() -> None:
    h = walked(S.APPROVED)
    (approval,) = h.it.doc("proposal")["approvals"]
    edited = with_proposal(h.it, approvals=[{**approval, "digest": "0" * 64}])
    assert (APPROVAL_ALTERED, "proposal.approvals") in found(edited, h.events[-1])


def test_an_approver_repeated_is_altered() -> None:
    h = walked(S.APPROVED)
    (approval,) = h.it.doc("proposal")["approvals"]
    edited = with_proposal(h.it, approvals=[approval, approval])
    assert (APPROVAL_ALTERED, "proposal.approvals") in found(edited, h.events[-1])


def test_a_malformed_proposal_is_a_finding_not_a_crash() -> None:
    h = walked(S.AWAITING_APPROVAL)
    proposal = {k: v for k, v in h.it.doc("proposal").items() if k != "digest"}
    edited = replace(h.it, data=h.it.with_data(proposal=proposal))
    assert RECORD_MALFORMED in reasons_of(head_findings(edited, h.events[-1]))


def test_an_attempt_logged_since_the_last_event_must_be_an_abandoned_claim() -> None:
    """A claim that took over an expired lease logs the attempt it abandoned; any other entry
    added since the last event (a failure nobody recorded) is an edit."""
    h = walked(S.CLASSIFIED)
    taken_over = claim(claim(h.it, "w1", h.now), "w2", h.now.replace(year=h.now.year + 1))
    (abandoned,) = taken_over.attempt_log[len(h.it.attempt_log) :]
    assert head_findings(taken_over, h.events[-1]) == []
    failed = {**abandoned, "outcome": "failed"}
    edited = replace(taken_over, attempt_log=(*h.it.attempt_log, failed))
    assert found(edited, h.events[-1]) == {(SEAL_MISMATCH, "record")}


def test_an_attempt_log_cut_short_no_longer_matches_its_seal() -> None:
    """The failures that spent an exhausted item's budget, deleted from its log."""
    h = walked(S.EXHAUSTED)
    assert len(h.it.attempt_log) > 1
    edited = replace(h.it, attempt_log=h.it.attempt_log[1:])
    assert found(edited, h.events[-1]) == {(SEAL_MISMATCH, "record")}
