"""Approval as a transition: bound to one proposal digest, its evidence, and its authority."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from .canonical import digest, format_time, parse_time
from .commands import Approve, Edit, Execute, Reject
from .decision import Decision, refused, zero_write
from .guard import recheck_failed
from .policy import ApprovalRule
from .reasons import Reason
from .records import Item
from .states import State
from .step import (
    OPERATOR,
    Context,
    actor_reasons,
    agent_reasons,
    lease_reasons,
    legal,
    operator_reasons,
    transition,
)
from .transitions import Cmd
from .work import build_proposal


def evidence_fresh(proposal: Mapping[str, Any], now: datetime) -> bool:
    """Every piece of evidence the proposal rests on is younger than the policy's maximum, and
    was observed no later than now: evidence stamped after now (a clock ahead of this host's, or
    a row written by hand) would never age."""
    limit = timedelta(seconds=float(proposal["max_evidence_age"]))
    for ev in proposal.get("evidence", ()):
        observed = ev.get("observed_at")
        if observed is None:
            return False
        age = now - parse_time(observed)
        if age < timedelta(0) or age >= limit:  # younger than the maximum, not from the future
            return False
    return True


def approver_reasons(
    ctx: Context, proposal: Mapping[str, Any], actor: str
) -> tuple[list[str], str | None]:
    """Why ``actor`` may not approve ``proposal`` now, and the role that would authorise it."""
    known = ctx.actor(actor)
    if known is None:
        return [Reason.ACTOR_UNKNOWN], None
    if agent_reasons(known):  # an agent's approval never counts, whatever roles it holds
        return agent_reasons(known), None
    role = known.has_any(frozenset(proposal["required_roles"]))
    reasons: list[str] = [] if role else [Reason.ACTOR_NOT_AUTHORIZED]
    editors = {proposal["edited_by"], *proposal.get("editors", ())}
    if not proposal.get("returners_may_approve", False):
        editors |= set(proposal.get("returned_by", ()))  # their reason shaped this proposal
    if proposal["separation_of_duties"] and (actor == proposal["proposer"] or actor in editors):
        reasons.append(Reason.SELF_APPROVAL)
    return reasons, role


def decide_approve(item: Item, command: Approve, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.APPROVE, State.AWAITING_APPROVAL)
    proposal = item.doc("proposal")
    if proposal is None:
        return refused(item, [*reasons, Reason.NO_PROPOSAL, *approver_gate(ctx, command.actor)])
    if command.digest != proposal["digest"]:
        reasons.append(Reason.PROPOSAL_DIGEST_MISMATCH)
    who, role = approver_reasons(ctx, proposal, command.actor)
    reasons += who
    if not evidence_fresh(proposal, ctx.now):
        reasons.append(Reason.EVIDENCE_STALE)
    reasons += policy_reasons(ctx, proposal)
    if reasons:
        return refused(item, reasons)
    approvals = [dict(a) for a in proposal["approvals"]]
    if any(a["actor"] == command.actor for a in approvals):
        return zero_write(item, [Reason.ALREADY_APPROVED])
    # Approvals whose authority no longer holds (a revoked role) are dropped, never counted.
    voided = [
        a["actor"]
        for a in approvals
        if a["digest"] != proposal["digest"] or approver_reasons(ctx, proposal, a["actor"])[0]
    ]
    approvals = [a for a in approvals if a["actor"] not in voided]
    approval: dict[str, Any] = {
        "actor": command.actor,
        "at": format_time(ctx.now),
        "digest": proposal["digest"],
        "role": role,
        "policy_version": proposal["policy_version"],
    }
    if command.attestation is not None:
        approval["attestation"] = command.attestation
    approvals.append(approval)
    holding = {a["actor"] for a in approvals}
    enough = len(holding) >= int(proposal["required_approvals"])
    target = State.APPROVED if enough else State.AWAITING_APPROVAL
    data: dict[str, Any] = {"proposal": {**proposal, "approvals": approvals}}
    if enough:
        data["step"] = {"state": State.APPROVED.value, "since": format_time(ctx.now)}
    return transition(
        item,
        Cmd.APPROVE,
        target,
        ctx,
        actor=command.actor,
        data=data,
        digests={"proposal": proposal["digest"]},
        detail={
            "role": role,
            "policy_version": proposal["policy_version"],
            "approvals": len(approvals),
            "required": proposal["required_approvals"],
            "voided_approvals": voided,
        },
    )


def policy_reasons(ctx: Context, proposal: Mapping[str, Any]) -> list[str]:
    """A proposal made under another approval policy needs a new proposal (``reinspect``):
    approving it, or running it, under rules nobody approved would be neither. So does one
    whose rule (roles, count, evidence age, separation of duties) is not its action's rule in
    the policy it names."""
    if ctx.policy is None:
        return []
    if proposal["policy_version"] not in ctx.policy.approval.versions:
        return [Reason.POLICY_CHANGED]
    if rule_differences(proposal, ctx.policy.approval.rule(str(proposal["action"]))):
        return [Reason.POLICY_CHANGED]
    return []


def rule_differences(proposal: Mapping[str, Any], rule: ApprovalRule) -> list[str]:
    """The fields in which the rule a proposal records differs from its action's rule."""
    recorded = {
        "required_roles": sorted(proposal.get("required_roles", ())),
        "required_approvals": proposal.get("required_approvals"),
        "max_evidence_age": float(proposal.get("max_evidence_age", -1)),
        "separation_of_duties": proposal.get("separation_of_duties"),
        "returners_may_approve": bool(proposal.get("returners_may_approve", False)),
    }
    expected = {
        "required_roles": sorted(rule.roles),
        "required_approvals": rule.approvals,
        "max_evidence_age": rule.max_evidence_age,
        "separation_of_duties": rule.separation_of_duties,
        "returners_may_approve": rule.returners_may_approve,
    }
    return [name for name in recorded if recorded[name] != expected[name]]


