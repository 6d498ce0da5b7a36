"""decide() for the scheduler and workers: discovery, worker steps, leases, retries, expiry."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from stopline.core import work
from stopline.core.canonical import digest
from stopline.core.commands import (
    Approve,
    Close,
    Discover,
    Expire,
    Failure,
    NeedsEyes,
    Observe,
    Propose,
    Report,
)
from stopline.core.decide import decide
from stopline.core.decision import Outcome
from stopline.core.policy import Policy, RetryPolicy
from stopline.core.states import State
from stopline.core.step import Context

from .helpers import T0, Harness, claim, claimable, policy, unchanged

S = State


def retrying(max_attempts: int = 3, **kw: float) -> Harness:
    return Harness(policy=policy(retry=RetryPolicy(max_attempts=max_attempts, **kw)))


def fail(h: Harness, message: str = "timeout", *, retryable: bool = True, cls: str = "network"):
    return h.apply(Failure(**h.lease(), failure_class=cls, message=message, retryable=retryable))


# --- discovery -----------------------------------------------------------------------------------


def test_discover_creates_an_observing_item(h: Harness) -> None:
    """Discovery writes version 1, event 1 from nothing, a fresh budget and the input."""
    item = h.discover({"ticket": 42})
    assert (item.state, item.version, item.seq, item.attempts) == (S.OBSERVING, 1, 1, 0)
    assert item.max_attempts == 3 and item.next_eligible_at == T0 and item.lease_owner is None
    assert item.doc("input") == {"ticket": 42}
    event = h.events[0]
    assert (event.from_state, event.to_state, event.command, event.prev_hash) == (
        None,
        S.OBSERVING,
        "discover",
        "",
    )
    assert item.head == event.hash


def test_drive_walks_an_item_to_approved(h: Harness) -> None:
    """Claims by hand and applies each step: discover, observe, propose, approve."""
    h.discover()
    decisions = h.drive(
        lambda wc: Observe(**wc, evidence={"cpu": 90}, observed_at=h.now),
        lambda wc: Propose(**wc, action="restart", target="web-1", params={}),
    )
    assert [d.state for d in decisions] == [S.CLASSIFIED, S.AWAITING_APPROVAL]
    assert h.it.lease_token == 2 and h.it.version == 5  # two claims, three events
    (approved,) = h.drive(Approve("bob", h.digest()))
    assert approved.state is S.APPROVED and [e.seq for e in h.events] == [1, 2, 3, 4]


def test_rediscovery_is_zero_write(h: Harness) -> None:
    """Discovering an existing key writes nothing, whatever state the item is in."""
    h.to_awaiting()
    before = h.it
    decision = h.apply(Discover(h.item_id, "auto", "k1", {"n": 2}))
    assert decision.outcome is Outcome.ZERO_WRITE and decision.reasons == ()
    assert unchanged(before, decision) and h.state is S.AWAITING_APPROVAL


def test_discover_without_a_key_is_refused() -> None:
    """An empty automation or key is refused invalid_input, naming the would-be item."""
    d = decide(None, Discover("auto-", "auto", ""), Context(T0, Policy()))
    assert d.outcome is Outcome.REFUSED and d.reasons == ("invalid_input",)
    assert d.item_id == "auto-" and d.after is None and d.event is None


def test_commands_on_a_missing_item_are_refused_unknown_item() -> None:
    """Anything but discovery needs an item."""
    d = decide(None, Close("olivia", "why"), Context(T0, Policy()))
    assert (d.outcome, d.reasons, d.state) == (Outcome.REFUSED, ("unknown_item",), None)


# --- worker steps and leases --------------------------------------------------------------------


def test_observe_records_evidence_and_releases_the_lease(h: Harness) -> None:
    """Observe moves to classified, stores digested evidence and frees the item."""
    h.discover()
    h.claim()
    d = h.ok(
        Observe(**h.lease(), evidence={"cpu": 97}, observed_at=h.now, classification="hot"),
        S.CLASSIFIED,
    )
    evidence = h.it.doc("evidence")
    assert evidence["data"] == {"cpu": 97} and evidence["digest"] == d.event.digests["evidence"]
    assert h.it.doc("classification") == "hot"
    assert h.it.lease_owner is None and h.it.attempts == 0  # a new step, a new budget


def test_observe_without_a_claim_is_lease_lost(h: Harness) -> None:
    """A worker that never claimed the item cannot commit to it."""
    h.discover()
    h.refused(Observe("w1", 0, {"cpu": 1}, h.now), "lease_lost")


def test_observe_by_another_worker_is_lease_lost(h: Harness) -> None:
    """Only the lease owner may commit."""
    h.discover()
    h.claim("w1")
    h.refused(Observe("w2", h.it.lease_token, {"cpu": 1}, h.now), "lease_lost")


def test_observe_with_a_stale_token_is_lease_lost(h: Harness) -> None:
    """After the lease expired and was taken over, the old token is fenced off."""
    h.discover()
    h.claim("w1")
    old = h.lease()
    h.clock.advance(31)
    h.claim("w1")  # the same worker name, a new claim: only the token tells them apart
    h.refused(Observe(**old, evidence={"cpu": 1}, observed_at=h.now), "lease_lost")
    h.ok(Observe(**h.lease(), evidence={"cpu": 1}, observed_at=h.now), S.CLASSIFIED)


def test_observe_on_an_expired_lease_is_lease_lost(h: Harness) -> None:
    """A lease that ran out is not live, even if nobody took it over."""
    h.discover()
    h.claim()
    h.clock.advance(30)  # expires_at == now: no longer live
    h.refused(Observe(**h.lease(), evidence={}, observed_at=h.now), "lease_lost")


def test_observe_in_the_wrong_state_names_both_reasons(h: Harness) -> None:
    """A stale worker in the wrong state gets illegal_transition and lease_lost together."""
    h.discover()
    h.observe()
    h.refused(Observe("w1", 1, {"cpu": 1}, h.now), "illegal_transition", "lease_lost")


def test_propose_waits_for_approval(h: Harness) -> None:
    """A proposal whose rule needs approvals stops in awaiting_approval, lease released."""
    h.discover()
    h.observe()
    h.claim()
    d = h.ok(
        Propose(**h.lease(), action="restart", target="web-1", params={"grace": 5}),
        S.AWAITING_APPROVAL,
    )
    proposal = h.it.doc("proposal")
    assert proposal["approvals"] == () and proposal["required_approvals"] == 1
    assert proposal["proposer"] == "automation:auto" and proposal["required_roles"] == ("approver",)
    assert d.event.digests["proposal"] == proposal["digest"]
    assert h.it.lease_owner is None


@pytest.mark.parametrize("age", [3600.0, 0.5, 1e-7, 2.0**60])
def test_a_proposal_writes_a_whole_evidence_age_as_an_integer_with_the_same_digest(
    age: float,
) -> None:
    """A float rule's whole number of seconds is kept as the integer RFC 8785 writes for it
    anyway (one C encoder's text, no float to mend); the digest is the one over the float."""
    h = Harness(policy(max_evidence_age=age))
    h.discover()
    h.observe()
    h.claim()
    h.ok(Propose(**h.lease(), action="restart", target="web-1", params={}), S.AWAITING_APPROVAL)
    proposal = h.it.doc("proposal")
    kept = proposal["max_evidence_age"]
    assert kept == age and type(kept) is (int if age in (3600.0,) else float)
    body = {k: v for k, v in proposal.items() if k not in ("digest", "approvals")}
    assert proposal["digest"] == digest(body) == digest({**body, "max_evidence_age": age})


def test_propose_needing_no_approval_is_approved_at_once() -> None:
    """With approvals=0 the proposal goes straight to approved, with a fresh budget."""
    h = Harness(policy=policy(approvals=0))
    h.discover()
    h.observe()
    h.claim()
    h.ok(Propose(**h.lease(), action="noop", target="t", params={}), S.APPROVED)
    assert h.it.attempts == 0 and h.it.max_attempts == 3
    assert h.it.doc("step")["state"] == "approved"


def test_propose_without_an_action_is_refused(h: Harness) -> None:
    """An empty action is invalid input, alongside a lost lease."""
    h.discover()
    h.observe()
    h.claim()
    h.refused(Propose(**h.lease(), action="", target="t", params={}), "invalid_input")
    h.refused(Propose("w9", 99, action="", target="t", params={}), "invalid_input", "lease_lost")


def test_propose_on_observing_is_illegal(h: Harness) -> None:
    """A proposal needs a classification first."""
    h.discover()
    h.claim()
    h.refused(Propose(**h.lease(), action="a", target="t", params={}), "illegal_transition")


def test_report_goes_to_ready_for_review(h: Harness) -> None:
    """A result that proposes nothing waits for a reader, its digest recorded."""
    h.discover()
    h.observe()
    h.claim()
    wc = h.lease()
    h.clock.advance(31)
    h.refused(Report(**wc, report={"x": 1}), "lease_lost")
    h.claim()
    h.ok(Report(**h.lease(), report={"x": 1}), S.READY_FOR_REVIEW)
    assert h.it.doc("report")["data"] == {"x": 1}
    assert h.events[-1].digests["report"] == h.it.doc("report")["digest"]


def test_needs_eyes_keeps_the_evidence_and_an_owner(h: Harness) -> None:
    """needs_eyes stops in exception with owner, why, evidence and the state it came from."""
    h.discover()
    h.observe()
    h.claim()
    h.refused(NeedsEyes(**h.lease(), owner="", why="ambiguous"), "invalid_input")
    h.refused(NeedsEyes("w2", h.it.lease_token, owner="ops", why="x"), "lease_lost")
    h.ok(NeedsEyes(**h.lease(), owner="ops", why="ambiguous", evidence={"a": 1}), S.EXCEPTION)
    exc = h.it.doc("exception")
    assert (exc["owner"], exc["why"], exc["evidence"], exc["from_state"]) == (
        "ops",
        "ambiguous",
        {"a": 1},
        "classified",
    )
    assert h.it.doc("evidence") is not None  # the evidence collected so far is kept


# --- failures, retries and the budget ----------------------------------------------------------


def test_retryable_failure_schedules_the_next_attempt_with_the_policy_delay() -> None:
    """Each retry waits base_delay * backoff ** (attempt - 1), capped at max_delay."""
    h = retrying(4, base_delay=2.0, backoff=3.0, max_delay=10.0)
    h.discover()
    waits = []
    for attempt in (1, 2, 3):
        h.claim()
        assert h.it.attempts == attempt
        d = fail(h)
        assert d.outcome is Outcome.APPLIED and h.state is S.OBSERVING
        assert d.event.command == "retry" and h.it.lease_owner is None
        waits.append(h.it.next_eligible_at - h.now)
        assert d.event.detail["delay_seconds"] == waits[-1].total_seconds()
        assert claimable(h.it, h.now) == ["not due"]
        h.clock.advance(waits[-1].total_seconds() - 0.001)
        assert claimable(h.it, h.now) == ["not due"]
        h.clock.advance(0.001)
        assert claimable(h.it, h.now) == []
    assert waits == [timedelta(seconds=2), timedelta(seconds=6), timedelta(seconds=10)]
    assert h.it.attempts == 3 and h.it.max_attempts == 4


def test_retry_delay_is_spread_by_the_jitter_sample() -> None:
    """With jitter 0.5 a sample of 1.0 adds half the delay; samples are clamped to [0, 1]."""
    h = retrying(3, base_delay=4.0, jitter=0.5)
    h.discover()
    h.claim()
    h.apply(Failure(**h.lease(), failure_class="n", message="m", retryable=True, jitter_sample=7))
    assert h.it.next_eligible_at - h.now == timedelta(seconds=6)


def test_budget_spent_exhausts_with_a_compact_account() -> None:
    """After max_attempts failures the item is exhausted with attempts, errors and resume."""
    h = retrying(2, base_delay=1.0)
    h.discover()
    h.observe({"cpu": 99})
    evidence_digest = h.it.doc("evidence")["digest"]
    h.claim()
    first_claim = h.now
    fail(h, "first timeout", cls="network")
    h.clock.advance(5)
    h.claim()
    second_claim = h.now
    h.clock.advance(1)
    d = fail(h, "x" * 600, cls="http_503")
    assert d.outcome is Outcome.APPLIED and h.state is S.EXHAUSTED
    assert d.reasons == ("retry_budget_exhausted",) and d.event.command == "exhaust"
    account = h.it.doc("account")
    assert account["state"] == "classified"
    assert (account["attempt_count"], account["max_attempts"]) == (2, 2)
    attempts = account["attempts"]
    assert [(a["attempt"], a["class"], a["outcome"]) for a in attempts] == [
        (1, "network", "retry"),
        (2, "http_503", "exhausted"),
    ]
    assert attempts[0]["message"] == "first timeout" and len(attempts[1]["message"]) == 500
    assert attempts[0]["claimed_at"] == "2026-03-01T12:00:00.250000Z"
    assert first_claim < second_claim
    assert attempts[1]["claimed_at"] == "2026-03-01T12:00:05.250000Z"
    assert attempts[1]["at"] == "2026-03-01T12:00:06.250000Z"
    assert account["last_error"] == {"class": "http_503", "message": "x" * 500}
    assert account["last_evidence_digest"] == evidence_digest
    assert "resume" in account["resume"]["command"] and account["resume"]["condition"]
    assert h.it.doc("resume_state") == "classified"
    assert "not a work state" in claimable(h.it, h.now)


def test_exhausted_is_not_reset_by_rediscovery() -> None:
    """The scheduler firing again leaves the exhausted item and its account alone."""
    h = retrying(1)
    h.discover()
    h.claim()
    fail(h)
    assert h.state is S.EXHAUSTED
    before = h.it
    d = h.apply(Discover(h.item_id, "auto", "k1", {"n": 1}))
    assert d.outcome is Outcome.ZERO_WRITE and h.it is before


def test_terminal_failure_fails_the_item(h: Harness) -> None:
    """A non-retryable failure ends in failed with its evidence, budget left or not."""
    h.discover()
    h.claim()
    d = fail(h, "no authority", retryable=False, cls="forbidden")
    assert d.event.command == "fail" and h.state is S.FAILED
    assert h.it.doc("failure")["class"] == "forbidden" and h.it.doc("failure")["state"] == (
        "observing"
    )
    assert h.it.attempt_log[-1]["outcome"] == "failed"


def test_failure_needs_the_lease_and_a_work_state(h: Harness) -> None:
    """A failure from a stale worker, or on a stopped item, is refused with every reason."""
    h.to_awaiting()
    h.refused(
        Failure("w1", 1, failure_class="x", message="m", retryable=True),
        "illegal_transition",
        "lease_lost",
    )


# --- the sweeper ---------------------------------------------------------------------------------


def test_expire_refuses_a_live_lease_and_a_stop_state(h: Harness) -> None:
    """The sweeper only touches work whose lease is gone."""
    h.discover()
    h.claim()
    h.refused(Expire(), "lease_held")
    h.clock.advance(31)
    h.refused(Expire(), "not_due")  # budget left: the next claim takes it over
    h2 = Harness()
    h2.to_awaiting()
    h2.refused(Expire(), "illegal_transition")


def test_expire_exhausts_when_the_budget_is_spent() -> None:
    """Abandoned attempts count: with max_attempts spent, the sweeper exhausts the item."""
    h = retrying(2)
    h.discover()
    h.claim("w1")
    h.clock.advance(31)
    assert claimable(h.it, h.now) == []
    h.claim("w2")  # takes over the expired lease, logging w1's attempt as abandoned
    h.clock.advance(31)
    assert claimable(h.it, h.now) == ["budget spent"]
    d = h.ok(Expire(sweeper="sweeper-1"), S.EXHAUSTED)
    assert d.reasons == ("retry_budget_exhausted",) and d.event.actor == "sweeper-1"
    account = h.it.doc("account")
    assert [(a["worker"], a["class"], a["outcome"]) for a in account["attempts"]] == [
        ("w1", "lease_expired", "abandoned"),
        ("w2", "lease_expired", "abandoned"),
    ]
    assert account["last_error"]["class"] == "lease_expired"
    assert h.it.lease_owner is None


def test_expire_fails_an_abandoned_revision() -> None:
    """A revision step whose lease expired goes to revision_failed, never back to work."""
    h = Harness()
    h.to_completed()
    h.revise("a")
    h.claim()
    h.clock.advance(31)
    assert "revision lease expired: only the sweeper may move it" in claimable(h.it, h.now)
    d = h.ok(Expire(), S.REVISION_FAILED)
    assert d.reasons == ("lease_expired",)
    assert h.it.doc("revision")["state"] == "revision_failed"
    assert h.it.doc("revision")["failure"]["reasons"] == ("lease_expired",)


def test_emulated_claim_matches_the_store(h: Harness) -> None:
    """The claim emulation counts the attempt, fences the token and bumps the version."""
    h.discover()
    before = h.it
    after = claim(before, "w7", T0)
    assert (after.attempts, after.lease_token, after.version) == (1, 1, 2)
    assert after.lease_expires_at == T0 + timedelta(seconds=30) and after.claimed_at == T0
    assert replace(after, attempts=0, lease_owner=None, lease_token=0, version=1) == replace(
        before, lease_expires_at=after.lease_expires_at, claimed_at=T0
    )


@pytest.mark.parametrize("state_cmd", ["observe", "report", "needs_eyes"])
def test_worker_steps_are_refused_on_stopped_items(h: Harness, state_cmd: str) -> None:
    """No worker step applies to an item waiting for approval, even with a forged lease."""
    h.to_awaiting()
    forged = replace(h.it, lease_owner="w1", lease_token=9, lease_expires_at=h.now + timedelta(1))
    h.item = forged
    command = {
        "observe": Observe("w1", 9, {"cpu": 1}, h.now),
        "report": Report("w1", 9, {"x": 1}),
        "needs_eyes": NeedsEyes("w1", 9, "ops", "why"),
    }[state_cmd]
    h.refused(command, "illegal_transition")


# --- the claim predicate and the folded claim of the core -------------------------------------


@pytest.mark.parametrize("state", [S.OBSERVING, S.AWAITING_APPROVAL, S.REVISION_PREPARED])
def test_core_claim_predicate_agrees_with_the_emulation(h: Harness, state: State) -> None:
    """work.claimable says what the claim emulation (and the store's SQL) says."""
    h.to(state)
    for seconds in (0, 10, 31, 3600):
        h.clock.advance(seconds)
        assert work.claimable(h.it, h.now) == (not claimable(h.it, h.now))
        if work.claimable(h.it, h.now):
            h.claim()
            assert not work.claimable(h.it, h.now)


def test_continue_claim_folds_the_next_claim_into_a_commit(h: Harness) -> None:
    """The folded claim counts one attempt and fences a new token, without a version of its own."""
    h.discover()
    h.claim()
    d = h.ok(Observe(**h.lease(), evidence={"cpu": 1}, observed_at=h.now), S.CLASSIFIED)
    after = d.after
    assert after is not None
    folded = work.continue_claim(after, "w1", h.now, 30)
    assert folded is not None
    assert (folded.attempts, folded.lease_token, folded.version) == (
        1,
        after.lease_token + 1,
        after.version,
    )
    assert folded.lease_owner == "w1" and folded.lease_expires_at == h.now + timedelta(seconds=30)
    assert work.continue_claim(folded, "w2", h.now, 30) is None  # already leased
    retry = replace(after, next_eligible_at=h.now + timedelta(seconds=5))
    assert work.continue_claim(retry, "w1", h.now, 30) is None  # not due


# --- robustness: decide() answers every command with a decision ------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda h: Observe(**h.lease(), evidence={"ratio": math.nan}, observed_at=h.now),
        lambda h: Observe(**h.lease(), evidence={1: "x"}, observed_at=h.now),
        lambda h: Observe(**h.lease(), evidence={}, observed_at=h.now.replace(tzinfo=None)),
        lambda h: NeedsEyes(**h.lease(), owner="ops", why="w", evidence={"r": math.inf}),
    ],
    ids=["nan", "int-key", "naive-time", "needs-eyes-inf"],
)
def test_uncanonical_worker_input_is_refused(h: Harness, make: Any) -> None:
    """A hook's output that has no canonical form is refused invalid_input, never raised."""
    h.discover()
    h.claim()
    h.refused(make(h), "invalid_input")


