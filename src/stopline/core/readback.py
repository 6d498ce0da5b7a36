"""``readback``: every delivered object read back and compared with its staged content; a
match completes the delivery for review (or a revision), any difference stops the item."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .artifact_records import artifacts_of, listed
from .canonical import format_time
from .commands import ReadBack
from .decision import Decision, refused
from .delivery import OWNER
from .failures import revision_failed
from .fast_digest import fast_digest
from .reasons import Reason
from .records import Item
from .states import State
from .step import (
    Context,
    lease_reasons,
    legal_any,
    transition,
)
from .transitions import Cmd


def review_packet(
    item: Item, artifacts: Mapping[str, Mapping[str, Any]], delivery_seq: int
) -> dict[str, Any]:
    body = {
        "item": item.id,
        "delivery_seq": delivery_seq,
        "artifacts": [
            {
                "key": a["key"],
                "content_hash": a["content_hash"],
                "qa_hash": a["qa_hash"],
                "remote_id": a["remote_id"],
                "readback_hash": a["readback_hash"],
            }
            for a in listed(artifacts)
        ],
    }
    return {**body, "digest": fast_digest(body), "void": False}


def _compare(
    artifacts: dict[str, dict[str, Any]], command: ReadBack, keys: list[str]
) -> tuple[list[str], dict[str, Any]]:
    reasons: list[str] = []
    mismatches: dict[str, Any] = {}
    for key in keys:
        seen = command.readbacks.get(key)
        record = artifacts[key]
        if seen is None or seen.readback_hash is None:
            reasons.append(Reason.REMOTE_IDENTITY_MISSING)
            mismatches[key] = {"missing": True}
        elif seen.readback_hash != record["content_hash"]:
            reasons.append(Reason.READBACK_MISMATCH)
            mismatches[key] = {"fields": list(seen.diff), "observed": seen.readback_hash}
        else:
            record["readback_hash"] = seen.readback_hash
            if seen.version:
                record["remote_version"] = seen.version
        # one object read back for two artifacts is no evidence of the other's delivery, and
        # an update of the one would rewrite the other's object
        remote_id = record.get("remote_id")
        shared = sorted(
            k for k, a in artifacts.items() if k != key and a.get("remote_id") == remote_id
        )
        if remote_id and shared:
            reasons.append(Reason.READBACK_MISMATCH)
            mismatches[key] = {**mismatches.get(key, {}), "shared_with": shared}
    return list(dict.fromkeys(reasons)), mismatches


def decide_readback(item: Item, command: ReadBack, ctx: Context) -> Decision:
    reasons = legal_any(item, Cmd.READBACK) + lease_reasons(item, command, ctx.now)
    if reasons:
        return refused(item, reasons)
    if item.state is State.REVISION_PREPARED:
        return _revision_gate(item, command, ctx)
    artifacts = artifacts_of(item)
    failing, mismatches = _compare(artifacts, command, sorted(artifacts))
    if failing:
        return transition(
            item,
            Cmd.NEEDS_EYES,
            State.EXCEPTION,
            ctx,
            actor=command.worker,
            reasons=tuple(failing),
            data={
                "exception": {
                    "owner": OWNER,
                    "why": "readback does not match what was delivered",
                    "evidence": mismatches,
                    "from_state": item.state.value,
                    "at": format_time(ctx.now),
                }
            },
            detail={"mismatches": mismatches},
        )
    seq = int(item.doc("delivery_seq") or 0)
    packet = review_packet(item, artifacts, seq)
    return transition(
        item,
        Cmd.READBACK,
        State.COMPLETED,
        ctx,
        actor=command.worker,
        data={
            "artifacts": listed(artifacts),
            "review_packet": packet,
            "delivery_seq": seq,
            "completed_at": format_time(ctx.now),
        },
        digests={"packet": packet["digest"]},
    )


def _revision_gate(item: Item, command: ReadBack, ctx: Context) -> Decision:
    """Completion must prove a real revision of every artifact in scope."""
    revision = dict(item.doc("revision") or {})
    scope = sorted(revision.get("scope", ()))
    superseded = revision.get("superseded", {})
    artifacts = artifacts_of(item)
    reasons: list[str] = []
    if not revision.get("staged"):
        reasons.append(Reason.CONTENT_UNCHANGED)
    for key in scope:
        record, old = artifacts[key], superseded.get(key, {})
        if record["content_hash"] == old.get("content_hash"):
            reasons.append(Reason.CONTENT_UNCHANGED)
        if record["qa_hash"] == old.get("qa_hash"):
            reasons.append(Reason.QA_UNCHANGED)
        if record.get("last_op") != "update" or record.get("remote_id") != old.get("remote_id"):
            reasons.append(Reason.NOT_AN_UPDATE)
        if record["qa"]["content_hash"] != record["content_hash"]:
            reasons.append(Reason.REVIEW_PACKET_STALE)
    failing, mismatches = _compare(artifacts, command, scope)
    reasons += failing
    if item.doc("publication"):
        reasons.append(Reason.PUBLICATION_GUARD)
    if revision.get("sequence") != item.doc("delivery_seq"):
        reasons.append(Reason.REVIEW_HEAD_MOVED)
    if reasons:
        failure = {
            "class": "revision_gate",
            "message": "completion gate failed",
            "mismatches": mismatches,
        }
        return revision_failed(
            item, ctx, command.worker, tuple(dict.fromkeys(reasons)), failure, None
        )
    seq = int(revision["sequence"])
    packet = review_packet(item, artifacts, seq)
    revision["state"] = State.REVISION_COMPLETED.value
    revision["completed_at"] = format_time(ctx.now)
    return transition(
        item,
        Cmd.READBACK,
        State.REVISION_COMPLETED,
        ctx,
        actor=command.worker,
        data={"artifacts": listed(artifacts), "review_packet": packet, "revision": revision},
        digests={"packet": packet["digest"], "request": revision["request_digest"]},
    )
