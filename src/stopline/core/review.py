"""People's commands on a delivered item: a review verdict on its packet, its publication,
and binding an object found by its key (``reconcile``, which never creates)."""

from __future__ import annotations

from .artifact_records import artifacts_of, listed, remote_text_problem
from .canonical import format_time
from .commands import Publish, Reconcile, Review
from .decision import Decision, refused, zero_write
from .policy import PUBLISH
from .reasons import Reason
from .records import Item
from .states import State
from .step import Context, actor_reasons, legal, operator_reasons, policy_of, transition
from .transitions import Cmd


def decide_review(item: Item, command: Review, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.REVIEW, item.state) + operator_reasons(ctx, command)
    packet = item.doc("review_packet")
    if packet is None or packet["void"] or packet["digest"] != command.packet:
        reasons.append(Reason.REVIEW_PACKET_STALE)
    elif packet["delivery_seq"] != (item.doc("delivery_seq") or 0):
        reasons.append(Reason.REVIEW_HEAD_MOVED)
    if command.verdict not in ("approve", "reject"):
        reasons.append(Reason.INVALID_INPUT)
    if command.verdict == "reject" and not command.reason.strip():
        reasons.append(Reason.INVALID_INPUT)
    if reasons:
        return refused(item, reasons)
    assert packet is not None
    review = {
        "verdict": command.verdict,
        "actor": command.actor,
        "reason": command.reason,
        "packet": packet["digest"],
        "delivery_seq": packet["delivery_seq"],
        "at": format_time(ctx.now),
    }
    return transition(
        item,
        Cmd.REVIEW,
        item.state,
        ctx,
        actor=command.actor,
        data={"review": review},
        digests={"packet": packet["digest"]},
        detail={"verdict": command.verdict, "reason": command.reason},
    )


def decide_publish(item: Item, command: Publish, ctx: Context) -> Decision:
    policy = policy_of(ctx)
    reasons = legal(item, Cmd.PUBLISH, item.state)
    reasons += actor_reasons(ctx, command.actor, frozenset(policy.delivery.publish_roles))
    if policy.delivery.mode != PUBLISH:
        reasons.append(Reason.MODE_FORBIDS_PUBLICATION)
    packet = item.doc("review_packet")
    review = item.doc("review")
    if packet is None or packet["void"] or packet["digest"] != command.packet:
        reasons.append(Reason.REVIEW_PACKET_STALE)
    elif review is None or review["verdict"] != "approve" or review["packet"] != packet["digest"]:
        reasons.append(Reason.REVIEW_NOT_APPROVED)
    if reasons:
        return refused(item, reasons)
    if item.doc("publication"):
        return zero_write(item, [Reason.PUBLISHED])
    assert packet is not None
    publication = {
        "actor": command.actor,
        "packet": packet["digest"],
        "signal": command.signal,
        "at": format_time(ctx.now),
    }
    return transition(
        item,
        Cmd.PUBLISH,
        item.state,
        ctx,
        actor=command.actor,
        data={"publication": publication},
        digests={"packet": packet["digest"]},
        detail={"signal": command.signal},
    )


def decide_reconcile(item: Item, command: Reconcile, ctx: Context) -> Decision:
    """Bind an object found by its key after verifying it by readback; never creates."""
    reasons = legal(item, Cmd.RECONCILE, item.state) + operator_reasons(ctx, command)
    artifacts = artifacts_of(item)
    record = artifacts.get(command.key)
    if record is None:
        reasons.append(Reason.SCOPE_INVALID)
    elif reasons:
        pass  # refused before any lookup: what was (not) found is not a reason here
    elif command.found is None or command.found.readback_hash is None or not command.remote_id:
        reasons.append(Reason.REMOTE_IDENTITY_MISSING)
    elif remote_text_problem(command.remote_id) or remote_text_problem(
        command.found.version, empty_ok=True
    ):
        reasons.append(Reason.INVALID_INPUT)
    else:
        revision = item.doc("revision") or {}
        old = (revision.get("superseded") or {}).get(command.key, {})
        if command.found.readback_hash not in (record["content_hash"], old.get("content_hash")):
            reasons.append(Reason.READBACK_MISMATCH)
        if item.state is State.REVISION_FAILED and command.remote_id != record["remote_id"]:
            reasons.append(Reason.NOT_AN_UPDATE)  # a revision keeps every remote identity
    if reasons:
        return refused(item, reasons)
    assert record is not None and command.found is not None
    matches_current = command.found.readback_hash == record["content_hash"]
    record.update(
        remote_id=command.remote_id,
        remote_version=command.found.version,
        readback_hash=command.found.readback_hash
        if matches_current
        else record.get("readback_hash"),
        reconciled_at=format_time(ctx.now),
    )
    if item.state is State.EXCEPTION and matches_current:
        record["last_op"] = record.get("last_op") or "found"
    if not matches_current:  # the object still holds the superseded content: update it again
        record.update(last_op=None, intent=None)
    artifacts[command.key] = record
    return transition(
        item,
        Cmd.RECONCILE,
        item.state,
        ctx,
        actor=command.actor,
        data={"artifacts": listed(artifacts)},
        digests={"content": record["content_hash"], "readback": command.found.readback_hash},
        detail={
            "key": command.key,
            "remote_id": command.remote_id,
            "matches_current": matches_current,
        },
    )
