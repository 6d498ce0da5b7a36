"""Operator commands that need the target: ``reconcile`` and ``publish``.

The IO (a lookup, a readback, a publication call) happens here; what it found goes to the
core as a command, so the rules stay in ``decide()``. A remote call is made only after the
command layer's own check (``CommandLayer.preview``: the record's seal, the registry, the
signature, then ``decide()``) says the command would apply, and a publication call only after
that check is passed again right before it: refused input makes no remote call. What a call
sends is read from the record the check verified, never from a read before it (a record forged
before that read and put back before the check would otherwise be acted on).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from ..clock import Clock
from ..core.artifact_records import remote_text_problem
from ..core.artifacts import Artifact, field_diff
from ..core.commands import Command, Observed, Publish, Reconcile
from ..core.decision import Decision, Outcome
from ..core.delivery_plan import artifact_records
from ..core.policy import Policy
from ..core.reasons import Reason
from ..core.records import Item
from ..idempotency import stored_decision
from ..store import Store
from ..targets.base import RemoteMissing, RemoteRef, Target, TargetError
from ..targets.registry import UnknownTarget, from_description
from .loader import load_app
from .target_names import target_name


class CommandLayer(Protocol):
    """What these operations need from the command layer (``stopline.Controller`` is one)."""

    store: Store

    @property
    def clock(self) -> Clock: ...

    def item(self, ref: str) -> Item | None: ...

    def preview(self, ref: str, command: Command) -> Decision: ...

    def run(
        self, ref: str, command: Command, *, idempotency_key: str | None = None
    ) -> Decision: ...

    def refuse(self, ref: str, command: Command, reasons: list[str]) -> Decision: ...


def target_for(commands: CommandLayer, automation: str, app_spec: str | None) -> Target | None:
    if app_spec:
        found = load_app(app_spec).by_name().get(automation)
        if found is not None and found.target is not None:
            return found.target
    # the target the registry chain recorded for the automation, never a table's alone
    record = commands.store.registry().policies.get(automation)
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
    commands: CommandLayer,
    ref: str,
    *,
    key: str,
    actor: str,
    app_spec: str | None = None,
    idempotency_key: str | None = None,
) -> Decision:
    """Find the object by its idempotency key, read it back, and bind it. Never creates. The
    key looked up is read from the record the check verified."""
    nothing_found = Reconcile(actor=actor, key=key)
    item = commands.item(ref)
    if item is None:
        return commands.run(ref, nothing_found)
    replay = (
        idempotency_key is not None
        and stored_decision(commands.store, nothing_found, idempotency_key)[1]
    )
    if not replay:
        # The rules that need no lookup come first: a refused reconcile makes no remote call.
        preview = commands.preview(ref, nothing_found)
        if preview.outcome is Outcome.REFUSED and set(preview.reasons) - {
            Reason.REMOTE_IDENTITY_MISSING
        }:
            return commands.run(ref, nothing_found, idempotency_key=idempotency_key)
        if preview.before is None:
            return commands.run(ref, nothing_found, idempotency_key=idempotency_key)
        item = preview.before  # the record that check verified
    record = artifact_records(item).get(key)
    target = target_for(commands, item.automation, app_spec)
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
                if not _held_here(commands, target, item, key, remote_id):
                    return commands.refuse(ref, nothing_found, [Reason.REMOTE_OBJECT_HELD])
        except RemoteMissing:
            found = None
        except TargetError:
            return commands.refuse(ref, nothing_found, [Reason.TARGET_UNAVAILABLE])
    elif record is not None and target is None:
        return commands.refuse(ref, nothing_found, [Reason.TARGET_UNAVAILABLE])
    command = Reconcile(actor=actor, key=key, found=found, remote_id=remote_id)
    decision = commands.run(ref, command, idempotency_key=idempotency_key)
    return replace(decision, decided=command)  # what was found explains a refusal


def _held_here(
    commands: CommandLayer, target: Target, item: Item, key: str, remote_id: str
) -> bool:
    """Whether the object found is free for the artifact ``key`` of ``item``, or its own: taken
    for it if so (``store/remote_holds.py``). An id no record may hold is the core's to refuse."""
    if not isinstance(remote_id, str) or remote_text_problem(remote_id):
        return True
    name = target_name(target)
    holder = commands.store.remote_holds.take(name, remote_id, item.id, key, commands.clock())
    return holder == (item.id, key)


def publish(
    commands: CommandLayer,
    ref: str,
    *,
    packet: str,
    actor: str,
    app_spec: str | None = None,
    idempotency_key: str | None = None,
) -> Decision:
    """Check the rules first, publish every bound object, then record the signal. What is
    published is read from the record that check verified (never from a read before it), and
    before each publication call the check passes again on that same record version."""
    unsigned = Publish(actor=actor, packet=packet)
    checked = commands.preview(ref, unsigned)
    item = checked.before
    if item is None or checked.outcome is not Outcome.APPLIED:
        return commands.run(ref, unsigned, idempotency_key=idempotency_key)
    target = target_for(commands, item.automation, app_spec)
    if target is None:
        return commands.refuse(ref, unsigned, [Reason.TARGET_UNAVAILABLE])
    signals = []
    try:
        for record in item.doc("artifacts") or ():
            # before each publication call, every check again (the record, its seal, the
            # registry, the signature): nothing is published on authority that no longer holds
            again = commands.preview(ref, unsigned)
            if (
                again.outcome is not Outcome.APPLIED
                or again.before is None
                or again.before.version != item.version
            ):
                return commands.run(ref, unsigned, idempotency_key=idempotency_key)
            signals.append(
                target.publish(RemoteRef(record["remote_id"], record["remote_version"] or ""))
            )
    except TargetError:
        return commands.refuse(ref, unsigned, [Reason.TARGET_UNAVAILABLE, Reason.PUBLICATION_GUARD])
    signed = Publish(actor=actor, packet=packet, signal=" ".join(signals))
    return commands.run(ref, signed, idempotency_key=idempotency_key)
