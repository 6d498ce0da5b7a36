"""core/rights.py: who may run which people's command on an item now, and why not.

The property test holds :func:`rights` to ``decide()``: for random items, states, policies,
actor registries, actors and typed values, ``rights`` allows a command exactly when
``decide()`` gives no reason of the state, actor and policy part, and names the same codes.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budget import examples
from stopline.core.commands import (
    Acknowledge,
    Approve,
    Close,
    Command,
    Edit,
    Finalize,
    Note,
    Publish,
    Reconcile,
    Reinspect,
    Reject,
    Resolve,
    Resume,
    Review,
    Revise,
)
from stopline.core.decide import decide
from stopline.core.decision import Outcome
from stopline.core.policy import (
    DRAFT,
    PUBLISH,
    ApprovalPolicy,
    ApprovalRule,
    DeliveryPolicy,
    Policy,
)
from stopline.core.reasons import Reason
from stopline.core.records import Actor, Item
from stopline.core.rights import (
    ACCESS_REASONS,
    AUTHORITY,
    COMMANDS,
    Authority,
    authority_roles,
    rights,
    roles_with_rights,
    state_reasons,
)
from stopline.core.states import State
from stopline.core.step import Context
from stopline.core.transitions import TABLE, By, Cmd

from .helpers import AUTOMATION_PROPOSER, Harness, actors, policy

S = State
WALKABLE = [
    S.OBSERVING,
    S.CLASSIFIED,
    S.AWAITING_APPROVAL,
    S.APPROVED,
    S.PENDING_READBACK,
    S.READY_FOR_REVIEW,
    S.EXCEPTION,
    S.EXHAUSTED,
    S.REVISION_FAILED,
    S.COMPLETED,
    S.REVISION_PREPARED,
]
# The stop states, where people act, come up more often.
LIKELY = [*WALKABLE, S.AWAITING_APPROVAL, S.AWAITING_APPROVAL, S.COMPLETED, S.REVISION_FAILED]
ROLES = ["operator", "approver", "publisher", "auditor", "agent"]
NAMES = ["ana", "ben", "cy", "olivia", AUTOMATION_PROPOSER]


@cache
def walked(state: State) -> Item:
    """An item driven into ``state`` through the real commands (built once per state)."""
    return Harness().to(state)


def ctx_for(h: Harness) -> Context:
    return Context(h.now, h.policy, h.actors)


def allowed(item: Item, actor: str, ctx: Context) -> set[str]:
    return {name for name, v in rights(item, actor, ctx).items() if v.allowed}


# --- who issues what ---------------------------------------------------------------------------


def test_authority_follows_the_by_column_of_the_transition_table() -> None:
    """Operator and reviewer rows mean the operator role; approver rows are refined per command."""
    people = {t.command for t in TABLE.values() if t.by in (By.OPERATOR, By.APPROVER, By.REVIEWER)}
    participants = {t.command for t in TABLE.values() if t.by is By.PARTICIPANT}
    assert participants == {Cmd.NOTE}
    assert set(COMMANDS) == people | participants | {Cmd.FINALIZE}
    for t in TABLE.values():
        if t.by in (By.OPERATOR, By.REVIEWER):
            assert AUTHORITY[t.command] is Authority.OPERATOR
    assert AUTHORITY[Cmd.NOTE] is Authority.PARTICIPANT
    assert AUTHORITY[Cmd.APPROVE] is Authority.APPROVER
    assert AUTHORITY[Cmd.REJECT] is Authority.APPROVER_OR_OPERATOR
    assert AUTHORITY[Cmd.PUBLISH] is Authority.PUBLISHER
    assert AUTHORITY[Cmd.FINALIZE] is Authority.ANYONE


def test_roles_with_rights_under_policies() -> None:
    """The roles that give some right: operator always; approvers and publishers per policy."""
    every = set(Authority)
    assert roles_with_rights(every, []) == {"operator"}
    draft = policy(roles=("approver", "lead"))
    assert roles_with_rights(every, [draft]) == {"operator", "approver", "lead"}
    no_approval = policy(approvals=0, roles=("approver",))
    assert roles_with_rights(every, [no_approval]) == {"operator"}
    publishing = policy(delivery=DeliveryPolicy(mode=PUBLISH, publish_roles=("editor",)))
    assert "editor" in roles_with_rights(every, [publishing])
    drafting = policy(delivery=DeliveryPolicy(mode=DRAFT, publish_roles=("editor",)))
    assert "editor" not in roles_with_rights(every, [drafting])
    assert authority_roles(Authority.ANYONE, draft) == frozenset()
    # a note: any role that gives one of the other rights
    assert authority_roles(Authority.PARTICIPANT, draft) == {"operator", "approver", "lead"}
    assert authority_roles(Authority.PARTICIPANT, publishing) >= {"operator", "editor"}


def test_approver_roles_come_from_every_rule_of_the_policy() -> None:
    """The roles of the per-action rules and of the default rule alike; rejecting adds the
    operator role."""
    deploy = ApprovalRule(("release-manager",), 1)
    unused = ApprovalRule(("nobody-needed",), 0)
    rules = ApprovalPolicy({"deploy": deploy, "noop": unused}, ApprovalRule(("approver",), 1))
    per_action = Policy(approval=rules)
    assert authority_roles(Authority.APPROVER, per_action) == {"approver", "release-manager"}
    assert authority_roles(Authority.APPROVER_OR_OPERATOR, per_action) == {
        "approver",
        "release-manager",
        "operator",
    }
    assert roles_with_rights({Authority.APPROVER_OR_OPERATOR}, [per_action]) >= {"operator"}


def test_a_role_only_the_current_proposal_names_may_note() -> None:
    """The policy changed since the proposal was made: a holder of the role the proposal still
    requires holds a right on the item (a note), as the proposal's approver does."""
    lena = Actor("lena", frozenset({"lead"}))
    h = Harness(policy=policy(roles=("lead",)), actors=actors(lena))
    h.to(S.AWAITING_APPROVAL)
    now_approver_only = Context(h.now, policy(roles=("approver",)), h.actors)
    assert rights(h.it, "lena", now_approver_only)["note"].allowed
    assert decide(h.it, Note("lena", "still mine"), now_approver_only).applied


