"""decide() for people's commands on stopped items: reinspect, acknowledge, resolve, resume,
close and finalize, with every refusal naming all of its reasons."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stopline.core.commands import (
    Acknowledge,
    ActorCommand,
    Close,
    Finalize,
    ReadBack,
    Reinspect,
    Resolve,
    Resume,
)
from stopline.core.decision import Outcome
from stopline.core.integrity import Finding
from stopline.core.policy import RetryPolicy
from stopline.core.states import STOP_STATES, State

from .helpers import Harness, art, claimable, policy, unchanged

S = State

# command factory (actor, reason), the state it applies to, where it goes, whether a reason is
# required.
Factory = Callable[[str, str], ActorCommand]
OPERATOR_COMMANDS: dict[str, tuple[Factory, State, State, bool]] = {
    "reinspect": (lambda a, r: Reinspect(a, r), S.AWAITING_APPROVAL, S.OBSERVING, True),
    "acknowledge": (lambda a, r: Acknowledge(a, r), S.READY_FOR_REVIEW, S.CLOSED, False),
    "resolve": (lambda a, r: Resolve(a, r, {"fix": 1}), S.EXCEPTION, S.OBSERVING, True),
    "resume": (lambda a, r: Resume(a, r), S.EXHAUSTED, S.CLASSIFIED, True),
    "close": (lambda a, r: Close(a, r), S.EXCEPTION, S.CLOSED, True),
}
NAMES = sorted(OPERATOR_COMMANDS)


@pytest.mark.parametrize("name", NAMES)
def test_operator_command_applies(h: Harness, name: str) -> None:
    """An operator with a reason moves the item; the event names the actor."""
    make, source, target, _ = OPERATOR_COMMANDS[name]
    h.to(source)
    d = h.ok(make("olivia", "checked by hand"), target)
    assert d.event.actor == "olivia" and d.event.command == name
    assert d.event.from_state is source


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("actor", "reason"),
    [("stranger", "actor_unknown"), ("gone", "actor_unknown"), ("", "actor_unknown")],
)
def test_operator_command_refuses_unknown_or_revoked_actors(
    h: Harness, name: str, actor: str, reason: str
) -> None:
    """An actor missing from the registry, revoked, or empty is actor_unknown."""
    make, source, _, _ = OPERATOR_COMMANDS[name]
    h.to(source)
    h.refused(make(actor, "a reason"), reason)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("actor", ["alice", "nora"])
def test_operator_command_needs_the_operator_role(h: Harness, name: str, actor: str) -> None:
    """An approver, or a known actor with no role, is actor_not_authorized."""
    make, source, _, _ = OPERATOR_COMMANDS[name]
    h.to(source)
    h.refused(make(actor, "a reason"), "actor_not_authorized")


@pytest.mark.parametrize("name", [n for n in NAMES if OPERATOR_COMMANDS[n][3]])
@pytest.mark.parametrize("reason", ["", "   \n"])
def test_operator_command_needs_a_reason(h: Harness, name: str, reason: str) -> None:
    """An empty or blank reason is invalid_input."""
    make, source, _, _ = OPERATOR_COMMANDS[name]
    h.to(source)
    h.refused(make("olivia", reason), "invalid_input")


def test_acknowledge_needs_no_reason(h: Harness) -> None:
    """acknowledge takes an optional reason."""
    h.to(S.READY_FOR_REVIEW)
    h.ok(Acknowledge("olivia"), S.CLOSED)
    assert h.it.doc("closure")["how"] == "acknowledged"


@pytest.mark.parametrize("name", NAMES)
def test_operator_command_in_the_wrong_state_is_illegal(h: Harness, name: str) -> None:
    """On an observing item every operator command is illegal_transition."""
    make, _, _, _ = OPERATOR_COMMANDS[name]
    h.to(S.OBSERVING)
    h.refused(make("olivia", "a reason"), "illegal_transition")


@pytest.mark.parametrize("name", NAMES)
def test_operator_refusal_names_every_failing_reason(h: Harness, name: str) -> None:
    """Wrong state, unknown actor and empty reason are all named, not only the first."""
    make, _, _, needs_reason = OPERATOR_COMMANDS[name]
    h.to(S.OBSERVING)
    expected = {"illegal_transition", "actor_unknown"} | (
        {"invalid_input"} if needs_reason else set()
    )
    h.refused(make("stranger", ""), *expected)
    h.refused(make("nora", ""), *(expected - {"actor_unknown"} | {"actor_not_authorized"}))


def test_reinspect_voids_the_proposal_and_its_approvals() -> None:
    """reinspect sends the item back to observing; the proposal and approvals are set aside."""
    h = Harness(policy=policy(approvals=2))
    h.to_awaiting()
    digest = h.digest()
    h.approve("alice")
    d = h.ok(Reinspect("olivia", "evidence too old"), S.OBSERVING)
    assert h.it.doc("proposal") is None
    assert h.it.doc("previous_proposal")["digest"] == digest
    assert d.event.detail["voided_approvals"] == ("alice",)
    assert h.it.doc("reinspect")["reason"] == "evidence too old"
    assert claimable(h.it, h.now) == [] and h.it.attempts == 0


def test_close_names_the_approvals_it_voids() -> None:
    """Closing a half-approved item records whose approvals go with it."""
    h = Harness(policy=policy(approvals=2))
    h.to_awaiting()
    h.approve("alice")
    d = h.ok(Close("olivia", "not needed after all"), S.CLOSED)
    assert d.event is not None and d.event.detail["voided_approvals"] == ("alice",)


@pytest.mark.parametrize("source", [S.READY_FOR_REVIEW, S.EXCEPTION])
def test_reinspect_from_review_and_exception(h: Harness, source: State) -> None:
    """reinspect also leaves ready_for_review and exception, clearing the report/exception."""
    h.to(source)
    h.ok(Reinspect("carol", "look again"), S.OBSERVING)
    assert h.it.doc("report") is None and h.it.doc("exception") is None


def test_resolve_records_the_corrective_input(h: Harness) -> None:
    """resolve keeps the former exception and the operator's input, digested in the event."""
    h.to(S.EXCEPTION)
    d = h.ok(Resolve("olivia", "category is billing", {"category": "billing"}), S.OBSERVING)
    assert h.it.doc("corrective_input")["input"] == {"category": "billing"}
    assert h.it.doc("previous_exception")["why"] == "ambiguous"
    assert h.it.doc("exception") is None
    assert d.event.digests["input"] != ""


