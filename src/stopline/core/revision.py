"""The revision lifecycle of a completed delivery (seed 000).

COMPLETED -> REVISION_PREPARED: an explicit request, checked against the completed source;
REVISION_PREPARED -> REVISION_COMPLETED: bound objects updated and read back (the gate in
``delivery``); REVISION_PREPARED -> REVISION_FAILED: failed delivery or expired lease;
REVISION_FAILED -> REVISION_PREPARED: only with the same request.
"""

from __future__ import annotations

from typing import Any

from .artifact_records import artifacts_of, listed, readback_verified
from .canonical import digest, format_time
from .commands import Revise
from .decision import Decision, refused
from .reasons import Reason
from .records import Item
from .states import DELIVERED_STATES, State
from .step import Context, legal, operator_reasons, policy_of, transition
from .transitions import Cmd


def request_digest(
    item: Item, reason: str, scope: list[str], source_seq: int, superseded: Any
) -> str:
    return digest(
        {
            "item": item.id,
            "reason": reason,
            "scope": sorted(scope),
            "source_seq": source_seq,
            "superseded": superseded,
        }
    )


def superseded_bindings(item: Item, scope: list[str]) -> dict[str, Any]:
    artifacts = {a["key"]: a for a in item.doc("artifacts") or ()}
    return {
        key: {
            "content_hash": artifacts[key]["content_hash"],
            "qa_hash": artifacts[key]["qa_hash"],
            "remote_id": artifacts[key]["remote_id"],
            "readback_hash": artifacts[key]["readback_hash"],
        }
        for key in scope
        if key in artifacts
    }


def mode_reasons(ctx: Context) -> list[str]:
    """The delivery mode permits revision: revisable, and the automation has a revise hook
    (without one the worker could only fail the revision, after the packet was voided)."""
    policy = policy_of(ctx)
    if policy.delivery.revisable and policy.revise_hook:
        return []
    return [Reason.MODE_FORBIDS_REVISION]


def decide_revise(item: Item, command: Revise, ctx: Context) -> Decision:
    """Every prerequisite is checked here, before anything changes: a refusal writes nothing."""
    reasons = legal(item, Cmd.REVISE, State.REVISION_PREPARED) + operator_reasons(ctx, command)
    if not command.reason.strip():
        reasons.append(Reason.INVALID_INPUT)
    scope = sorted(set(command.artifacts))
    if item.state is State.REVISION_FAILED:
        return _resume(item, command, ctx, reasons, scope)
    artifacts = {a["key"]: a for a in item.doc("artifacts") or ()}
    if item.state not in DELIVERED_STATES:
        reasons.append(Reason.NOT_COMPLETED)
    reasons += mode_reasons(ctx)
    if item.doc("publication"):
        reasons.append(Reason.PUBLISHED)
    if not scope or len(scope) != len(command.artifacts) or any(k not in artifacts for k in scope):
        reasons.append(Reason.SCOPE_INVALID)
    for key in scope:
        record = artifacts.get(key)
        if record is None:
            continue
        if not record.get("remote_id"):
            reasons.append(Reason.ARTIFACT_NOT_BOUND)
        if not readback_verified(record):
            reasons.append(Reason.READBACK_UNVERIFIED)
    packet = item.doc("review_packet")
    seq = int(item.doc("delivery_seq") or 0)
    review = item.doc("review")
    if item.state in DELIVERED_STATES and (  # an unfinished delivery has no head to check
        packet is None
        or packet["void"]
        or packet["delivery_seq"] != seq
        or (review is not None and review["packet"] != packet["digest"])
    ):
        reasons.append(Reason.REVIEW_HEAD_MOVED)
    revision = item.doc("revision")
    if revision is not None and revision["state"] in (
        State.REVISION_PREPARED.value,
        State.REVISION_FAILED.value,
    ):
        reasons.append(Reason.REVISION_ACTIVE)
    if reasons:
        return refused(item, reasons)
    assert packet is not None
    superseded = superseded_bindings(item, scope)
    request = request_digest(item, command.reason, scope, seq, superseded)
    new_seq = seq + 1
    new_revision = {
        "sequence": new_seq,
        "state": State.REVISION_PREPARED.value,
        "request_digest": request,
        "reason": command.reason,
        "scope": scope,
        "source_seq": seq,
        "superseded": superseded,
        "requested_by": command.actor,
        "at": format_time(ctx.now),
        "staged": False,
    }
    history = [*(item.doc("revisions") or ()), *([revision] if revision else [])]
    return transition(
        item,
        Cmd.REVISE,
        State.REVISION_PREPARED,
        ctx,
        actor=command.actor,
        data={
            "revision": new_revision,
            "revisions": history,
            "delivery_seq": new_seq,
            "review_packet": {**packet, "void": True, "voided_by": request},
            "review": None,
            "previous_review": review,
            "step": {"state": State.REVISION_PREPARED.value, "since": format_time(ctx.now)},
        },
        digests={"request": request, "voided_packet": packet["digest"]},
        detail={"reason": command.reason, "scope": scope, "sequence": new_seq},
    )


def _resume(
    item: Item, command: Revise, ctx: Context, reasons: list[str], scope: list[str]
) -> Decision:
    """Only the same request may take an unfinished revision up again."""
    revision = dict(item.doc("revision") or {})
    presented = request_digest(
        item, command.reason, scope, revision.get("source_seq", -1), revision.get("superseded")
    )
    if presented != revision.get("request_digest"):
        reasons.append(Reason.REQUEST_MISMATCH)
    reasons += mode_reasons(ctx)
    if item.doc("publication"):
        reasons.append(Reason.PUBLISHED)
    if reasons:
        return refused(item, reasons)
    revision["state"] = State.REVISION_PREPARED.value
    # An artifact whose revised content was never read back as written is written again: the
    # worker reads it first and updates it, still only on the remote version this revision
    # bound, so a third party's later edit stops it (remote_version_conflict), never lost.
    artifacts = artifacts_of(item)
    rewrite = [key for key in revision["scope"] if not readback_verified(artifacts[key])]
    for key in rewrite:
        artifacts[key]["last_op"] = None
    revision["resumed"] = [
        *revision.get("resumed", ()),
        {"actor": command.actor, "at": format_time(ctx.now), "rewrite": rewrite},
    ]
    return transition(
        item,
        Cmd.REVISE,
        State.REVISION_PREPARED,
        ctx,
        actor=command.actor,
        data={
            "revision": revision,
            "artifacts": listed(artifacts),
            "step": {"state": State.REVISION_PREPARED.value, "since": format_time(ctx.now)},
        },
        digests={"request": presented},
        detail={"resumed": True, "sequence": revision.get("sequence"), "rewrite": rewrite},
    )
