"""Delivery with durable boundaries: stage (:mod:`.staging`), intent, bind, delivered, read
back (:mod:`.readback`), complete, review. This module holds the remote writes' boundaries:
the intent to write an object, its binding to a remote identity, and the write's end."""

from __future__ import annotations

from typing import Any

from .artifact_records import artifacts_of, listed, remote_text_problem
from .canonical import format_time
from .commands import Bind, Delivered, Intent
from .decision import Decision, refused
from .reasons import Reason
from .records import Item
from .states import State
from .step import (
    Context,
    lease_reasons,
    legal,
    legal_any,
    transition,
)
from .transitions import Cmd

OWNER = "operators"


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
    detail = {
        "key": command.key,
        "operation": command.operation,
        "idempotency_key": command.idempotency_key,
    }
    return _artifact_recorded(item, Cmd.INTENT, command, ctx, record, detail)


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
    if remote_text_problem(command.remote_id) or remote_text_problem(
        command.remote_version, empty_ok=True
    ):
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
    detail = {"key": command.key, "operation": command.operation, "remote_id": command.remote_id}
    return _artifact_recorded(item, Cmd.BIND, command, ctx, record, detail)


def _artifact_recorded(
    item: Item,
    cmd: Cmd,
    command: Intent | Bind,
    ctx: Context,
    record: dict[str, Any],
    detail: dict[str, Any],
) -> Decision:
    """A worker's durable boundary of one artifact: its record replaced, the state and the
    lease kept."""
    artifacts = artifacts_of(item)
    artifacts[command.key] = record
    return transition(
        item,
        cmd,
        item.state,
        ctx,
        actor=command.worker,
        keep_lease=True,
        data={"artifacts": listed(artifacts)},
        digests={"content": record["content_hash"]},
        detail=detail,
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