def test_evidence_from_the_future_does_not_stay_fresh() -> None:
    """Evidence stamped a year ahead is refused, or at least ages from now."""
    h = Harness(policy=policy(max_evidence_age=600))
    h.discover()
    h.claim()
    d = h.apply(Observe(**h.lease(), evidence={}, observed_at=h.now + timedelta(days=365)))
    if d.outcome is Outcome.REFUSED:
        assert d.reasons == ("invalid_input",)
        return
    h.propose()
    h.clock.advance(601)
    h.refused(Approve("alice", h.digest()), "evidence_stale")


def test_expire_never_raises_on_a_spent_revision_step(h: Harness) -> None:
    """A revision step whose budget was spent by an edit of the record (no claim behind it,
    no lease) is stopped as tampering, never a crash."""
    h.to(S.REVISION_PREPARED)
    h.item = replace(h.it, attempts=h.it.max_attempts)
    d = h.apply(Expire())
    assert d.state is S.EXCEPTION and d.reasons == ("integrity_failed",)


def test_a_proposal_records_its_severity_outside_the_digest(h: Harness) -> None:
    """Severity is kept beside the proposal (it orders the inbox); the digest does not cover
    it, and a value outside the closed set is invalid input."""
    h.discover()
    h.observe()
    h.claim()
    h.refused(
        Propose(**h.lease(), action="restart", target="t", params={}, severity="urgent"),
        "invalid_input",
    )
    h.ok(
        Propose(**h.lease(), action="restart", target="t", params={}, severity="critical"),
        S.AWAITING_APPROVAL,
    )
    assert h.it.doc("severity") == "critical"
    plain = Harness()
    plain.discover()
    plain.observe()
    plain.claim()
    plain.ok(Propose(**plain.lease(), action="restart", target="t", params={}), S.AWAITING_APPROVAL)
    assert plain.it.doc("severity") is None
    assert plain.it.doc("proposal")["digest"] == h.it.doc("proposal")["digest"]
