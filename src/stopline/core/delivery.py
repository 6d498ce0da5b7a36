"""Delivery with durable boundaries: stage, intent, bind, read back, complete, review."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .artifacts import Artifact
from .canonical import digest, format_time
from .commands import Bind, Delivered, Intent, QAResult, ReadBack, Stage
from .decision import Decision, refused
from .failures import revision_failed
from .reasons import Reason
from .records import Item
from .states import DELIVERED_STATES, State
from .step import (
    Context,
    lease_reasons,
    legal,
    legal_any,
    transition,
)
from .transitions import Cmd

OWNER = "operators"


def artifacts_of(item: Item) -> dict[str, dict[str, Any]]:
    return {a["key"]: dict(a) for a in item.doc("artifacts") or ()}


def readback_verified(record: Mapping[str, Any]) -> bool:
    """The artifact's stored object was read back holding exactly its current content."""
    return bool(record.get("readback_hash")) and record["readback_hash"] == record["content_hash"]


def listed(artifacts: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [artifacts[k] for k in sorted(artifacts)]


def qa_hash(content: str, qa: QAResult) -> str:
    return digest({"content_hash": content, "passed": qa.passed, "details": qa.details})


def staged_record(
    artifact: Artifact, qa: QAResult, base: Mapping[str, Any] | None
) -> dict[str, Any]:
    content = artifact.content_hash
    record: dict[str, Any] = {
        "key": artifact.key,
        "title": artifact.title,
        "content_hash": content,
        "qa_hash": qa_hash(content, qa),
        "qa": {"passed": qa.passed, "details": qa.details, "content_hash": content},
        "content": artifact.to_plain(),
        "remote_id": None,
        "remote_version": None,
        "readback_hash": None,
        "last_op": None,
        "intent": None,
    }
    if base is not None:  # a revision keeps the remote identity it updates
        record["remote_id"] = base.get("remote_id")
        record["remote_version"] = base.get("remote_version")
        record["idempotency_key"] = base.get("idempotency_key")
    return record


def decide_stage(item: Item, command: Stage, ctx: Context) -> Decision:
    reasons = legal_any(item, Cmd.STAGE) + lease_reasons(item, command, ctx.now)
    keys = [a.key for a in command.artifacts]
    if len(set(keys)) != len(keys) or any(not k for k in keys):
        reasons.append(Reason.INVALID_INPUT)
    if item.state is State.DELIVERING and item.doc("staged"):
        reasons.append(Reason.ALREADY_STAGED)
    revision = item.doc("revision") or {}
    if item.state is State.REVISION_PREPARED and revision.get("staged"):
        reasons.append(Reason.ALREADY_STAGED)
    if reasons:
        return refused(item, reasons)
    failed_qa = sorted(
        a.key for a in command.artifacts if not command.qa.get(a.key, QAResult(False)).passed
    )
    if item.state is State.DELIVERING:
        if failed_qa:
            return transition(
                item,
                Cmd.NEEDS_EYES,
                State.EXCEPTION,
                ctx,
                actor=command.worker,
                reasons=(Reason.QA_FAILED,),
                data={
                    "exception": {
                        "owner": OWNER,
                        "why": "QA failed",
                        "evidence": {"failed": failed_qa},
                        "from_state": item.state.value,
                        "at": format_time(ctx.now),
                    }
                },
                detail={"failed": failed_qa},
            )
        previous = artifacts_of(item)  # bindings of an earlier round are updated, not recreated
        records = {
            a.key: staged_record(a, command.qa[a.key], previous.get(a.key))
            for a in command.artifacts
        }
        seq = int(item.doc("delivery_seq") or 0)
        for key, record in records.items():  # derived from item, sequence and artifact key
            record["idempotency_key"] = record.get("idempotency_key") or f"{item.id}:{seq}:{key}"
        return transition(
            item,
            Cmd.STAGE,
            State.DELIVERING,
            ctx,
            actor=command.worker,
            keep_lease=True,
            data={"artifacts": listed(records), "staged": True, "result": command.result},
            digests={k: r["content_hash"] for k, r in records.items()},
        )
    return _stage_revision(item, command, ctx, failed_qa)


def _stage_revision(item: Item, command: Stage, ctx: Context, failed_qa: list[str]) -> Decision:
    revision = dict(item.doc("revision") or {})
    scope = set(revision.get("scope", ()))
    superseded = revision.get("superseded", {})
    current = artifacts_of(item)
    problems: list[str] = []
    records = dict(current)
    for artifact in command.artifacts:
        base = current.get(artifact.key)
        if base is None:
            problems.append(Reason.SCOPE_INVALID)
            continue
        if artifact.key not in scope:
            if artifact.content_hash != base["content_hash"]:
                problems.append(Reason.SCOPE_INVALID)
            continue
        records[artifact.key] = staged_record(
            artifact, command.qa.get(artifact.key, QAResult(False)), base
        )
    for key in sorted(scope):
        old = superseded.get(key, {})
        if records[key]["content_hash"] == old.get("content_hash"):
            problems.append(Reason.CONTENT_UNCHANGED)
        if records[key]["qa_hash"] == old.get("qa_hash"):
            problems.append(Reason.QA_UNCHANGED)
    if failed_qa:
        problems.append(Reason.QA_FAILED)
    if problems:
        failure = {
            "class": "revision_stage",
            "message": "the revised content does not pass the gate",
        }
        return revision_failed(
            item, ctx, command.worker, tuple(dict.fromkeys(problems)), failure, None
        )
    revision["staged"] = True
    return transition(
        item,
        Cmd.STAGE,
        State.REVISION_PREPARED,
        ctx,
        actor=command.worker,
        keep_lease=True,
        data={"artifacts": listed(records), "revision": revision},
        digests={k: records[k]["content_hash"] for k in sorted(scope)},
    )


def decide_intent(item: Item, command: Intent, ctx: Context) -> Decision:
    reasons = legal_any(item, Cmd.INTENT) + lease_reasons(item, command, ctx.now)
    artifacts = artifacts_of(item)
    record = artifacts.get(command.key)
    scope = tuple((item.doc("revision") or {}).get("scope", ()))
    if record is None or (item.state is State.REVISION_PREPARED and command.key not in scope):
        reasons.append(Reason.SCOPE_INVALID)
    elif item.state is State.DELIVERING and command.operation != (
        "update" if record["remote_id"] else "create"
    ):
        reasons.append(Reason.NOT_AN_UPDATE if record["remote_id"] else Reason.ILLEGAL_TRANSITION)
    elif item.state is State.REVISION_PREPARED and (
        command.operation != "update" or not record["remote_id"]
    ):
        reasons.append(Reason.NOT_AN_UPDATE)
    if reasons:
        return refused(item, reasons)
    assert record is not None
    record["intent"] = {
        "operation": command.operation,
        "idempotency_key": command.idempotency_key,
        "at": format_time(ctx.now),
        "delivery_seq": item.doc("delivery_seq") or 0,
    }
    artifacts[command.key] = record
    return transition(
        item,
        Cmd.INTENT,
        item.state,
        ctx,
        actor=command.worker,
        keep_lease=True,
        data={"artifacts": listed(artifacts)},
        digests={"content": record["content_hash"]},
        detail={
            "key": command.key,
            "operation": command.operation,
            "idempotency_key": command.idempotency_key,
        },
    )


def decide_bind(item: Item, command: Bind, ctx: Context) -> Decision:
    reasons = legal_any(item, Cmd.BIND) + lease_reasons(item, command, ctx.now)
    artifacts = artifacts_of(item)
    record = artifacts.get(command.key)
    scope = tuple((item.doc("revision") or {}).get("scope", ()))
    if record is None:
        reasons.append(Reason.SCOPE_INVALID)
    elif record.get("intent") is None:
        reasons.append(Reason.ILLEGAL_TRANSITION)
    elif item.state is State.REVISION_PREPARED and command.key not in scope:
        reasons.append(Reason.SCOPE_INVALID)
    elif (
        item.state is State.DELIVERING
        and record["remote_id"]
        and command.remote_id != record["remote_id"]
    ):
        reasons.append(Reason.NOT_AN_UPDATE)  # a second round updates; it never swaps identity
    elif item.state is State.REVISION_PREPARED and (
        command.operation != "update" or command.remote_id != record["remote_id"]
    ):
        reasons.append(Reason.NOT_AN_UPDATE)
    if not command.remote_id:
        reasons.append(Reason.INVALID_INPUT)
    if reasons:
        return refused(item, reasons)
    assert record is not None
    record.update(
        remote_id=command.remote_id,
        remote_version=command.remote_version,
        last_op=command.operation,
        bound_at=format_time(ctx.now),
    )
    artifacts[command.key] = record
    return transition(
        item,
        Cmd.BIND,
        item.state,
        ctx,
        actor=command.worker,
        keep_lease=True,
        data={"artifacts": listed(artifacts)},
        digests={"content": record["content_hash"]},
        detail={"key": command.key, "operation": command.operation, "remote_id": command.remote_id},
    )


def decide_delivered(item: Item, command: Delivered, ctx: Context) -> Decision:
    reasons = legal(item, Cmd.DELIVERED, State.PENDING_READBACK) + lease_reasons(
        item, command, ctx.now
    )
    unbound = [k for k, a in artifacts_of(item).items() if not a.get("remote_id")]
    if unbound:
        reasons.append(Reason.ARTIFACT_NOT_BOUND)
    if not item.doc("staged") and artifacts_of(item):
        reasons.append(Reason.ILLEGAL_TRANSITION)
    proposal = item.doc("proposal")
    if command.digest is not None and (proposal is None or proposal["digest"] != command.digest):
        reasons.append(Reason.PROPOSAL_DIGEST_MISMATCH)
    if reasons:
        return refused(item, reasons)
    result = {**(item.doc("result") or {}), **command.result}
    return transition(
        item,
        Cmd.DELIVERED,
        State.PENDING_READBACK,
        ctx,
        actor=command.worker,
        data={
            "result": result,
            "step": {"state": State.PENDING_READBACK.value, "since": format_time(ctx.now)},
        },
    )


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
    return {**body, "digest": digest(body), "void": False}


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


__all__ = ["DELIVERED_STATES", "artifacts_of", "review_packet"]