def test_resume_grants_the_policy_budget_by_default(h: Harness) -> None:
    """resume returns to the exhausted step with max_attempts fresh attempts, due now."""
    h.to(S.EXHAUSTED)
    account = h.it.doc("account")
    d = h.ok(Resume("olivia", "upstream fixed"), S.CLASSIFIED)
    item = h.it
    assert (item.attempts, item.max_attempts, item.next_eligible_at) == (0, 3, h.now)
    assert item.doc("account") is None and item.doc("previous_account") == account
    assert item.doc("grants")[-1]["attempts"] == 3 and d.event.detail["attempts"] == 3
    assert item.doc("resume_state") is None  # set again by the next exhaustion, if any
    assert claimable(item, h.now) == []


def test_resume_grants_an_explicit_budget(h: Harness) -> None:
    """An explicit budget up to the cap is recorded and used."""
    h.to(S.EXHAUSTED)
    h.ok(Resume("olivia", "one more", attempts=10), S.CLASSIFIED)
    assert h.it.max_attempts == 10
    h.fail_until_exhausted()
    assert h.it.doc("account")["attempt_count"] == 10
    assert len(h.it.doc("grants")) == 1


def test_resume_beyond_the_cap_is_refused() -> None:
    """A grant above the step's resume_cap is resume_cap; below one is invalid_input."""
    retry = RetryPolicy(max_attempts=2, resume_cap=4)
    h = Harness(policy=policy(step_retry={"classified": retry}))
    h.to(S.EXHAUSTED)
    assert h.it.doc("account")["max_attempts"] == 2
    h.refused(Resume("olivia", "more", attempts=5), "resume_cap")
    h.refused(Resume("olivia", "more", attempts=0), "invalid_input")
    h.refused(Resume("stranger", "", attempts=5), "resume_cap", "actor_unknown", "invalid_input")
    h.ok(Resume("olivia", "more", attempts=4), S.CLASSIFIED)
    assert h.it.max_attempts == 4