def approver_gate(ctx: Context, actor: str) -> list[str]:
    return [Reason.ACTOR_UNKNOWN] if ctx.actor(actor) is None else []


def decide_reject(item: Item, command: Reject, ctx: Context) -> Decision:
    target = State.CLASSIFIED if command.send_back else State.CLOSED
    reasons = legal(item, Cmd.REJECT, target)
    proposal = item.doc("proposal")
    if proposal is None:
        reasons.append(Reason.NO_PROPOSAL)
    elif command.digest is not None and command.digest != proposal["digest"]:
        reasons.append(Reason.PROPOSAL_DIGEST_MISMATCH)
    roles = {OPERATOR, *(proposal["required_roles"] if proposal else ())}
    reasons += actor_reasons(ctx, command.actor, frozenset(roles))
    if not command.reason.strip():
        reasons.append(Reason.INVALID_INPUT)
    if reasons:
        return refused(item, reasons)
    assert proposal is not None
    rejection = {
        "actor": command.actor,
        "at": format_time(ctx.now),
        "reason": command.reason,
        "digest": proposal["digest"],
        "returned": command.send_back,
    }
    if command.send_back:  # the next proposal answers this reason (and the earlier ones)
        rejection["returned_by"] = sorted({*proposal.get("returned_by", ()), command.actor})
    data: dict[str, Any] = {"rejection": rejection, "proposal": None}
    if command.send_back:  # what the next proposal replaces (a person compares the two)
        data["previous_proposal"] = proposal
    if command.send_back:
        data["step"] = {"state": State.CLASSIFIED.value, "since": format_time(ctx.now)}
    return transition(
        item,
        Cmd.REJECT,
        target,
        ctx,
        actor=command.actor,
        data=data,
        digests={"proposal": proposal["digest"]},
        detail={
            "reason": command.reason,
            "returned": command.send_back,
            "voided_approvals": [a["actor"] for a in proposal["approvals"]],
        },
    )


def decide_edit(item: Item, command: Edit, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.EDIT, State.AWAITING_APPROVAL) + operator_reasons(ctx, command)
    proposal = item.doc("proposal")
    if proposal is None:
        reasons.append(Reason.NO_PROPOSAL)
    if reasons:
        return refused(item, reasons)
    assert proposal is not None
    if digest(command.params) == digest(proposal["params"]):
        return zero_write(item, [])
    new = build_proposal(
        item,
        ctx,
        action=proposal["action"],
        target=proposal["target"],
        params=command.params,
        rationale=proposal["rationale"],
        proposer=proposal["proposer"],
        edited_by=command.actor,
        previous_digest=proposal["digest"],
        editors=list(proposal.get("editors", ())),
        returned_by=list(proposal.get("returned_by", ())),
    )
    # The evidence the proposal rests on does not change with an edit of its parameters.
    new_body = {**new, "evidence": proposal["evidence"]}
    new_body.pop("digest")
    new_body.pop("approvals")

    new = {**new_body, "digest": digest(new_body), "approvals": []}
    return transition(
        item,
        Cmd.EDIT,
        State.AWAITING_APPROVAL,
        ctx,
        actor=command.actor,
        data={"proposal": new, "previous_proposal": proposal},
        digests={"proposal": new["digest"], "previous": proposal["digest"]},
        detail={"voided_approvals": [a["actor"] for a in proposal["approvals"]]},
    )


def authority_now(item: Item, ctx: Context) -> tuple[list[str], list[dict[str, Any]]]:
    """Re-check, at execution time, every approval of the current proposal.

    Returns the reasons authority fails and the approvals that still hold.
    """
    proposal = item.doc("proposal")
    if proposal is None:
        return [Reason.NO_PROPOSAL], []
    reasons: list[str] = []
    valid: list[dict[str, Any]] = []
    for approval in proposal["approvals"]:
        if approval["digest"] != proposal["digest"]:
            reasons.append(Reason.PROPOSAL_DIGEST_MISMATCH)
            continue
        who, _ = approver_reasons(ctx, proposal, approval["actor"])
        if who:
            reasons += who
            continue
        valid.append(dict(approval))
    if len({a["actor"] for a in valid}) < int(proposal["required_approvals"]):
        reasons.append(Reason.APPROVALS_MISSING)
    if not evidence_fresh(proposal, ctx.now):
        reasons.append(Reason.EVIDENCE_STALE)
        valid = []
    if policy_reasons(ctx, proposal):
        reasons.append(Reason.POLICY_CHANGED)
        valid = []
    return list(dict.fromkeys(reasons)), valid


def decide_execute(item: Item, command: Execute, ctx: Context) -> Decision:
    reasons = lease_reasons(item, command, ctx.now)
    if item.state is not State.APPROVED:
        reasons.insert(0, Reason.ILLEGAL_TRANSITION)
    proposal = item.doc("proposal")
    if command.digest is not None and (proposal is None or proposal["digest"] != command.digest):
        reasons.append(Reason.PROPOSAL_DIGEST_MISMATCH)
    if reasons:
        return refused(item, reasons)
    failing, valid = authority_now(item, ctx)
    if failing:
        return recheck_failed(item, ctx, command.worker, failing, valid)
    assert proposal is not None
    return transition(
        item,
        Cmd.EXECUTE,
        State.DELIVERING,
        ctx,
        actor=command.worker,
        data={
            "step": {"state": State.DELIVERING.value, "since": format_time(ctx.now)},
            "staged": None,
        },
        digests={"proposal": proposal["digest"]},
        detail={"approvers": [a["actor"] for a in valid]},
    )