def test_resume_is_offered_only_to_the_state_the_record_names() -> None:
    """An exhausted record whose resume state is one resume does not lead to is refused
    ``illegal_transition`` by rights as by decide()."""
    h = Harness()
    exhausted = h.to(S.EXHAUSTED)
    assert rights(exhausted, "olivia", h.ctx())["resume"].allowed
    odd = replace(exhausted, data=exhausted.with_data(resume_state="completed"))
    assert rights(odd, "olivia", h.ctx())["resume"].reasons == (Reason.ILLEGAL_TRANSITION,)
    d = decide(odd, Resume("olivia", "again"), h.ctx())
    assert Reason.ILLEGAL_TRANSITION in d.reasons


# --- what the answer says on real items ----------------------------------------------------------


def test_an_approver_may_approve_and_reject_but_not_edit() -> None:
    """alice (approver) may approve and reject a proposal; edit, reinspect, close need an operator."""
    h = Harness()
    item = h.to(S.AWAITING_APPROVAL)
    assert allowed(item, "alice", ctx_for(h)) == {"approve", "reject", "note"}
    assert allowed(item, "olivia", ctx_for(h)) == {"reject", "edit", "reinspect", "close", "note"}
    every = {"approve", "reject", "edit", "reinspect", "close", "note"}
    assert allowed(item, "carol", ctx_for(h)) == every


def test_refusals_name_the_reasons_decide_gives() -> None:
    """The proposer is self_approval; a stranger actor_unknown; a viewer actor_not_authorized."""
    h = Harness()
    item = h.to(S.AWAITING_APPROVAL)
    verdicts = rights(item, AUTOMATION_PROPOSER, ctx_for(h))
    assert verdicts["approve"].reasons == (Reason.SELF_APPROVAL,)
    assert rights(item, "stranger", ctx_for(h))["close"].reasons == (Reason.ACTOR_UNKNOWN,)
    assert rights(item, "nora", ctx_for(h))["reject"].reasons == (Reason.ACTOR_NOT_AUTHORIZED,)
    revoked = rights(item, "gone", ctx_for(h))["approve"]
    assert not revoked.allowed and revoked.reasons == (Reason.ACTOR_UNKNOWN,)
    acknowledge = rights(item, "olivia", ctx_for(h))["acknowledge"]
    assert acknowledge.reasons == (Reason.ILLEGAL_TRANSITION,)


