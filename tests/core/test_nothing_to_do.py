"""decide() for the nothing-to-do outcome: classified -> completed by the worker, with its
evidence and reason, no proposal, no approval, no delivery."""

from __future__ import annotations

from stopline.core.commands import Approve, NothingToDo
from stopline.core.states import State
from stopline.core.transitions import By, Cmd, lookup

from .helpers import Harness

S = State


def test_the_table_has_one_row_for_it_issued_by_a_worker() -> None:
    """nothing_to_do leaves only classified, only for completed, and only a worker issues it."""
    row = lookup(S.CLASSIFIED, Cmd.NOTHING_TO_DO)
    assert row is not None and row.targets == {S.COMPLETED} and row.by is By.WORKER
    assert [s for s in S if s is not S.CLASSIFIED and lookup(s, Cmd.NOTHING_TO_DO)] == []


def test_nothing_to_do_completes_with_the_evidence_and_the_reason(h: Harness) -> None:
    """The item completes with a result naming the reason and the evidence digest it rests on."""
    h.discover()
    h.observe({"days_left": 90})
    evidence = h.it.doc("evidence")["digest"]
    h.claim()
    decision = h.ok(NothingToDo(**h.lease(), reason="valid for 90 days"), S.COMPLETED)
    result = h.it.doc("result")
    assert result["nothing_to_do"] == "valid for 90 days" and result["evidence_digest"] == evidence
    assert h.it.doc("proposal") is None and h.it.doc("artifacts") is None
    assert decision.event is not None and decision.event.digests["evidence"] == evidence
    assert h.it.lease_owner is None


def test_nothing_to_do_needs_a_reason_and_a_live_lease(h: Harness) -> None:
    """An empty reason is invalid_input; a lapsed lease is lease_lost; nothing is written."""
    h.discover()
    h.observe()
    h.claim()
    h.refused(NothingToDo(**h.lease(), reason="  "), "invalid_input")
    wc = h.lease()
    h.clock.advance(31)
    h.refused(NothingToDo(**wc, reason="fine"), "lease_lost")


def test_nothing_to_do_applies_only_to_a_classified_item(h: Harness) -> None:
    """From awaiting_approval (a proposal exists) it is illegal, and a completed item takes no
    approval."""
    h.to_awaiting()
    h.claim(force=True)
    h.refused(NothingToDo(**h.lease(), reason="fine"), "illegal_transition")


def test_a_completed_check_refuses_approval(h: Harness) -> None:
    """After nothing to do there is nothing to approve: approve is refused."""
    h.discover()
    h.observe()
    h.claim()
    h.ok(NothingToDo(**h.lease(), reason="fine"), S.COMPLETED)
    decision = h.decide(Approve("alice", "0" * 64))
    assert decision.outcome.value == "refused" and "illegal_transition" in decision.reasons
