"""Shared building blocks of ``decide()``: the context, guards, and the applied transition."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from .authorship import AUTOMATION, HUMAN, Author
from .commands import ActorCommand, WorkerCommand
from .decision import Decision, Outcome, refused
from .frozen import FrozenDict, freeze
from .integrity import item_seal
from .limits import text_problem
from .policy import Policy
from .reasons import Reason
from .records import Actor, Event, Item, evolve
from .states import State
from .transitions import ANNOTATIONS, By, Cmd, lookup

OPERATOR = "operator"
# The role of an AI agent's identity: it may propose and report through the agent commands,
# and no people's command by an actor holding it is ever allowed (whatever else it holds).
AGENT = "agent"


@dataclass(frozen=True)
class Context:
    """Everything ``decide()`` may know besides the item and the command."""

    now: datetime
    policy: Policy | None = None
    actors: Mapping[str, Actor] = field(default_factory=dict)
    # the signed record of a person's command (signed mode), kept with what it authorised
    attestation: Mapping[str, Any] | None = None
    # who wrote a person's command, as its caller declares (data only: nothing decides on it)
    author: Author | None = None

    def actor(self, name: str) -> Actor | None:
        found = self.actors.get(name) if name else None
        return found if found is not None and found.active else None


def legal(item: Item, cmd: Cmd, target: State) -> list[str]:
    row = lookup(item.state, cmd)
    return [] if row is not None and target in row.targets else [Reason.ILLEGAL_TRANSITION]


def legal_any(item: Item, cmd: Cmd) -> list[str]:
    return [] if lookup(item.state, cmd) is not None else [Reason.ILLEGAL_TRANSITION]


def lease_reasons(item: Item, command: WorkerCommand, now: datetime) -> list[str]:
    """A worker's commit must name the current fencing token of a live lease it owns."""
    if (
        item.lease_owner != command.worker
        or item.lease_token != command.token
        or not item.lease_live(now)
    ):
        return [Reason.LEASE_LOST]
    return []


def agent_reasons(actor: Actor) -> list[str]:
    """An actor holding the agent role decides nothing a person decides: ``agent_forbidden``
    even when someone also granted it an approver or operator role."""
    return [Reason.AGENT_FORBIDDEN] if AGENT in actor.roles else []


def actor_reasons(ctx: Context, name: str, roles: tuple[str, ...] | frozenset[str]) -> list[str]:
    actor = ctx.actor(name)
    if actor is None:
        return [Reason.ACTOR_UNKNOWN]
    if agent_reasons(actor):
        return agent_reasons(actor)
    if actor.has_any(roles) is None:
        return [Reason.ACTOR_NOT_AUTHORIZED]
    return []


def operator_reasons(ctx: Context, command: ActorCommand) -> list[str]:
    return actor_reasons(ctx, command.actor, (OPERATOR,))


def policy_of(ctx: Context) -> Policy:
    if ctx.policy is None:
        raise ValueError("this command needs the automation's policy")
    return ctx.policy


