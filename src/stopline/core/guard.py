"""The guard before every acting call, on every attempt.

An acting call is an execute hook, a remote create or update, a publication. Before each one
the worker reads the record again and asks :func:`decide_guard`:

1. the lease is still the worker's (else ``lease_lost``: nothing is called, nothing written);
2. the record is exactly what its head event sealed, the proposal hashes to its digest and the
   actor registry matches its own chain (else the item stops at ``exception`` with
   ``integrity_failed`` and the findings in its history);
3. every counted approval's actor still holds its role, the evidence is fresh, the policy is
   the one approved under (else the item goes back to ``awaiting_approval`` with the reasons);
   in a revision, the operator who requested it still holds the operator role (else
   ``revision_failed``).

Only when all hold is the answer ``zero_write``: nothing to record, go ahead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .canonical import format_time
from .commands import Guard
from .decision import Decision, refused, zero_write
from .failures import revision_failed
from .integrity import Finding, head_findings
from .reasons import Reason
from .records import Item
from .states import State
from .step import OPERATOR, Context, actor_reasons, lease_reasons, transition
from .transitions import Cmd

OWNER = "operators"
MAX_RECORDED_FINDINGS = 20


def integrity_failed(item: Item, ctx: Context, actor: str, findings: Sequence[Finding]) -> Decision:
    """Stop a work item whose record cannot be trusted. The event records every finding, so the
    tampering stays in the history even though the next seal covers the record as found."""
    listed = [f.to_plain() for f in findings[:MAX_RECORDED_FINDINGS]]
    reasons: tuple[str, ...] = (Reason.INTEGRITY_FAILED,)
    if any(f.reason == Reason.SIGNATURE_INVALID for f in findings):
        reasons += (Reason.SIGNATURE_INVALID,)
    return transition(
        item,
        Cmd.INTEGRITY_FAILED,
        State.EXCEPTION,
        ctx,
        actor=actor,
        reasons=reasons,
        data={
            "exception": {
                "owner": OWNER,
                "why": "the stored record does not match what its history sealed: "
                + "; ".join(f"{f.field}: {f.reason}" for f in findings[:3]),
                "evidence": {"findings": listed},
                "from_state": item.state.value,
                "at": format_time(ctx.now),
            }
        },
        detail={"findings": listed, "found": len(findings)},
    )


def recheck_failed(
    item: Item,
    ctx: Context,
    worker: str,
    failing: Sequence[str],
    valid: Sequence[dict[str, Any]],
) -> Decision:
    """Authority no longer holds before an acting call: back to ``awaiting_approval`` with the
    approvals that still hold."""
    proposal = item.doc("proposal")
    data: dict[str, Any] = {"staged": None}
    if proposal is not None:
        data["proposal"] = {**proposal, "approvals": list(valid)}
    kept = {v["actor"] for v in valid}
    return transition(
        item,
        Cmd.RECHECK_FAILED,
        State.AWAITING_APPROVAL,
        ctx,
        actor=worker,
        data=data,
        reasons=tuple(failing),
        digests={"proposal": proposal["digest"] if proposal else None},
        detail={
            "voided_approvals": [
                a["actor"] for a in (proposal or {}).get("approvals", ()) if a["actor"] not in kept
            ]
        },
    )


def decide_guard(item: Item, command: Guard, ctx: Context) -> Decision:
    from .approval import authority_now  # approval imports this module's helpers

    reasons = lease_reasons(item, command, ctx.now)
    if not item.state.is_work:
        reasons.insert(0, Reason.ILLEGAL_TRANSITION)
    if reasons:
        return refused(item, reasons)
    findings = [*head_findings(item, command.head, command.legacy_seal), *command.registry]
    if findings:
        return integrity_failed(item, ctx, command.worker, findings)
    if not command.authority:
        return zero_write(item, [])
    if item.state in (State.APPROVED, State.DELIVERING):
        failing, valid = authority_now(item, ctx)
        if failing:
            return recheck_failed(item, ctx, command.worker, failing, valid)
    elif item.state is State.REVISION_PREPARED:
        revision = item.doc("revision") or {}
        resumed = revision.get("resumed") or ()
        # The operator whose request (or resume of it) the revision now runs under.
        requester = str((resumed[-1]["actor"] if resumed else revision.get("requested_by")) or "")
        failing = actor_reasons(ctx, requester, (OPERATOR,))
        if failing:
            failure = {
                "class": Reason.ACTOR_NOT_AUTHORIZED.value,
                "message": f"{requester or 'the requester'} no longer holds the operator role",
            }
            return revision_failed(item, ctx, command.worker, tuple(failing), failure, None)
    return zero_write(item, [])
