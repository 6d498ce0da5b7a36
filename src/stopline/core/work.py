"""Worker-side decisions: discovery, the steps of a work state, and expiry (failures are in
``failures.py``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from . import severity
from .authorship import AUTOMATION
from .canonical import format_time, json_number
from .commands import Discover, Expire, NeedsEyes, NothingToDo, Observe, Propose, Report
from .decision import Decision, Outcome, refused
from .failures import account, revision_failed, stop_for_eyes
from .fast_digest import fast_digest
from .frozen import freeze
from .guard import integrity_failed
from .integrity import head_findings, item_seal
from .limits import check, item_key_problem
from .reasons import Reason
from .records import Event, Item, evolve
from .states import State
from .step import Context, lease_reasons, legal, policy_of, transition
from .transitions import Cmd


def decide_discover(command: Discover, ctx: Context) -> Decision:
    policy = policy_of(ctx)
    reasons: list[str] = []
    if (
        not command.automation
        or item_key_problem(command.key) is not None
        or check(command.input)  # the input boundary, whoever built the command
    ):
        reasons.append(Reason.INVALID_INPUT)
    if command.agent and not policy.agent:
        reasons.append(Reason.NOT_AN_AGENT_AUTOMATION)  # its workers would act on what it says
    if reasons:
        return refused(None, reasons, command.item_id)
    item = Item(
        id=command.item_id,
        automation=command.automation,
        key=command.key,
        state=State.OBSERVING,
        version=1,
        seq=1,
        head="",
        created_at=ctx.now,
        updated_at=ctx.now,
        attempts=0,
        max_attempts=policy.retry_for(State.OBSERVING.value).max_attempts,
        next_eligible_at=ctx.now,
        data=freeze(
            {"input": command.input, "step": _step(State.OBSERVING, ctx.now)}
            | ({"agent": command.agent} if command.agent else {})
        ),
    )
    event = Event.sealed(
        item_id=command.item_id,
        seq=1,
        at=ctx.now,
        command=Cmd.DISCOVER.value,
        actor="scheduler",
        from_state=None,
        to_state=State.OBSERVING,
        reasons=(),
        digests={"input": fast_digest(command.input), "seal": item_seal(item)},
        detail={
            "automation": command.automation,
            "key": command.key,
            "author": AUTOMATION.to_plain(),
        }
        | ({"agent": command.agent} if command.agent else {}),
        prev_hash="",
    )
    item = evolve(item, head=event.hash)
    return Decision(Outcome.APPLIED, (), item.id, item.state, after=item, event=event)


def _step(state: State, now: datetime) -> dict[str, Any]:
    return {"state": state.value, "since": format_time(now)}


def decide_observe(item: Item, command: Observe, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.OBSERVE, State.CLASSIFIED) + lease_reasons(item, command, ctx.now)
    if command.observed_at > ctx.now:  # evidence from the future would never age
        reasons.append(Reason.INVALID_INPUT)
    if reasons:
        return refused(item, reasons)
    evidence = {
        "data": command.evidence,
        "observed_at": format_time(command.observed_at),
    }
    evidence["digest"] = fast_digest(evidence)
    data: dict[str, Any] = {"evidence": evidence, "step": _step(State.CLASSIFIED, ctx.now)}
    if command.classification is not None:
        data["classification"] = command.classification
    return transition(
        item,
        Cmd.OBSERVE,
        State.CLASSIFIED,
        ctx,
        actor=command.worker,
        data=data,
        digests={"evidence": evidence["digest"]},
    )


def build_proposal(
    item: Item,
    ctx: Context,
    *,
    action: str,
    target: str,
    params: Any,
    rationale: str,
    proposer: str,
    edited_by: str | None,
    previous_digest: str | None,
    editors: list[str] | None = None,
    returned_by: list[str] | None = None,
) -> dict[str, Any]:
    """The proposal document; its digest covers everything but the approvals.

    ``returned_by``: everyone whose ``reject --return`` reason this proposal answers; with
    separation of duties they may not approve it, like an editor."""
    policy = policy_of(ctx)
    rule = policy.approval.rule(action)
    editors = sorted(set(editors or ()) | ({edited_by} if edited_by else set()))
    evidence = item.doc("evidence") or {}
    body: dict[str, Any] = {
        "action": action,
        "target": target,
        "params": params,
        "rationale": rationale,
        "evidence": [{"digest": evidence.get("digest"), "observed_at": evidence.get("observed_at")}]
        if evidence
        else [],
        "proposer": proposer,
        "edited_by": edited_by,
        "editors": editors,
        "previous_digest": previous_digest,
        # the event this proposal follows: its digest (and every approval signed for it) names
        # one place in one history, so the same proposal made again is another proposal
        "follows": item.head,
        "returned_by": sorted(set(returned_by or ())),
        "policy_version": policy.approval.version,
        "required_roles": sorted(rule.roles),
        "required_approvals": rule.approvals,
        "max_evidence_age": json_number(rule.max_evidence_age),
        "separation_of_duties": rule.separation_of_duties,
        "returners_may_approve": rule.returners_may_approve,
    }
    return {**body, "digest": fast_digest(body), "approvals": []}


def decide_propose(item: Item, command: Propose, ctx: Context) -> Decision:
    rejected = item.doc("rejection")
    proposal = build_proposal(
        item,
        ctx,
        action=command.action,
        target=command.target,
        params=command.params,
        rationale=command.rationale,
        proposer=command.proposer or f"automation:{item.automation}",
        edited_by=None,
        # A re-proposal after `reject --return` is bound to the digest it replaces, so the
        # same content proposed again never carries the rejected digest.
        previous_digest=None if rejected is None else rejected["digest"],
        returned_by=list(rejected.get("returned_by", ())) if rejected else None,
    )
    target = State.APPROVED if proposal["required_approvals"] == 0 else State.AWAITING_APPROVAL
    reasons = legal(item, Cmd.PROPOSE, target) + lease_reasons(item, command, ctx.now)
    if not command.action or not severity.valid(command.severity):
        reasons.append(Reason.INVALID_INPUT)
    if reasons:
        return refused(item, reasons)
    data: dict[str, Any] = {"proposal": proposal, "rejection": None, "severity": command.severity}
    if target.is_work:
        data["step"] = _step(target, ctx.now)
    return transition(
        item,
        Cmd.PROPOSE,
        target,
        ctx,
        actor=command.worker,
        data=data,
        digests={"proposal": proposal["digest"]},
    )


def decide_report(item: Item, command: Report, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.REPORT, State.READY_FOR_REVIEW) + lease_reasons(
        item, command, ctx.now
    )
    if reasons:
        return refused(item, reasons)
    report = {
        "data": command.report,
        "digest": fast_digest(command.report),
        "at": format_time(ctx.now),
    }
    return transition(
        item,
        Cmd.REPORT,
        State.READY_FOR_REVIEW,
        ctx,
        actor=command.worker,
        data={"report": report},
        digests={"report": report["digest"]},
    )


def decide_nothing_to_do(item: Item, command: NothingToDo, ctx: Context) -> Decision:
    """A classified item whose evidence shows nothing to act on completes with that evidence
    and the hook's reason: no proposal, no approval, no delivery."""
    reasons = legal(item, Cmd.NOTHING_TO_DO, State.COMPLETED) + lease_reasons(
        item, command, ctx.now
    )
    if not command.reason.strip():
        reasons.append(Reason.INVALID_INPUT)
    if reasons:
        return refused(item, reasons)
    evidence = item.doc("evidence") or {}
    result = {
        "nothing_to_do": command.reason,
        "evidence_digest": evidence.get("digest"),
        "at": format_time(ctx.now),
    }
    return transition(
        item,
        Cmd.NOTHING_TO_DO,
        State.COMPLETED,
        ctx,
        actor=command.worker,
        data={"result": result},
        digests={"evidence": evidence.get("digest")},
        detail={"reason": command.reason},
    )