def transition(
    item: Item,
    cmd: Cmd,
    target: State,
    ctx: Context,
    *,
    actor: str,
    by: By | None = None,
    data: Mapping[str, Any] | None = None,
    digests: Mapping[str, Any] | None = None,
    detail: Mapping[str, Any] | None = None,
    reasons: tuple[str, ...] = (),
    keep_lease: bool = False,
    budget: int | None = None,
    next_eligible_at: datetime | None = None,
    attempt_entry: Mapping[str, Any] | None = None,
) -> Decision:
    """An applied decision: the new item and its one event, hash-chained to the last one.

    Entering a different work state starts a new step: its attempt count starts at zero with
    ``budget`` attempts (the policy's by default). Leaving a step releases the lease unless
    ``keep_lease`` (the step continues under the same claim).
    """
    row = lookup(item.state, cmd)
    assert row is not None and target in row.targets, f"{item.state} --{cmd}--> {target}"
    new_data = item.data
    if data:
        merged = dict(item.data)
        for k, v in data.items():
            if v is None:
                merged.pop(k, None)
            else:
                merged[k] = freeze(v)
        new_data = FrozenDict(merged)
    attempts, max_attempts = item.attempts, item.max_attempts
    if target.is_work and target != item.state:
        attempts = 0
        max_attempts = (
            budget if budget is not None else policy_of(ctx).retry_for(target.value).max_attempts
        )
    elif budget is not None:
        max_attempts = budget
    log = item.attempt_log
    if attempt_entry is not None:
        log = (*log, freeze(dict(attempt_entry)))
    if not item.state.is_work and target.is_work:
        # who let the item out of its stop (or completed) state, by which command, on which head: a worker
        # in signed mode checks this record's signature before it runs the item again
        release: dict[str, Any] = {
            "command": cmd.value,
            "actor": actor,
            "seq": item.seq + 1,
            "prev_hash": item.head,
        }
        if ctx.attestation is not None:
            release["attestation"] = ctx.attestation
        new_data = FrozenDict({**new_data, "release": freeze(release)})
    if ctx.attestation is not None:
        detail = {**(detail or {}), "attestation": ctx.attestation}
    detail = {**(detail or {}), "author": _author(row.by, ctx).to_plain()}
    released = not keep_lease
    after = evolve(
        item,
        state=target,
        version=item.version + 1,
        seq=item.seq + 1,
        head="",
        # an annotation (a note) is not a change of the record: how long the item has waited
        # (the inbox's age and overdue) is kept
        updated_at=item.updated_at if cmd in ANNOTATIONS else ctx.now,
        attempts=attempts,
        max_attempts=max_attempts,
        next_eligible_at=next_eligible_at
        or (ctx.now if target != item.state else item.next_eligible_at),
        lease_owner=None if released else item.lease_owner,
        lease_expires_at=None if released else item.lease_expires_at,
        claimed_at=None if released else item.claimed_at,
        attempt_log=log,
        data=new_data,
    )
    event = Event.sealed(
        item_id=item.id,
        seq=after.seq,
        at=ctx.now,
        command=cmd.value,
        actor=actor,
        from_state=item.state,
        to_state=target,
        reasons=reasons,
        digests=freeze({**(digests or {}), "seal": item_seal(after)}),
        detail=freeze(dict(detail or {})),
        prev_hash=item.head,
    )
    after = evolve(after, head=event.hash)
    return Decision(
        Outcome.APPLIED, reasons, item.id, target, before=item, after=after, event=event
    )


def _author(by: By, ctx: Context) -> Author:
    """Who wrote the event: a worker's, the scheduler's and the sweeper's are automation's,
    whatever anyone declares; a person's is what its caller declared, a person by default."""
    if by in (By.WORKER, By.SYSTEM):
        return AUTOMATION
    return HUMAN if ctx.author is None else ctx.author


def refuse_if(item: Item, reasons: list[str]) -> Decision | None:
    return refused(item, reasons) if reasons else None


def scoped_key(command: object, key: str) -> str:
    """What an idempotency key is stored as. A person's key is their own, ``ACTOR/KEY`` (no
    actor name holds a ``/``): the same key sent by another actor neither answers with the
    first actor's decision nor blocks their own command. A command no person gives (or one
    whose actor is not valid text, which no actor is) keeps the key as given, as every key was
    stored before keys were the actor's own."""
    actor = command.actor if isinstance(command, ActorCommand) else None
    if not isinstance(actor, str) or text_problem(actor) is not None:
        return key
    return f"{actor}/{key}"


def idempotency_digest(key: str) -> str:
    """What an event records of the idempotency key it was written under."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def bind_idempotency(decision: Decision, key_digest: str) -> Decision:
    """The applied ``decision`` with its event bound to an idempotency key (so a key row that
    is deleted, added or rewritten no longer matches the history)."""
    event, after = decision.event, decision.after
    if event is None or after is None:
        return decision
    digests = freeze({**event.digests, "idempotency": key_digest})
    fields = {name: getattr(event, name) for name in event.body()}
    bound = Event.sealed(**{**fields, "digests": digests})
    return replace(decision, event=bound, after=replace(after, head=bound.hash))
