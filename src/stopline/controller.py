"""The command layer: load, decide, write. The CLI, the HTTP API and the web inbox call this.

Every method returns a :class:`~stopline.core.decision.Decision`; refusals are values, never
exceptions. A refused decision writes nothing but an audit row in ``refusals``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from .core.canonical import digest
from .core.commands import (
    Acknowledge,
    ActorCommand,
    Approve,
    Close,
    Command,
    Edit,
    Finalize,
    Observed,
    Publish,
    Reconcile,
    Reinspect,
    Reject,
    Resolve,
    Resume,
    Review,
    Revise,
)
from .core.decide import decide
from .core.decision import Decision, Outcome, refused
from .core.integrity import head_findings
from .core.names import ACTOR, ROLE, InvalidName, check_name, lookalike
from .core.reasons import Reason
from .core.records import Actor, Item
from .core.states import State
from .core.step import Context, bind_idempotency, idempotency_digest
from .store import Store

Clock = Callable[[], datetime]
IDEMPOTENT_REPLAY = "idempotent_replay"


def utcnow() -> datetime:
    return datetime.now(UTC)


class ActorError(ValueError):
    """A malformed actor-registry change (bad name or role)."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class Controller:
    store: Store
    clock: Clock = utcnow

    # --- reading --------------------------------------------------------------------------

    def item(self, ref: str) -> Item | None:
        """An item by id, or by ``AUTOMATION/KEY``."""
        found = self.store.get(ref)
        if found is None and "/" in ref:
            automation, _, key = ref.partition("/")
            found = self.store.find(automation, key)
        return found

    # --- the one path every command takes ------------------------------------------------------

    def run(self, ref: str, command: Command, *, idempotency_key: str | None = None) -> Decision:
        now = self.clock()
        actor = command.actor if isinstance(command, ActorCommand) else None
        item = self.item(ref)
        command_digest = digest({"item": item.id if item else ref, **command.to_plain()})
        if idempotency_key:
            seen = self.store.idempotency(idempotency_key)
            if seen is not None:
                return self._replay(item, ref, seen, command_digest, command, actor, now)
        if item is None:
            decision = refused(None, [Reason.UNKNOWN_ITEM], ref)
            self.store.record_refusal(decision, command.name, actor, now)
            return decision
        policy = self.store.policy(item.automation)
        if policy is None:
            decision = refused(item, [Reason.UNKNOWN_AUTOMATION])
            self.store.record_refusal(decision, command.name, actor, now)
            return decision
        # What is decided on must be what its history sealed, and authority comes from the
        # registry chain, never from a table alone.
        head, legacy = self.store.head(item.id)
        findings = head_findings(item, head, legacy)
        registry = self.store.registry()
        if actor is not None:
            findings += registry.findings
        if findings:
            if isinstance(command, Close) and registry.ok:
                # closing never acts: the way out of a record nobody can trust, with the
                # findings kept in its history
                command = replace(command, integrity=tuple(findings))
            else:
                decision = refused(item, [Reason.INTEGRITY_FAILED])
                self.store.record_refusal(decision, command.name, actor, now)
                return decision
        decision = decide(item, command, Context(now, policy, registry.actors))
        if decision.outcome is Outcome.REFUSED:
            self.store.record_refusal(decision, command.name, actor, now)
            return decision
        if decision.outcome is Outcome.ZERO_WRITE:
            return decision
        key = None
        if idempotency_key:
            decision = bind_idempotency(decision, idempotency_digest(idempotency_key))
            key = (idempotency_key, command_digest, json.dumps(decision.to_plain()))
        if not self.store.apply(decision, idempotency=key):
            if idempotency_key and (seen := self.store.idempotency(idempotency_key)):
                return self._replay(item, ref, seen, command_digest, command, actor, now)
            stale = refused(item, [Reason.STALE_VERSION])
            self.store.record_refusal(stale, command.name, actor, now)
            return stale
        return decision

    def _replay(
        self,
        item: Item | None,
        ref: str,
        seen: tuple[str, str],
        command_digest: str,
        command: Command,
        actor: str | None,
        now: datetime,
    ) -> Decision:
        recorded_digest, recorded = seen
        if recorded_digest != command_digest:
            decision = refused(item, [Reason.IDEMPOTENCY_KEY_REUSE], ref)
            self.store.record_refusal(decision, command.name, actor, now)
            return decision
        original = json.loads(recorded)
        state = State(original["state"]) if original.get("state") else None
        return Decision(
            Outcome.ZERO_WRITE, (IDEMPOTENT_REPLAY,), original["item"], state, before=item
        )

    # --- commands, one method each -----------------------------------------------------------

    def approve(
        self, ref: str, *, proposal: str, actor: str, idempotency_key: str | None = None
    ) -> Decision:
        return self.run(ref, Approve(actor=actor, digest=proposal), idempotency_key=idempotency_key)

    def reject(
        self,
        ref: str,
        *,
        actor: str,
        reason: str,
        send_back: bool = False,
        proposal: str | None = None,
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Reject(actor=actor, reason=reason, send_back=send_back, digest=proposal)
        return self.run(ref, command, idempotency_key=idempotency_key)

    def edit(
        self, ref: str, *, actor: str, params: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Decision:
        return self.run(
            ref, Edit(actor=actor, params=dict(params)), idempotency_key=idempotency_key
        )

    def reinspect(
        self, ref: str, *, actor: str, reason: str, idempotency_key: str | None = None
    ) -> Decision:
        return self.run(ref, Reinspect(actor=actor, reason=reason), idempotency_key=idempotency_key)

    def acknowledge(
        self, ref: str, *, actor: str, reason: str = "", idempotency_key: str | None = None
    ) -> Decision:
        return self.run(
            ref, Acknowledge(actor=actor, reason=reason), idempotency_key=idempotency_key
        )

    def resolve(
        self,
        ref: str,
        *,
        actor: str,
        reason: str,
        input: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Resolve(actor=actor, reason=reason, input=dict(input or {}))
        return self.run(ref, command, idempotency_key=idempotency_key)

    def resume(
        self,
        ref: str,
        *,
        actor: str,
        reason: str,
        attempts: int | None = None,
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Resume(actor=actor, reason=reason, attempts=attempts)
        return self.run(ref, command, idempotency_key=idempotency_key)

    def close(
        self, ref: str, *, actor: str, reason: str, idempotency_key: str | None = None
    ) -> Decision:
        return self.run(ref, Close(actor=actor, reason=reason), idempotency_key=idempotency_key)

    def finalize(self, ref: str, *, idempotency_key: str | None = None) -> Decision:
        return self.run(ref, Finalize(), idempotency_key=idempotency_key)

    def revise(
        self,
        ref: str,
        *,
        actor: str,
        reason: str,
        artifacts: list[str],
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Revise(actor=actor, reason=reason, artifacts=tuple(artifacts))
        return self.run(ref, command, idempotency_key=idempotency_key)

    def review(
        self,
        ref: str,
        *,
        packet: str,
        verdict: str,
        actor: str,
        reason: str = "",
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Review(actor=actor, packet=packet, verdict=verdict, reason=reason)
        return self.run(ref, command, idempotency_key=idempotency_key)

    def publish(
        self,
        ref: str,
        *,
        packet: str,
        actor: str,
        signal: str = "",
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Publish(actor=actor, packet=packet, signal=signal)
        return self.run(ref, command, idempotency_key=idempotency_key)

    def reconcile_found(
        self,
        ref: str,
        *,
        key: str,
        actor: str,
        found: Observed | None,
        remote_id: str,
        idempotency_key: str | None = None,
    ) -> Decision:
        """Record what a lookup by key found (the lookup itself is IO; see ``runtime``)."""
        command = Reconcile(actor=actor, key=key, found=found, remote_id=remote_id)
        return self.run(ref, command, idempotency_key=idempotency_key)

    # --- the actor registry -----------------------------------------------------------------

    def add_actor(self, name: str, roles: list[str]) -> Actor:
        """Add an actor (or roles to one). Names are normalised and checked (``core.names``);
        a name that looks like another registered actor's is refused. The roles kept are the
        ones the registry chain records, never a table's (a role written into the table by hand
        is not carried into the chain by the next legitimate change)."""
        name = _check_name(ACTOR, name)
        roles = [_check_name(ROLE, role) for role in roles]
        registry = self.store.registry().actors
        similar = lookalike(name, registry)
        if similar is not None:
            raise ActorError(
                f"actor name {name!r} looks like the registered actor {similar!r}; choose another"
            )
        existing = registry.get(name)
        merged = frozenset(roles) | (
            existing.roles if existing and existing.active else frozenset()
        )
        actor = Actor(name, merged, True)
        self.store.set_actor(actor, "add", {"roles": sorted(roles)}, self.clock())
        return actor

    def revoke_actor(self, name: str, role: str | None = None) -> Actor | None:
        """Revoke an actor, or one role. A name or role stored exactly as given is revoked even
        if it breaks today's rules (an older registry may hold one); else it is checked. What
        is revoked is the actor the registry chain records (one found only in the table, as a
        hand-inserted row would be, is revoked as the table has it)."""
        registry = {**self.store.actors(), **self.store.registry().actors}
        if name not in registry:
            name = _check_name(ACTOR, name)
        existing = registry.get(name)
        if existing is None:
            return None
        if role is not None and role not in existing.roles:
            role = _check_name(ROLE, role)
        now = self.clock()
        if role is None:
            actor = Actor(name, existing.roles, False)
            self.store.set_actor(actor, "revoke", {}, now)
            self.store.revoke_tokens(name, now)
        else:
            actor = Actor(name, existing.roles - {role}, existing.active)
            self.store.set_actor(actor, "revoke_role", {"role": role}, now)
        return actor

    def new_token(self, name: str) -> str | None:
        """A fresh API token for an actor the registry chain records as active; only its hash
        is stored."""
        name = _check_name(ACTOR, name)
        actor = self.store.registry().actors.get(name)
        if actor is None or not actor.active:
            return None
        token = "stl_" + secrets.token_urlsafe(32)
        self.store.add_token(name, hash_token(token), self.clock())
        return token

    def authenticate(self, token: str) -> Actor | None:
        """The active actor a token was issued to, as the registry chain records both; a token
        or a role written into a table without its registry event authenticates nobody."""
        name = self.store.token_actor(hash_token(token))
        if name is None:
            return None
        registry = self.store.registry()
        issued = registry.tokens.get(hash_token(token))
        if not registry.ok or issued is None or issued.revoked or issued.actor != name:
            return None
        actor = registry.actors.get(name)
        return actor if actor is not None and actor.active else None


def _check_name(kind: str, name: str) -> str:
    """The normalised name (see ``core.names``), or :class:`ActorError` with what is wrong."""
    try:
        return check_name(kind, name)
    except InvalidName as exc:
        raise ActorError(str(exc)) from exc