def test_completed_items_offer_revise_review_and_finalize() -> None:
    """On a completed delivery an operator may revise and review; anyone may finalize."""
    h = Harness()
    item = h.to(S.COMPLETED)
    assert allowed(item, "olivia", ctx_for(h)) == {"revise", "review", "finalize", "note"}
    assert allowed(item, "stranger", ctx_for(h)) == {"finalize"}
    publish = rights(item, "pat", ctx_for(h))["publish"]
    assert publish.reasons == (Reason.MODE_FORBIDS_PUBLICATION,)
    h.policy = policy(delivery=DeliveryPolicy(mode=PUBLISH), retry=h.policy.retry)
    assert "publish" in allowed(item, "pat", ctx_for(h))
    h.policy = policy(delivery=DeliveryPolicy(revisable=False))
    assert rights(item, "olivia", ctx_for(h))["revise"].reasons == (Reason.MODE_FORBIDS_REVISION,)


def test_without_a_policy_every_command_is_unknown_automation() -> None:
    """An item whose automation is not registered offers nothing (the controller refuses it)."""
    h = Harness()
    item = h.to(S.EXCEPTION)
    verdicts = rights(item, "olivia", Context(h.now, None, h.actors))
    assert set(verdicts) == {c.value for c in COMMANDS}
    assert all(v.reasons == (Reason.UNKNOWN_AUTOMATION,) for v in verdicts.values())


def test_state_reasons_alone() -> None:
    """The state part needs no actor: a proposal to approve, a completed item to finalize."""
    item = walked(S.AWAITING_APPROVAL)
    assert state_reasons(item, Cmd.APPROVE) == []
    bare = replace(item, data=item.with_data(proposal=None))
    assert state_reasons(bare, Cmd.APPROVE) == [Reason.NO_PROPOSAL]
    assert state_reasons(item, Cmd.FINALIZE) == [Reason.NOT_COMPLETED]
    assert state_reasons(walked(S.COMPLETED), Cmd.FINALIZE) == []
    assert state_reasons(walked(S.EXHAUSTED), Cmd.RESUME) == []


# --- the property: rights agrees with decide() ----------------------------------------------------


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    """The policy the items were walked under (its proposals stay valid), or a random one."""
    if draw(st.booleans()):
        return policy()
    rule = ApprovalRule(
        roles=tuple(sorted(draw(st.sets(st.sampled_from(ROLES), min_size=1)))),
        approvals=draw(st.integers(0, 2)),
        separation_of_duties=draw(st.booleans()),
    )
    delivery = DeliveryPolicy(
        mode=draw(st.sampled_from([DRAFT, PUBLISH])),
        revisable=draw(st.booleans()),
        publish_roles=tuple(sorted(draw(st.sets(st.sampled_from(ROLES), min_size=1)))),
    )
    return Policy(approval=ApprovalPolicy(default=rule), delivery=delivery)


@st.composite
def registries(draw: st.DrawFn) -> dict[str, Actor]:
    """Every name known, each with random roles; now and then one revoked or forgotten."""
    found = {}
    for name in NAMES:
        roles = frozenset(draw(st.sets(st.sampled_from(ROLES), min_size=1)))
        active = draw(st.sampled_from([True] * 7 + [False]))
        if draw(st.sampled_from([True] * 9 + [False])):
            found[name] = Actor(name, roles, active)
    return found


