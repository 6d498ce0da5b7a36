"""Commands by which people move stopped items: the only way out of a stop state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .canonical import digest, format_time
from .commands import Acknowledge, Close, Finalize, Reinspect, Resolve, Resume
from .decision import Decision, refused, zero_write
from .reasons import Reason
from .records import Item
from .states import DELIVERED_STATES, State
from .step import Context, legal, operator_reasons, policy_of, transition
from .transitions import Cmd


def _reason_required(reason: str) -> list[str]:
    return [] if reason.strip() else [Reason.INVALID_INPUT]


def _voided(item: Item) -> list[str]:
    """Whose approvals the move voids. A record edited to a shape no write makes is still
    closed (its findings kept): of its approvals, those that name an actor are listed."""
    proposal = item.doc("proposal")
    approvals = proposal.get("approvals") if isinstance(proposal, Mapping) else None
    if not isinstance(approvals, list | tuple):
        return []
    return [a["actor"] for a in approvals if isinstance(a, Mapping) and type(a.get("actor")) is str]


def decide_reinspect(item: Item, command: Reinspect, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.REINSPECT, State.OBSERVING) + operator_reasons(ctx, command)
    reasons += _reason_required(command.reason)
    if reasons:
        return refused(item, reasons)
    proposal = item.doc("proposal")
    return transition(
        item,
        Cmd.REINSPECT,
        State.OBSERVING,
        ctx,
        actor=command.actor,
        data={
            "proposal": None,
            "previous_proposal": proposal,
            "report": None,
            "exception": None,
            "reinspect": {
                "actor": command.actor,
                "reason": command.reason,
                "at": format_time(ctx.now),
            },
            "step": {"state": State.OBSERVING.value, "since": format_time(ctx.now)},
        },
        digests={"proposal": proposal["digest"] if proposal else None},
        detail={"reason": command.reason, "voided_approvals": _voided(item)},
    )


def decide_acknowledge(item: Item, command: Acknowledge, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.ACKNOWLEDGE, State.CLOSED) + operator_reasons(ctx, command)
    if reasons:
        return refused(item, reasons)
    report = item.doc("report") or {}
    return transition(
        item,
        Cmd.ACKNOWLEDGE,
        State.CLOSED,
        ctx,
        actor=command.actor,
        data={
            "closure": {"actor": command.actor, "how": "acknowledged", "at": format_time(ctx.now)}
        },
        digests={"report": report.get("digest")},
        detail={"reason": command.reason},
    )


def decide_resolve(item: Item, command: Resolve, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.RESOLVE, State.OBSERVING) + operator_reasons(ctx, command)
    reasons += _reason_required(command.reason)
    if reasons:
        return refused(item, reasons)
    resolution = {
        "actor": command.actor,
        "reason": command.reason,
        "input": command.input,
        "at": format_time(ctx.now),
    }
    return transition(
        item,
        Cmd.RESOLVE,
        State.OBSERVING,
        ctx,
        actor=command.actor,
        data={
            "corrective_input": resolution,
            "exception": None,
            "previous_exception": item.doc("exception"),
            "step": {"state": State.OBSERVING.value, "since": format_time(ctx.now)},
        },
        digests={"input": digest(command.input)},
        detail={"reason": command.reason},
    )


def resume_target(item: Item) -> State:
    """The work state ``resume`` returns an exhausted item to: the step that spent its budget."""
    resume_state = item.doc("resume_state")
    return State(resume_state) if resume_state in {s.value for s in State} else State.OBSERVING


def decide_resume(item: Item, command: Resume, ctx: Context) -> Decision:
    policy = policy_of(ctx)
    target = resume_target(item)
    reasons = legal(item, Cmd.RESUME, target) + operator_reasons(ctx, command)
    reasons += _reason_required(command.reason)
    retry = policy.retry_for(target.value)
    granted = command.attempts if command.attempts is not None else retry.max_attempts
    if granted < 1:
        reasons.append(Reason.INVALID_INPUT)
    if granted > retry.resume_cap:
        reasons.append(Reason.RESUME_CAP)
    if reasons:
        return refused(item, reasons)
    grant: dict[str, Any] = {
        "actor": command.actor,
        "reason": command.reason,
        "attempts": granted,
        "at": format_time(ctx.now),
        "state": target.value,
    }
    grants = [*(item.doc("grants") or ()), grant]
    return transition(
        item,
        Cmd.RESUME,
        target,
        ctx,
        actor=command.actor,
        budget=granted,
        data={
            "grants": grants,
            "previous_account": item.doc("account"),
            "account": None,
            "resume_state": None,
            "step": {"state": target.value, "since": format_time(ctx.now)},
        },
        detail=grant,
    )


def decide_close(item: Item, command: Close, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.CLOSE, State.CLOSED) + operator_reasons(ctx, command)
    reasons += _reason_required(command.reason)
    if reasons:
        return refused(item, reasons)
    detail: dict[str, Any] = {"reason": command.reason, "voided_approvals": _voided(item)}
    if command.integrity:
        detail["integrity_findings"] = [f.to_plain() for f in command.integrity[:20]]
    return transition(
        item,
        Cmd.CLOSE,
        State.CLOSED,
        ctx,
        actor=command.actor,
        data={
            "closure": {
                "actor": command.actor,
                "how": "closed",
                "reason": command.reason,
                "from": item.state.value,
                "at": format_time(ctx.now),
            }
        },
        reasons=(Reason.INTEGRITY_FAILED,) if command.integrity else (),
        detail=detail,
    )


def decide_finalize(item: Item, command: Finalize, ctx: Context) -> Decision:
    """Idempotent completion: a completed item is left exactly as it is."""
    if item.state in DELIVERED_STATES:
        return zero_write(item, [Reason.ALREADY_COMPLETED])
    return refused(item, [Reason.NOT_COMPLETED])
