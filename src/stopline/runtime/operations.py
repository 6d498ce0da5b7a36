"""Operator commands that need the target: ``reconcile`` and ``publish``.

The IO (a lookup, a readback, a publication call) happens here; what it found goes to the
core as a command, so the rules stay in ``decide()``.
"""

from __future__ import annotations

from ..controller import Controller
from ..core.artifacts import Artifact, field_diff
from ..core.commands import Observed, Publish, Reconcile
from ..core.decision import Decision, Outcome, refused
from ..core.policy import Policy
from ..core.reasons import Reason
from ..targets.base import RemoteMissing, RemoteRef, Target, TargetError
from ..targets.registry import UnknownTarget, from_description
from .loader import load_app

TARGET_UNAVAILABLE = Reason.TARGET_UNAVAILABLE
REMOTE_IDENTITY_MISSING = Reason.REMOTE_IDENTITY_MISSING


def target_for(controller: Controller, automation: str, app_spec: str | None) -> Target | None:
    if app_spec:
        found = load_app(app_spec).by_name().get(automation)
        if found is not None and found.target is not None:
            return found.target
    # the target the registry chain recorded for the automation, never a table's alone
    record = controller.store.registry().policies.get(automation)
    if record is None:
        return None
    policy = Policy.from_plain(record.policy)
    if not policy.target:
        return None
    try:
        return from_description(policy.target)
    except (UnknownTarget, OSError, KeyError):
        return None


def reconcile(
    controller: Controller,
    ref: str,
    *,
    key: str,
    actor: str,
    app_spec: str | None = None,
    idempotency_key: str | None = None,
) -> Decision:
    """Find the object by its idempotency key, read it back, and bind it. Never creates."""
    item = controller.item(ref)
    if item is None:
        return controller.reconcile_found(ref, key=key, actor=actor, found=None, remote_id="")
    replay = idempotency_key is not None and controller.store.idempotency(idempotency_key)
    if not replay:
        # The rules that need no lookup come first: a refused reconcile makes no remote call.
        pre = controller.preview(ref, Reconcile(actor=actor, key=key))
        if pre.outcome is Outcome.REFUSED and set(pre.reasons) - {REMOTE_IDENTITY_MISSING}:
            return controller.reconcile_found(
                ref, key=key, actor=actor, found=None, remote_id="", idempotency_key=idempotency_key
            )
    records = {a["key"]: a for a in item.doc("artifacts") or ()}
    record = records.get(key)
    target = target_for(controller, item.automation, app_spec)
    found: Observed | None = None
    remote_id = ""
    if record is not None and target is not None:
        try:
            located = target.find(record["idempotency_key"])
            if located is not None:
                back = target.read(located.remote_id)
                diff = tuple(field_diff(Artifact.from_plain(record["content"]), back))
                found = Observed(back.readback_hash, back.version, diff)
                remote_id = located.remote_id
        except RemoteMissing:
            found = None
        except TargetError:
            return refused(item, [TARGET_UNAVAILABLE])
    elif record is not None and target is None:
        return refused(item, [TARGET_UNAVAILABLE])
    return controller.reconcile_found(
        ref, key=key, actor=actor, found=found, remote_id=remote_id, idempotency_key=idempotency_key
    )


def publish(
    controller: Controller,
    ref: str,
    *,
    packet: str,
    actor: str,
    app_spec: str | None = None,
    idempotency_key: str | None = None,
) -> Decision:
    """Check the rules first, publish every bound object, then record the signal."""
    item = controller.item(ref)
    if item is None:
        return controller.publish(ref, packet=packet, actor=actor)
    dry = controller.preview(ref, Publish(actor=actor, packet=packet))
    if dry.outcome is not Outcome.APPLIED:
        return controller.publish(ref, packet=packet, actor=actor, idempotency_key=idempotency_key)
    target = target_for(controller, item.automation, app_spec)
    if target is None:
        return refused(item, [TARGET_UNAVAILABLE])
    signals = []
    try:
        for record in item.doc("artifacts") or ():
            # before each publication call, every check again (the record, its seal, the
            # registry, the signature): nothing is published on authority that no longer holds
            again = controller.preview(ref, Publish(actor=actor, packet=packet))
            if again.outcome is not Outcome.APPLIED:
                return controller.publish(
                    ref, packet=packet, actor=actor, idempotency_key=idempotency_key
                )
            signals.append(
                target.publish(RemoteRef(record["remote_id"], record["remote_version"] or ""))
            )
    except TargetError:
        return refused(item, [TARGET_UNAVAILABLE, Reason.PUBLICATION_GUARD])
    return controller.publish(
        ref, packet=packet, actor=actor, signal=" ".join(signals), idempotency_key=idempotency_key
    )