@st.composite
def items(draw: st.DrawFn) -> Item:
    """A real item in a real state, sometimes with its state, proposal or packet changed."""
    item = walked(draw(st.sampled_from(LIKELY)))
    changes: dict[str, Any] = {}
    proposal = item.doc("proposal")
    how = draw(st.sampled_from(["keep", "keep", "drop", "change", "change", "change"]))
    if proposal is not None and how == "drop":
        changes["proposal"] = None
    elif proposal is not None and how == "change":
        editors = sorted(draw(st.sets(st.sampled_from(NAMES), max_size=2)))
        changes["proposal"] = {
            **proposal,
            "required_roles": sorted(draw(st.sets(st.sampled_from(ROLES)))),
            "proposer": draw(st.sampled_from(NAMES)),
            "edited_by": editors[-1] if editors else None,
            "editors": editors,
            "separation_of_duties": draw(st.booleans()),
        }
    packet = item.doc("review_packet")
    if packet is not None and draw(st.sampled_from([False, False, True])):
        changes["review_packet"] = {**packet, "void": draw(st.booleans())}
    if changes:
        item = replace(item, data=item.with_data(**changes))
    if draw(st.sampled_from([False, False, False, True])):  # any state, on whatever it holds
        item = replace(item, state=draw(st.sampled_from(list(State))))
    return item


def probes(draw: st.DrawFn, item: Item, actor: str) -> list[Command]:
    """One command of each kind, with values a person might type (mostly right, some wrong)."""
    proposal = item.doc("proposal") or {}
    packet = item.doc("review_packet") or {}
    revision = item.doc("revision") or {}
    keys = [a["key"] for a in item.doc("artifacts") or ()]
    digest = draw(st.sampled_from([proposal.get("digest") or "x"] * 3 + ["0" * 64]))
    packet_digest = draw(st.sampled_from([packet.get("digest") or "x"] * 3 + ["f" * 64]))
    reason = draw(st.sampled_from(["because"] * 4 + ["", "  ", revision.get("reason") or "r"]))
    scope = revision.get("scope") or keys or ["zzz"]
    artifacts = tuple(draw(st.sampled_from([scope, scope, keys or ["zzz"], ["zzz"]])))
    key = draw(st.sampled_from([*keys, "zzz"]))
    return [
        Approve(actor, digest),
        Reject(actor, reason, draw(st.booleans()), draw(st.sampled_from([None, digest]))),
        Edit(actor, draw(st.sampled_from([{}, {"grace": 9}]))),
        Reinspect(actor, reason),
        Acknowledge(actor, reason),
        Resolve(actor, reason, {"fix": 1}),
        Resume(actor, reason, draw(st.sampled_from([None, None, 0, 2, 50]))),
        Close(actor, reason),
        Finalize(),
        Revise(actor, reason, artifacts),
        Review(actor, packet_digest, draw(st.sampled_from(["approve", "reject"])), reason),
        Publish(actor, packet_digest),
        Reconcile(actor, key),
        Note(actor, draw(st.sampled_from(["a comment", "", "  "]))),
    ]


@settings(
    max_examples=examples(400),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_rights_agree_with_decide(data: st.DataObject) -> None:
    """rights allows a command iff decide() gives no state/actor/policy reason, with the same codes."""
    item = data.draw(items(), label="item")
    registry = {**actors(), **data.draw(registries(), label="registry")}
    ctx = Context(Harness().now, data.draw(policies(), label="policy"), registry)
    actor = data.draw(st.sampled_from([*NAMES, *NAMES, *NAMES, "gone", "stranger", ""]))
    verdicts = rights(item, actor, ctx)
    commands = probes(data.draw, item, actor)
    assert {c.name for c in commands} == set(verdicts)
    for command in commands:
        decision = decide(item, command, ctx)
        refused = decision.outcome is Outcome.REFUSED
        access = {r for r in decision.reasons if r in ACCESS_REASONS} if refused else set()
        verdict = verdicts[command.name]
        assert set(verdict.reasons) == access, (command, decision.reasons, verdict)
        assert verdict.allowed is (not access)
        assert len(set(verdict.reasons)) == len(verdict.reasons)


@pytest.mark.parametrize("state", WALKABLE)
def test_every_walked_state_is_covered(state: State) -> None:
    """Each walked item is really in its state (the property test draws from these)."""
    assert walked(state).state is state
