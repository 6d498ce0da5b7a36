"""``stage``: a delivery's artifacts recorded with their content and QA, the first durable
boundary of a delivery (and of a revision's new content)."""

from __future__ import annotations

from .artifact_records import artifacts_of, listed, staged_record
from .canonical import format_time
from .commands import QAResult, Stage
from .decision import Decision, refused
from .delivery import OWNER
from .failures import revision_failed
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