def decide_needs_eyes(item: Item, command: NeedsEyes, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.NEEDS_EYES, State.EXCEPTION) + lease_reasons(item, command, ctx.now)
    if not command.owner:
        reasons.append(Reason.INVALID_INPUT)
    if reasons:
        return refused(item, reasons)
    return stop_for_eyes(
        item,
        ctx,
        command.worker,
        owner=command.owner,
        why=command.why,
        evidence=command.evidence,
    )


def decide_expire(item: Item, command: Expire, ctx: Context) -> Decision:
    """Sweep a step whose worker vanished: the attempt it claimed is spent, not forgotten."""
    if not item.state.is_work:
        return refused(item, [Reason.ILLEGAL_TRANSITION])
    if item.lease_live(ctx.now):
        return refused(item, [Reason.LEASE_HELD])
    findings = head_findings(item, command.head, command.legacy_seal)
    if findings:
        return integrity_failed(item, ctx, command.sweeper, findings)
    abandoned = item.lease_owner is not None
    entry = None
    if abandoned:
        entry = {
            "attempt": item.attempts,
            "state": item.state.value,
            "claimed_at": None if item.claimed_at is None else format_time(item.claimed_at),
            "at": format_time(ctx.now),
            "worker": item.lease_owner,
            "class": Reason.LEASE_EXPIRED.value,
            "message": "the lease expired before the worker recorded an outcome",
            "outcome": "abandoned",
        }
    if item.state is State.REVISION_PREPARED and (abandoned or item.attempts >= item.max_attempts):
        failure = {"class": Reason.LEASE_EXPIRED.value, "message": "lease expired mid-revision"}
        return revision_failed(item, ctx, command.sweeper, (Reason.LEASE_EXPIRED,), failure, entry)
    if item.attempts >= item.max_attempts:
        return transition(
            item,
            Cmd.EXHAUST,
            State.EXHAUSTED,
            ctx,
            actor=command.sweeper,
            data={"account": account(item, entry, ctx.now), "resume_state": item.state.value},
            reasons=(Reason.RETRY_BUDGET_EXHAUSTED,),
            attempt_entry=entry,
        )
    return refused(item, [Reason.NOT_DUE])


def claimable(item: Item, now: datetime) -> bool:
    """The claim predicate (the store's claim statement says the same in SQL)."""
    return (
        item.state.is_work
        and item.next_eligible_at <= now
        and not item.lease_live(now)
        and item.attempts < item.max_attempts
        and not (item.state is State.REVISION_PREPARED and item.lease_owner is not None)
    )


def continue_claim(item: Item, worker: str, now: datetime, lease_seconds: float) -> Item | None:
    """The claim a worker folds into the commit that released the item, when the next step
    is due at once: same counting (one attempt), a new fencing token, no extra event."""
    if item.lease_owner is not None or not claimable(item, now):
        return None
    return evolve(
        item,
        attempts=item.attempts + 1,
        lease_token=item.lease_token + 1,
        lease_owner=worker,
        lease_expires_at=now + timedelta(seconds=lease_seconds),
        claimed_at=now,
    )