def test_resume_from_an_exhausted_delivery_returns_to_delivering() -> None:
    """The resume state is the step that ran out, here a delivery."""
    h = Harness(policy=policy(retry=RetryPolicy(max_attempts=1)))
    h.to_approved()
    h.execute()
    h.fail_until_exhausted()
    assert h.it.doc("resume_state") == "delivering"
    h.ok(Resume("olivia", "target back"), S.DELIVERING)
    assert h.it.doc("step")["state"] == "delivering"


@pytest.mark.parametrize("source", sorted(STOP_STATES))
def test_close_leaves_every_stop_state(h: Harness, source: State) -> None:
    """close ends any stop state without action, recording where from."""
    h.to(source)
    h.ok(Close("olivia", "not needed"), S.CLOSED)
    assert h.it.doc("closure")["from"] == source.value


def test_a_close_of_a_record_that_fails_its_checks_keeps_the_findings(h: Harness) -> None:
    """The command layer's findings ride on the close: the event names integrity_failed and
    records the first twenty findings."""
    h.to(S.EXCEPTION)
    findings = tuple(
        Finding("item", h.it.id, "data", "integrity_failed", f"edit {n}") for n in range(25)
    )
    d = h.ok(Close("olivia", "nobody can trust it", integrity=findings), S.CLOSED)
    assert d.event is not None and d.event.reasons == ("integrity_failed",)
    assert list(d.event.detail["integrity_findings"]) == [f.to_plain() for f in findings[:20]]
    plain = Harness()
    plain.to(S.EXCEPTION)
    quiet = plain.ok(Close("olivia", "not needed"), S.CLOSED).event
    assert quiet is not None and quiet.reasons == () and "integrity_findings" not in quiet.detail


def test_every_resume_grant_is_kept(h: Harness) -> None:
    """A second resume adds its grant to the first: who granted what stays on the record."""
    h.to(S.EXHAUSTED)
    h.ok(Resume("olivia", "first try", attempts=1), S.CLASSIFIED)
    h.fail_until_exhausted()
    h.ok(Resume("carol", "second try", attempts=2), S.CLASSIFIED)
    grants = h.it.doc("grants")
    assert [(g["actor"], g["reason"], g["attempts"]) for g in grants] == [
        ("olivia", "first try", 1),
        ("carol", "second try", 2),
    ]


@pytest.mark.parametrize("source", [S.CLOSED, S.COMPLETED, S.OBSERVING, S.REVISION_PREPARED])
def test_close_is_illegal_outside_stop_states(h: Harness, source: State) -> None:
    """Work, delivered and closed items cannot be closed by an operator."""
    if source is S.CLOSED:
        h.to(S.EXCEPTION)
        h.ok(Close("olivia", "done"), S.CLOSED)
    else:
        h.to(source)
    h.refused(Close("olivia", "again"), "illegal_transition")


def test_finalize_on_completed_is_zero_write(h: Harness) -> None:
    """finalize on a completed item writes nothing and says already_completed."""
    h.to(S.COMPLETED)
    before = h.it
    d = h.apply(Finalize())
    assert d.outcome is Outcome.ZERO_WRITE and d.reasons == ("already_completed",)
    assert d.state is S.COMPLETED and unchanged(before, d)


def test_finalize_on_a_revision_completed_item_is_zero_write(h: Harness) -> None:
    """A completed revision is as final as a completed delivery."""
    h.to(S.COMPLETED)
    h.revise("a")
    h.claim()
    h.stage([art("a", "new body")])
    h.write("a", "update", remote_id="remote-a")
    h.ok(ReadBack(**h.lease(), readbacks=h.readbacks(["a"])), S.REVISION_COMPLETED)
    d = h.apply(Finalize())
    assert (d.outcome, d.reasons) == (Outcome.ZERO_WRITE, ("already_completed",))


@pytest.mark.parametrize(
    "source", [S.OBSERVING, S.AWAITING_APPROVAL, S.PENDING_READBACK, S.REVISION_FAILED]
)
def test_finalize_elsewhere_is_refused_not_completed(h: Harness, source: State) -> None:
    """finalize before completion is refused not_completed."""
    h.to(source)
    h.refused(Finalize(), "not_completed")
